"""A dataflow region: stages that run at the same time, connected by FIFOs (`Function.dataflow`).

Each listed computation is a stage (a process in hardware); a computation
that is not listed belongs to the stage of the one it is computed at. Every
process runs the function's loops with only its own statements, so values
cross between stages as a stream in the producer's order, and a consumer
gets them in that order:

* 'stream': a producer at the root whose consumer reads each element exactly
  once, in the order the producer writes them (checked exactly with isl).
  The buffer disappears: the FIFO carries the values.
* 'window': a producer computed at its consumer's loop (compute_at, with
  store_root/store_at and storage_fold for a sliding window: a line buffer).
  Both processes run the consumer's loops; where the producer's statement
  stores, the producer pushes the value and the consumer pops it into its
  tile or line buffer, which stays in the consumer's process.

Anything else shared between stages (a buffer read twice, out of order, by
two stages, an output read by another stage) is refused with the reason.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .dependences import access_map
from .errors import ScheduleError
from .expr import Access, walk
from .layout import inline_reads, read_index, write_index


@dataclass
class Channel:
    """A FIFO carrying the values of `buffer` from stage `producer` to stage `consumer`."""

    buffer: str
    producer: int
    consumer: int
    kind: str      # 'stream' or 'window' (see the module docstring)


@dataclass
class DataflowPlan:
    """The stages (names, in order, each with its computations) and the channels between them."""

    stages: list                                     # [(stage name, [computation names])]
    writer: dict = field(default_factory=dict)       # buffer name -> stage that writes it
    channels: list = field(default_factory=list)

    def channel(self, buffer_name):
        """The channel carrying `buffer_name`, or None."""
        return next((c for c in self.channels if c.buffer == buffer_name), None)


def _refuse(message):
    raise ScheduleError(f"dataflow: {message}")


def _stage_of(comp, listed, seen=()):
    owner = comp.storage_owner
    if owner in listed:
        return listed.index(owner)
    if owner.compute_at_target is not None and owner not in seen:
        return _stage_of(owner.compute_at_target[0], listed, seen + (owner,))
    _refuse(f"{owner.name} belongs to no stage: list it in f.dataflow([...]) or compute it at a listed "
            f"computation's loop (compute_at)")


def _buffers_read(comp):
    """(buffer, Access) of every read of a computation (inlined computations expanded)."""
    out = []
    exprs = [comp.expr] + ([comp.predicate] if comp.predicate is not None else [])
    for e in exprs:
        for n in walk(inline_reads(e)):
            if isinstance(n, Access):
                out.append((read_index(n.target, n.indices)[0], n))
    return out


def plan(function, stmts, context) -> DataflowPlan:
    """Check the region `function.dataflow(...)` asked for and say how each stage's values travel."""
    listed = list(function._dataflow)
    comps = [c for c in function.computations if not c.inlined]
    stage = {c: _stage_of(c, listed) for c in comps}
    result = DataflowPlan([(c.name, [x.name for x in comps if stage[x] == k]) for k, c in enumerate(listed)])
    writers = {}
    for c in comps:
        buf, _ = write_index(c)
        writers.setdefault(buf, set()).add(stage[c])
    for buf, stages in writers.items():
        if len(stages) > 1:
            _refuse(f"the buffer {buf.name} is written by stages {sorted(listed[k].name for k in stages)}; "
                    f"a buffer belongs to one stage")
        result.writer[buf.name] = next(iter(stages))
    readers = {}
    for c in comps:
        for buf, node in _buffers_read(c):
            if buf in writers and stage[c] != result.writer[buf.name]:
                readers.setdefault(buf, {}).setdefault(c, []).append(node)
    by_comp = {s.comp: s for s in stmts}
    for buf, by_reader in readers.items():
        producer = result.writer[buf.name]
        consumers = {stage[c] for c in by_reader}
        names = sorted(c.name for c in by_reader)
        if len(consumers) > 1:
            _refuse(f"{buf.name} is read by {names} in different stages; a FIFO has one consumer")
        consumer = next(iter(consumers))
        if consumer < producer:
            _refuse(f"{buf.name} is written by stage {listed[producer].name} and read by stage "
                    f"{listed[consumer].name}, listed before it; list producers first")
        if buf.kind == "output":
            _refuse(f"the output {buf.name} is read by another stage ({names}); compute the value twice or "
                    f"make a temporary stage that feeds both")
        owners = {c.storage_owner for c in comps if write_index(c)[0] is buf}
        owner = next(iter(owners))
        if len(owners) > 1 or owner.updates or owner.predicate is not None:
            _refuse(f"{buf.name} is written by updates or under a condition; a FIFO carries each element once: "
                    f"give the values that cross stages a computation of their own")
        if owner.compute_at_target is not None:
            if stage[owner.compute_at_target[0]] != consumer:
                _refuse(f"{owner.name} is computed at {owner.compute_at_target[0].name}, which is not in the "
                        f"stage that reads it")
            result.channels.append(Channel(buf.name, producer, consumer, "window"))
            continue
        if len(by_reader) > 1:
            _refuse(f"{buf.name} is read by {names}; a FIFO between stages has one reading statement")
        (reader, nodes), = by_reader.items()
        _check_stream(buf, by_comp[owner], by_comp[reader], reader, nodes, context)
        result.channels.append(Channel(buf.name, producer, consumer, "stream"))
    return result


def _check_stream(buf, prod, cons, reader, nodes, context):
    """Refuse a root producer whose consumer does not read each element once, in the order written."""
    why = f"{cons.name} reads {buf.name}"
    fix = (f"; compute {prod.name} at {cons.name}'s loop with store_root()/storage_fold for a line buffer, "
           f"or keep both in one stage")
    if reader.predicate is not None:
        _refuse(f"{why} under a condition on data{fix}")
    indices = {tuple(str(i) for i in read_index(n.target, n.indices)[1]) for n in nodes}
    if len(indices) > 1:
        _refuse(f"{why} at {len(indices)} different indices in one instance{fix}")
    _, idx = read_index(nodes[0].target, nodes[0].indices)
    reads, exact = access_map(reader, buf, idx, context)
    wbuf, widx = write_index(prod.comp)
    writes, wexact = access_map(prod.comp, wbuf, widx, context)
    if not (exact and wexact):
        _refuse(f"{why} or {prod.name} writes it at an index that is not affine{fix}")
    reads = cons.to_original.apply_range(reads).intersect_params(context)
    writes = prod.to_original.apply_range(writes).intersect_params(context)
    if not writes.is_injective():
        _refuse(f"{prod.name} writes elements of {buf.name} more than once{fix}")
    if not reads.is_injective():
        _refuse(f"{why} elements more than once{fix}")
    if not reads.range().is_equal(writes.range()):
        _refuse(f"{why} only part of what {prod.name} writes (every value pushed must be popped){fix}")
    source = reads.apply_range(writes.reverse())                 # consumer instance -> producer instance
    consumer_before = cons.time.lex_lt_map(cons.time)
    producer_before = source.apply_range(prod.time)
    producer_before = producer_before.lex_lt_map(producer_before)
    if not consumer_before.intersect_params(context).is_subset(producer_before):
        _refuse(f"{why} in another order than {prod.name} writes it{fix}")
