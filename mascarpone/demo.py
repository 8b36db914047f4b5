"""`make demo`: a blur and a gemm, scheduled, printed, checked against numpy and timed against it."""
from __future__ import annotations

import time

import numpy as np

from mascarpone import examples
from mascarpone.bench.timing import QUIET_S


def median_time(fn, repeat=5):
    """Median wall time of `fn()` over `repeat` runs, after a pause and one warm-up run."""
    time.sleep(QUIET_S)   # (the other side's threads go to sleep first)
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def blur_demo(size=2048):
    f, bx, by = examples.blur()
    y0, x0, y1, x1 = by.tile("y", "x", 32, 256)
    by.parallelize(y0)
    by.vectorize(x1, 8)
    bx.compute_at(by, x0)
    bx.vectorize("x", 8)
    print("== blur: by.tile(y, x, 32, 256); by.parallelize(y0); by.vectorize(x1, 8); bx.compute_at(by, x0)")
    print(f.lower())
    start = time.perf_counter()
    kernel = f.compile("cpu")
    compile_s = time.perf_counter() - start
    img = np.random.default_rng(0).random((size + 2, size + 2), dtype=np.float32)
    out = kernel(img=img)

    def reference():
        bxr = (img[:, :-2] + img[:, 1:-1] + img[:, 2:]) / np.float32(3)
        return (bxr[:-2] + bxr[1:-1] + bxr[2:]) / np.float32(3)

    err = float(np.max(np.abs(out - reference())))
    ours, numpy_t = median_time(lambda: kernel(img=img)), median_time(reference)
    print(f"blur {size}x{size}: max |ours - numpy| = {err:.2e}; compiled in {compile_s:.2f} s; "
          f"ours {ours * 1e3:.2f} ms, numpy {numpy_t * 1e3:.2f} ms ({numpy_t / ours:.1f}x numpy's speed)\n")


def gemm_demo(n=1024):
    blocks = examples.gemm_packed_blocks(n, n, n)
    f, Ap, Bp, Ct, acc, C = examples.gemm_packed(mr=blocks["mr"], nr=blocks["nr"])
    examples.schedule_gemm_packed(Ap, Bp, Ct, acc, C, **blocks)
    print("== gemm, BLIS-style: A and B packed per cache block (compute_at), a 6x16 register tile, "
          f"a column panel per thread, sizes fixed to {n}")
    print("\n".join(f.history()))
    fixed = dict(N=n, M=n, K=n)
    print(f.lower(fixed=fixed))
    start = time.perf_counter()
    kernel = f.compile("cpu", fixed=fixed)
    compile_s = time.perf_counter() - start
    rng = np.random.default_rng(1)
    A, B = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
    out = kernel(A=A, B=B)
    err = float(np.max(np.abs(out - A @ B)) / np.max(np.abs(A @ B)))
    ours, blas = median_time(lambda: kernel(A=A, B=B)), median_time(lambda: A @ B)
    print(f"sgemm {n}: max relative error vs numpy = {err:.2e}; compiled in {compile_s:.2f} s; "
          f"ours {ours * 1e3:.1f} ms, numpy/OpenBLAS {blas * 1e3:.1f} ms ({blas / ours:.2f}x OpenBLAS's speed)")


def main():
    blur_demo()
    gemm_demo()


if __name__ == "__main__":
    main()
