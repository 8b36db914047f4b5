"""The HLS target's estimates for the kernels of tests/test_hls_kernels.py: no hardware numbers.

    python benchmarks/hls.py [--no-append]

A C simulation's run time says nothing about an FPGA, so this records, per
kernel, what the report estimates (backends/hls/report.py, latencies of
backends/hls/latency.py): the achievable initiation interval of each
pipelined loop next to the ideal (one iteration per cycle, II=1), the
estimated cycles of the whole kernel, the ideal cycles (every pipelined loop
at II=1 with no fill: the sum of their trip counts), and the ratio of the
estimated cycles to the trip count of the innermost pipelined loop (all its
iterations; 1 would be one result per cycle with nothing else costing time).
Each kernel's C simulation is checked against numpy first.
"""
from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from benchlog import append_results  # noqa: E402
from test_hls_kernels import blur, conv2d, gemm, scan  # noqa: E402

import mascarpone as ms  # noqa: E402,F401


def kernels():
    """(name, function, fixed sizes, report sizes, arguments, numpy reference) of each kernel."""
    rng = np.random.default_rng(0)
    img = rng.random((258, 258), dtype=np.float32)
    b = (img[:, :-2] + img[:, 1:-1] + img[:, 2:]) / np.float32(3)
    yield ("blur 256x256, line buffers, dataflow", blur(), {"W": 256}, {"H": 256}, {"img": img},
           (b[:-2] + b[1:-1] + b[2:]) / np.float32(3))
    yield ("blur 256x256, line buffer in one bank", blur(partitioned=False), {"W": 256}, {"H": 256},
           {"img": img}, (b[:-2] + b[1:-1] + b[2:]) / np.float32(3))
    cimg, w = rng.random((66, 66), dtype=np.float32), rng.random((3, 3), dtype=np.float32)
    ref = np.zeros((64, 64), np.float32)
    for ky in range(3):
        for kx in range(3):
            ref = ref + cimg[ky:ky + 64, kx:kx + 64] * w[ky, kx]
    yield ("conv2d 64x64, 3x3 window unrolled, partitioned", conv2d(), {"H": 64, "W": 64}, {},
           {"img": cimg, "w": w}, ref)
    yield ("conv2d 64x64, window in one bank", conv2d(partitioned=False), {"H": 64, "W": 64}, {},
           {"img": cimg, "w": w}, ref)
    A, B = rng.random((64, 64), dtype=np.float32), rng.random((64, 64), dtype=np.float32)
    ref = np.zeros((64, 64), np.float32)
    for k in range(64):
        ref = ref + A[:, k:k + 1] * B[k:k + 1, :]
    yield "gemm 64, 8x8 tiles partitioned", gemm(), {"N": 64}, {}, {"A": A, "B": B}, ref
    yield "gemm 64, tiles in one bank", gemm(partitioned=False), {"N": 64}, {}, {"A": A, "B": B}, ref
    x = rng.random(4096, dtype=np.float32)
    yield "prefix sum float32, 4096", scan(ms.float32), {}, {"N": 4096}, {"x": x}, np.cumsum(x, dtype=np.float32)
    xi = rng.integers(-9, 9, 4096).astype(np.int32)
    yield "prefix sum int32, 4096", scan(ms.int32), {}, {"N": 4096}, {"x": xi}, np.cumsum(xi, dtype=np.int32)


def row(name, f, fixed, sizes, args, ref):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kernel = f.compile("hls", fixed=fixed or None)
    out = kernel(**args)
    np.testing.assert_allclose(out, ref, rtol=1e-5)
    rep = kernel.report(show=False, **sizes)
    loops = rep.pipelined()
    iis = ", ".join(str(r.ii) for r in loops)
    ideal = sum(r.iterations for r in loops)
    innermost = max(loops, key=lambda r: (r.level, r.iterations))
    return (f"| {name} | {iis} | {'1, ' * (len(loops) - 1)}1 | {rep.cycles:.0f} | {ideal:.0f} | "
            f"{rep.cycles / innermost.iterations:.2f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-append", action="store_true", help="print only; do not append to RESULTS.md")
    opts = parser.parse_args()
    lines = ["| kernel | achievable II per pipelined loop | ideal II | estimated cycles | ideal cycles "
             "(pipelined iterations) | estimated cycles / innermost pipelined trip count |",
             "|---|---|---|---|---|---|"]
    for spec in kernels():
        lines.append(row(*spec))
        print(lines[-1], flush=True)
    table = "\n".join(lines)
    if not opts.no_append:
        append_results("benchmarks/hls.py (report estimates, no hardware)", table,
                       "Estimates of the hls target's report (latency table of backends/hls/latency.py, "
                       "300 MHz UltraScale+), C simulation checked against numpy first.")


if __name__ == "__main__":
    main()
