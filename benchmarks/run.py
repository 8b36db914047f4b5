"""Benchmarks of the CPU back-end against peers measured in the same process.

    python benchmarks/run.py [--quick] [--no-append]

For each kernel: our median time, the peer's median time, and the ratio; the
table is printed and appended to benchmarks/RESULTS.md.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from mascarpone import examples
from mascarpone.demo import median_time

from benchlog import append_results



SGEMM_BLOCKS = dict(mc=96, kc=256, nc=2048, mr=6, nr=16)


def sgemm_function():
    """BLIS-style packed gemm (examples.gemm_packed) with a 6x16 register tile (12 AVX2 accumulators)."""
    f, Ap, Bp, C, acc = examples.gemm_packed(mr=SGEMM_BLOCKS["mr"], nr=SGEMM_BLOCKS["nr"])
    examples.schedule_gemm_packed(Ap, Bp, C, acc, **SGEMM_BLOCKS)
    return f


def bench_sgemm(n, repeat):
    f = sgemm_function()
    start = time.perf_counter()
    kernel = f.compile("cpu", fixed=dict(N=n, M=n, K=n))
    compile_s = time.perf_counter() - start
    rng = np.random.default_rng(0)
    A, B = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
    out = np.empty((n, n), np.float32)
    kernel(A=A, B=B, C=out)
    np.testing.assert_allclose(out, A @ B, rtol=1e-3)
    from threadpoolctl import threadpool_limits
    with threadpool_limits(limits=2, user_api="blas"):
        peer = median_time(lambda: np.matmul(A, B), repeat)
    ours = median_time(lambda: kernel(A=A, B=B, C=out), repeat)
    return {"kernel": f"sgemm {n}", "peer": "numpy/OpenBLAS, 2 threads", "ours": ours, "theirs": peer,
            "note": f"compile {compile_s:.2f} s; {2 * n ** 3 / ours / 1e9:.0f} GFLOP/s"}


def schedule_blur(bx, by):
    """Halide's classic schedule: 256x32 tiles, vectorized by 8, rows of tiles in parallel."""
    y0, x0, y1, x1 = by.tile("y", "x", 32, 256)
    by.vectorize(x1, 8)
    by.parallelize(y0)
    bx.compute_at(by, x0)
    bx.vectorize("x", 8)


def halide_blur():
    import halide as hl
    inp = hl.ImageParam(hl.Float(32), 2, "inp")
    x, y, xi, yi = hl.Var("x"), hl.Var("y"), hl.Var("xi"), hl.Var("yi")
    blur_x, blur_y = hl.Func("blur_x"), hl.Func("blur_y")
    blur_x[x, y] = (inp[x, y] + inp[x + 1, y] + inp[x + 2, y]) / 3
    blur_y[x, y] = (blur_x[x, y] + blur_x[x, y + 1] + blur_x[x, y + 2]) / 3
    blur_y.tile(x, y, xi, yi, 256, 32).vectorize(xi, 8).parallel(y)
    blur_x.compute_at(blur_y, x).vectorize(x, 8)
    blur_y.compile_jit()
    return hl, inp, blur_y


def bench_blur(n, repeat):
    f, bx, by = examples.blur()
    schedule_blur(bx, by)
    start = time.perf_counter()
    kernel = f.compile("cpu")
    compile_s = time.perf_counter() - start
    img = np.random.default_rng(0).random((n + 2, n + 2), dtype=np.float32)
    out = np.empty((n, n), np.float32)
    hl, inp, blur_y = halide_blur()
    inp.set(hl.Buffer(img))
    hout = hl.Buffer(hl.Float(32), [n, n])
    blur_y.realize(hout)
    kernel(img=img, by=out)
    np.testing.assert_allclose(out, np.asarray(hout), rtol=1e-6)
    theirs = median_time(lambda: blur_y.realize(hout), repeat)
    ours = median_time(lambda: kernel(img=img, by=out), repeat)
    return {"kernel": f"blur 3x3 two-stage {n}x{n}", "peer": "Halide 21 JIT, same schedule", "ours": ours,
            "theirs": theirs, "note": f"compile {compile_s:.2f} s"}


def compile_times(repeat):
    rows = []
    def blur():
        f, bx, by = examples.blur()
        schedule_blur(bx, by)
        return f

    def two_level_gemm():
        f, C, acc = examples.gemm()
        examples.schedule_gemm_two_level(C, acc)
        return f

    for name, build, bar in (("blur", blur, 0.5), ("two-level tiled gemm", two_level_gemm, 1.0),
                             ("packed BLIS-style gemm", sgemm_function, None)):
        samples = []
        for _ in range(repeat):
            f = build()
            start = time.perf_counter()
            f.compile("cpu")
            samples.append(time.perf_counter() - start)
        rows.append({"kernel": f"compile {name}", "peer": f"bar {bar} s" if bar else "no bar",
                     "ours": float(np.median(samples)), "theirs": bar, "note": "Function -> callable"})
    return rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--no-append", action="store_true")
    args = parser.parse_args()
    repeat = 3 if args.quick else 7
    rows = [bench_sgemm(512 if args.quick else 2048, repeat),
            bench_blur(512 if args.quick else 4096, repeat)] + compile_times(3)
    header = "| kernel | peer | ours (ms) | peer (ms) | peer time / our time | note |\n|---|---|---|---|---|---|"
    lines = [f"| {r['kernel']} | {r['peer']} | {r['ours'] * 1e3:.2f} | "
             + (f"{r['theirs'] * 1e3:.2f} | {r['theirs'] / r['ours']:.2f}" if r['theirs'] else "- | -")
             + f" | {r['note']} |" for r in rows]
    table = "\n".join([header] + lines)
    print(table)
    if not args.no_append:
        append_results(f"CPU back-end{' (quick)' if args.quick else ''}", table)


if __name__ == "__main__":
    main()
