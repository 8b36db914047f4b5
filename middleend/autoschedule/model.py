"""The analytical model: loop order from memory strides, tile sizes from cache capacity, and the
variants of what it cannot settle (tile sizes, unroll factors, compute_at or root) for the search.

Loop order follows McKinley, Carr and Tseng's loop cost (TOPLAS 1996): the cost of a loop placed
innermost is the number of cache lines its references touch over its iterations; loops are
nested from the most costly outside to the cheapest inside, so the stride-one loop ends innermost.
"""
from __future__ import annotations

import itertools

from . import machine
from .analysis import CACHE_LINE

#: tile edges the model and the search pick from
TILE_EDGES = (8, 16, 32, 64, 128, 256)
#: unroll factors of the loop around the vector loop the search tries
UNROLL_FACTORS = (1, 2, 4)
#: loops of at most this constant trip count are unrolled whole
SMALL_LOOP = 8
#: independent chains a recurrence along the innermost loop is interleaved into (enough to cover the
#: latency of a floating-point add several times over), and the variants the search tries
CHAINS, CHAIN_VARIANTS = 8, (1, 4, 16)
#: vectors a histogram's scatter is vectorized by across the cells it writes (the bilateral grid's, float32
#: at 1536x2560 on 2 Zen 5 cores: 7.6 ms by 8 interleaved scalar chains, 4.5 by one vector, 4.2 by two)
SCATTER_VECTORS = 2
#: the largest skew factor tried to make a loop's values independent (a stencil's reach per step)
MAX_SKEW = 3
#: permutations tried, best first, before keeping the original order
MAX_ORDERS = 6
#: register tiles (values of the outer loop, vectors of the stride-one loop) the search tries
REGISTER_TILES = ((8, 1), (4, 2), (6, 2))
#: values of a stencil's loop around the vector loop computed together (unroll-and-jam), so that each
#: vector loaded serves its neighbours too; the search tries the others. Jacobi's 5-point sweep, float64
#: at 260^2 on one Zen 5 core: 0.36 ns a point without, 0.31 by 2, 0.28 by 4, 0.30 by 6.
JAM, JAM_VARIANTS = 4, (2, 8)
#: the factor for a stencil that reads neighbours along the lanes too and whose arrays stay in the
#: caches from sweep to sweep (split tiles): the jammed rows share the CPU back-end's sliding windows (a
#: row's centre is the row above's neighbour below). jacobi-2d's split tiles, 260^2 on 2 Zen 5 cores, one
#: process: 0.108-0.116 ms by 2, 0.108-0.121 by 4, 0.14 by 8, 0.120-0.126 without. A sweep that streams
#: from memory gains nothing (Halide's heat2d at 1536x2560: 0.96-1.19 of the time without).
WINDOW_JAM = 2


def reference_cost(ref, var, trip) -> float:
    """Cache lines `ref` touches over `trip` iterations of `var` run innermost."""
    if not ref.touches(var):
        return 1.0
    if ref.consecutive_in(var):
        stride = abs(ref.coefficient(var, len(ref.dims) - 1)) * ref.elem_bytes
        return max(1.0, trip * stride / CACHE_LINE)
    return float(trip)


def loop_cost(stage, var) -> float:
    """McKinley's LoopCost: lines touched by all references with `var` innermost, times the
    iterations of the other loops."""
    others = 1.0
    for v in stage.vars:
        if v != var:
            others *= max(1, stage.trip(v))
    return others * sum(reference_cost(r, var, max(1, stage.trip(var))) for r in stage.refs)


def loop_orders(stage) -> list:
    """Permutations of the stage's variables, the model's best first: the cheapest loop innermost,
    then the next cheapest, and so on (at most MAX_ORDERS; the original order is always last)."""
    cost = {v: loop_cost(stage, v) for v in stage.vars}
    original = tuple(stage.vars)
    if len(original) > 5:
        perms = [tuple(sorted(original, key=lambda v: -cost[v]))]
    else:
        perms = list(itertools.permutations(original))
    # lexicographic on the costs from the innermost loop outwards; the original order breaks ties
    perms.sort(key=lambda p: ([cost[v] for v in reversed(p)], [original.index(v) for v in p]))
    best = perms[:perms.index(original) + 1][:MAX_ORDERS - 1]
    return best if best[-1] == original else best + [original]


def has_reuse(stage, band) -> bool:
    """Whether tiling `band` can keep data in cache: a reference that does not move with one of its
    loops (reused across that loop), a gather (a data-dependent index, which neighbouring iterations
    of a warp or a resampling point at neighbouring elements: only measuring tells), or two
    references to one array at a constant distance (a stencil)."""
    if any(not r.touches(v) for r in stage.refs for v in band):
        return True
    if any(c is None for r in stage.refs if not r.is_write for c in r.dims):
        return True
    seen = set()
    for r in stage.refs:
        if r.is_write or any(c is None for c in r.dims):
            continue
        shape = (r.array, tuple(tuple(sorted(c.items())) for c in r.dims))
        if shape in seen:
            return True
        seen.add(shape)
    return False


def reuses_along(stage, var) -> bool:
    """Whether two reads of one array differ only by a constant in an index dimension that `var` moves
    (a stencil's neighbours along `var`): iterations of `var` computed side by side share their loads."""
    groups = {}
    for r in stage.refs:
        if not r.is_write and r.constants and all(c is not None for c in r.dims):
            key = (r.array, tuple(tuple(sorted(c.items())) for c in r.dims))
            groups.setdefault(key, []).append(r.constants)
    for (_, dims), constants in groups.items():
        for d, coeffs in enumerate(dims):
            offsets = {k[d] for k in constants}
            if dict(coeffs).get(var) and None not in offsets and len(offsets) > 1:
                return True
    return False


def jam_factor(stage, vector_var, resident=False) -> int:
    """The model's unroll-and-jam factor for a stencil vectorized along `vector_var`: JAM, or where it
    reads an array at neighbouring offsets along the lanes too (carried from chunk to chunk as sliding
    windows, which the jammed copies share), WINDOW_JAM if its arrays stay `resident` in the caches over
    its sweeps, else none."""
    if not reuses_along(stage, vector_var):
        return JAM
    return WINDOW_JAM if resident else 0


def footprint_bytes(stage, band, sizes, refs=None) -> int:
    """Bytes the references (`refs`, default all the stage's) touch in one tile: `band` loops over `sizes`
    iterations, the others fixed."""
    span = dict(zip(band, sizes))
    total = 0
    for ref in stage.refs if refs is None else refs:
        elems = 1
        for coeffs in ref.dims:
            if coeffs is None:
                elems *= 64      # a data-dependent index: assume a modest spread
                continue
            elems *= 1 + sum(abs(c) * (span.get(v, 1) - 1) for v, c in coeffs.items())
        total += elems * ref.elem_bytes
    return total


def needs_tiling(stage, band) -> bool:
    """Whether one iteration of the band's outermost loop touches more data than L2 holds, so that
    what it reuses would be evicted before the next iteration (otherwise the loop order alone keeps
    the reuse in cache and tiles only add loop overhead)."""
    inner = band[1:]
    return footprint_bytes(stage, inner, [stage.trip(v) for v in inner]) > machine.cache_bytes(2)


def tile_sizes(stage, band, lanes, capacity) -> list:
    """Tile edges for the loops of `band` (outermost first): the innermost a multiple of the vector
    width up to 256, the others equal and as large as fits `capacity` bytes."""
    inner = band[-1]
    t_inner = min(256, _round_up(stage.trip(inner), lanes))
    best = [TILE_EDGES[0]] * (len(band) - 1) + [t_inner]
    for edge in TILE_EDGES:
        sizes = [min(edge, _round_up(stage.trip(v), 8)) for v in band[:-1]] + [t_inner]
        if footprint_bytes(stage, band, sizes) <= capacity:
            best = sizes
    return best


def tile_variants(stage, band, lanes) -> list:
    """Tile sizes the search tries beside the model's: none ([]), fitting L1 and fitting all of L2,
    and the innermost edge halved or doubled."""
    model = tile_sizes(stage, band, lanes, machine.cache_bytes(2) // 2)
    out = [model, []]
    for capacity in (machine.cache_bytes(1), machine.cache_bytes(2)):
        out.append(tile_sizes(stage, band, lanes, capacity))
    for scale in (0.5, 2):
        inner = int(model[-1] * scale)
        if lanes <= inner <= 512:
            out.append(model[:-1] + [inner])
    unique = []
    for sizes in out:
        if sizes not in unique:
            unique.append(sizes)
    return unique


#: the search's "tiles" value asking for a band tiled by sizes given at call time (screen_tiles)
PARAMETRIC = "parametric"

#: the edges the screening of a band's tile sizes tries: the outer loops' (all equal) and the innermost
#: loop's in vectors
SCREEN_OUTER_EDGES, SCREEN_INNER_VECTORS = (4, 8, 16, 32, 64, 128), (1, 2, 4, 8, 16)


def tile_grid(stage, band, lanes) -> list:
    """Tile sizes of `band` for a screening by one kernel with parametric tiles: every pair of an outer
    edge (shared by the outer loops) and an inner edge in whole vectors, each edge shorter than its
    loop (a longer one is the same tile as the whole loop, tried once)."""
    outer_trip = min(stage.trip(v) for v in band[:-1])
    inner_trip = stage.trip(band[-1])
    outers = [e for e in SCREEN_OUTER_EDGES if e < outer_trip] + [outer_trip]
    inners = [lanes * v for v in SCREEN_INNER_VECTORS if lanes * v < inner_trip] + [_round_up(inner_trip, lanes)]
    grid = []
    for o in outers:
        for i in inners:
            sizes = [min(o, stage.trip(v)) for v in band[:-1]] + [i]
            if sizes not in grid:
                grid.append(sizes)
    return grid


def _round_up(n, m):
    return max(m, -(-n // m) * m)


def register_tile(packed=False) -> tuple:
    """The model's register tile of a reduction nest: (values of the outer loop a, vectors of the stride-one
    loop v). With AVX-512's 32 registers, 8 values by one vector: on one Zen 5 core, a float64 gemm at
    264^3 ran at 43 GFLOP/s, against 30 for 4 by two vectors and 26 for 6 by two; packed at 512^3, 42
    against 33 for 6 by two. Where packed blocks feed the tile, 12 values by one vector: float32 gemm on
    2 cores, 382 GFLOP/s at 2048^3 against 346 for 8 by one, 372 against 342 at 1024^3; the Julia gemm at
    1000x1100x1200, 16.4 ms against 17.4; 2mm at PolyBench's sizes, 23.9 against 26.2 (one process
    each). With AVX2's 16, 4 by two vectors, or 6 by two where packed."""
    if machine.simd_bytes() >= 64:
        return (12, 1) if packed else (8, 1)
    return (6, 2) if packed else (4, 2)


#: tiles (values of the interleaved chains' outer loop, of the loop inside it) of a sweep that no loop can
#: run in parallel (a Gauss-Seidel sweep), run in wavefronts of tiles by the threads; the variants the
#: search tries (seidel-2d at 1000^2, 20 steps, on 2 threads: 39 ms serial, 22-35 ms by 32 x 128 tiles,
#: 31-43 by the others; at 200^2, 4 steps, no faster than serial)
SPACE_WAVE, SPACE_WAVE_VARIANTS = (32, 128), ((16, 128), (32, 256), (64, 128))


def space_wave(stage, rows, columns) -> bool:
    """Whether the model runs an interleaved sweep's tiles in wavefronts: the variables `rows` (of the
    chains and their outer loop) and `columns` (of the loop inside) at least 4 tiles of SPACE_WAVE each,
    so that most wavefronts give each thread tiles of its own."""
    return stage.trip(rows) >= 4 * SPACE_WAVE[0] and stage.trip(columns) >= 4 * SPACE_WAVE[1]


#: values of a register tile's one reduction loop per block where the loop is at least twice as long: a
#: block's rows of what the tile reads stay in L2, and a copy laid out in panels of that many rows by one
#: vector keeps each panel contiguous (covariance at 1400x1200 on 2 threads: 53.5 ms with the whole
#: reduction per tile, 36.5 blocked by 256, 26.5 blocked and read from panels; 128: 28.0)
REDUCTION_BLOCK = 256


def blocks_reduction(stage, reductions) -> bool:
    """Whether a register tile's reduction loop is cut into REDUCTION_BLOCK blocks: one loop, at least
    twice that long."""
    return len(reductions) == 1 and stage.trip(reductions[0]) >= 2 * REDUCTION_BLOCK


#: iterations of the reduction loop unrolled around each vector of a reduction whose written element
#: moves with the vector loop alone (gesummv's y[i] over j): that many of its reads (columns) stream
#: from memory at once, and the sums stay in L1, each thread's rows one block. gesummv on 2 threads, one
#: process: at 1300^2 0.82 ms by 8 columns, 0.97 by 4, 1.57 by a strip of 8 vectors in registers over
#: all columns (one stream, a jump every 512 bytes); at 260^2 10.9 us by 8 or 4, 11.9 by the strip.
#: 0: the strip (the search's other choice)
STREAMS = 8
STREAM_VARIANTS = (0, 4)

#: columns of a register tile's outer loop per step where the tile streams its accumulators through L1
#: (see streams_through_l1): mttkrp at 400x300x150x160 on 2 threads, 418 ms by 4 columns, 756 by 8
STREAM_COLUMNS = 4
#: iterations of the innermost reduction unrolled inside those columns where the tile streams through L1,
#: so each accumulator stays in a register over them instead of a load and a store per term: mttkrp at
#: 400x300x150x160 on 2 threads (one process), 123 ms by 1, 88 by 2, 66 by 4, 60 by 8
STREAM_JAM = 8


def streams_through_l1(stage, a, v, reductions, lanes) -> bool:
    """Whether a register tile of a reduction nest (a, reductions, v) should run its reductions outside
    the loop over `a` instead: the reads that do not move with `a` (mttkrp's B[i, k, l] beside A[i, j])
    touch more than half of L2 over one block of `lanes` values of `v` and all of the reductions, so a
    tile that holds a few values of `a` in registers would read them from memory again for every block
    of `a` (mttkrp at 400x300x150x160: 1084 ms, against 418 with A's block of all j in L1 across k and l;
    at 80x60x30x32, where B's block fits L2, 0.27 ms against 0.29)."""
    others = [r for r in stage.refs[1:] if not r.touches(a)]
    band = [v, *reductions]
    sizes = [lanes] + [stage.trip(r) for r in reductions]
    return bool(others) and footprint_bytes(stage, band, sizes, others) > machine.cache_bytes(2) // 2


def pack_blocks(stage, a, r, v, lanes, elem_bytes) -> dict:
    """BLIS's blocks for a contraction nest (a, r, v) with `v` stride-one: a register tile of mr values of
    `a` by nr of `v` (register_tile), kc values of `r` per block so that a kc x nr sliver of the packed
    right-hand array fills L1 (at most 256), mc = 16 mr rows of the left-hand array per block, and panels
    of nc columns so that a kc x nc block of the right-hand array fills half of L2, but no wider than one
    panel per core (measured on a 2-core Zen 5 at 2048^3: kc 256 and nc 512, 192 GFLOP/s; kc 128 and nc
    1024, 163; a quarter of L2, nc 256, 196 there but 133 at 1024^3, with 4 panels for 2 cores)."""
    mr, vectors = register_tile(packed=True)
    nr = vectors * lanes
    kc = max(16, min(256, machine.cache_bytes(1) // (nr * elem_bytes), stage.trip(r)))
    per_core = -(-stage.trip(v) // machine.cores())
    nc = max(nr, min(machine.cache_bytes(2) // 2 // (kc * elem_bytes), per_core) // nr * nr)
    return dict(mr=mr, nr=nr, kc=kc, mc=16 * mr, nc=nc)


def pack_variants(blocks, lanes) -> list:
    """Blocks the search tries beside the model's: the other register tiles (12 or 8 values by one vector,
    6 by two), the model's with kc halved, and panels twice as wide or half as wide."""
    tiles = [dict(mr=12, nr=lanes), dict(mr=8, nr=lanes), dict(mr=6, nr=2 * lanes)]
    out = [dict(blocks, **t, mc=16 * t["mr"], nc=max(t["nr"], blocks["nc"] // t["nr"] * t["nr"]))
           for t in tiles if (t["mr"], t["nr"]) != (blocks["mr"], blocks["nr"])]
    out.append(dict(blocks, kc=max(16, blocks["kc"] // 2)))
    for scale in (2, 0.5):
        nc = int(blocks["nc"] * scale) // blocks["nr"] * blocks["nr"]
        if nc >= blocks["nr"]:
            out.append(dict(blocks, nc=nc))
    return out
