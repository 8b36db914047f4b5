"""Legality: a schedule is legal iff every dependence still goes forward in time,
and no parallel or vector loop carries one.

Each original instance maps to the times it executes at: one time normally,
several for a producer recomputed per consumer tile. A dependence of an inlined
computation is one of the computations that evaluate it, at the instances that
do. A dependence a -> b is respected when every time of a comes before every
time of b. The reads a consumer makes of a producer it
recomputes or inlines are satisfied by construction and are not checked (a
sliding window's are: its values come from earlier consumer iterations).
"""
from __future__ import annotations

import functools

import islpy as isl

from . import parametric_tiles
from .errors import IllegalScheduleError, ScheduleError
from .dependences import union_maps
from .loopir import CONCURRENT_KINDS, LoopKind
from .recent import Recent
from .statements import first_needed, read_relation, reads_of, runs_inside


def execution_times(stmts):
    """Per statement name, the map from its computation's original instances to the times it runs at."""
    return {s.name: s.to_original.reverse().apply_range(s.time) for s in stmts}


def _evaluations(function, context, comp):
    """[relation from an evaluator's instances to the instances of the inlined `comp` they evaluate]
    over the computations not inlined that read it, themselves or through other inlined ones; None
    where an index of such a read is not affine (the relation would hold every instance of its reader)."""
    kept = function._kept("evaluations", context)
    if comp.name not in kept:
        out = []
        for reader in function.computations:
            if reader.inlined:
                continue
            r, affine = read_relation(reader, comp, context)
            if r is None:
                continue
            if not affine:
                out = None
                break
            out.append(r)
        kept[comp.name] = out
    return kept[comp.name]


def _at_evaluators(m, function, context) -> list:
    """The dependence `m` with each end that is an inlined computation replaced by the instances of the
    computations that evaluate it, where its reads and its value now are; [] where those cannot be
    told exactly (a data-dependent index), as for a dependence of a data-dependent read."""
    maps = [m]
    for end in (isl.dim_type.in_, isl.dim_type.out):
        comp = function.computation(m.get_tuple_name(end))
        if not comp.inlined:
            continue
        evaluations = _evaluations(function, context, comp)
        if evaluations is None:
            return []
        maps = [r.apply_range(d) if end == isl.dim_type.in_ else d.apply_range(r.reverse())
                for d in maps for r in evaluations]
    return [d for d in maps if not d.is_empty()]


def _evaluated_dependences(deps, function, context) -> list:
    """[(kind, dependence)] of `deps` with their inlined ends at the computations that evaluate them
    (`_at_evaluators`), the reads exempt by construction left out; kept with the dependences."""
    kept = function._kept("evaluated dependences", context)
    if kept.get("for") is not deps:
        kept["for"] = deps
        kept["dependences"] = [(kind, d) for kind, umap in deps.items() for whole in union_maps(umap)
                               if not _exempt(kind, *_ends(whole), function)
                               for d in _at_evaluators(whole, function, context)]
    return kept["dependences"]


def _ends(m):
    return m.get_tuple_name(isl.dim_type.in_), m.get_tuple_name(isl.dim_type.out)


def _exempt(kind, src, snk, function):
    """Reads of a producer by the consumer it is recomputed in, or inlined into, hold by construction."""
    if kind != "read-after-write":
        return False
    producer = function.computation(src)
    if producer.inlined:
        return True
    target = producer.compute_at_target
    # (a window slid within each iteration of a storage loop is checked by window_violations; one kept
    # at the root computes each value once, so the plain ordering check applies)
    return target is not None and target[0].name == snk and not producer.stored_at_root


class CheckedPairs(list):
    """`checked_pairs`' list, which also prints each pair (its maps and the context) once, as the key
    of what `_HOLDS` remembers of it."""

    def __init__(self, pairs, context):
        super().__init__(pairs)
        self._context = context
        self._texts = None

    def texts(self) -> list:
        """Per pair, its maps and the context as isl prints them (exact: they parse back to the same)."""
        if self._texts is None:
            context = str(self._context)
            self._texts = [(context, kind, str(ts), str(tk), str(pairs)) for kind, _, ts, tk, pairs in self]
        return self._texts


#: checks a pair passed (its texts and what was checked): the autoscheduler checks the schedule after
#: each command it gives, and most pairs are the same as at the check before (90% of them on 2mm's
#: search), while composing their maps is most of a check's time. A failed check is not remembered: it
#: is computed again, with its witness.
_HOLDS = Recent(8192)


def checked_pairs(stmts, deps, function, context):
    """(kind, dependence, source times, sink times, instance pairs to check) per dependence.

    Between a recomputed producer and its own updates, a dependence holds within each recomputation:
    it is checked on their statement instances with the same consumer loop values (the prefix),
    not across recomputations, which write separate tiles."""
    times = execution_times(stmts)
    by_name = {s.name: s for s in stmts}
    out = []
    for kind, m in _evaluated_dependences(deps, function, context):
        src, snk = _ends(m)
        if src not in times or snk not in times or _exempt(kind, src, snk, function):
            continue
        a, b = by_name.get(src), by_name.get(snk)
        if a is not None and b is not None and a.recomputed_with(b):
            pairs = a.to_original.apply_range(m).apply_range(b.to_original.reverse())
            pairs = pairs.intersect(_same_prefix(pairs.get_space(), a.prefix_depth))
            out.append((kind, m, a.time, b.time, pairs))
        elif a is not None and b is not None and _reads_tile(a, b, kind, by_name):
            # a computation run inside the loops a tile is computed in reads that iteration's tile
            # (or, from a sliding window, earlier ones: window_violations checks those)
            pairs = a.to_original.apply_range(m).apply_range(b.to_original.reverse())
            pairs = pairs.intersect(_same_loops(a, b, a.prefix_depth))
            out.append((kind, m, a.time, b.time, pairs))
        elif a is not None and b is not None and _reads_tile(b, a, kind, by_name, before=True):
            # ... and reads it before a later stage of its producer writes it there (a Tuple's elements
            # computed side by side in their tiles): within each iteration, as each has its own tile
            pairs = a.to_original.apply_range(m).apply_range(b.to_original.reverse())
            pairs = pairs.intersect(_same_loops(a, b, b.prefix_depth))
            out.append((kind, m, a.time, b.time, pairs))
        else:
            out.append((kind, m, times[src], times[snk], m))
    return CheckedPairs(out, context)


def _reads_tile(a, b, kind, by_name, before=False):
    """Whether statement `b` reads the tile of the producer of `a` as a computation run inside the
    consumer's loops (not the consumer itself, whose reads hold by construction): after `a` writes it,
    or with `before`, before `a` writes it again (a tile no sliding window keeps across iterations)."""
    producer = a.comp.storage_owner
    target = producer.compute_at_target
    if kind != ("write-after-read" if before else "read-after-write") or target is None or \
            producer.stored_at_root or a.local is None or (before and producer.store_level is not None):
        return False
    consumer = by_name.get(target[0].name)
    return consumer is not None and b.comp is not consumer.comp and b.comp.storage_owner is not producer and \
        b.loops[:a.prefix_depth] == a.loops[:a.prefix_depth] and runs_inside(b.comp, consumer, a.prefix_depth - 1)


def _same_loops(a, b, n):
    """Pairs of instances of statements a and b with the same values of their first n loops."""
    at_a = a.loop_map.project_out(isl.dim_type.out, n, len(a.loops) - n).reset_tuple_id(isl.dim_type.out)
    at_b = b.loop_map.project_out(isl.dim_type.out, n, len(b.loops) - n).reset_tuple_id(isl.dim_type.out)
    return at_a.apply_range(at_b.reverse())


def _same_prefix(space, n):
    m = isl.Map.universe(space)
    for i in range(n):
        m = m.equate(isl.dim_type.in_, i, isl.dim_type.out, i)
    return m


def ordering_violations(stmts, deps, function, context, checked=None):
    """(kind, dependence map, witness) for every dependence the schedule runs backwards (`checked`:
    `checked_pairs` of the same arguments, where the caller has them)."""
    out = []
    if checked is None:
        checked = checked_pairs(stmts, deps, function, context)
    for (kind, m, ts, tk, pairs), text in zip(checked, checked.texts()):
        split = _fixed_split(ts, tk)
        if split is not None and split[1] < 0:
            continue    # every source time runs before every sink time
        key = text + ("in order",)
        if _HOLDS.get(key):
            continue
        lex_ge = isl.Map.lex_ge(ts.get_space().range())
        backwards = ts.apply_range(lex_ge).apply_range(tk.reverse())
        bad = pairs.intersect(backwards.intersect_params(context))
        what = (f"the schedule runs a {kind} dependence from {m.get_tuple_name(isl.dim_type.in_)} to "
                f"{m.get_tuple_name(isl.dim_type.out)} backwards")
        if bad.is_empty():
            _HOLDS.put(key, True)     # (what holds only for the function's exact sizes is checked each time)
        elif not (bad := function.with_exact_sizes(bad, what)).is_empty():
            out.append((kind, m, bad))
    return out


def tag_violations(stmts, deps, function, context, checked=None):
    """(statement, loop, kind, dependence map, witness) for tagged loops that carry a dependence."""
    if checked is None:
        checked = checked_pairs(stmts, deps, function, context)
    out = []
    for s in stmts:
        for k, loop in enumerate(s.loops):
            tag = s.tags.get(loop)
            if not tag or tag[0] not in CONCURRENT_KINDS:
                continue
            p = 2 * k + 1
            for (kind, m, ts, tk, pairs), text in zip(checked, checked.texts()):
                split = _fixed_split(ts, tk)
                if split is not None and split[0] < p:
                    continue    # the two run in different iterations of an outer loop, or outside it
                key = text + ("not carried", p, tuple(s.betas[:k + 1]))
                if _HOLDS.get(key):
                    continue
                carried = carried_at(ts.get_space().range(), p, s.betas[:k + 1])
                bad = pairs.intersect(ts.apply_range(carried).apply_range(tk.reverse()).intersect_params(context))
                what = (f"loop {loop} of {s.name} ({tag[0]}) carries a {kind} dependence from "
                        f"{m.get_tuple_name(isl.dim_type.in_)} to {m.get_tuple_name(isl.dim_type.out)}")
                if bad.is_empty():
                    _HOLDS.put(key, True)
                elif not (bad := function.with_exact_sizes(bad, what)).is_empty():
                    out.append((s, loop, tag[0], kind, m, bad))
                    break
    return out


def _fixed_split(ts, tk):
    """(dimension, sign) of the first time dimension where the times of `ts` and `tk` are each one
    constant and differ (sign -1 where ts's is the smaller), after dimensions where they are one
    same constant; None where a dimension before such a split varies. isl's plain check only: a
    statement's sequence positions are constants of its time map, which decides most pairs
    without composing maps."""
    for d in range(min(ts.dim(isl.dim_type.out), tk.dim(isl.dim_type.out))):
        a = ts.plain_get_val_if_fixed(isl.dim_type.out, d)
        b = tk.plain_get_val_if_fixed(isl.dim_type.out, d)
        if a.is_nan() or b.is_nan():
            return None
        a, b = a.to_python(), b.to_python()
        if a != b:
            return d, (-1 if a < b else 1)
    return None


def band_violations(stmts, deps, function, context, checked=None):
    """What a dependence forbids in the parametric tiles of the schedule (parametric_tiles.violations)."""
    if not any(s.comp.parametric_bands for s in stmts):
        return []
    if checked is None:
        checked = checked_pairs(stmts, deps, function, context)
    return parametric_tiles.violations(stmts, checked, context)


def carried_at(time_space, p, betas):
    """Pairs of times in the same iteration of the loops above dimension p (and in that loop's nest),
    different at p."""
    return _carried_at(time_space.dim(isl.dim_type.set), p, tuple(betas))


@functools.lru_cache(maxsize=4096)
def _carried_at(n, p, betas):
    # (isl parses the map's text: a check of every concurrent loop against every dependence asks
    # for the same few maps thousands of times)
    a = [f"a{i}" for i in range(n)]
    b = [f"b{i}" for i in range(n)]
    cons = [f"a{i} = b{i}" for i in range(p)]
    cons += [f"a{2 * j} = {beta}" for j, beta in enumerate(betas)]
    cons.append(f"a{p} != b{p}")
    return isl.Map(f"{{ [{', '.join(a)}] -> [{', '.join(b)}] : {' and '.join(cons)} }}")


def recompute_violations(stmts, deps):
    """(source statement, sink statement, dependence, witness) where a recomputed producer's update
    reads a value of the producer that its recomputation does not produce (e.g. a scan reaching
    across the tile edge): those reads would see another tile's data, or none."""
    out = []
    by_name = {s.name: s for s in stmts}
    for m in union_maps(deps.raw):
        a = by_name.get(m.get_tuple_name(isl.dim_type.in_))
        b = by_name.get(m.get_tuple_name(isl.dim_type.out))
        if a is None or b is None or not a.recomputed_with(b):
            continue
        n_prefix = a.prefix_depth
        # each sink instance (prefix, y) -> the source instances (prefix, x) it reads from
        original = isl.Set.universe(a.to_original.get_space().range())
        lifted = isl.Map.from_domain_and_range(original, isl.Set.universe(a.points.get_space()))
        lift = lifted.get_space()
        for i in range(lift.dim(isl.dim_type.in_)):
            lifted = lifted.equate(isl.dim_type.in_, i, isl.dim_type.out, n_prefix + i)
        sources = b.to_original.apply_range(m.reverse()).apply_range(lifted)
        sources = sources.intersect(_same_prefix(sources.get_space(), n_prefix))
        missing = sources.subtract_range(a.points)
        if not missing.is_empty():
            out.append((a, b, m, missing))
    return out


def window_violations(stmts, context):
    """(producer statement, consumer statement, witness) where a producer stored at an outer loop
    of its consumer (store_at) does not compute a value a consumer iteration reads in that
    iteration or an earlier one of the same storage-loop iteration: the read would find the
    buffer without it."""
    out = []
    by_comp = {s.comp: s for s in stmts}
    for a in stmts:
        producer = a.comp
        if producer.store_level is None or producer.compute_at_target is None:
            continue
        b = by_comp[producer.compute_at_target[0]]
        n = a.prefix_depth
        depth = a.local.depth if a.local is not None else n
        if depth == n:
            continue
        concurrent = [loop for loop in b.loops[depth:n]
                      if b.tags.get(loop, (LoopKind.SERIAL, 1))[0] not in (LoopKind.SERIAL, LoopKind.UNROLL)]
        if concurrent:
            # iterations that reuse each other's values must run one after the other
            out.append((a, b, f"loop {concurrent[0]} is tagged {b.tags[concurrent[0]][0]}"))
            continue
        # producer instances as (prefix -> point), consumer reads as (its prefix -> point)
        dims = [f"d{i}" for i in range(a.domain.dim(isl.dim_type.set))]
        prefix_of = isl.Map(f"{{ {a.name}[{', '.join(dims)}] -> [{', '.join(dims[:n])}] }}").intersect_domain(a.domain)
        computed = prefix_of.reverse().apply_range(a.to_original)
        # what the consumer, and what runs inside its loops down to the compute level, read
        needed = None
        for r in stmts:
            if r is not b and not (r.comp is not producer and r.comp.storage_owner is not producer
                                   and r.loops[:n] == b.loops[:n] and runs_inside(r.comp, b, n - 1)):
                continue
            reads = reads_of(r.comp, producer, context)
            if reads is None:
                continue
            r_prefix = r.loop_map.project_out(isl.dim_type.out, n, r.loop_map.dim(isl.dim_type.out) - n)
            part = r_prefix.reset_tuple_id(isl.dim_type.out).reverse().apply_range(r.to_original.apply_range(reads))
            needed = part if needed is None else needed.union(part)
        if needed is None:
            continue
        needed = needed.reset_tuple_id(isl.dim_type.in_).gist_params(context).coalesce()
        computed = computed.reset_tuple_id(isl.dim_type.in_)
        # each value read is there if each is computed where it is first read (a window is built so):
        # a quick proof, where the difference below can take isl minutes on many pieces
        if first_needed(needed, depth).intersect_params(context).is_subset(computed):
            continue
        earlier = isl.Map.lex_ge(computed.get_space().domain())   # p -> p' with p' not after p
        for d in range(depth):
            earlier = earlier.equate(isl.dim_type.in_, d, isl.dim_type.out, d)
        # (without the constraints the context implies, which slow the difference many times)
        available = earlier.apply_range(computed).gist_params(context).coalesce()
        missing = needed.subtract(available).intersect_params(context)
        if not missing.is_empty():
            out.append((a, b, missing))
    return out


def check_gpu_nesting(stmts, function, context):
    """Raise ScheduleError for GPU tags that cannot form a launch, naming the command that tagged them."""
    bad = gpu_nesting_violations(stmts)
    if bad:
        s, why = bad[0]
        culprit = function._culprit(lambda st: any(v[0].name == s.name for v in gpu_nesting_violations(st)), context)
        raise ScheduleError(f"{s.name} cannot run on a GPU as tagged: {why} (loops {s.loops})"
                            + (f"; tagged by {culprit}" if culprit else ""))


def check(stmts, deps, function, context):
    """Raise IllegalScheduleError for the first dependence the schedule breaks, naming the command."""
    check_gpu_nesting(stmts, function, context)
    windows = window_violations(stmts, context)
    if windows:
        a, b, missing = windows[0]
        producer = a.comp
        why = missing if isinstance(missing, str) else (
            f"consumer loop values -> the point read, not computed so far in that iteration of "
            f"{producer.store_level}: {_witness(missing)}")
        raise IllegalScheduleError(
            f"{b.name} reuses values of {producer.name} computed in earlier iterations inside "
            f"{producer.store_level} ({producer.name}.store_at({producer.store_level})), but {why}; run those "
            f"loops in order, or store it at the compute level",
            source=a.name, sink=b.name, dependence=None if isinstance(missing, str) else missing,
            command=f"{producer.name}.store_at({producer.store_level})")
    outside = recompute_violations(stmts, deps)
    if outside:
        a, b, m, missing = outside[0]
        producer = a.comp.storage_owner
        consumer, level = producer.compute_at_target
        raise IllegalScheduleError(
            f"{b.name} reads values of {producer.name} that {producer.name}.compute_at({consumer.name}, {level}) "
            f"does not compute within one iteration of {level} (an instance of {b.name} -> the instance of "
            f"{a.name} it reads: {_witness(missing)}); compute {producer.name} "
            f"at an outer loop or at the root. Dependence: {_short(m)}",
            source=a.name, sink=b.name, dependence=m, command=f"{producer.name}.compute_at({consumer.name}, {level})")
    checked = checked_pairs(stmts, deps, function, context)
    violations = ordering_violations(stmts, deps, function, context, checked)
    if violations:
        kind, m, bad = violations[0]
        src, snk = m.get_tuple_name(isl.dim_type.in_), m.get_tuple_name(isl.dim_type.out)
        culprit = function._culprit(lambda st: any(
            v[0] == kind and v[1].get_tuple_name(isl.dim_type.in_) == src
            and v[1].get_tuple_name(isl.dim_type.out) == snk for v in ordering_violations(st, deps, function, context)), context)
        raise IllegalScheduleError(
            f"the schedule runs a {kind} dependence from {src} to {snk} backwards: "
            f"{_witness(bad)} must run in that order but no longer does"
            + (f"; broken by {culprit}" if culprit else "") + f". Dependence: {_short(m)}",
            source=src, sink=snk, dependence=m, command=culprit)
    banded = band_violations(stmts, deps, function, context, checked)
    if banded:
        parametric_tiles.raise_first(banded, _witness, _short)
    tagged = tag_violations(stmts, deps, function, context, checked)
    if tagged:
        s, loop, tag, kind, m, bad = tagged[0]
        src, snk = m.get_tuple_name(isl.dim_type.in_), m.get_tuple_name(isl.dim_type.out)
        culprit = function._culprit(lambda st: any(
            t[0].name == s.name and t[1] == loop for t in tag_violations(st, deps, function, context)), context)
        raise IllegalScheduleError(
            f"loop {loop} of {s.name} is tagged {tag} but carries a {kind} dependence from {src} to {snk} "
            f"({_witness(bad)} run in different iterations of it)"
            + (f"; broken by {culprit}" if culprit else "") + f". Dependence: {_short(m)}",
            source=src, sink=snk, dependence=m, command=culprit)


def gpu_nesting_violations(stmts):
    """(statement, what is wrong) for GPU tags that do not form a launch: block loops adjacent, thread
    loops adjacent and inside them, at most 3 of each (serial loops may run between the two bands)."""
    from .schedule import GPU_DIMS
    out = []
    for s in stmts:
        kinds = [s.tags.get(loop, ("serial", 1))[0] for loop in s.loops]
        for kind in ("gpu_block", "gpu_thread"):
            at = [k for k, t in enumerate(kinds) if t == kind]
            names = [s.loops[k] for k in at]
            if len(at) > GPU_DIMS:
                out.append((s, f"it has {len(at)} {kind} loops {names}; a launch has at most {GPU_DIMS}"))
            elif at and at != list(range(at[0], at[-1] + 1)):
                between = [s.loops[k] for k in range(at[0], at[-1]) if kinds[k] != kind]
                out.append((s, f"its {kind} loops {names} are not adjacent (loop {between[0]} runs between them)"))
        blocks = [k for k, t in enumerate(kinds) if t == "gpu_block"]
        threads = [k for k, t in enumerate(kinds) if t == "gpu_thread"]
        if threads and (not blocks or threads[0] < blocks[-1]):
            where = f"outside its block loop {s.loops[blocks[-1]]}" if blocks else "in no gpu_block loop"
            out.append((s, f"its gpu_thread loop {s.loops[threads[0]]} is {where}; thread loops run inside "
                           f"block loops"))
    return out


def _witness(bad):
    p = bad.sample()
    text = str(p)
    start, end = text.find("{"), text.rfind("}")
    return text[start + 1:end].strip() if start >= 0 else text


def _short(m, limit=300):
    text = str(m.coalesce())
    return text if len(text) <= limit else text[:limit] + " ...}"
