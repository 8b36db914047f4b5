"""The HLS kernel's report: per loop, its trip count, pipelining, initiation interval and latency; per
buffer, where it lives and an estimate of its block RAM. Every number is an estimate.

Initiation interval of a pipelined loop: at least the requested one; at least
`ceil(L / d)` for every cycle of dependences among its statements (middleend/
pipelining.py gives the edges and their exact minimum distances `d`; `L` adds
the latencies of backends/hls/latency.py along the path from each read of the
carried value to the stored one); and at least what memory ports allow: each
bank of an on-chip RAM serves two accesses a cycle (a partitioned array has a
bank per part, accesses assumed spread evenly; a completely partitioned one
is registers), an m_axi port one read and one write, a FIFO one each. Inner
loops of a pipelined loop are unrolled into its body, as Vitis does.

Latency in cycles: a pipelined loop takes (trip - 1) * II + depth (its body's
statements one after the other, each its longest path of loads and
operations plus a store); a serial loop trip * (body + 1); an unrolled or
vector loop runs its copies side by side; a dataflow region takes its
slowest stage plus the FIFOs' fill. Trip counts come from the loop IR's bounds
(affine in the sizes and outer loops) for the sizes given; where an inner
loop's bounds change with an outer loop, the outer loop's iterations are
counted one by one (or sampled, over 64 of them).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import networkx as nx

from mascarpone.backends.common.affine import mentions
from mascarpone.backends.common.evaluate import evaluate
from mascarpone.middleend.expr import Access, pseudo_c, walk
from mascarpone.middleend.loopir import Allocate, Block, For, If, Store, own_exprs, walk_stmts

from . import latency as LAT
from . import processes as P
from .placement import ARGUMENT, OFF_CHIP, ON_CHIP, STREAM, place, shape_constants, temporaries

#: enumerate at most this many iterations of a loop whose inner bounds depend on it; sample beyond
ENUMERATE = 64
SAMPLES = 16
#: block RAM 18Kb shapes (depth, width); arrays of at most this many bits per bank are LUTs or registers
BRAM18K_SHAPES = ((16384, 1), (8192, 2), (4096, 4), (2048, 9), (1024, 18), (512, 36))
SMALL_BITS = 1024


@dataclass
class LoopReport:
    """One loop of the loop IR."""

    var: str
    origin: str          # the scheduled loops it runs: "computation.loop, ..."
    level: int           # nesting depth
    kind: str
    trip: float | None   # iterations per entry (the average when it varies)
    entries: float | None
    pipelined: bool
    requested_ii: int | None = None
    ii: int | None = None
    limit: str = ""      # what sets the achievable II
    latency: float | None = None   # cycles over all entries
    in_pipeline: bool = False      # unrolled into an enclosing pipelined loop

    @property
    def iterations(self):
        return None if self.trip is None or self.entries is None else self.trip * self.entries


@dataclass
class BufferReport:
    name: str
    where: str
    shape: list
    elements: int | None
    bits: int
    partitions: list
    banks: int
    bram18k: int | None


@dataclass
class Report:
    kernel: str
    sizes: dict
    loops: list = field(default_factory=list)
    buffers: list = field(default_factory=list)
    cycles: float | None = None
    notes: list = field(default_factory=list)

    def loop(self, name) -> LoopReport:
        """The first loop whose variable, or one of whose scheduled loops ("comp.loop"), is `name`."""
        for r in self.loops:
            if r.var == name or name in r.origin.split(", "):
                return r
        raise KeyError(f"no loop {name!r} in {self.kernel}; loops: {[r.var for r in self.loops]}")

    def buffer(self, name) -> BufferReport:
        for b in self.buffers:
            if b.name == name:
                return b
        raise KeyError(f"no buffer {name!r} in {self.kernel}")

    def pipelined(self) -> list:
        return [r for r in self.loops if r.pipelined]

    def __str__(self):
        def num(v):
            return "?" if v is None else (f"{v:.0f}" if float(v).is_integer() else f"{v:.1f}")
        sizes = ", ".join(f"{k}={v}" for k, v in self.sizes.items()) or "none given"
        lines = [f"HLS report of {self.kernel} (estimates; sizes: {sizes})",
                 f"estimated latency: {num(self.cycles)} cycles", "",
                 f"{'loop':<28}{'trip':>10}{'entries':>10}  {'pipelined':<10}{'II (asked/got)':<16}"
                 f"{'latency':>12}  limited by"]
        for r in self.loops:
            name = "  " * r.level + r.var + (f" ({r.origin})" if r.origin and r.origin != r.var else "")
            piped = "yes" if r.pipelined else ("unrolled" if r.in_pipeline else "no")
            ii = f"{r.requested_ii}/{r.ii}" if r.pipelined else ""
            lines.append(f"{name[:27]:<28}{num(r.trip):>10}{num(r.entries):>10}  {piped:<10}{ii:<16}"
                         f"{num(r.latency):>12}  {r.limit}")
        lines += ["", f"{'buffer':<20}{'where':<20}{'shape':<18}{'bits':>5}{'banks':>7}{'BRAM18K':>9}  partitions"]
        for b in self.buffers:
            shape = "x".join(map(str, b.shape))
            parts = ", ".join(f"dim {d} {k}" + (f" {f}" if f else "") for d, f, k in b.partitions)
            lines.append(f"{b.name:<20}{b.where:<20}{shape[:17]:<18}{b.bits:>5}{b.banks:>7}"
                         f"{num(b.bram18k):>9}  {parts}")
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)


def _eval(e, env):
    try:
        return evaluate(e, env)
    except (KeyError, Exception):  # a size not given, or data: unknown
        return None


def _trip(f, env):
    lo, hi = _eval(f.lo, env), _eval(f.hi, env)
    return None if lo is None or hi is None else max(hi - lo, 0)


class _Estimator:
    def __init__(self, lowered, placement, sizes):
        self.low = lowered
        self.where = placement
        self.env = dict(sizes)
        for name, value in lowered.derived:
            v = _eval(value, self.env)
            if v is not None:
                self.env[name] = v
        self.rows = {}        # id(For) -> LoopReport
        self.order = []
        self.pipelines = list(lowered.pipelines)
        self.notes = []
        self._ii = {}

    # loads ---------------------------------------------------------------------------------------
    def load(self, access):
        where = self.where.get(access.target.name)
        return LAT.LOAD_OFF_CHIP if where in (ARGUMENT, OFF_CHIP) else LAT.LOAD_ON_CHIP

    def store_depth(self, s):
        if isinstance(s, Store):
            return LAT.depth(s.value, self.load) + LAT.STORE
        if isinstance(s, P.StreamWrite):
            return LAT.depth(s.value, self.load) + 1
        return 1   # a FIFO read

    # rows ------------------------------------------------------------------------------------------
    def row(self, f, level, in_pipeline):
        r = self.rows.get(id(f))
        if r is None:
            origin = ", ".join(f"{c}.{loop}" for c, loop in f.origin)
            r = LoopReport(f.var, origin, level, f.kind, None, 0.0, f.kind == "pipeline" and not in_pipeline,
                           in_pipeline=in_pipeline)
            r._iters = 0.0
            r._lat = 0.0
            r._known = True
            self.rows[id(f)] = r
            self.order.append(r)
        return r

    # cycles ----------------------------------------------------------------------------------------
    def cycles(self, s, env, level=0, weight=1.0):
        """Cycles of `s` once, with the loop variables of `env`; records loop rows (`weight`: how many
        entries this evaluation stands for)."""
        if s is None:
            return 0
        if isinstance(s, (Store, P.StreamWrite, P.StreamRead)):
            return self.store_depth(s)
        if isinstance(s, Block):
            parts = [self.cycles(c, env, level, weight) for c in s.body]
            return None if any(p is None for p in parts) else sum(parts)
        if isinstance(s, Allocate):
            return self.cycles(s.body, env, level, weight)
        if isinstance(s, If):
            cond = _eval(s.cond, env)
            if cond is not None:
                return self.cycles(s.then if cond else s.else_, env, level, weight)
            a = self.cycles(s.then, env, level, weight)
            b = self.cycles(s.else_, env, level, weight)
            return None if a is None or b is None else max(a, b)
        if isinstance(s, For):
            return self._for(s, env, level, weight)
        return 0

    def _for(self, f, env, level, weight):
        r = self.row(f, level, False)
        trip = _trip(f, env)
        if trip is None:
            r._known = False
            self._unknown(f, env, level)
            return None
        r.entries += weight
        r._iters += weight * trip
        if f.kind == "pipeline":
            ii, limit = self.ii(f, env)
            r.requested_ii, r.ii, r.limit = f.factor, ii, limit
            depth = self.pipeline_depth(f, env, level)
            total = 0 if trip == 0 else (trip - 1) * ii + depth + 1
        else:
            body = self._body_cycles(f, trip, env, level, weight)
            if body is None:
                r._known = False
                return None
            copies = f.factor if f.kind in ("unroll", "vector") and f.factor > 1 else 1
            total = math.ceil(trip / copies) * (body + 1)
        r._lat += weight * total
        return total

    def _body_cycles(self, f, trip, env, level, weight):
        """Cycles of one iteration of `f`'s body, averaged over its iterations where they differ."""
        varies = any(mentions(e, f.var) for st in walk_stmts(f.body) if isinstance(st, (For, If))
                     for e in own_exprs(st))
        lo = _eval(f.lo, env)
        if not varies or trip == 0:
            return self.cycles(f.body, dict(env, **{f.var: lo}), level + 1, weight * max(trip, 1)) \
                if trip else self._unvisited(f.body, level + 1)
        if trip <= ENUMERATE:
            values = range(lo, lo + trip)
        else:
            values = sorted({lo + (trip - 1) * k // (SAMPLES - 1) for k in range(SAMPLES)})
        each = weight * trip / len(values)
        parts = [self.cycles(f.body, dict(env, **{f.var: v}), level + 1, each) for v in values]
        return None if any(p is None for p in parts) else sum(parts) / len(parts)

    def _unknown(self, f, env, level):
        """Rows for `f` and the loops under it when its trip count is not known: pipelined loops still get
        their initiation interval (it does not depend on the sizes)."""
        for inner, depth in _loops_with_depth(f, level):
            r = self.row(inner, depth, False)
            r._known = False
            if inner.kind == "pipeline" and r.pipelined:
                ii, limit = self.ii(inner, env)
                r.requested_ii, r.ii, r.limit = inner.factor, ii, limit
                for sub, d in _loops_with_depth(inner.body, depth + 1):
                    row = self.row(sub, d, True)
                    row.pipelined, row.in_pipeline = False, True

    def _unvisited(self, s, level):
        for st in _loops_under(s):
            self.row(st, level, False)
        return 0

    def pipeline_depth(self, f, env, level):
        """Cycles of one iteration of a pipelined loop: its statements in sequence, inner loops unrolled."""
        for inner, depth in _loops_with_depth(f.body, level + 1):
            r = self.row(inner, depth, True)
            r.pipelined = False
            r.in_pipeline = True
            trip = _trip(inner, env)
            if trip is not None:
                r.trip, r.entries = trip, None
        return sum(self.store_depth(st) for st in walk_stmts(f.body)
                   if isinstance(st, (Store, P.StreamWrite, P.StreamRead)))

    # initiation interval ------------------------------------------------------------------------
    def ii(self, f, env):
        """(achievable II, what limits it) of the pipelined loop `f`."""
        key = (id(f), tuple(sorted(env.items())) if _sites_vary(f) else None)
        if key not in self._ii:
            self._ii[key] = self._compute_ii(f, env)
        return self._ii[key]

    def _compute_ii(self, f, env):
        best, why = f.factor, "requested"
        for bound, reason in [self.recurrence(f), self.ports(f, env)]:
            if bound > best:
                best, why = bound, reason
        return best, why

    def recurrence(self, f):
        """(II bound, description) from the cycles of dependence edges among the loop's statements."""
        keys = set(f.origin)
        loop = next((pl for pl in self.pipelines if pl.key & keys), None)
        if loop is None or not loop.edges:
            return 1, ""
        graph = nx.MultiDiGraph()
        for e in loop.edges:
            graph.add_edge(e.source, e.sink, edge=e, cycles=LAT.path_from(e.expr, e.reads) or 0)
        best, why = 1, ""
        for cycle in nx.simple_cycles(nx.DiGraph(graph)):
            steps = list(zip(cycle, cycle[1:] + cycle[:1]))
            choices = [list(graph.get_edge_data(a, b).values()) for a, b in steps]
            for combo in itertools.product(*choices):
                distance = sum(c["edge"].distance for c in combo)
                if distance <= 0:
                    continue
                cycles = sum(c["cycles"] for c in combo)
                bound = max(1, math.ceil(cycles / distance))
                if bound > best:
                    path = "; ".join(c["edge"].describe() for c in combo)
                    best, why = bound, f"recurrence {path}: {cycles} cycles over distance {distance}"
        return best, why

    def ports(self, f, env):
        """(II bound, description) from the accesses one iteration makes to each memory or port (the
        branches of a condition are exclusive: the busier one counts)."""
        counts = _accesses(f.body, env)
        best, why = 1, ""
        for (fifo, name), (reads, writes, buf) in counts.items():
            where = STREAM if fifo else self.where.get(name)
            if where in (ARGUMENT, OFF_CHIP):
                bound = max(math.ceil(reads / LAT.MAXI_READS), math.ceil(writes / LAT.MAXI_WRITES))
                what = f"m_axi port of {name}: {reads} reads and {writes} writes per iteration"
            elif where == STREAM:
                bound = max(reads, writes)
                what = f"FIFO {name}: {max(reads, writes)} accesses per iteration"
            else:
                banks, registers = _banks(buf)
                if registers:
                    continue
                used = max(1, min(banks, reads + writes))
                bound = math.ceil((reads + writes) / (used * LAT.RAM_PORTS))
                what = (f"{name}: {reads + writes} accesses per iteration on {banks} bank(s) of "
                        f"{LAT.RAM_PORTS} ports")
            if bound > best:
                best, why = bound, what
        return best, why


def _accesses(s, env, unrolled=()):
    """{(is a FIFO, buffer name): [reads, writes, buffer]} of one iteration of a pipelined body: inner
    loops (`unrolled`: (variable, trip count) pairs) are unrolled, an access counting once per value of
    the unrolled variables its indices use; of two exclusive branches, the busier one counts."""
    counts = {}

    def add(name, r, w, buf):
        c = counts.setdefault(name, [0, 0, buf])
        c[0] += r
        c[1] += w

    def copies(indices):
        return math.prod(trip for var, trip in unrolled if any(mentions(i, var) for i in indices))

    if isinstance(s, (Store, P.StreamWrite)):
        seen = set()
        exprs = [s.value] + (list(s.indices) if isinstance(s, Store) else [])
        for e in exprs:
            for n in walk(e):
                if isinstance(n, Access):
                    key = (n.target.name, tuple(pseudo_c(i) for i in n.indices))
                    if key not in seen:
                        seen.add(key)
                        add((False, n.target.name), copies(n.indices), 0, n.target)
        if isinstance(s, Store):
            add((False, s.buffer.name), 0, copies(s.indices), s.buffer)
        else:
            add((True, s.stream), 0, math.prod(t for _, t in unrolled), None)
    elif isinstance(s, P.StreamRead):
        add((True, s.stream), math.prod(t for _, t in unrolled), 0, None)
    elif isinstance(s, Block):
        for c in s.body:
            for name, (r, w, buf) in _accesses(c, env, unrolled).items():
                add(name, r, w, buf)
    elif isinstance(s, If):
        branches = [_accesses(b, env, unrolled) for b in (s.then, s.else_) if b is not None]
        for name in set().union(*branches):
            r = max(b.get(name, [0, 0])[0] for b in branches)
            w = max(b.get(name, [0, 0])[1] for b in branches)
            buf = next(b[name][2] for b in branches if name in b)
            add(name, r, w, buf)
    elif isinstance(s, Allocate):
        counts = _accesses(s.body, env, unrolled)
    elif isinstance(s, For):
        trip = _trip(s, env)
        counts = _accesses(s.body, env, unrolled + ((s.var, trip if trip is not None else 1),))
    return counts


def _sites_vary(f):
    """Whether the inner loops of a pipelined loop have bounds that depend on outer loops."""
    return any(isinstance(st, For) for st in walk_stmts(f.body))


def _loops_under(s):
    return [st for st in walk_stmts(s) if isinstance(st, For)]


def _loops_with_depth(s, level):
    if isinstance(s, For):
        yield s, level
        yield from _loops_with_depth(s.body, level + 1)
    elif isinstance(s, Block):
        for c in s.body:
            yield from _loops_with_depth(c, level)
    elif isinstance(s, If):
        yield from _loops_with_depth(s.then, level)
        if s.else_ is not None:
            yield from _loops_with_depth(s.else_, level)
    elif isinstance(s, Allocate):
        yield from _loops_with_depth(s.body, level)


def _banks(buffer):
    """(banks, whether every element is a register) of an on-chip buffer's partitioning."""
    dims = shape_constants(buffer) or []
    banks, complete = 1, 0
    for dim, factor, kind in buffer.partitions:
        extent = dims[dim] if dim < len(dims) else 1
        if kind == "complete":
            banks *= max(extent, 1)
            complete += 1
        else:
            banks *= max(1, min(factor, extent))
    return banks, bool(dims) and complete == len(dims)


def bram18k(bits, elements, banks, registers) -> int:
    """Block RAMs of 18Kb for `elements` of `bits` bits over `banks` banks (0: LUTs or registers)."""
    if registers or elements == 0:
        return 0
    per_bank = math.ceil(elements / banks)
    if per_bank * bits <= SMALL_BITS:
        return 0
    one = min(math.ceil(bits / width) * math.ceil(per_bank / depth) for depth, width in BRAM18K_SHAPES)
    return one * banks


def build(lowered, sizes=None) -> Report:
    """The report of `lowered` for `sizes` ({name: value}; the fixed sizes by default)."""
    sizes = dict(lowered.fixed_params, **(sizes or {}))
    unknown = sorted(set(sizes) - set(lowered.params))
    if unknown:
        from mascarpone.middleend.errors import ArgumentError
        raise ArgumentError(f"{lowered.name} has no size(s) {unknown}; its sizes are {lowered.params}")
    where = place(lowered)
    est = _Estimator(lowered, where, sizes)
    body = lowered.body
    rep = Report(lowered.name, {p: sizes[p] for p in lowered.params if p in sizes})
    if lowered.dataflow is not None:
        stages = [est.cycles(proc.body, est.env) for proc in P.split(lowered)]
        if any(c is None for c in stages):
            rep.cycles = None
        else:
            rep.cycles = max(stages, default=0) + (len(stages) - 1) * 2
        rep.notes.append(f"dataflow region of {len(stages)} stages (" + ", ".join(
            f"{name}: {'?' if c is None else round(c)}" for (name, _), c in zip(lowered.dataflow.stages, stages))
            + " cycles): the slowest stage plus the FIFOs' fill")
    else:
        rep.cycles = est.cycles(body, est.env)
    for r in est.order:
        if r.in_pipeline:
            continue
        if r._known and r.entries:
            r.trip = r._iters / r.entries
            r.latency = r._lat if not r.in_pipeline else None
        elif not r._known:
            r.entries = None
    rep.loops = est.order
    for b in list(lowered.arguments) + temporaries(lowered):
        w = where[b.name]
        dims = shape_constants(b)
        if dims is None:
            vals = [_eval(d, est.env) for d in b.shape]
            dims_known = None if any(v is None for v in vals) else vals
        else:
            dims_known = dims
        elements = math.prod(dims_known) if dims_known is not None else None
        bits = 8 if b.dtype.is_bool else b.dtype.bits
        banks, registers = _banks(b) if w == ON_CHIP else (1, False)
        brams = bram18k(bits, elements, banks, registers) if w == ON_CHIP else None
        rep.buffers.append(BufferReport(b.name, w, dims_known or [pseudo_c(d) for d in b.shape], elements, bits,
                                        list(b.partitions), banks, brams))
    for r in rep.pipelined():
        if r.ii is not None and r.requested_ii is not None and r.ii > r.requested_ii:
            rep.notes.append(f"loop {r.var} ({r.origin}): II={r.requested_ii} requested, {r.ii} achievable "
                             f"({r.limit})")
    return rep
