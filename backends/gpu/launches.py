"""The host/device split of a lowered function: which loops launch kernels and what runs between them.

The outermost band of gpu_block loops becomes a launch: its grid has one
dimension per block loop (the innermost is x), its thread blocks one per
thread loop inside (the innermost is x), sized by the largest trip count of
those loops (bounds.py). Loops and conditions around a launch run on the host,
so a time loop launches a kernel per step. A statement with no block loop
around it runs in a kernel of one thread. Block loops whose body holds several
parts with block loops of their own are distributed into one launch per
part: the block loops carry no dependence (checked by the middle-end), so
running all blocks of one part before the next keeps every dependence.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from mascarpone.backends.common.promote import promote_accumulators
from mascarpone.middleend.errors import NotSupportedError
from mascarpone.middleend.expr import Access, Sym, pseudo_c, walk
from mascarpone.middleend.loopir import Allocate, Block, For, If, Stmt, walk_exprs, walk_stmts
from mascarpone.middleend.schedule import GPU_DIMS

GPU_KINDS = ("gpu_block", "gpu_thread")


@dataclass(eq=False)
class KernelSpec:
    """One kernel: its body (block loops, the guards between them, the block-level code), the block
    loops (outermost first) and each thread loop's dimension."""

    name: str
    body: Stmt
    blocks: list                                     # For loops of the grid, outermost first
    thread_dims: dict = field(default_factory=dict)  # id(For) -> dimension (0 is x)
    ranged: list = field(default_factory=list)       # (var, lo, hi) of the loops that bound the sizes
    host_vars: list = field(default_factory=list)    # host loop variables around the launch

    @property
    def single(self) -> bool:
        """A kernel of one thread (no block or thread loop)."""
        return not self.blocks and not self.thread_dims

    def block_dim(self, loop) -> int:
        return len(self.blocks) - 1 - next(k for k, b in enumerate(self.blocks) if b is loop)

    def thread_loops(self):
        return [s for s in walk_stmts(self.body) if isinstance(s, For) and s.kind == "gpu_thread"]


# the host program ---------------------------------------------------------------------------------
@dataclass(eq=False)
class HostFor:
    var: str
    lo: object
    hi: object
    body: object


@dataclass(eq=False)
class HostIf:
    cond: object
    then: object
    else_: object = None


@dataclass(eq=False)
class HostBlock:
    body: list


@dataclass(eq=False)
class HostAlloc:
    buffer: object
    body: object


@dataclass(eq=False)
class Launch:
    kernel: KernelSpec


def has_gpu_loops(s) -> bool:
    return any(isinstance(n, For) and n.kind in GPU_KINDS for n in walk_stmts(s))


def has_block_loops(s) -> bool:
    return any(isinstance(n, For) and n.kind == "gpu_block" for n in walk_stmts(s))


def _promotable(loop, in_parallel) -> bool:
    """Loops whose accumulators may be kept in registers: serial loops holding no GPU loop."""
    return loop.kind not in GPU_KINDS and not has_gpu_loops(loop.body)


def _reads_data(e) -> bool:
    return any(isinstance(n, Access) for n in walk(e))


class Splitter:
    """Builds the host program and the kernels of one lowered function."""

    def __init__(self, lowered):
        self.lowered = lowered
        self.kernels = []

    def _kernel(self, body, blocks, scope):
        # accumulators in registers: serial loops only (promotion rebuilds the loops, so find them again)
        body = promote_accumulators(body, serial=_promotable)
        blocks = [n for n in walk_stmts(body) if isinstance(n, For) and n.kind == "gpu_block"]
        spec = KernelSpec(f"{self.lowered.name}_k{len(self.kernels)}", body, blocks, host_vars=list(scope))
        _assign_threads(spec)
        self.kernels.append(spec)
        return Launch(spec)

    def host(self, s, scope=()):
        """The host program of `s`, inside the host loops `scope`."""
        if not has_gpu_loops(s):
            return self._kernel(s, [], scope)
        if isinstance(s, Block):
            out, pending = [], []
            for c in s.body:
                if has_gpu_loops(c):
                    if pending:
                        out.append(self._kernel(Block(pending), [], scope))
                        pending = []
                    out.append(self.host(c, scope))
                else:
                    pending.append(c)
            if pending:
                out.append(self._kernel(Block(pending), [], scope))
            return HostBlock(out)
        if isinstance(s, For):
            if s.kind == "gpu_block":
                return HostBlock([self._kernel(body, blocks, scope) for blocks, body in _distribute(s, [])])
            if s.kind == "gpu_thread":
                # (a block loop of one iteration that isl generated as a constant: a launch of one block)
                return self._kernel(s, [], scope)
            if _reads_data(s.lo) or _reads_data(s.hi):
                raise NotSupportedError(f"{self.lowered.name}: the bounds of loop {s.var} read data, and it holds "
                                        f"GPU loops: the host cannot run it")
            return HostFor(s.var, s.lo, s.hi, self.host(s.body, tuple(scope) + (s.var,)))
        if isinstance(s, If):
            if _reads_data(s.cond):
                raise NotSupportedError(f"{self.lowered.name}: the condition {pseudo_c(s.cond)} reads data and guards "
                                        f"GPU loops: the host cannot evaluate it")
            return HostIf(s.cond, self.host(s.then, scope), None if s.else_ is None else self.host(s.else_, scope))
        if isinstance(s, Allocate):
            return HostAlloc(s.buffer, self.host(s.body, scope))
        raise NotSupportedError(f"{self.lowered.name}: cannot run {type(s).__name__} on the host")


def _distribute(s, ctx):
    """[(block loops, kernel body)] for the device region under `s`; ctx holds the wrappers (block loops
    and guards) from the region's root down to `s`."""
    if isinstance(s, For) and s.kind == "gpu_block":
        return _distribute(s.body, ctx + [s])
    if isinstance(s, If) and has_block_loops(s):
        out = _distribute(s.then, ctx + [("if", s.cond)])
        if s.else_ is not None:
            out += _distribute(s.else_, ctx + [("else", s.cond)])
        return out
    if isinstance(s, Block) and has_block_loops(s):
        return [part for c in s.body for part in _distribute(c, ctx)]
    if has_block_loops(s):
        inner = next(n for n in walk_stmts(s) if isinstance(n, For) and n.kind == "gpu_block")
        what = f"loop {s.var}" if isinstance(s, For) else f"the temporary {s.buffer.name}" \
            if isinstance(s, Allocate) else type(s).__name__
        raise NotSupportedError(f"the gpu_block loop {inner.var} is inside {what}, which is inside other block "
                                f"loops: block loops must be adjacent")
    blocks = [w for w in ctx if isinstance(w, For)]
    if len(blocks) > GPU_DIMS:
        raise NotSupportedError(f"a launch has at most {GPU_DIMS} block loops; got {[b.var for b in blocks]}")
    body = s
    for w in reversed(ctx):
        if isinstance(w, For):
            body = For(w.var, w.lo, w.hi, body, w.kind, w.factor)
            blocks = [body if b is w else b for b in blocks]
        elif w[0] == "if":
            body = If(w[1], body)
        else:
            body = If(w[1], Block([]), body)
    return [(blocks, body)]


def _assign_threads(spec):
    """Give each thread loop its dimension (thread loops with none inside are x, those around them y,
    then z) and list the loops whose ranges bound the grid and the thread blocks (outer ones first)."""
    def height(s):
        """Visit `s`; returns how many levels of thread loops nest under and in it (0: none)."""
        if isinstance(s, For):
            if s.kind in GPU_KINDS or has_gpu_loops(s.body):
                spec.ranged.append((s.var, s.lo, s.hi))
            below = height(s.body)
            if s.kind != "gpu_thread":
                return below
            if below >= GPU_DIMS:
                raise NotSupportedError(f"thread loop {s.var} has {below} levels of thread loops inside; a "
                                        f"launch has at most {GPU_DIMS} thread dimensions")
            spec.thread_dims[id(s)] = below
            return below + 1
        if isinstance(s, Block):
            return max([height(c) for c in s.body], default=0)
        if isinstance(s, Allocate):
            return height(s.body)
        if isinstance(s, If):
            return max(height(s.then), height(s.else_) if s.else_ is not None else 0)
        return 0

    height(spec.body)


def free_symbols(s, defined=()):
    """Names of the symbols `s` reads that no loop inside it defines (sizes, host loop variables)."""
    bound = set(defined) | {n.var for n in walk_stmts(s) if isinstance(n, For)}
    names = {n.name for e in walk_exprs(s) for n in walk(e) if isinstance(n, Sym)}
    return names - bound


def split(lowered):
    """(host program, kernels) of a lowered function."""
    splitter = Splitter(lowered)
    body = lowered.body
    allocated = {s.buffer.name for s in walk_stmts(body) if isinstance(s, Allocate)}
    for b in reversed([t for t in lowered.temporaries if t.name not in allocated]):
        body = Allocate(b, body)   # kernel-wide temporaries without an Allocate of their own
    host = splitter.host(body)
    return host, splitter.kernels


def host_temporaries(host) -> list:
    """The buffers the host program `host` allocates on the device (its HostAlloc nodes'), outermost first."""
    out = []

    def visit(n):
        if isinstance(n, HostAlloc):
            out.append(n.buffer)
            visit(n.body)
        elif isinstance(n, HostBlock):
            for c in n.body:
                visit(c)
        elif isinstance(n, HostFor):
            visit(n.body)
        elif isinstance(n, HostIf):
            visit(n.then)
            if n.else_ is not None:
                visit(n.else_)
    visit(host)
    return out
