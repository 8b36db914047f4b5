"""What bounds a pipelined loop's initiation interval: the dependences among the statements it runs.

A loop tagged `pipeline(level, ii)` starts an iteration every `ii` cycles. A
value written in one iteration and read `d` iterations later must be ready by
then: along a cycle of dependences (a recurrence) with total distance `d`
through operations of total latency `L`, the interval is at least
`ceil(L / d)`. This module finds, exactly from the isl dependences, the
read-after-write edges among the statements inside each pipelined loop and
the smallest iteration distance of each (0 for a value used in the same
iteration); a back-end weighs the edges with the latencies of its operations
(see backends/hls/latency.py) and takes the cycles. Write-after-read and
write-after-write dependences only order memory operations and are not
edges here.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import islpy as isl

from .expr import Access, Expr, walk
from .layout import inline_reads, read_index, write_index


@dataclass
class Edge:
    """A value of `source` read by `sink` inside one pipelined loop, `distance` iterations later at the
    least (0: in the same iteration)."""

    source: str
    sink: str
    buffer: str
    distance: int
    #: the Access nodes of `expr` that read the value
    reads: tuple
    #: the sink's expression (inlined computations expanded), whose path from `reads` to the stored
    #: value is what the value goes through before the sink writes
    expr: Expr

    def describe(self) -> str:
        at = "in the same iteration" if self.distance == 0 else f"at distance {self.distance}"
        return f"{self.source} -> {self.sink} through {self.buffer} ({at})"


@dataclass
class PipelinedLoop:
    """A pipelined loop: its name, the statements it runs, the requested interval and the edges."""

    loop: str
    statements: list
    ii: int
    edges: list = field(default_factory=list)

    @property
    def key(self):
        """(statement, loop) pairs naming it, as the loop IR's `For.origin` does."""
        return {(s, self.loop) for s in self.statements}


def _same_nest(n_dims, p, betas):
    """Pairs of times equal on the dimensions before p, inside the nest the betas name."""
    a = [f"a{i}" for i in range(n_dims)]
    b = [f"b{i}" for i in range(n_dims)]
    cons = [f"a{i} = b{i}" for i in range(p)] + [f"a{2 * j} = {beta}" for j, beta in enumerate(betas)]
    return isl.Map(f"{{ [{', '.join(a)}] -> [{', '.join(b)}] : {' and '.join(cons)} }}")


def _min_at(deltas, p, context):
    """The smallest value of dimension p over `deltas` (every size), or None when it is empty."""
    s = deltas.intersect_params(context)
    if s.is_empty():
        return None
    n = s.dim(isl.dim_type.set)
    s = s.project_out(isl.dim_type.set, p + 1, n - p - 1).project_out(isl.dim_type.set, 0, p)
    s = s.project_out(isl.dim_type.param, 0, s.dim(isl.dim_type.param))
    return s.dim_min_val(0).to_python()


def _reads_of_buffer(comp, buffer):
    """The expression of `comp` with its reads inlined, and its Access nodes that read `buffer`."""
    expr = inline_reads(comp.expr)
    reads = []
    for n in walk(expr):
        if isinstance(n, Access) and not getattr(n.target, "inlined", False):
            buf, _ = read_index(n.target, n.indices)
            if buf is buffer:
                reads.append(n)
    return expr, tuple(reads)


def pipelined_loops(stmts, deps, function, context) -> list:
    """The pipelined loops of the scheduled statements, each with its dependence edges."""
    from .legality import checked_pairs
    groups = {}
    for s in stmts:
        for k, loop in enumerate(s.loops):
            tag = s.tags.get(loop)
            # (tags are by name: a compute_at statement repeats its consumer's loop names)
            if tag and tag[0] == "pipeline" and s.loops.index(loop) == k:
                key = (k, tuple(s.betas[:k + 1]))
                groups.setdefault(key, PipelinedLoop(loop, [], tag[1]))
    if not groups:
        return []
    checked = [c for c in checked_pairs(stmts, deps, function, context) if c[0] == "read-after-write"]
    by_name = {s.name: s for s in stmts}
    out = []
    for (k, betas), pl in groups.items():
        inside = [s for s in stmts if len(s.loops) > k and tuple(s.betas[:k + 1]) == betas]
        pl.statements = [s.name for s in inside]
        names = set(pl.statements)
        p = 2 * k + 1
        for _, m, ts, tk, pairs in checked:
            src, snk = m.get_tuple_name(isl.dim_type.in_), m.get_tuple_name(isl.dim_type.out)
            if src not in names or snk not in names:
                continue
            times = ts.reverse().apply_range(pairs).apply_range(tk)
            times = times.intersect(_same_nest(times.dim(isl.dim_type.in_), p, betas))
            deltas = times.deltas()
            n = deltas.dim(isl.dim_type.set)
            buffer, _ = write_index(by_name[src].comp)
            expr, reads = _reads_of_buffer(by_name[snk].comp, buffer)
            within = _min_at(_at_least(deltas, p, n, 0, 0), p, context)
            carried = _min_at(_at_least(deltas, p, n, 1), p, context)
            for d in (within, carried):
                if d is not None:
                    pl.edges.append(Edge(src, snk, buffer.name, d, reads, expr))
        out.append(pl)
    return out


def _at_least(deltas, p, n, lo, hi=None):
    """The part of `deltas` whose dimension p lies in [lo, hi] (hi None: no upper bound)."""
    dims = ", ".join(f"d{i}" for i in range(n))
    cond = f"d{p} >= {lo}" + (f" and d{p} <= {hi}" if hi is not None else "")
    return deltas.intersect(isl.Set(f"{{ [{dims}] : {cond} }}").align_params(deltas.get_space()))
