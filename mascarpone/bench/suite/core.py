"""The middle-end and back-ends on their own programs: sgemm against numpy/OpenBLAS, the two-stage blur
against Halide (mascarpone/examples.py's programs with their schedules)."""
from __future__ import annotations

import numpy as np

from mascarpone import examples

from ..model import Benchmark, Call, Variant
from . import halide_variants as H

def sgemm_function(n):
    """BLIS-style packed gemm (examples.gemm_packed) at n x n x n with the register tile and blocks
    examples.gemm_packed_blocks picks for this machine (6x16 with AVX2, 8x32 with AVX-512), column
    panels in parallel."""
    blocks = examples.gemm_packed_blocks(n, n, n)
    f, Ap, Bp, Ct, acc, C = examples.gemm_packed(mr=blocks["mr"], nr=blocks["nr"])
    examples.schedule_gemm_packed(Ap, Bp, Ct, acc, C, **blocks)
    return f


def two_level_gemm_function():
    """gemm tiled twice: 64x256 cache tiles swept by 4x16 register tiles (examples.schedule_gemm_two_level)."""
    f, C, acc = examples.gemm()
    examples.schedule_gemm_two_level(C, acc)
    return f


def schedule_blur(bx, by):
    """Halide's classic schedule: 256x32 tiles, vectorized by 8, rows of tiles in parallel."""
    y0, x0, y1, x1 = by.tile("y", "x", 32, 256)
    by.vectorize(x1, 8)
    by.parallelize(y0)
    bx.compute_at(by, x0)
    bx.vectorize("x", 8)


def blur_function():
    f, bx, by = examples.blur()
    schedule_blur(bx, by)
    return f


def _gemm_bind(kernel, data, size):
    out = np.empty((size, size), np.float32)
    return Call(lambda: kernel(A=data["A"], B=data["B"], C=out), lambda: [out.copy()])


def _sgemm_data(n):
    rng = np.random.default_rng(0)
    return {"A": rng.random((n, n), dtype=np.float32), "B": rng.random((n, n), dtype=np.float32)}


def _blur_bind(kernel, data, size):
    w, h = size
    out = np.empty((h, w), np.float32)
    return Call(lambda: kernel(img=data["inp"], by=out), lambda: [out.copy()])


def _blur_reference(data, size):
    img = data["inp"]
    bx = (img[:, :-2] + img[:, 1:-1] + img[:, 2:]) / np.float32(3)
    return [(bx[:-2] + bx[1:-1] + bx[2:]) / np.float32(3)]


def benchmarks() -> list:
    from . import halide_pipelines as HP
    from .julia import numpy_peer
    return [
        Benchmark("sgemm", "core", {"small": 256, "paper": 2048}, _sgemm_data,
                  lambda data, size: [data["A"] @ data["B"]],
                  variants=[Variant("mascarpone", sgemm_function, _gemm_bind, label="packed",
                                    options=lambda n: {"fixed": dict(N=n, M=n, K=n)},
                                    note="BLIS-style: A and B packed per cache block (compute_at), C accumulated "
                                         "tile by tile, a 6x16 (AVX2) or 8x16 (AVX-512) register tile, "
                                         "a column panel per thread, sizes fixed"),
                            Variant("mascarpone", lambda n: two_level_gemm_function(), _gemm_bind,
                                    label="two-level tiled", note="64x256 cache tiles, 4x16 register tiles")],
                  peers=[numpy_peer("sgemm", args=lambda data, size: [data["A"], data["B"],
                                                                      np.empty((size, size), np.float32)],
                                    outputs=[2])],
                  tol=(1e-3, 1e-3), describe=lambda n: f"{n}x{n}x{n}"),
        Benchmark("blur", "core", {"small": (512, 512), "paper": (4096, 4096)}, H.data(HP.blur_valid),
                  _blur_reference,
                  variants=[Variant("mascarpone", lambda size: blur_function(), _blur_bind),
                            H.variant(HP.blur_valid)],
                  peers=H.peers(HP.blur_valid), tol=(1e-6, 1e-6), describe=H.describe,
                  note="two-stage 3x3 box blur of the valid region"),
    ]
