"""The Julia kernels of the suite: their schedules, their sizes, and numba's versions of their loops.

Each kernel's printed lowered IR (tests/julia_fixtures, Julia 1.6 style) goes through `from_julia`,
gets a schedule (fission/fusion with `after`, interchange, tiling, vectorization, parallel loops),
and runs beside numba's @njit of the same loops in their naive order (the stand-in for Julia's own
LLVM code, which cannot run here) and, where the loops allow it, numba's parallel version (prange on
a loop that carries no dependence), on the same Fortran-ordered arrays.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

import mascarpone as ms


# numba versions of the kernels: the Julia loops as written, 0-based ------------------------------

@njit(cache=False)
def nb_gemm(C, A, B, alpha, beta):
    ni, nj, nk = C.shape[0], C.shape[1], A.shape[1]
    for i in range(ni):
        for j in range(nj):
            C[i, j] = C[i, j] * beta
        for k in range(nk):
            for j in range(nj):
                C[i, j] = C[i, j] + alpha * A[i, k] * B[k, j]


@njit(cache=False)
def nb_bicg(A, s, q, p, r):
    n, m = A.shape
    for j in range(m):
        s[j] = 0.0
    for i in range(n):
        q[i] = 0.0
        for j in range(m):
            s[j] = s[j] + r[i] * A[i, j]
            q[i] = q[i] + A[i, j] * p[j]


@njit(cache=False)
def nb_gesummv(alpha, beta, A, B, x, y):
    n = A.shape[0]
    for i in range(n):
        t = 0.0
        u = 0.0
        for j in range(n):
            t = t + A[i, j] * x[j]
            u = u + B[i, j] * x[j]
        y[i] = alpha * t + beta * u


@njit(cache=False)
def nb_2mm(tmp, A, B, C, D, alpha, beta):
    ni, nk = A.shape
    nj, nl = B.shape[1], C.shape[1]
    for i in range(ni):
        for j in range(nj):
            tmp[i, j] = 0.0
            for k in range(nk):
                tmp[i, j] = tmp[i, j] + alpha * A[i, k] * B[k, j]
    for i in range(ni):
        for j in range(nl):
            D[i, j] = D[i, j] * beta
            for k in range(nj):
                D[i, j] = D[i, j] + tmp[i, k] * C[k, j]


@njit(cache=False)
def nb_covariance(data, cov, mean):
    n, m = data.shape
    float_n = float(n)
    for j in range(m):
        mean[j] = 0.0
        for i in range(n):
            mean[j] = mean[j] + data[i, j]
        mean[j] = mean[j] / float_n
    for i in range(n):
        for j in range(m):
            data[i, j] = data[i, j] - mean[j]
    for i in range(m):
        for j in range(i, m):
            cov[i, j] = 0.0
            for k in range(n):
                cov[i, j] = cov[i, j] + data[k, i] * data[k, j]
            cov[i, j] = cov[i, j] / (float_n - 1.0)
            cov[j, i] = cov[i, j]


@njit(cache=False)
def nb_doitgen(A, C4, acc):
    nr, nq, np_ = A.shape
    for r in range(nr):
        for q in range(nq):
            for p in range(np_):
                acc[p] = 0.0
                for s in range(np_):
                    acc[p] = acc[p] + A[r, q, s] * C4[s, p]
            for p in range(np_):
                A[r, q, p] = acc[p]


@njit(cache=False)
def nb_mttkrp(A, B, C, D):
    ni, nk, nl = B.shape
    nj = C.shape[1]
    for i in range(ni):
        for j in range(nj):
            A[i, j] = 0.0
            for k in range(nk):
                for l in range(nl):
                    A[i, j] = A[i, j] + B[i, k, l] * C[k, j] * D[l, j]


@njit(cache=False)
def nb_jacobi1d(tsteps, A, B):
    n = A.shape[0]
    for t in range(tsteps):
        for i in range(1, n - 1):
            B[i] = 0.33333 * (A[i - 1] + A[i] + A[i + 1])
        for i in range(1, n - 1):
            A[i] = 0.33333 * (B[i - 1] + B[i] + B[i + 1])


@njit(cache=False)
def nb_jacobi2d(tsteps, A, B):
    n = A.shape[0]
    for t in range(tsteps):
        for j in range(1, n - 1):
            for i in range(1, n - 1):
                B[i, j] = 0.2 * (A[i, j] + A[i, j - 1] + A[i, j + 1] + A[i + 1, j] + A[i - 1, j])
        for j in range(1, n - 1):
            for i in range(1, n - 1):
                A[i, j] = 0.2 * (B[i, j] + B[i, j - 1] + B[i, j + 1] + B[i + 1, j] + B[i - 1, j])


@njit(cache=False)
def nb_seidel2d(tsteps, A):
    n = A.shape[0]
    for t in range(tsteps):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                A[i, j] = (A[i - 1, j - 1] + A[i - 1, j] + A[i - 1, j + 1] + A[i, j - 1] + A[i, j]
                           + A[i, j + 1] + A[i + 1, j - 1] + A[i + 1, j] + A[i + 1, j + 1]) / 9.0


# numba's parallel versions: the same loops, with prange on a loop that carries no dependence --------

@njit(parallel=True, cache=False)
def pnb_gemm(C, A, B, alpha, beta):
    ni, nj, nk = C.shape[0], C.shape[1], A.shape[1]
    for i in prange(ni):
        for j in range(nj):
            C[i, j] = C[i, j] * beta
        for k in range(nk):
            for j in range(nj):
                C[i, j] = C[i, j] + alpha * A[i, k] * B[k, j]


@njit(parallel=True, cache=False)
def pnb_gesummv(alpha, beta, A, B, x, y):
    n = A.shape[0]
    for i in prange(n):
        t = 0.0
        u = 0.0
        for j in range(n):
            t = t + A[i, j] * x[j]
            u = u + B[i, j] * x[j]
        y[i] = alpha * t + beta * u


@njit(parallel=True, cache=False)
def pnb_2mm(tmp, A, B, C, D, alpha, beta):
    ni, nk = A.shape
    nj, nl = B.shape[1], C.shape[1]
    for i in prange(ni):
        for j in range(nj):
            tmp[i, j] = 0.0
            for k in range(nk):
                tmp[i, j] = tmp[i, j] + alpha * A[i, k] * B[k, j]
    for i in prange(ni):
        for j in range(nl):
            D[i, j] = D[i, j] * beta
            for k in range(nj):
                D[i, j] = D[i, j] + tmp[i, k] * C[k, j]


@njit(parallel=True, cache=False)
def pnb_covariance(data, cov, mean):
    n, m = data.shape
    float_n = float(n)
    for j in prange(m):
        mean[j] = 0.0
        for i in range(n):
            mean[j] = mean[j] + data[i, j]
        mean[j] = mean[j] / float_n
    for i in prange(n):
        for j in range(m):
            data[i, j] = data[i, j] - mean[j]
    # iteration i writes cov[i, j] and cov[j, i] for j >= i: no element is written by two iterations
    for i in prange(m):
        for j in range(i, m):
            cov[i, j] = 0.0
            for k in range(n):
                cov[i, j] = cov[i, j] + data[k, i] * data[k, j]
            cov[i, j] = cov[i, j] / (float_n - 1.0)
            cov[j, i] = cov[i, j]


@njit(parallel=True, cache=False)
def pnb_mttkrp(A, B, C, D):
    ni, nk, nl = B.shape
    nj = C.shape[1]
    for i in prange(ni):
        for j in range(nj):
            A[i, j] = 0.0
            for k in range(nk):
                for l in range(nl):
                    A[i, j] = A[i, j] + B[i, k, l] * C[k, j] * D[l, j]


@njit(parallel=True, cache=False)
def pnb_jacobi1d(tsteps, A, B):
    n = A.shape[0]
    for t in range(tsteps):
        for i in prange(1, n - 1):
            B[i] = 0.33333 * (A[i - 1] + A[i] + A[i + 1])
        for i in prange(1, n - 1):
            A[i] = 0.33333 * (B[i - 1] + B[i] + B[i + 1])


@njit(parallel=True, cache=False)
def pnb_jacobi2d(tsteps, A, B):
    n = A.shape[0]
    for t in range(tsteps):
        for j in prange(1, n - 1):
            for i in range(1, n - 1):
                B[i, j] = 0.2 * (A[i, j] + A[i, j - 1] + A[i, j + 1] + A[i + 1, j] + A[i - 1, j])
        for j in prange(1, n - 1):
            for i in range(1, n - 1):
                A[i, j] = 0.2 * (B[i, j] + B[i, j - 1] + B[i, j + 1] + B[i + 1, j] + B[i - 1, j])


#: why numba's parallel loops do not apply to the other kernels
NOT_PARALLEL = {
    "bicg": "every iteration of the outer loop adds to all of s: no loop of the naive order is parallel",
    "doitgen": "acc is shared by all (r, q): no loop of the naive order is parallel",
    "seidel-2d": "each point reads neighbours updated in the same sweep: no loop is parallel",
}


# schedules (computation names are the statement numbers of the 1.6-style fixtures) ---------------

def register_tiles(c, jb=64, kb=256, ib=128):
    """C[i, j] += ... A[i, k] ... B[k, j] as blocks of (j, k, i) for the caches, then 4 columns by
    8 rows of C kept in registers over k (4 unrolled columns of 8-lane vectors, contiguous in
    column-major C and A); the j blocks go to the threads. Each element still adds in k order."""
    dims = ", ".join(c.loops)
    c.set_schedule(
        f"{{ {c.name}[{dims}] -> [jb, kb, ib, j0, i0, k1, j1, i1] : jb = floor((j - 1)/{jb}) "
        f"and kb = floor((k - 1)/{kb}) and ib = floor((i - 1)/{ib}) and j0 = floor((j - 1)/4) "
        f"and i0 = floor((i - 1)/8) and k1 = k - 1 and j1 = (j - 1) mod 4 and i1 = (i - 1) mod 8 }}",
        ["jb", "kb", "ib", "j0", "i0", "k1", "j1", "i1"])
    c.unroll("j1", 4)
    c.vectorize("i1", 8)
    c.parallelize("jb")


def s_gemm(f):
    init, acc = f["s22"], f["s49"]
    acc.after(init, ms.root)
    register_tiles(acc)
    init.interchange("i", "j")
    init.parallelize("j")
    init.vectorize("i", 8)


def s_2mm(f):
    for init, acc in (("s21", "s35"), ("s69", "s83")):
        init, acc = f[init], f[acc]
        acc.after(init, ms.root)
        register_tiles(acc)
        init.interchange("i", "j")
        init.parallelize("j")
        init.vectorize("i", 8)
    f["s69"].after(f["s35"], ms.root)
    f["s83"].after(f["s69"], ms.root)


def s_bicg(f):
    f["s45"].after(f["s39"], ms.root)                # two nests: s[j] over i, then q[i] over j
    # s[j]: 16 consecutive j as vector lanes with i outside them, so the 16 sums stay in registers
    # and each lane reads its column of A contiguously
    a = f["s39"]
    a.interchange("i", "j")
    a.shift("j", -1)
    a.vectorize("j", 16)
    a.reorder("i", "j1")
    # q[i]: i innermost, contiguous in A's columns; serial (2 threads did not pay at this size)
    b = f["s45"]
    b.interchange("i", "j")
    b.shift("i", -1)
    b.vectorize("i", 8)


def s_gesummv(f):
    for name in ("s10", "s11", "s36"):
        f[name].vectorize("i", 8)
    for name in ("s23", "s27"):
        f[name].after(f["s11"], ms.root)
    # both sums over j with i innermost (contiguous in column-major A and B), in two halves of i
    # whose partial sums stay in L1; i is counted from 0 so that the 8-wide chunks are whole.
    # Serial: 2 threads did not pay at this size.
    for name in ("s23", "s27"):
        c = f[name]
        c.set_schedule(f"{{ {name}[i, j] -> [i0, j1, i1] : i0 = floor((i - 1)/656) and j1 = j - 1 "
                       f"and i1 = i - 1 - 656*i0 }}", ["i0", "j1", "i1"])
        c.vectorize("i1", 8)
    f["s27"].after(f["s23"], "j1")
    f["s36"].after(f["s27"], ms.root)


def s_mttkrp(f):
    # B is read once: for each block of 8 rows i (a thread's share of i), every (k, l), then all j,
    # 4 columns at a time (unrolled) of 8-lane vectors; the 8 x 300 block of A stays in L1.
    # Each A[i, j] still adds over k, then l, in the source's order.
    init, acc = f["s21"], f["s44"]
    acc.after(init, ms.root)
    acc.set_schedule("{ s44[i, j, k, l] -> [i0, k1, l1, j0, j1, i1] : i0 = floor((i - 1)/8) and k1 = k - 1 "
                     "and l1 = l - 1 and j0 = floor((j - 1)/4) and j1 = (j - 1) mod 4 and i1 = (i - 1) mod 8 }",
                     ["i0", "k1", "l1", "j0", "j1", "i1"])
    acc.unroll("j1", 4)
    acc.vectorize("i1", 8)
    acc.parallelize("i0")
    init.interchange("i", "j")
    init.parallelize("j")


def s_doitgen(f):
    # acc is shared by all (r, q), so (r, q) stay serial; within one (r, q), 16 consecutive p are
    # vector lanes and s runs outside the lanes, so the 16 sums stay in registers over s (each in
    # the source's s order). p is shifted to start at 0 so that every chunk is full.
    for n in ("s28", "s42"):
        f[n].shift("p", -1)
        f[n].vectorize("p", 16)
    f["s42"].reorder("s", "p1")


def s_covariance(f):
    # column means: 8 columns at a time as vector lanes, the lanes' sums stay in registers over i
    for n in ("s12", "s24", "s32"):
        f[n].vectorize("j", 8)
    f["s24"].reorder("i", "j1")
    f["s57"].interchange("i", "j")
    f["s57"].parallelize("j")
    f["s57"].vectorize("i", 8)
    # cov[i, j] for 8 consecutive j as vector lanes with k outside the lanes, so the 8 sums stay
    # in registers over k (each lane adds in k order, as the source does); rows i are dealt to the
    # 2 threads by parity, which balances the triangle j >= i
    comps = [f[n] for n in ("s84", "s98", "s107", "s109")]
    for c in comps:
        c.split("i", 2)
        c.interchange("i0", "i1")
        c.vectorize("j", 8)
    f["s98"].reorder("k", "j1")
    f["s98"].parallelize("i1")
    for a, b in zip(comps, comps[1:]):
        b.after(a, "j0")


def s_jacobi1d(f):
    # i starts at 2: shifted to 0 so that the 8-wide chunks need no lower-bound test
    for name in ("s26", "s48"):
        f[name].shift("i", -2)
        f[name].vectorize("i", 8)


def s_jacobi2d(f):
    # time tiling: B's sweep and A's sweep (A shifted one column back, so that it reads B values
    # already computed) share skewed (t, j) tiles of 8 steps by 32 columns, which stay in L2.
    # Serial: the wavefront of tiles on 2 threads (a parallel region per anti-diagonal) ran 3x
    # slower than this when the machine was loaded by other work.
    a, b = f["s39"], f["s79"]
    b.shift("j", 1)
    for c in (a, b):
        c.skew("t", "j", 2)
        c.tile("t", "j", 8, 32)
        c.vectorize("i", 8)
    b.after(a, "j1")


def s_seidel2d(f):
    # the source's order is one chain of dependent additions (A[i, j] reads A[i, j-1] just written);
    # skewing j by 2i puts 8 consecutive rows at one j' = j + 2i with no dependence between them,
    # so the unrolled rows give 8 independent chains (and rows of a column share cache lines)
    s = f["s51"]
    s.skew("i", "j", 2)
    s.split("i", 8)
    s.reorder("j", "i1")
    s.unroll("i1", 8)


def arrays(spec, seed=0):
    """Julia's arguments for a spec: tuples become random Fortran-ordered arrays of that shape."""
    rng = np.random.default_rng(seed)
    out = []
    for item in spec:
        if isinstance(item, tuple):
            out.append(np.asfortranarray(rng.random(item)))
        else:
            out.append(item)
    return out


def _kernel(fixture, numba, schedule, paper, small, parallel=None, numpy=None):
    return dict(fixture=fixture, numba=numba, schedule=schedule, paper=paper, small=small, parallel=parallel,
                numpy=numpy)


#: name: the fixture, numba's naive and parallel loops, the schedule, the arguments at paper and small
#: sizes (tuples: Julia-shaped arrays) and the numpy function of numpy_peers.py (linear algebra only)
KERNELS = {
    "gemm": _kernel("gemm", nb_gemm, s_gemm, [(1000, 1100), (1000, 1200), (1200, 1100), 1.5, 1.2],
                    [(200, 220), (200, 240), (240, 220), 1.5, 1.2], pnb_gemm, "gemm"),
    "2mm": _kernel("mm2", nb_2mm, s_2mm, [(800, 900), (800, 1100), (1100, 900), (900, 1200), (800, 1200), 1.5, 1.2],
                   [(160, 180), (160, 220), (220, 180), (180, 240), (160, 240), 1.5, 1.2], pnb_2mm, "mm2"),
    "bicg": _kernel("bicg", nb_bicg, s_bicg, [(2100, 1900), (1900,), (2100,), (1900,), (2100,)],
                    [(420, 380), (380,), (420,), (380,), (420,)], None, "bicg"),
    "gesummv": _kernel("gesummv", nb_gesummv, s_gesummv, [1.5, 1.2, (1300, 1300), (1300, 1300), (1300,), (1300,)],
                       [1.5, 1.2, (260, 260), (260, 260), (260,), (260,)], pnb_gesummv, "gesummv"),
    "mttkrp": _kernel("mttkrp", nb_mttkrp, s_mttkrp, [(400, 300), (400, 150, 160), (150, 300), (160, 300)],
                      [(80, 60), (80, 30, 32), (30, 60), (32, 60)], pnb_mttkrp, "mttkrp"),
    "doitgen": _kernel("doitgen", nb_doitgen, s_doitgen, [(150, 140, 160), (160, 160), (160,)],
                       [(30, 28, 32), (32, 32), (32,)], None, "doitgen"),
    "covariance": _kernel("covariance", nb_covariance, s_covariance, [(1400, 1200), (1200, 1200), (1200,)],
                          [(280, 240), (240, 240), (240,)], pnb_covariance, "covariance"),
    "jacobi-1d": _kernel("jacobi1d", nb_jacobi1d, s_jacobi1d, [500, (2000,), (2000,)], [50, (400,), (400,)],
                         pnb_jacobi1d),
    "jacobi-2d": _kernel("jacobi2d", nb_jacobi2d, s_jacobi2d, [100, (1300, 1300), (1300, 1300)],
                         [10, (260, 260), (260, 260)], pnb_jacobi2d),
    "seidel-2d": _kernel("seidel2d", nb_seidel2d, s_seidel2d, [20, (1000, 1000)], [4, (200, 200)]),
}
