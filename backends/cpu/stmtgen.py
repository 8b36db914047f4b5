"""Code for the statements of the loop IR: blocks, stores, ifs, allocations and loops of every kind."""
from __future__ import annotations

from mascarpone.middleend.errors import NotSupportedError
from mascarpone.middleend.loopir import Allocate, Block, For, If, Store, walk_stmts
from mascarpone.backends.common.prefetch import Prefetch, line_offsets

from . import blocks, memory
from mascarpone.backends.common.affine import constant_difference, value_range
from .exprgen import ExprEmitter
from .llvm_types import i64
from .loops import counted_loop, if_then_else
from .memory import BufView
from .parallel import emit_parallel_loop
from .vectorize import emit_chunk_loop, emit_vector_loop


class StmtEmitter:
    """Emits statements into the function of an `FnState`, dispatching loops on their kind."""

    def emit(self, s, fs, scope):
        if isinstance(s, Block):
            for child in s.body:
                self.emit(child, fs, scope)
        elif isinstance(s, Store):
            self.store(s, fs, scope)
        elif isinstance(s, If):
            self.if_(s, fs, scope)
        elif isinstance(s, Allocate):
            allocate(fs, scope, s.buffer, lambda sc: self.emit(s.body, fs, sc))
        elif isinstance(s, For):
            self.for_(s, fs, scope)
        elif isinstance(s, Prefetch):
            self.prefetch(s, fs, scope)
        elif s is None:
            pass
        else:
            raise NotSupportedError(f"the CPU back-end cannot generate {type(s).__name__} statements")

    def store(self, s, fs, scope):
        em = ExprEmitter(fs, scope)
        value = em.emit(s.value)
        view, ptr = em.address(s.buffer.name, s.indices)
        memory.store(fs.builder, view, ptr, value)

    def prefetch(self, s, fs, scope):
        """One prefetch per cache line of the box (addresses computed, never dereferenced)."""
        em = ExprEmitter(fs, scope)
        view = scope.buf(s.first.target.name)
        first = [em.index(i) for i in s.first.indices]
        B = fs.builder
        for offsets in line_offsets(s.extents, view.dtype.bytes):
            idx = [v if k == 0 else B.add(v, i64(k)) for v, k in zip(first, offsets)]
            memory.prefetch(B, memory.element_ptr(B, view, memory.flat_index(B, view, idx), inbounds=False),
                            s.level)

    def if_(self, s, fs, scope):
        cond = ExprEmitter(fs, scope).emit(s.cond)
        else_ = None if s.else_ is None else (lambda: self.emit(s.else_, fs, scope))
        if_then_else(fs, cond, lambda: self.emit(s.then, fs, scope), else_)

    # loops ------------------------------------------------------------------------
    def for_(self, s, fs, scope):
        kind = s.kind
        if kind == "unroll" and s.factor > 1:
            return self.unrolled(s, fs, scope)
        if kind == "vector" and s.factor > 1:
            return emit_vector_loop(self, s, fs, scope)
        if kind == "parallel" and not fs.in_parallel:
            return emit_parallel_loop(self, s, fs, scope)
        return self.serial(s, fs, scope)

    def bounds(self, s, fs, scope):
        em = ExprEmitter(fs, scope)
        return em.index(s.lo), em.index(s.hi)

    def serial(self, s, fs, scope, lo=None, hi=None, metadata=None):
        """A plain loop (also how GPU/distribution tags run on the CPU)."""
        if lo is None:
            if metadata is None and emit_chunk_loop(self, s, fs, scope):
                return
            lo, hi = self.bounds(s, fs, scope)
        counted_loop(fs, lo, hi, lambda v: self.emit(s.body, fs, scope.with_var(s.var, v)),
                     name=s.var, metadata=metadata)

    def copies(self, s, fs, scope, base, count):
        """`count` copies of the body for `var = base + 0 .. base + count - 1`."""
        B = fs.builder
        fs.unrolled_depth += count > 1
        for k in range(count):
            v = base if k == 0 else B.add(base, i64(k), flags=("nsw",))
            self.emit(s.body, fs, scope.with_var(s.var, v))
        fs.unrolled_depth -= count > 1

    def unrolled(self, s, fs, scope):
        """Full unrolling when the trip count is a constant, else versioned on `hi - lo == factor`
        (a plain loop when already inside copies of another unrolled loop, or around a loop that stays
        a loop: `_runtime_loop_inside`)."""
        f = s.factor
        lo, hi = self.bounds(s, fs, scope)
        trip = constant_difference(s.hi, s.lo)
        if _runtime_loop_inside(s):
            # a loop whose trip count is known only at run time runs inside: the copies would each run
            # it on their own, one after another (no iterations interleave), so unrolling only
            # repeats the code
            return self.serial(s, fs, scope, lo, hi)
        if trip is not None and _partial_unroll_inside(s):
            # a loop asked to unroll whose trip count varies runs inside: a partial tile, where isl's
            # separation repeats the nest once per case of its bounds; its copies would each hold a
            # plain loop anyway (see below), so neither is unrolled: one body per case, not f
            fs.unrolled_depth += 1
            self.serial(s, fs, scope, lo, hi)
            fs.unrolled_depth -= 1
            return
        if trip is not None:
            if trip <= 0:
                return
            if trip <= f:
                return self.copies(s, fs, scope, lo, trip)
            # a longer constant loop: `f` copies per step, then the remainder
            main = trip - trip % f
            B = fs.builder
            counted_loop(fs, lo, B.add(lo, i64(main), flags=("nsw",)),
                         lambda v: self.copies(s, fs, scope, v, f), step=f, name=s.var)
            if trip % f:
                self.copies(s, fs, scope, B.add(lo, i64(main), flags=("nsw",)), trip % f)
            return
        if fs.unrolled_depth:
            # inside copies of another unrolled loop: both versions would be repeated in every copy
            # outside (8 x (8 + 1) bodies for a partial 8x8 tile); a plain loop keeps one per copy
            return self.serial(s, fs, scope, lo, hi)
        B = fs.builder
        exact = B.icmp_signed("==", B.sub(hi, lo, flags=("nsw",)), i64(f))
        if_then_else(fs, exact, lambda: self.copies(s, fs, scope, lo, f),
                     lambda: self.serial(s, fs, scope, lo, hi), name=f"{s.var}.unroll")


def _runtime_loop_inside(s) -> bool:
    """Whether a loop that stays a loop runs inside loop `s`: one of a trip count that is not a constant,
    not asked to unroll (`_partial_unroll_inside` sees to those), and not a vector loop of at most one
    chunk (the partial chunk of a tile's edge, run once)."""
    return any(isinstance(t, For) and t is not s and t.kind != "unroll" and constant_difference(t.hi, t.lo) is None
               and not (t.kind == "vector" and _at_most(t, t.factor)) for t in walk_stmts(s.body))


def _at_most(loop, trips) -> bool:
    """Whether `loop` runs at most `trips` iterations, as the forms of its bounds show."""
    hi, lo = value_range(loop.hi), value_range(loop.lo)
    return hi is not None and lo is not None and None not in (hi[1], lo[0]) and hi[1] - lo[0] <= trips


def _partial_unroll_inside(s) -> bool:
    """Whether a loop asked to unroll, of a trip count that is not a constant, runs inside loop `s`."""
    return any(isinstance(t, For) and t is not s and t.kind == "unroll" and t.factor > 1
               and constant_difference(t.hi, t.lo) is None for t in walk_stmts(s.body))


def allocate(fs, scope, buffer, body):
    """Allocate a temporary for the duration of `body(scope_with_it)`.

    A temporary the function's `StackBudget` takes (backends/common/temporaries)
    gets a stack slot in the function's entry block, so a temporary inside a
    parallel loop is per thread and one inside a loop is not re-allocated each
    iteration. Other sizes are 64-byte aligned heap blocks given back after the
    body, kept for the next call (blocks.py); out of memory skips the body and
    makes the call fail.
    """
    em = ExprEmitter(fs, scope)
    extents = [em.index(d) for d in buffer.shape]
    B = fs.builder
    nbytes = fs.stack.take(buffer)
    if nbytes is not None:
        ptr = memory.alloca_bytes(fs.entry, nbytes, buffer.name)
        body(scope.with_buf(BufView(buffer.name, buffer.dtype, ptr, extents, buffer.padded_lanes)))
        return
    ptr, site = blocks.take(fs, memory.byte_size(B, buffer.dtype, extents))

    def ok():
        body(scope.with_buf(BufView(buffer.name, buffer.dtype, ptr, extents, buffer.padded_lanes)))
        blocks.give_back(fs, site, ptr)

    if_then_else(fs, memory.is_null(B, ptr), fs.fail, ok, name=f"{buffer.name}.alloc")
