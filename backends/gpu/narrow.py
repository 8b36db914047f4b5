"""Whether a launch may run its kernel's variant with 32-bit index arithmetic.

Every kernel is printed twice: with int64 index arithmetic, as the loop IR
defines it, and with int32 (`printer.narrow_name`), which a GPU runs at full
speed and PoCL in twice the SIMD lanes. A launch takes the 32-bit variant when
the sizes of the call prove that no index value leaves int32: every size and
host loop variable (converted at the kernel's start), every stride and
extent of a buffer, every loop variable (a block or thread loop's also past
its end, up to the grid or block's size), every int64 sub-expression the
printer evaluates as an index, and every flat offset into a buffer. The
ranges are intervals over the loops' bounds (bounds.py), so the proof may
fail where the indices would fit; the launch then takes the 64-bit variant.
"""
from __future__ import annotations

from mascarpone.backends.c.printer import operands_in_context
from mascarpone.middleend.expr import Access, walk
from mascarpone.middleend.loopir import Allocate, Block, For, If, Store, walk_exprs, walk_stmts
from mascarpone.middleend.types import int64

from .bounds import expr_range

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


def _fits(lo_hi) -> bool:
    return INT32_MIN <= lo_hi[0] and lo_hi[1] <= INT32_MAX


class _Proof:
    """Walks a kernel body with the ranges of the symbols in scope; `ok` turns False at the first value that
    may not fit."""

    def __init__(self, spec, buffers, ranges, scalars, grid, block):
        self.spec, self.ranges, self.grid, self.block = spec, ranges, grid, block
        self.strides = {}
        self.ok = (all(_fits(ranges[name]) for name in scalars) and max(*grid, *block) <= INT32_MAX
                   and all(self._buffer(b) for b in buffers))

    def _buffer(self, b) -> bool:
        """Check `b`'s extents and keep its strides (the largest, over the ranges)."""
        strides, inner = [], 1
        for d in reversed(b.shape):
            strides.insert(0, inner)
            if not self._index_expr(d):
                return False
            inner *= max(expr_range(d, self.ranges)[1], 0)
            if inner > INT32_MAX:
                return False
        self.strides[b.name] = strides
        return True

    def _index_expr(self, e, index=True) -> bool:
        """Whether every int64 node of `e` evaluated in index context (as the printer prints it) fits, and
        every buffer offset `e` reads at."""
        stack = [(e, index)]
        while stack:
            node, idx = stack.pop()
            if idx and node.dtype == int64 and not _fits(expr_range(node, self.ranges)):
                return False
            if isinstance(node, Access) and not self._offset(node.target.name, node.indices):
                return False
            stack.extend(operands_in_context(node, idx))
        return True

    def _offset(self, name, indices) -> bool:
        strides = self.strides.get(name)
        if strides is None:
            return False    # (a buffer this proof was not told of)
        total = 0
        for i, stride in zip(indices, strides):
            lo, hi = expr_range(i, self.ranges)
            total += max(abs(lo), abs(hi)) * stride
        return total <= INT32_MAX

    def stmt(self, s) -> bool:
        if s is None:
            return True
        if isinstance(s, Block):
            return all(self.stmt(c) for c in s.body)
        if isinstance(s, Store):
            return (all(self._index_expr(i) for i in s.indices) and self._offset(s.buffer.name, s.indices)
                    and self._index_expr(s.value, False))
        if isinstance(s, If):
            return self._index_expr(s.cond, False) and self.stmt(s.then) and self.stmt(s.else_)
        if isinstance(s, Allocate):
            return self._buffer(s.buffer) and self.stmt(s.body)
        if isinstance(s, For):
            return self._loop(s)
        return False

    def _loop(self, s) -> bool:
        if not (self._index_expr(s.lo) and self._index_expr(s.hi)):
            return False
        lo, hi = expr_range(s.lo, self.ranges), expr_range(s.hi, self.ranges)
        if s.kind == "gpu_block":
            last = lo[1] + self.grid[self.spec.block_dim(s)] - 1      # (blocks past the loop's end)
        elif s.kind == "gpu_thread":
            last = lo[1] + self.block[self.spec.thread_dims[id(s)]] - 1
        else:
            last = hi[1]       # (the variable reaches hi as the loop ends)
        var = (lo[0], max(lo[0], last))
        if not _fits(var):
            return False
        saved = self.ranges.get(s.var)
        self.ranges[s.var] = var
        try:
            return self.stmt(s.body)
        finally:
            if saved is None:
                del self.ranges[s.var]
            else:
                self.ranges[s.var] = saved


def indices_fit_int32(kernel, buffers, env, grid, block) -> bool:
    """Whether the launch of `kernel` (a CompiledKernel) with the sizes and host loop variables `env`
    ({name: int}), a grid of `grid` blocks of `block` threads, may run its 32-bit variant; `buffers`: the
    device buffers of the program (arguments and host temporaries)."""
    spec = kernel.spec
    used = {n.target.name for e in walk_exprs(spec.body) for n in walk(e) if isinstance(n, Access)}
    used |= {s.buffer.name for s in walk_stmts(spec.body) if isinstance(s, Store)}
    proof = _Proof(spec, [b for b in buffers if b.name in used], {name: (v, v) for name, v in env.items()},
                   kernel.scalars, grid, block)
    return proof.ok and proof.stmt(spec.body)
