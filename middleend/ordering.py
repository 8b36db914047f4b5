"""Placement of computations relative to each other: the static (beta) dimensions of the time-space.

The program is a sequence of computations; each entry records how many loops it
shares with the entry before it. `after`/`before` move an entry (with the
entries nested inside its loops) next to another one. The betas follow from the
sequence: sharing s loops keeps the first s betas and bumps the next one.
"""
from __future__ import annotations

from .errors import ScheduleError


def _subtree_end(seq, start):
    """Index one past the entries nested in the loops of seq[start]."""
    share = seq[start][1]
    end = start + 1
    while end < len(seq) and seq[end][1] > share:
        end += 1
    return end


def _level_depth(other, level, loops_of, how, comp):
    if level is None:
        return 0
    if isinstance(level, int):  # a front-end's original nesting: share that many loops, whatever their names
        return min(level, len(loops_of(other)), len(loops_of(comp)))
    loops = loops_of(other)
    if level not in loops:
        raise ScheduleError(f"{comp.name}.{how}({other.name}, {level}): {other.name} has no loop {level!r}; "
                            f"its loops are {loops}")
    depth = loops.index(level) + 1
    mine = loops_of(comp)
    if depth > len(mine):
        raise ScheduleError(f"{comp.name}.{how}({other.name}, {level}): {comp.name} has only {len(mine)} loops, "
                            f"it cannot share {depth} with {other.name}")
    return depth


def _computed_at(comp, how, other, level) -> bool:
    """Whether a placement entry is the one `compute_at` made: comp before its consumer at that level."""
    target = getattr(comp, "compute_at_target", None)
    return how == "before" and target is not None and target[0] is other and target[1] == level


def _host(seq, producer, consumer, level, loops_of, beside=None):
    """Move `producer` (alone: what follows inside its loops is its consumer) into `consumer`'s loops
    down to `level`, just before the nest that holds the consumer one loop deeper: directly before
    the consumer unless the consumer shares deeper loops with what precedes it, which it keeps sharing
    (a consumer placed after another in their innermost loops computes its producer before both).
    `beside` = (how, other, its level): placed after or before `other`, computed at the same loop,
    sharing their loops down to that level instead."""
    start = next(i for i, e in enumerate(seq) if e[0] is producer)
    entry = seq.pop(start)
    if start < len(seq) and seq[start][1] > entry[1]:
        seq[start][1] = entry[1]  # the entry that followed now follows what preceded
    if beside is not None:
        how, other, shared = beside
        _insert_next_to(seq, [entry], how, other, _level_depth(other, shared, loops_of, how, producer))
        return
    depth = _level_depth(consumer, level, loops_of, "compute_at", producer)
    at = next(i for i, e in enumerate(seq) if e[0] is consumer)
    while seq[at][1] > depth:
        at -= 1
    entry[1] = seq[at][1]
    seq[at][1] = depth
    seq.insert(at, entry)


def _rehost(seq, hosting, loops_of):
    """Put what compute_at placed in a consumer's loops back next to the consumer, wherever a later
    placement moved either (or put something between them), in the order compute_at placed them; a
    producer's own producers after it. `hosting`: id(consumer) -> (consumer, [(producer, level, beside)]),
    `beside` as `_host` takes it."""
    done = set()

    def visit(consumer):
        if id(consumer) in done:
            return
        done.add(id(consumer))
        for producer, level, beside in hosting.get(id(consumer), (None, []))[1]:
            target = producer.compute_at_target
            if target is not None and target[0] is consumer and any(e[0] is producer for e in seq):
                _host(seq, producer, consumer, level, loops_of, beside)
                visit(producer)
    consumers = [consumer for consumer, _ in hosting.values()]
    # the outermost consumers first (their producers' places follow theirs), then any left in a cycle
    for consumer in sorted(consumers, key=lambda c: any(id(h) in hosting for h in c.hosts())):
        visit(consumer)


def _insert_next_to(seq, block, how, other, depth):
    """Insert `block` (entries, the first one starting its nest) just after the nest of `other` ("after")
    or just before `other` ("before"), sharing `depth` loops with it."""
    anchor = next(i for i, e in enumerate(seq) if e[0] is other)
    if how == "after":
        at = _subtree_end(seq, anchor)
        block[0][1] = depth
    else:
        at = anchor
        block[0][1], seq[anchor][1] = seq[anchor][1], depth
    seq[at:at] = block


def _tile_neighbours(hosting, comp, other):
    """The list of what compute_at placed in the consumer's loops, where `comp` and `other` are both
    there at one loop (an after/before between two tiles of that loop); else None."""
    if not comp.computed_at_same_loop(other):
        return None
    hosted = hosting.get(id(comp.compute_at_target[0]), (None, []))[1]
    names = [h[0] for h in hosted]
    return hosted if any(c is comp for c in names) and any(c is other for c in names) else None


def _take_computed_at(seq, comp):
    """Remove `comp` and the entries computed at its loops from `seq`; return them as a block that
    starts a nest (the entries that stay keep the loops they shared through the removed ones)."""
    block, kept, carry = [], [], None
    for entry in seq:
        if entry[0] is comp or any(h is comp for h in entry[0].hosts()):
            block.append(entry)
            carry = entry[1] if carry is None else min(carry, entry[1])
        else:
            if carry is not None:
                entry[1] = min(entry[1], carry)
                carry = None
            kept.append(entry)
    seq[:] = kept
    block[0][1] = 0
    return block


def resolve(computations, commands, loops_of):
    """Betas for each computation from the placement commands, applied in the order given.

    `commands` are (how, comp, other, level name or None); `loops_of(c)` gives c's final loops. How
    is "after", "before" or "ahead": comp, with what its loops hold, runs just before the outermost
    loop nest holding other (or the first holding one of a tuple of others), once every other command
    has placed the nests (a whole copy of what other reads, cache_read at root; a computation computed
    at the root instead of at a loop, before its readers).
    """
    seq = [[c, 0] for c in computations]
    position = lambda c: next(i for i, e in enumerate(seq) if e[0] is c)
    ahead = [c for c in commands if c[0] == "ahead"]
    hosting = {}    # id(consumer) -> (consumer, [(producer, level, beside)] placed by compute_at so far, in order)
    for how, comp, other, level in [c for c in commands if c[0] != "ahead"] + ahead:
        others = [o for o in (other if isinstance(other, tuple) else (other,))
                  if any(o is c for c in computations)]
        if not others or comp not in computations:
            continue  # an inlined computation has no place of its own
        if how == "ahead":
            block = _take_computed_at(seq, comp)
            nest = min(position(o) for o in others if not any(e[0] is o for e in block))
            while seq[nest][1] > 0:
                nest -= 1
            seq[nest:nest] = block
            continue
        if _computed_at(comp, how, other, level):
            hosted = hosting.setdefault(id(other), (other, []))[1]
            hosted[:] = [h for h in hosted if h[0] is not comp] + [(comp, level, None)]
            _host(seq, comp, other, level, loops_of)
            _rehost(seq, hosting, loops_of)
            continue
        hosted = _tile_neighbours(hosting, comp, other)
        if hosted is not None:
            # two tiles of one loop: comp goes next to other, and is hosted right after it, so that
            # every rehosting puts other in place first
            entry = next(h for h in hosted if h[0] is comp)
            hosted.remove(entry)
            at = next(k for k, h in enumerate(hosted) if h[0] is other) + 1
            hosted.insert(at, (comp, entry[1], (how, other, level)))
            _rehost(seq, hosting, loops_of)
            continue
        start = position(comp)
        block = seq[start:_subtree_end(seq, start)]
        if any(e[0] is other for e in block):
            block = block[:1]  # move comp alone: what was fused into its loops stays where it was
        del seq[start:start + len(block)]
        if start < len(seq) and seq[start][1] > block[0][1]:
            seq[start][1] = block[0][1]  # the entry that followed now follows what preceded
        _insert_next_to(seq, block, how, other, _level_depth(other, level, loops_of, how, comp))
        _rehost(seq, hosting, loops_of)
    betas = {}
    prev = None
    for comp, share in seq:
        n = len(loops_of(comp))
        b = [0] * (n + 1)
        if prev is not None:
            pb = betas[prev]
            share = min(share, n, len(pb) - 1)
            b[:share] = pb[:share]
            b[share] = pb[share] + 1
        betas[comp] = b
        prev = comp
    return betas
