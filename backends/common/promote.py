"""Accumulators of a serial loop kept in a small local tile (so that LLVM puts them in registers).

In `for k { for ii (unroll) { for ji (vector) { C[i, j] = C[i, j] + A[i, k] * B[k, j] } } }`
the elements of C that the body touches do not depend on `k`, but LLVM cannot
hoist their loads and stores out of the `k` loop: with a run-time row length
it cannot prove that rows of C do not overlap. The loop IR knows more: two
in-bounds elements of a dense buffer with different indices are different
memory. So the loop becomes

    T[tile] (local);  if (lo < hi) { T = C[box]; for k { ...T[ii, ji]... }; C[box] = T }

where the box is exactly the set of elements the body accesses; the copies
use the same unroll/vector tags as the body. T is a stack slot that only
constant-offset accesses touch once unrolled and vectorized, so LLVM's SROA
turns it into registers.

With `prefetch=True`, when the box moves with the loop `p` around (the register
tiles of a gemm sweeping the rows of C), a `Prefetch` of the box of `p`'s next
iteration comes first: `if (p + 1 < p_hi) prefetch(C[box at p + 1])`. Every
accumulator waits on the loads of T before the `k` loop, so a miss there
stalls the whole tile; fetched one reduction loop ahead, they hit the cache.

A buffer qualifies when the loop body is only blocks, stores and loops (of a
constant trip count, or serial ones whose bounds the body does not change), the
buffer is stored in it, every access to it has the same indices, none of which
depends on the loop variable, and each index is `invariant + v` for inner loop
variables `v` fully unrolled or vectorized in whole chunks, each used once: one
variable, or several splitting one dimension densely (`8*i1 + i2` for a vector
loop `i2` of 8 lanes inside `i1`), which become dimensions of their own in the
tile. A vector loop that ends in a partial chunk qualifies where the back-end
runs that chunk under a lane mask (`padded`): the tile's last dimension is then
rounded up to whole vectors, which the chunk loads and stores unmasked. So does
a vector loop of one chunk whose bound depends on an unrolled loop around it
(the diagonal tile of a triangle, `ji < ii + 1`): the copies in and out run over
the triangle only. A reduction over several loops (`k`, then `l`) thus keeps its
accumulators in registers across all of them.
"""
from __future__ import annotations

import itertools

from mascarpone.middleend.buffer import Buffer
from mascarpone.middleend.expr import Access, BinOp, Const, Sym, substitute, pseudo_c, transform, walk
from mascarpone.middleend.loopir import Allocate, Block, For, If, Store, stores, walk_exprs
from mascarpone.middleend.types import int64

from .affine import constant_difference, constant_value, linearize, mentions, value_range
from .prefetch import Prefetch

#: Largest tile kept, in bytes (beyond it registers would spill anyway).
TILE_LIMIT = 4096
#: Cache level the next tile is prefetched into: L2, not L1, because the rows of a tile lie a row
#: length apart, and with a power-of-two row length the current and next tiles fall in the same few
#: L1 sets, where the next would evict the current one.
PREFETCH_LEVEL = 2
_names = itertools.count()


def _inner_loops(s, out, padded=lambda f: False):
    """Collect the loops of a body made only of blocks, stores and loops of a constant trip count,
    serial ones, or vector loops the back-end pads (`padded`: `_promote` checks that those are one
    chunk); False otherwise."""
    if isinstance(s, Block):
        return all(_inner_loops(c, out, padded) for c in s.body)
    if isinstance(s, Store):
        return True
    if isinstance(s, For):
        if s.kind == "parallel" or (s.kind != "serial" and _trip(s) is None and
                                    not (s.kind == "vector" and padded(s))):
            return False
        out.append(s)
        return _inner_loops(s.body, out, padded)
    return False


def _plan(loop, buffer, indices, inner, padded, ranges):
    """For one buffer: per dimension the inner loops its index moves with (outermost first), or None when
    it does not qualify. `padded(f)`: whether a vector loop `f` whose trip count is not a multiple of
    its width may still be a tile dimension (rounded up to whole vectors); `ranges`: the values of the
    unrolled inner loops' variables, which the bound of such a loop of one chunk may depend on (the
    diagonal tile of a triangle: `i < j + 1` in each copy of an unrolled `j`)."""
    loops = {f.var: f for f in inner}
    forbidden = [loop.var] + list(loops)
    for f in inner:  # inner bounds must be fixed while the loop runs (but for one copy of an unrolled loop)
        fixed = [v for v in forbidden if v not in ranges] if _one_chunk(f, padded, ranges) else forbidden
        if any(mentions(f.lo, v) or mentions(f.hi, v) for v in fixed):
            return None
    dims, used = [], set()
    for idx in indices:
        if mentions(idx, loop.var):
            return None
        vs = [v for v in loops if mentions(idx, v)]
        if used & set(vs) or not all(_expanded(loops[v], padded, ranges) for v in vs):
            return None
        used.update(vs)
        a = linearize(idx)
        if any(mentions(x, v) for x in a.atoms() for v in vs):
            return None
        # dense: the innermost moves by 1 and each other by the span of those inside it
        moving = sorted(vs, key=a.coeff)
        span = 1
        for v in moving:
            if a.coeff(v) != span or span is None:
                return None
            span = None if _trip(loops[v]) is None else span * _trip(loops[v])
        dims.append(tuple(loops[v] for v in reversed(moving)))
    return dims


def _expanded(f, padded=lambda f: False, ranges=None):
    """Whether a loop's iterations become constant offsets (fully unrolled, or whole vector chunks: a
    last partial one only where `padded(f)`), which is what lets the tile become registers rather than
    a stack array copied for nothing."""
    trip = _trip(f)
    if trip is None:
        return _one_chunk(f, padded, ranges)
    if f.kind == "unroll":
        return trip <= max(f.factor, 1)
    if f.kind == "vector" and f.factor > 1:
        return trip % f.factor == 0 or trip > 0 and padded(f)
    return False


def _one_chunk(f, padded, ranges=None):
    """Whether `f` is a vector loop the back-end pads whose trip count, not a constant, is at most its
    width (a loop's last partial chunk, `floormod(N, 8)` iterations), the variables of `ranges` taking
    their values there."""
    if f.kind != "vector" or f.factor <= 1 or not padded(f) or _trip(f) is not None:
        return False
    lo = constant_value(f.lo)
    hi = value_range(f.hi, ranges)
    return lo is not None and hi is not None and hi[1] is not None and hi[1] - lo <= f.factor


def _unrolled_ranges(inner) -> dict:
    """{variable: (least, most)} of the fully unrolled loops among `inner` (constant bounds)."""
    out = {}
    for f in inner:
        lo, trip = constant_value(f.lo), _trip(f)
        if f.kind == "unroll" and lo is not None and trip is not None and 0 < trip <= max(f.factor, 1):
            out[f.var] = (lo, lo + trip - 1)
    return out


def _rounded(f):
    """A tile dimension's length for loop `f`: its trip count, up to whole vectors for a vector loop."""
    trip = _trip(f)
    if f.kind != "vector" or f.factor <= 1:
        return trip
    return f.factor if trip is None else -(-trip // f.factor) * f.factor    # (None: one partial chunk)


def _trip(f):
    return constant_difference(f.hi, f.lo)


def _offset(f):
    """`f`'s variable counted from its lower bound: its index in a tile dimension."""
    if isinstance(f.lo, Const) and f.lo.value == 0:
        return Sym(f.var, int64)
    return BinOp("sub", Sym(f.var, int64), f.lo)


def _tile_index(dims, of=_offset):
    """The tile's indices: `of(loop)` per inner loop of each dimension (0 for a dimension none moves)."""
    return tuple(x for fs in dims for x in ([of(f) for f in fs] if fs else [Const(0, int64)]))


def _tile_shape(dims):
    return [n for fs in dims for n in ([_rounded(f) for f in fs] if fs else [1])]


def _rewrite(s, name, tile, dims):
    def repl(n):
        if isinstance(n, Access) and n.target.name == name:
            return Access(tile, _tile_index(dims))
        return None

    if isinstance(s, Block):
        return Block([_rewrite(c, name, tile, dims) for c in s.body])
    if isinstance(s, For):
        return For(s.var, s.lo, s.hi, _rewrite(s.body, name, tile, dims), s.kind, s.factor)
    if isinstance(s, Store):
        value = transform(s.value, repl)
        if s.buffer.name == name:
            return Store(tile, _tile_index(dims), value)
        return Store(s.buffer, s.indices, value)
    return s


def _copy(buffer, indices, tile, dims, to_tile):
    """Loops copying the box between the buffer and the tile, tagged like the body's loops; None where a
    loop's bound depends on a loop that the copy runs inside it."""
    loops = [f for fs in dims for f in fs]
    tvars = {f.var: Sym(f"{f.var}.t{next(_names)}", int64) for f in loops}
    at = {f.var: BinOp("add", f.lo, tvars[f.var]) for f in loops}
    for k, f in enumerate(loops):
        if any(mentions(f.hi, g.var) for g in loops[k:]):
            return None
    src = tuple(substitute(idx, {f.var: at[f.var] for f in fs}) for fs, idx in zip(dims, indices))
    tidx = _tile_index(dims, lambda f: tvars[f.var])
    if to_tile:
        body = Store(tile, tidx, Access(buffer, src))
    else:
        body = Store(buffer, src, Access(tile, tidx))
    for f in reversed(loops):
        trip = Const(_trip(f), int64) if _trip(f) is not None else BinOp("sub", substitute(f.hi, at), f.lo)
        body = For(tvars[f.var].name, Const(0, int64), trip, body, f.kind, f.factor)
    return body


def _box(indices, dims):
    """The indices of the box's first element (each inner loop variable at its lower bound) and its
    extent along each dimension of the buffer."""
    first = tuple(substitute(idx, {f.var: f.lo for f in fs}) for fs, idx in zip(dims, indices))
    extent = []
    for fs in dims:
        n = 1
        for f in fs:
            n *= _rounded(f)
        extent.append(n)
    return first, tuple(extent)


def _promote(loop: For, tiles_made: set, padded=lambda f: False):
    """`(statement, new loop, boxes)`: `loop` rewritten to accumulate in local tiles, or None when no
    buffer qualifies; `boxes` lists each tile's `(buffer, first element's indices, shape)`. The tiles
    made are added to `tiles_made` (they are never promoted again)."""
    inner = []
    if not _inner_loops(loop.body, inner, padded):
        return None
    if len({f.var for f in inner} | {loop.var}) != len(inner) + 1:
        return None  # a reused loop variable name would make indices ambiguous
    ranges = _unrolled_ranges(inner)
    if any(f.kind != "serial" and _trip(f) is None and not _one_chunk(f, padded, ranges) for f in inner):
        return None
    accesses = {}
    for e in walk_exprs(loop.body):
        for n in walk(e):
            if isinstance(n, Access):
                accesses.setdefault(n.target.name, []).append(n.indices)
    body = loop.body
    prologue, epilogue, tiles, boxes = [], [], [], []
    for st in list(stores(loop.body)):
        name = st.buffer.name
        if any(t[0] == name for t in tiles) or st.buffer in tiles_made:
            continue
        all_idx = [s.indices for s in stores(loop.body) if s.buffer.name == name] + accesses.get(name, [])
        text = {tuple(pseudo_c(i) for i in idx) for idx in all_idx}
        if len(text) != 1:
            continue
        dims = _plan(loop, st.buffer, st.indices, inner, padded, ranges)
        if dims is None:
            continue
        shape = _tile_shape(dims)
        size = st.buffer.dtype.bytes
        for d in shape:
            size *= d
        if size > TILE_LIMIT or any(d <= 0 for d in shape):
            continue
        last = dims[-1][-1] if dims and dims[-1] else None
        if any(_rounded(f) != _trip(f) for fs in dims for f in fs if f is not last):
            continue    # rounded up along a dimension that is not the last: its partial chunk is not whole
        tile = Buffer(f"{name}.acc{next(_names)}", shape, st.buffer.dtype, "temporary")
        if last is not None and _rounded(last) != _trip(last):
            tile.padded_lanes = last.factor
        copy_in, copy_out = (_copy(st.buffer, st.indices, tile, dims, to_tile) for to_tile in (True, False))
        if copy_in is None:
            continue
        tiles_made.add(tile)
        tiles.append((name, tile))
        body = _rewrite(body, name, tile, dims)
        boxes.append((st.buffer, *_box(st.indices, dims)))
        prologue.append(copy_in)
        epilogue.append(copy_out)
    if not tiles:
        return None
    new_loop = For(loop.var, loop.lo, loop.hi, body, loop.kind, loop.factor)
    stmt = If(BinOp("lt", loop.lo, loop.hi), Block(prologue + [new_loop] + epilogue))
    for _, tile in reversed(tiles):
        stmt = Allocate(tile, stmt)
    return stmt, new_loop, boxes


def _prefetch_next(boxes, around: For | None):
    """`if (v + 1 < hi) { Prefetch ... }` for the boxes at the next iteration of the loop `around`
    (variable v), or None when there is no such loop or no box moves with it."""
    if around is None or around.kind not in ("serial", "unroll"):
        return None
    v = around.var
    following = {v: BinOp("add", Sym(v, int64), Const(1, int64))}
    hints = [Prefetch(Access(buffer, tuple(substitute(i, following) for i in first)), shape, level=PREFETCH_LEVEL)
             for buffer, first, shape in boxes if any(mentions(i, v) for i in first)]
    if not hints:
        return None
    return If(BinOp("lt", following[v], around.hi), Block(hints))


def runs_serially(loop: For, in_parallel: bool) -> bool:
    """Whether a CPU target runs `loop` one iteration after the other: a serial loop, a parallel loop
    nested in another (one team of threads only), a vector or unroll tag of one lane, or a tag of
    another back-end (GPU, MPI, FPGA)."""
    if loop.kind == "parallel":
        return in_parallel
    if loop.kind in ("vector", "unroll"):
        return loop.factor <= 1
    return True


def promote_accumulators(body, *, serial=runs_serially, enters=lambda loop: True, prefetch=False,
                         padded=lambda loop: False):
    """The loop IR `body` with its accumulators kept in local tiles: each loop that runs serially
    (`serial(loop, in_parallel)`) and qualifies (see the module docstring) is rewritten, outer loops
    first; `enters(loop)` says whether to look inside a loop (a back-end that generates a loop's body
    its own way, as explicit SIMD code, keeps it as it is). `prefetch`: add the `Prefetch` of each
    tile for the next iteration of the loop around (for a back-end that emits it). `padded(loop)`:
    whether the back-end runs a vector loop's last partial chunk as whole vectors under a lane mask, so
    that a tile along it, rounded up to whole vectors (`Buffer.padded_lanes`), stays in registers."""
    tiles_made = set()

    def visit(s, in_parallel, around=None):
        if isinstance(s, Block):
            return Block([visit(c, in_parallel, around) for c in s.body])
        if isinstance(s, If):
            return If(s.cond, visit(s.then, in_parallel, around),
                      None if s.else_ is None else visit(s.else_, in_parallel, around))
        if isinstance(s, Allocate):
            return Allocate(s.buffer, visit(s.body, in_parallel, around))
        if not isinstance(s, For):
            return s
        if serial(s, in_parallel):
            promoted = _promote(s, tiles_made, padded)
            if promoted is not None:
                stmt, loop, boxes = promoted
                loop.body = visit(loop.body, in_parallel, loop)
                hint = _prefetch_next(boxes, around) if prefetch else None
                return stmt if hint is None else Block([hint, stmt])
        if not enters(s):
            return s
        return For(s.var, s.lo, s.hi, visit(s.body, in_parallel or s.kind == "parallel", s), s.kind, s.factor)

    return visit(body, False)
