"""Example programs used by the demo, the tests and the benchmarks. Each builder returns the Function
and its computations so callers can schedule them."""
import mascarpone as ms
from mascarpone.middleend.recipes import blis_nest


def blur():
    """Two-stage 3x3 box blur: bx over rows, by over columns (valid region, no boundary)."""
    H, W = ms.Param("H"), ms.Param("W")
    y, x = ms.Var("y", 0, H), ms.Var("x", 0, W)
    yb = ms.Var("y", 0, H + 2)
    with ms.Function("blur") as f:
        img = ms.Input("img", [H + 2, W + 2], ms.float32)
        bx = ms.Computation("bx", [yb, x], (img[yb, x] + img[yb, x + 1] + img[yb, x + 2]) / 3)
        by = ms.Computation("by", [y, x], (bx[y, x] + bx[y + 1, x] + bx[y + 2, x]) / 3)
    return f, bx, by


def heat2d():
    """Heat-2d: `u` diffuses A for T steps (the border keeps its values), folded to the two time steps a
    step reads; returns the Function, u's first step and its update over time."""
    N, T = ms.Param("N"), ms.Param("T")
    ta, ya, xa = ms.Var("t", 0, T + 1), ms.Var("y", 0, N), ms.Var("x", 0, N)
    t = ms.Var("t", 1, T + 1)
    with ms.Function("heat2d") as f:
        A = ms.Input("A", [N, N], ms.float64)
        u = ms.Computation("u", [ta, ya, xa], A[ya, xa], where=(ta == 0))
        interior = (ya >= 1) & (ya < N - 1) & (xa >= 1) & (xa < N - 1)
        up, down = ms.max(ya - 1, 0), ms.min(ya + 1, N - 1)
        left, right = ms.max(xa - 1, 0), ms.min(xa + 1, N - 1)
        step = u.update([t, ya, xa], ms.select(
            interior, 0.25 * (u[t - 1, up, xa] + u[t - 1, down, xa] + u[t - 1, ya, left] + u[t - 1, ya, right]),
            u[t - 1, ya, xa]))
    u.storage_fold("t", 2)
    return f, u, step


def gemm(dtype=ms.float32):
    """C = A @ B as an initialisation and a reduction update."""
    N, M, K = ms.Param("N"), ms.Param("M"), ms.Param("K")
    i, j, k = ms.Var("i", 0, N), ms.Var("j", 0, M), ms.Var("k", 0, K)
    with ms.Function("gemm") as f:
        A = ms.Input("A", [N, K], dtype)
        B = ms.Input("B", [K, M], dtype)
        C = ms.Computation("C", [i, j], ms.cast(dtype, 0))
        acc = C.update([i, j, k], C[i, j] + A[i, k] * B[k, j])
    return f, C, acc


def gemm_packed(dtype=ms.float32, mr=6, nr=16):
    """C = A @ B reading A and B through packed copies, Ap[i / mr, k, i % mr] and Bp[j / nr, k, j % nr],
    and accumulating in Ct, a copy of C stored tile by tile: Ct[i, j] lies at
    Cp[i / mr, j / nr, i % mr, j % nr], so the mr x nr tile a register block updates is one
    contiguous run of memory. (In C itself its rows lie a row apart: with a power-of-two row length
    they fall in the same few L1 sets, and reloading them for every kc slice misses.) C copies Ct.

    Returns `(f, Ap, Bp, Ct, acc, C)`, `acc` being Ct's update. Scheduled with compute_at, the
    copies become the cache blocks of a BLIS-style gemm whose inner loops stream contiguous memory.
    """
    N, M, K = ms.Param("N"), ms.Param("M"), ms.Param("K")
    i, j, k = ms.Var("i", 0, N), ms.Var("j", 0, M), ms.Var("k", 0, K)
    ib, ii = ms.Var("ib", 0, (N + mr - 1) // mr), ms.Var("ii", 0, mr)
    jb, jj = ms.Var("jb", 0, (M + nr - 1) // nr), ms.Var("jj", 0, nr)
    with ms.Function("gemm") as f:
        A = ms.Input("A", [N, K], dtype)
        B = ms.Input("B", [K, M], dtype)
        Ap = ms.Computation("Ap", [ib, k, ii], A[ib * mr + ii, k], where=(ib * mr + ii < N))
        Bp = ms.Computation("Bp", [jb, k, jj], B[k, jb * nr + jj], where=(jb * nr + jj < M))
        Ct = ms.Computation("Ct", [i, j], ms.cast(dtype, 0))
        acc = Ct.update([i, j, k], Ct[i, j] + Ap[i // mr, k, ms.floormod(i, mr)] * Bp[j // nr, k, ms.floormod(j, nr)])
        C = ms.Computation("C", [i, j], Ct[i, j])
    Ct.store_in(ms.Buffer("Cp", [(N + mr - 1) // mr, (M + nr - 1) // nr, mr, nr], dtype),
                [i // mr, j // nr, ms.floormod(i, mr), ms.floormod(j, nr)])
    return f, Ap, Bp, Ct, acc, C


def gemm_register_tile(vector_bits=None):
    """`(mr, nr)` of the register tile for SIMD registers of `vector_bits` bits (None: this machine's):
    mr rows of nr floats. With AVX-512, 8 x 32: 16 zmm accumulators, each row of A broadcast once per
    two vectors of B (2 cores of a quiet Zen 5, 2026-11-29, best of 7 calls: 447 GFLOP/s at 2048^3, 431
    at 1024^3, 441 at 512^3, against 394-405, 375 and 390 by 8 x 16; 6 x 32 within 1% of 8 x 32, 14 x 16
    403-408 at 2048^3; numpy's OpenBLAS SkylakeX kernel 425 at 2048^3 in the same hour. On the same
    machine under other jobs' load, 8 x 16 had measured ahead), else 6 x 16 (with AVX2's 16 ymm, 12
    accumulators)."""
    if vector_bits is None:
        from mascarpone.middleend.autoschedule.machine import simd_bytes
        vector_bits = 8 * simd_bytes()
    return (8, 32) if vector_bits >= 512 else (6, 16)


def gemm_packed_blocks(N, M, K, threads=None, vector_bits=None):
    """Block sizes of `schedule_gemm_packed` for an N x K times K x M product on `threads` threads
    (None: `ms.get_num_threads()`), with the register tile of `gemm_register_tile(vector_bits)`: the
    columns cut into one nc-wide panel per thread (a multiple of nr, at most 4096: each panel packs
    all of A again, so more panels would balance a thread slowed by other work at the price of
    packing, about 3% at 2048 per extra panel per thread); kc such that a kc x nr
    panel of B is 16 KB, half of a 32 KB L1, where it stays while the mr x kc slivers of A stream
    past it (256 for 16 floats, 128 for 32); mc = 16 mr rows (an mc x kc block of A in L2)."""
    mr, nr = gemm_register_tile(vector_bits)
    threads = threads or ms.get_num_threads()
    per_thread = -(-M // threads)
    nc = max(nr, min(4096, -(-per_thread // nr) * nr))
    return dict(mc=16 * mr, kc=16 * 1024 // (4 * nr), nc=nc, mr=mr, nr=nr)


def schedule_gemm_packed(Ap, Bp, Ct, acc, C, mc=96, kc=256, nc=1024, mr=6, nr=16):
    """BLIS's loop nest over panels of columns: each thread takes nc-wide column panels
    (parallel j0, with no barrier until the end), packs its kc x nc slice of B per kc step and an
    mc x kc block of A per mc step, and sweeps mr x nr register tiles (mr rows unrolled, nr columns
    as vectors) over kc. Zeroing Ct and copying it to C run in parallel over rows.
    `gemm_packed_blocks` picks the sizes for a problem and a thread count."""
    j0, k0, i0 = blis_nest(acc, "i", "k", "j", mc, kc, nc, mr, nr)
    acc.parallelize(j0)
    Bp.compute_at(acc, k0)
    Ap.compute_at(acc, i0)
    for stage in (Ct, C):
        stage.parallelize("i")
        stage.vectorize("j", nr)


def schedule_gemm_cache_read(f, C, acc, mc=96, kc=256, nc=512, mr=6, nr=32):
    """The plain `gemm()` in BLIS's loop nest, its blocks of A and B packed by `cache_read` (a copy of
    B's kc x nc block per k0, of A's mc x kc block per i0) rather than by copies in the algorithm.
    Returns (A's copy, B's copy)."""
    j0, _, _ = blis_nest(acc, "i", "k", "j", mc, kc, nc, mr, nr)
    acc.parallelize(j0)
    A, B = f.inputs
    b_copy = acc.cache_read(B, at="k0")
    a_copy = acc.cache_read(A, at="i0")
    b_copy.vectorize(b_copy.loops[-1], min(nr, 16))
    C.parallelize("i")
    C.vectorize("j", min(nr, 16))
    return a_copy, b_copy


def schedule_gemm_two_level(C, acc, tile_i=64, tile_j=256, mr=4, nr=16):
    """Two levels of tiling: tile_i x tile_j cache tiles, each swept by mr x nr register tiles
    (rows unrolled, columns vectorized) over the whole k loop; cache tiles run in parallel."""
    i0, j0, i1, j1 = acc.tile("i", "j", tile_i, tile_j)
    i10, i11 = acc.split(i1, mr)
    j10, j11 = acc.split(j1, nr)
    acc.reorder(i0, j0, i10, j10, "k", i11, j11)
    acc.unroll(i11, mr)
    acc.vectorize(j11, nr)
    acc.parallelize(i0)
    C.parallelize("i")
    C.vectorize("j", nr)
