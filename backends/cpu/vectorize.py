"""Explicit SIMD code for loops tagged 'vector' with `factor` lanes.

The loop runs in chunks of `factor` consecutive iterations; each expression of
the body is evaluated once per chunk, as a scalar when it does not depend on
the loop variable (uniform) and as a `<factor x T>` vector otherwise, with the
same operations lane by lane as the scalar code. Each access is classified by
how its indices move with the loop variable:

  * no dependence            -> one scalar load (broadcast when combined);
  * unit stride in the last index only -> one contiguous vector load/store;
  * a small constant stride in the last index (a down-sampling read) -> a few
                                contiguous loads and a shuffle;
  * other affine strides     -> one scalar load/store per lane at a fixed step;
  * a read at `(x + c) / k` in the last index, k up to 4 (an up-sampling read)
                             -> one masked load of the elements the lanes cover
                                and the shuffle of the numerator's remainder;
  * anything else            -> the index is computed as a vector; lanes are
                                loaded with llvm.masked.gather and stored
                                one by one, in lane order (scatter).

Contiguous reads of one array at offsets less than a vector apart (a stencil's
`in[x - 1] + in[x] + in[x + 1]`) share their loads: the outermost offsets are
loaded and those between them shuffled out of the two, as a sliding window, so
a stencil whose loads bound it (two cores' load ports, an L1-resident sweep)
issues fewer of them (`share_neighbour_loads`). Where loads bound a loop of whole chunks, such a
group is carried from chunk to chunk instead, one load a chunk (`windows`).

Inner loops (with bounds independent of the vectorized variable) run once
per chunk with vector values in their body, as Halide vectorizes an outer
variable. An `if` on a uniform condition branches; on a varying condition both branches
run under lane masks (masked vector loads/stores, lane-by-lane conditional
gathers/scatters), so no lane touches memory its scalar iteration would not.
Iterations that do not fill a chunk run as one chunk under a lane mask where
the CPU masks loads and stores (AVX-512), else in a scalar remainder loop. A body
with allocations, or with inner loops whose bounds vary across lanes, is left
to LLVM's loop vectorizer (with the width as a hint when the loop is innermost).
"""
from __future__ import annotations

from llvmlite import ir

from mascarpone.middleend.expr import Access, BinOp, Const, Sym, walk
from mascarpone.middleend.loopir import Block, For, If, Store, stores, walk_exprs, walk_stmts
from mascarpone.middleend.types import int64

from . import memory, transposed
from .windows import anchors_of, carried_groups, chunk_loop_groups, contiguous, jammed, neighbour_groups, windowed_loop
from mascarpone.backends.common.affine import constant_difference, linearize, mentions, split_along, stride_along
from .exprgen import ExprEmitter
from .llvm_types import I1, I32, I64, PTR, i64, is_vector, memory_type, type_suffix, value_type
from .loops import counted_loop, if_then_else, loop_metadata
from .ops import declare


#: strides up to this many elements are loaded as contiguous vectors and shuffled (a gather beyond)
MAX_DENSE_STRIDE = 4
#: copies of a chunk per iteration of a loop of whole chunks carrying windows, of a run-time trip count
#: (jacobi-1d's split tiles at 2000 points, 500 steps, one process, four placements: 80-82 us a call against 84-88)
WINDOW_UNROLL = 4


def _quotient_of_lane(e, var):
    """(quotient, numerator, k) when `e` is terms that do not move with `var` plus `numerator / k` (floor
    division, or C division) with a constant 2 <= k <= MAX_DENSE_STRIDE and a numerator that grows by one
    with `var`: an upsampling read (`coarse[x / 2]`), whose lanes read each element k times in a row."""
    a = linearize(e)
    moving = [(x, c) for x, c in a.atom_terms() if mentions(x, var)]
    if a.coeff(var) != 0 or len(moving) != 1 or moving[0][1] != 1:
        return None
    q = moving[0][0]
    if (isinstance(q, BinOp) and q.op in ("ediv", "div") and isinstance(q.b, Const) and q.dtype.is_int
            and 2 <= q.b.value <= MAX_DENSE_STRIDE and stride_along(q.a, var) == 1):
        return q, q.a, q.b.value
    return None


def vectorizable(s, var) -> bool:
    """Whether explicit SIMD code handles a loop body: stores, ifs, and inner loops whose
    bounds do not depend on the vectorized variable `var` (they run once per chunk, with
    vector values inside)."""
    if s is None or isinstance(s, Store):
        return True
    if isinstance(s, Block):
        return all(vectorizable(c, var) for c in s.body)
    if isinstance(s, If):
        return vectorizable(s.then, var) and vectorizable(s.else_, var)
    if isinstance(s, For):
        return (s.var != var and not mentions(s.lo, var) and not mentions(s.hi, var)
                and vectorizable(s.body, var))
    return False


def explicit_simd(loop) -> bool:
    """Whether `loop` becomes explicit SIMD code (a vector loop whose body `vectorizable` admits)."""
    return loop.kind == "vector" and loop.factor > 1 and vectorizable(loop.body, loop.var)


def emit_vector_loop(se, s, fs, scope):
    """Emit the 'vector' loop `s`: vector chunks, then a scalar remainder."""
    width = s.factor
    if not vectorizable(s.body, s.var):
        # LLVM's loop vectorizer handles innermost loops only: an outer loop gets no forcing hint,
        # which it could not honour (it would only print a warning)
        innermost = not any(isinstance(n, For) for n in walk_stmts(s.body))
        hint = loop_metadata(fs.ms.module, vectorize_width=width) if innermost else None
        return se.serial(s, fs, scope, metadata=hint)
    lo, hi = se.bounds(s, fs, scope)
    B = fs.builder

    def chunk(v0, given=None, body=s.body):
        VectorBody(fs, scope.with_var(s.var, v0), s.var, width, given).emit(body, None)

    def main_loop(end, runtime_trip=False):
        """The whole chunks from `lo` to `end`, with the reads `carried_groups` picks carried from chunk
        to chunk (unrolled where the trip count is known at run time only: LLVM leaves such a loop that
        carries vectors as it is, and each iteration's branch and step then weigh on a few instructions)."""
        body = jammed(s.body, s.var)
        windows = carried_groups(body, s.var, width)
        if windows:
            hint = loop_metadata(fs.ms.module, unroll_count=WINDOW_UNROLL) if runtime_trip else None
            windowed_loop(fs, lo, end, width, width, windows,
                          lambda v, node: VectorEmitter(fs, scope.with_var(s.var, v), s.var, width, None).emit(node),
                          lambda v, given: chunk(v, given, body),
                          name=f"{s.var}.vec", metadata=hint)
        else:
            counted_loop(fs, lo, end, chunk, step=width, name=f"{s.var}.vec")

    no_vectorize = loop_metadata(fs.ms.module, vectorize=False, unroll=False)  # fewer than `width` trips

    # a body that reads an array it writes (an accumulation) keeps its scalar tail unless it is one copy
    # of an unrolled loop: run again in the next iteration of a loop around, a masked chunk reads what
    # the one before stored under a mask, which the CPU does not forward from its store queue, and only
    # the other copies' chains hide that wait (bicg's column sums, one chain: 0.05 -> 0.33 ms with masked
    # tails; doitgen's 8 unrolled rows at 30x28x32: 0.09 -> 0.05 ms)
    # (a register tile padded to whole vectors is no such array: its chunks stay in registers)
    written = {st.buffer.name for st in stores(s.body) if not scope.buf(st.buffer.name).padded_lanes}
    updates = not fs.unrolled_depth and any(isinstance(n, Access) and n.target.name in written
                                            for e in walk_exprs(s.body) for n in walk(e))

    def tail(start):
        """The iterations from `start` to the end, fewer than `width`: one chunk under a lane mask where
        the CPU masks loads and stores itself (Options.masked_tails) and the body updates no array it
        reads, else a scalar loop."""
        if not fs.ms.options.masked_tails or updates:
            se.serial(s, fs, scope, start, hi, metadata=no_vectorize)
            return
        count = B.sub(hi, start, flags=("nsw",))
        iota = ir.Constant(ir.VectorType(I64, width), list(range(width)))
        mask = B.icmp_signed("<", iota, fs.ops.broadcast(count, width))
        if_then_else(fs, B.icmp_signed(">", count, i64(0)),
                     lambda: VectorBody(fs, scope.with_var(s.var, start), s.var, width).emit(s.body, mask),
                     name=f"{s.var}.tail")

    trip = constant_difference(s.hi, s.lo)
    if trip is not None:
        full = max(trip, 0) // width
        if full == 1:
            chunk(lo)
        elif full > 1:
            main_loop(B.add(lo, i64(full * width), flags=("nsw",)))
        if trip > full * width:
            tail(lo if full == 0 else B.add(lo, i64(full * width), flags=("nsw",)))
        return
    n = B.sub(hi, lo, flags=("nsw",))
    n = B.select(B.icmp_signed("<", n, i64(0)), i64(0), n)
    main_end = B.add(lo, B.mul(B.udiv(n, i64(width)), i64(width), flags=("nsw",)), flags=("nsw",))
    main_loop(main_end, runtime_trip=True)
    tail(main_end)


def emit_chunk_loop(se, s, fs, scope) -> bool:
    """Emit a plain loop around one vector loop of exactly its lanes (`chunk_loop_groups`) with its
    reads carried as windows from one iteration to the next; False (nothing emitted) where none are."""
    inner, body, windows = chunk_loop_groups(s, explicit_simd)
    if not windows:
        return False
    lo, hi = se.bounds(s, fs, scope)

    def at(v):
        """The scope of the chunk at `v`: its first lane's inner variable."""
        outer = scope.with_var(s.var, v)
        return outer.with_var(inner.var, ExprEmitter(fs, outer).index(inner.lo))

    def load(v, node):
        return VectorEmitter(fs, at(v), inner.var, inner.factor, None).emit(node)

    def chunk(v, given):
        VectorBody(fs, at(v), inner.var, inner.factor, given).emit(body, None)
    windowed_loop(fs, lo, hi, 1, inner.factor, windows, load, chunk, name=s.var)
    return True


class VectorEmitter(ExprEmitter):
    """Evaluates expressions for `width` consecutive values of `var`, starting at its scope value."""

    def __init__(self, fs, scope, var, width, mask):
        super().__init__(fs, scope)
        self.var, self.width, self.mask = var, width, mask
        self.lane0 = ExprEmitter(fs, scope)

    def sym(self, e: Sym):
        if e.name != self.var:
            return super().sym(e)
        iota = ir.Constant(ir.VectorType(I64, self.width), list(range(self.width)))
        v = self.B.add(self.ops.broadcast(self.scope.var(e.name), self.width), iota, flags=("nsw",))
        return v if e.dtype == int64 else self.ops.cast(int64, e.dtype, v)

    # addressing ---------------------------------------------------------------------
    def lane_pointers(self, view, indices, load=False):
        """Per-access addressing: ('uniform', ptr) / ('contiguous', ptr) / ('strided', (ptr, stride)) /
        ('lanes', [ptr...]) / ('gather', vector of ptrs); for a `load`, also ('quotient', (ptr, numerator,
        k, division)) where only the last index moves, as the k-th of the lane (see `_quotient_load`)."""
        B = self.B
        inb = self.mask is None  # masked-off lanes may point outside the buffer
        strides = [stride_along(i, self.var) for i in indices]
        if all(st == 0 for st in strides):
            flat = memory.flat_index(B, view, [self.index(i) for i in indices])
            return "uniform", memory.element_ptr(B, view, flat)
        if None not in strides:
            flat0 = memory.flat_index(B, view, [self.lane0.index(i) for i in indices])
            ptr0 = memory.element_ptr(B, view, flat0, inb)
            if contiguous(strides):
                return "contiguous", ptr0
            if self.mask is None and all(st == 0 for st in strides[:-1]) and 2 <= strides[-1] <= MAX_DENSE_STRIDE:
                return "strided", (ptr0, strides[-1])
            step = i64(0)
            for d, st in enumerate(strides):
                if st:
                    term = i64(st)
                    for ext in view.extents[d + 1:]:
                        term = B.mul(term, ext, flags=("nsw",))
                    step = B.add(step, term, flags=("nsw",))
            mty = memory_type(view.dtype)
            ptrs = [ptr0] + [B.gep(ptr0, [B.mul(step, i64(k), flags=("nsw",))], inbounds=inb, source_etype=mty)
                             for k in range(1, self.width)]
            return "lanes", ptrs
        quotient = _quotient_of_lane(indices[-1], self.var) if indices else None
        if load and self.mask is None and quotient is not None and all(st == 0 for st in strides[:-1]):
            flat0 = memory.flat_index(B, view, [self.lane0.index(i) for i in indices])
            q, numerator, k = quotient
            return "quotient", (memory.element_ptr(B, view, flat0), self.lane0.index(numerator), k, q.op)
        # one element offset per lane from a base address: the terms of the indices that move with the
        # lanes give the offsets, the others the base, so that reads whose indices differ in terms that
        # do not move (the corners of an interpolation) share their offsets and only add their base
        parts = [split_along(i, self.var) for i in indices]
        base = memory.flat_index(B, view, [i64(0) if fixed is None else self.lane0.index(fixed)
                                           for _, fixed in parts])
        offsets, stride = None, None
        for d in reversed(range(len(parts))):
            moving = parts[d][0]
            if moving is not None:
                term = self.index(moving)
                if stride is not None:
                    term = self.ops.binary("mul", int64, term, stride, index=True)
                offsets = term if offsets is None else self.ops.binary("add", int64, offsets, term, index=True)
            if d:
                stride = view.extents[d] if stride is None else B.mul(stride, view.extents[d], flags=("nsw",))
        # (the base alone may lie outside the buffer: no `inbounds`)
        return "gather", (memory.element_ptr(B, view, base, False), self.ops.broadcast(offsets, self.width))

    def share_neighbour_loads(self, e):
        """Before `e` is emitted: group its unmasked contiguous reads by array and by indices that differ
        by a constant in the last one only; in each group, load the vectors at the least offset and at
        the offsets reached from it a vector at a time (each the furthest within a vector of the one
        before), and make each read between two of them a shuffle of those two. Only the offsets read
        are loaded, so no element is read that the scalar iterations would not read."""
        if self.mask is not None:
            return
        # (a value at hand is left out: a transposed block's, a window's)
        groups = neighbour_groups([n for n in walk(e) if isinstance(n, Access) and n.indices
                                   and (id(n), False) not in self._cache], self.var)
        for first, offsets in groups:
            anchors = anchors_of(sorted(offsets), self.width)
            if len(anchors) == len(offsets):
                continue        # nothing between two loads: nothing to share
            loaded = {o: self.emit(offsets[o][0]) for o in anchors}
            for o, nodes in offsets.items():
                if o in loaded:
                    value = loaded[o]
                else:
                    a = max(x for x in anchors if x < o)
                    b = min(x for x in anchors if x > o)
                    lanes = [o - a + k if o + k < a + self.width else self.width + o + k - b
                             for k in range(self.width)]
                    value = self.B.shuffle_vector(loaded[a], loaded[b],
                                                  ir.Constant(ir.VectorType(I32, self.width), lanes))
                for node in nodes:
                    self._cache[(id(node), False)] = (node, value)

    def lane_bit(self, k):
        return self.B.extract_element(self.mask, ir.Constant(I32, k))

    # loads --------------------------------------------------------------------------
    def access(self, e):
        view = self.scope.buf(e.target.name)
        how, ptr = self.lane_pointers(view, e.indices, load=True)
        B = self.B
        if how == "quotient":
            return self._quotient_load(view, e, *ptr)
        if how == "uniform":
            if self.mask is None:
                return memory.load(B, view, ptr)
            return self._guarded_load(view, ptr, self._any(self.mask))
        if how == "contiguous":
            if self.mask is None or self._whole(view):
                return memory.load(B, view, ptr, self.width)
            return self._masked_load(view, ptr)
        if how == "strided":
            return self._strided_load(view, *ptr)
        if how == "gather":
            return self._gather(view, ptr)
        vt = ir.VectorType(value_type(view.dtype), self.width)
        out = ir.Constant(vt, ir.Undefined)
        for k, p in enumerate(ptr):
            lane = (memory.load(B, view, p) if self.mask is None
                    else self._guarded_load(view, p, self.lane_bit(k)))
            out = B.insert_element(out, lane, ir.Constant(I32, k))
        return out

    def _strided_load(self, view, ptr0, stride):
        """Lanes `ptr0[stride * k]` from a few contiguous vector loads and shuffles: the loads cover
        exactly the elements from the first lane to the last (the last load ends at the last lane), so
        none reads outside what the scalar iterations read."""
        B, w = self.B, self.width
        span = stride * (w - 1) + 1
        starts = [j * w for j in range((span - 1) // w)] + [span - w]
        mty = memory_type(view.dtype)
        loads = [memory.load(B, view, B.gep(ptr0, [i64(o)], inbounds=True, source_etype=mty), w) for o in starts]

        def source(k):  # (load, lane in it) holding lane k's element
            j = min(stride * k // w, len(starts) - 1)
            return j, stride * k - starts[j]
        out = loads[0]
        for j in range(1, len(loads)):
            mask = [w + source(k)[1] if source(k)[0] == j else (k if j > 1 else source(k)[1])
                    for k in range(w)]
            out = B.shuffle_vector(out, loads[j], ir.Constant(ir.VectorType(I32, w), mask))
        return out

    def _quotient_load(self, view, e, ptr0, numerator, k, division):
        """Lanes reading `(n0 + lane) / k` (n0 the numerator at lane 0): the few elements they cover, loaded
        as one vector (masked to those, so none is read that the scalar iterations would not read), and
        spread by the shuffle of n0's remainder by k, as Halide reads an upsampled level. A C division of
        a negative n0 (its lanes do not step alike) reads them with a gather instead."""
        B, w = self.B, self.width
        n = (k - 1 + w - 1) // k + 1   # elements the lanes cover, at most
        remainder = B.srem(numerator, i64(k))
        if division == "ediv":
            remainder = B.select(B.icmp_signed("<", remainder, i64(0)), B.add(remainder, i64(k)), remainder)
        # lane j of the loaded vector is needed when j <= (remainder + w - 1) / k
        count = B.add(B.sdiv(B.add(remainder, i64(w - 1)), i64(k)), i64(1))
        iota = ir.Constant(ir.VectorType(I64, n), list(range(n)))
        mask = B.icmp_signed("<", iota, self.ops.broadcast(count, n))
        mty = ir.VectorType(memory_type(view.dtype), n)
        fn = declare(B.module, f"llvm.masked.load.{type_suffix(mty)}.p0",
                     ir.FunctionType(mty, [ptr0.type, I32, mask.type, mty]))
        dense = B.call(fn, [ptr0, ir.Constant(I32, view.dtype.bytes), mask, ir.Constant(mty, None)])
        out = None
        for r in reversed(range(k)):
            spread = B.shuffle_vector(dense, ir.Constant(mty, None),
                                      ir.Constant(ir.VectorType(I32, w), [(r + lane) // k for lane in range(w)]))
            out = spread if out is None else B.select(B.icmp_signed("==", remainder, i64(r)), spread, out)
        value = memory.to_register(B, view.dtype, out)
        if division == "ediv":
            return value
        # C division: the pattern holds from a numerator of 0 up; below, a gather
        return self._value_if(B.icmp_signed("<", numerator, i64(0)),
                              lambda: self._gather(view, self.lane_pointers(view, e.indices)[1]), value, "negative")

    def _value_if(self, cond, make, otherwise, name):
        """`make()`, emitted in a branch run only where `cond` holds, else `otherwise` (a value at hand)."""
        B = self.B
        before, made = B.block, []
        cached = dict(self._cache)
        if_then_else(self.fs, cond, lambda: made.append((make(), B.block)), name=name)
        # what the branch emitted does not dominate the code after it: emitted again where needed there
        self._cache = cached
        phi = B.phi(otherwise.type)
        phi.add_incoming(*made[0])
        phi.add_incoming(otherwise, before)
        return phi

    def gather_lanes(self, view, base_offsets):
        """The address of each lane of a gather or scatter (`lane_pointers`' base and offsets)."""
        base, offsets = base_offsets
        return [self.B.gep(base, [self.B.extract_element(offsets, ir.Constant(I32, k))],
                           source_etype=memory_type(view.dtype)) for k in range(self.width)]

    def _gather(self, view, base_offsets):
        """The lanes at a base address and a vector of offsets (masked-off lanes are not read and give
        zero): one load per lane where the CPU's gather instruction is the slower way
        (Options.lane_loads)."""
        mty = ir.VectorType(memory_type(view.dtype), self.width)
        if self.mask is None and self.fs.ms.options.lane_loads:
            v = ir.Constant(mty, None)
            for k, p in enumerate(self.gather_lanes(view, base_offsets)):
                v = self.B.insert_element(v, self.B.load(p, typ=mty.element), ir.Constant(I32, k))
            return memory.to_register(self.B, view.dtype, v)
        base, offsets = base_offsets
        ptrs = self.B.gep(base, [offsets], source_etype=mty.element)
        ptrs.type = ir.VectorType(PTR, self.width)   # (llvmlite types a GEP by its base)
        mask = self.mask if self.mask is not None else ir.Constant(ir.VectorType(I1, self.width), [1] * self.width)
        fn = declare(self.B.module, f"llvm.masked.gather.{type_suffix(mty)}.v{self.width}p0",
                     ir.FunctionType(mty, [ptrs.type, I32, mask.type, mty]))
        v = self.B.call(fn, [ptrs, ir.Constant(I32, view.dtype.bytes), mask, ir.Constant(mty, None)])
        return memory.to_register(self.B, view.dtype, v)

    def _whole(self, view) -> bool:
        """Whether a chunk under a mask may still load and store whole vectors of `view`: a register
        tile padded to this loop's width (the lanes past the end are the tile's own). The mask is then
        a partial chunk's: a promoted tile's loop has no `if` (backends/common/promote.py)."""
        return view.padded_lanes == self.width

    def _any(self, mask):
        fn = declare(self.B.module, f"llvm.vector.reduce.or.v{self.width}i1",
                     ir.FunctionType(I1, [mask.type]))
        return self.B.call(fn, [mask])

    def _guarded_load(self, view, ptr, cond):
        """A scalar load done only when `cond` holds (else a zero value)."""
        return self._value_if(cond, lambda: memory.load(self.B, view, ptr),
                              ir.Constant(value_type(view.dtype), None), "lane")

    def _masked_load(self, view, ptr):
        mty = ir.VectorType(memory_type(view.dtype), self.width)
        fn = declare(self.B.module, f"llvm.masked.load.{type_suffix(mty)}.p0",
                     ir.FunctionType(mty, [ptr.type, I32, self.mask.type, mty]))
        v = self.B.call(fn, [ptr, ir.Constant(I32, view.dtype.bytes), self.mask, ir.Constant(mty, None)])
        return memory.to_register(self.B, view.dtype, v)


class VectorBody:
    """Emits one chunk of a vector loop's body: statements under an optional lane mask."""

    def __init__(self, fs, scope, var, width, given=None):
        self.fs, self.scope, self.var, self.width = fs, scope, var, width
        self.given = given or {}     # {id(Access): (node, value)} of reads computed before (transposed)

    def emitter(self, mask):
        return VectorEmitter(self.fs, self.scope, self.var, self.width, mask)

    def emit(self, s, mask):
        if s is None:
            return
        if isinstance(s, Block):
            for c in s.body:
                self.emit(c, mask)
        elif isinstance(s, Store):
            self.store(s, mask)
        elif isinstance(s, If):
            self.if_(s, mask)
        elif isinstance(s, For):
            self.for_(s, mask)
        else:  # vectorizable() admitted only these
            raise AssertionError(type(s).__name__)

    def for_(self, s, mask):
        """An inner loop: its iterator is the same in every lane, its body is vectorized."""
        em = self.emitter(mask)
        lo, hi = em.index(s.lo), em.index(s.hi)
        fs = self.fs

        def body(v, given=None):
            VectorBody(fs, self.scope.with_var(s.var, v), self.var, self.width, given).emit(s.body, mask)

        trip = constant_difference(s.hi, s.lo)
        if s.kind == "unroll" and trip is not None and 0 <= trip <= max(s.factor, 1):
            # copies that read across rows: one block loaded by rows and transposed (transposed.py)
            given = transposed.blocks(s, lo, self.scope, self.var, self.width, fs) \
                if mask is None and trip == self.width else None
            for k in range(trip):
                body(lo if k == 0 else fs.builder.add(lo, i64(k), flags=("nsw",)), given and given[k])
            return
        counted_loop(fs, lo, hi, body, name=s.var)

    def if_(self, s, mask):
        cond = self.emitter(mask).emit(s.cond)
        if not is_vector(cond):
            else_ = None if s.else_ is None else (lambda: self.emit(s.else_, mask))
            if_then_else(self.fs, cond, lambda: self.emit(s.then, mask), else_)
            return
        ops = self.fs.ops
        self.emit(s.then, cond if mask is None else ops.logic("and", mask, cond))
        if s.else_ is not None:
            inv = ops.not_(cond)
            self.emit(s.else_, inv if mask is None else ops.logic("and", mask, inv))

    def store(self, s, mask):
        em = self.emitter(mask)
        for key, value in self.given.items():
            em._cache[(key, False)] = value
        em.share_neighbour_loads(s.value)
        value = em.emit(s.value)
        view = self.scope.buf(s.buffer.name)
        if len(s.indices) != len(view.extents):
            raise ValueError(f"store to {view.name} with {len(s.indices)} indices")
        how, ptr = em.lane_pointers(view, s.indices)
        B = self.fs.builder
        ops = self.fs.ops
        if how == "gather":    # a scatter: lane by lane, so that lanes storing to one element keep their order
            ptr = em.gather_lanes(view, ptr)
        if how == "strided":   # stored lane by lane: a dense store would write the elements in between
            ptr0, stride = ptr
            mty = memory_type(view.dtype)
            ptr = [B.gep(ptr0, [i64(stride * k)], inbounds=True, source_etype=mty) for k in range(self.width)]
        if how == "contiguous":
            value = ops.broadcast(value, self.width)
            if mask is None or em._whole(view):
                memory.store(B, view, ptr, value)
            else:
                self._masked_store(view, ptr, value, mask)
            return
        if how == "uniform":
            if mask is None:
                if is_vector(value):  # every lane writes here; the last one is what remains
                    value = B.extract_element(value, ir.Constant(I32, self.width - 1))
                memory.store(B, view, ptr, value)
                return
            ptr = [ptr] * self.width
        for k, p in enumerate(ptr):
            lane = B.extract_element(value, ir.Constant(I32, k)) if is_vector(value) else value
            if mask is None:
                memory.store(B, view, p, lane)
            else:
                if_then_else(self.fs, B.extract_element(mask, ir.Constant(I32, k)),
                             lambda p=p, lane=lane: memory.store(B, view, p, lane), name="lane")

    def _masked_store(self, view, ptr, value, mask):
        B = self.fs.builder
        value = memory.to_memory(B, view.dtype, value)
        fn = declare(B.module, f"llvm.masked.store.{type_suffix(value.type)}.p0",
                     ir.FunctionType(ir.VoidType(), [value.type, ptr.type, I32, mask.type]))
        B.call(fn, [value, ptr, ir.Constant(I32, view.dtype.bytes), mask])
