"""The lowered loop IR that every back-end reads, and its pseudo-C printer.

Contract with back-ends:
  * Index arithmetic (loop bounds, iterators, buffer indices) is int64; `Sym`
    nodes name loop iterators and size parameters, both int64 at run time.
    A `Sym` whose dtype is narrower is read as that type (a truncation).
  * Buffers are dense and row-major over their `shape` (the last index is
    contiguous). `Access(buffer, indices)` loads an element; `Store` writes one.
  * `For` runs `var` from `lo` to `hi - 1` in steps of one. Its `kind` (a
    `LoopKind`, equal to its name as a string) says how: 'serial', 'parallel',
    'vector' (SIMD of `factor` lanes), 'unroll' (by `factor`), or a tag for
    another back-end ('gpu_block', 'gpu_thread', 'distribute', 'pipeline')
    that CPU back-ends run serially.
    Legality of the tag was checked by the middle-end.
  * `Allocate` gives a temporary buffer the lifetime of its body; its shape
    is evaluated on entry.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from .errors import NotSupportedError
from .expr import Access, Expr, pseudo_c, substitute, walk


class LoopKind(StrEnum):
    """How a loop runs: the tags of Layer II and the `kind` of a `For`. Members are strings
    (`LoopKind.PARALLEL == "parallel"`), so comparisons with the names keep working."""

    SERIAL = "serial"
    PARALLEL = "parallel"       # iterations on the thread pool
    VECTOR = "vector"           # SIMD of `factor` lanes
    UNROLL = "unroll"           # unrolled by `factor`
    GPU_BLOCK = "gpu_block"     # the kinds below are for other back-ends; CPU back-ends run them serially
    GPU_THREAD = "gpu_thread"
    DISTRIBUTE = "distribute"
    PIPELINE = "pipeline"


#: kinds whose iterations may run at the same time: no dependence may cross them
CONCURRENT_KINDS = frozenset({LoopKind.PARALLEL, LoopKind.VECTOR, LoopKind.GPU_BLOCK, LoopKind.GPU_THREAD,
                              LoopKind.DISTRIBUTE})


class Stmt:
    """Base of statements."""

    def __str__(self):
        return "\n".join(_print(self, 0))


@dataclass(eq=False)
class For(Stmt):
    var: str
    lo: Expr
    hi: Expr
    body: Stmt
    kind: LoopKind = LoopKind.SERIAL
    factor: int = 1
    #: the scheduled loops this loop runs, as (computation, loop name) pairs (empty for loops a pass
    #: made): how a report names a loop and finds what the middle-end knows about it
    origin: tuple = ()


@dataclass(eq=False)
class If(Stmt):
    cond: Expr
    then: Stmt
    else_: Stmt | None = None


@dataclass(eq=False)
class Block(Stmt):
    body: list = field(default_factory=list)


@dataclass(eq=False)
class Store(Stmt):
    buffer: object  # middleend.buffer.Buffer
    indices: tuple
    value: Expr

    def __post_init__(self):
        if self.value.dtype != self.buffer.dtype:
            raise NotSupportedError(f"store of a {self.value.dtype} value into {self.buffer.name}, a buffer "
                                    f"of {self.buffer.dtype}; the middle-end must insert a cast")


@dataclass(eq=False)
class Allocate(Stmt):
    buffer: object
    body: Stmt


@dataclass(eq=False)
class LoweredFunction:
    """A whole kernel: its size parameters, its argument buffers in call order, and its body."""

    name: str
    params: list          # names of the int64 size parameters
    inputs: list          # Buffers read from the caller
    outputs: list         # Buffers written for the caller
    body: Stmt
    temporaries: list = field(default_factory=list)
    #: parameters whose values the code was specialized for; a call must pass exactly these
    fixed_params: dict = field(default_factory=dict)
    #: (text, isl set) constraints on the parameters (Function.assume) that the code relies on
    assumptions: list = field(default_factory=list)
    #: (name, expression of the size parameters) computed on entry, in order (Function.derived_size)
    derived: list = field(default_factory=list)
    #: {name: (lo, hi)} of sizes declared with a range of their own (Function.declare_param; None: no
    #: bound), which the code relies on; other sizes are at least 1 by convention, unchecked
    param_ranges: dict = field(default_factory=dict)
    #: what the middle-end found about each pipelined loop (middleend.pipelining.PipelinedLoop)
    pipelines: list = field(default_factory=list)
    #: the stages and channels of a dataflow region (middleend.dataflow.DataflowPlan), or None
    dataflow: object = None
    #: () -> the program each MPI rank runs (middleend.spmd.DistributedFunction), built on first call
    spmd: object = None
    #: (what, isl set or map whose parameters are sizes and derived sizes): what a check would refuse
    #: where the set is not empty, and could not rule out at compile time; the kernel checks each call
    checked_at_call: list = field(default_factory=list)

    @property
    def arguments(self):
        return list(self.inputs) + list(self.outputs)

    def __str__(self):
        args = [f"{b.dtype} *{b.name}" + (f" /* a ring: {b.ring_text()} */" if b.folds else "")
                for b in self.arguments] + [f"int64 {p}" for p in self.params]
        lines = [f"void {self.name}({', '.join(args)}) {{"]
        lines += [f"  int64 {name} = {pseudo_c(value)};" for name, value in self.derived]
        lines += _print(self.body, 1)
        lines.append("}")
        return "\n".join(lines)


#: the values a size takes unless `Function.declare_param` says otherwise: the code is generated for them
DEFAULT_SIZE_RANGE = (1, None)


def in_range(value, bounds) -> bool:
    """Whether `value` lies in `bounds` = (lo, hi), None for no bound on that side."""
    lo, hi = bounds
    return (lo is None or value >= lo) and (hi is None or value <= hi)


def range_text(bounds) -> str:
    """`[lo, hi]` with -oo/oo for a side without a bound."""
    lo, hi = bounds
    return f"[{'-oo' if lo is None else lo}, {'oo' if hi is None else hi}]"


def _loop_header(s: For):
    tag = ""
    if s.kind != LoopKind.SERIAL:
        tag = f"  // {s.kind}" + (f"({s.factor})" if s.factor > 1 else "")
    return f"for ({s.var} = {pseudo_c(s.lo)}; {s.var} < {pseudo_c(s.hi)}; {s.var}++) {{{tag}"


def _print(s: Stmt, depth: int):
    pad = "  " * depth
    if isinstance(s, Block):
        return [line for child in s.body for line in _print(child, depth)]
    if isinstance(s, For):
        return [pad + _loop_header(s), *_print(s.body, depth + 1), pad + "}"]
    if isinstance(s, If):
        lines = [f"{pad}if ({pseudo_c(s.cond)}) {{", *_print(s.then, depth + 1)]
        if s.else_ is not None:
            lines += [f"{pad}}} else {{", *_print(s.else_, depth + 1)]
        return lines + [pad + "}"]
    if isinstance(s, Store):
        idx = ", ".join(pseudo_c(i) for i in s.indices)
        return [f"{pad}{s.buffer.name}[{idx}] = {pseudo_c(s.value)};"]
    if isinstance(s, Allocate):
        shape = ", ".join(pseudo_c(d) for d in s.buffer.shape)
        return [f"{pad}{s.buffer.dtype} {s.buffer.name}[{shape}];  // temporary",
                *_print(s.body, depth)]
    if hasattr(s, "pseudo_c"):   # a statement a back-end's program adds (communication, ...)
        return [pad + line for line in s.pseudo_c()]
    raise TypeError(f"unknown statement {type(s).__name__}")


def walk_stmts(s: Stmt):
    """All statements under `s`, parents first."""
    yield s
    if isinstance(s, Block):
        for c in s.body:
            yield from walk_stmts(c)
    elif isinstance(s, (For, Allocate)):
        yield from walk_stmts(s.body)
    elif isinstance(s, If):
        yield from walk_stmts(s.then)
        if s.else_ is not None:
            yield from walk_stmts(s.else_)


def own_exprs(s: Stmt):
    """The expressions a statement holds itself (not those of nested statements)."""
    if isinstance(s, For):
        return (s.lo, s.hi)
    if isinstance(s, If):
        return (s.cond,)
    if isinstance(s, Store):
        return (*s.indices, s.value)
    if isinstance(s, Allocate):
        return tuple(s.buffer.shape)
    if hasattr(s, "exprs"):   # a statement a back-end's program adds
        return tuple(s.exprs())
    return ()


def substitute_stmt(s: Stmt, mapping: dict) -> Stmt:
    """`s` with each symbol named in `mapping` replaced by its expression in every bound, condition,
    index and value. Temporaries keep their buffers, so the shapes they allocate must not read those
    symbols; only the statements of this module are known (NotSupportedError for another)."""
    def sub(e):
        return substitute(e, mapping)

    if isinstance(s, Block):
        return Block([substitute_stmt(c, mapping) for c in s.body])
    if isinstance(s, For):
        return For(s.var, sub(s.lo), sub(s.hi), substitute_stmt(s.body, mapping), s.kind, s.factor, s.origin)
    if isinstance(s, If):
        return If(sub(s.cond), substitute_stmt(s.then, mapping),
                  None if s.else_ is None else substitute_stmt(s.else_, mapping))
    if isinstance(s, Store):
        return Store(s.buffer, tuple(sub(i) for i in s.indices), sub(s.value))
    if isinstance(s, Allocate):
        return Allocate(s.buffer, substitute_stmt(s.body, mapping))
    raise NotSupportedError(f"no substitution into a {type(s).__name__} statement")


def walk_exprs(s: Stmt):
    """Every expression under `s` (bounds, conditions, indices, values, shapes)."""
    for st in walk_stmts(s):
        yield from own_exprs(st)


def stores(s: Stmt):
    """Every Store under `s`."""
    return (st for st in walk_stmts(s) if isinstance(st, Store))


def uses_outside_allocation(body: Stmt) -> list:
    """[(buffer name, the Store that uses it)] for each statement that reads or writes a buffer some
    `Allocate` under `body` gives a lifetime, but outside every such Allocate: it would use memory
    that holds another iteration's values, or none."""
    allocated = {st.buffer.name for st in walk_stmts(body) if isinstance(st, Allocate)}
    out = []

    def visit(s, live):
        if isinstance(s, Allocate):
            visit(s.body, live | {s.buffer.name})
            return
        if isinstance(s, Store):
            used = {s.buffer.name} | {n.target.name for e in own_exprs(s) for n in walk(e) if isinstance(n, Access)}
            out.extend((name, s) for name in sorted((used & allocated) - live))
            return
        for child in (s.body if isinstance(s, Block) else [s.body] if isinstance(s, For) else
                      [s.then, s.else_] if isinstance(s, If) else []):
            if child is not None:
                visit(child, live)
    visit(body, frozenset())
    return out
