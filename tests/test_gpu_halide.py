"""Halide pipelines scheduled for the GPU (gpu_tile, gpu_blocks/gpu_threads, gpu_single_thread), read from
their serialized bytes and compiled for "opencl", against Halide's own realize on its OpenCL target (the same
PoCL device); their kernels compiled as CUDA to PTX too."""
from __future__ import annotations

import numpy as np
import pytest

import mascarpone as ms

from gpu_check import CUDA_DEVICE, OPENCL_MISSING, check_ptx

hl = pytest.importorskip("halide")
pytestmark = pytest.mark.skipif(OPENCL_MISSING is not None and CUDA_DEVICE is None,
                                reason=f"no OpenCL here ({OPENCL_MISSING}) and no CUDA device")
rng = np.random.default_rng(11)


def halide_gpu_target():
    """Halide's target for its reference: OpenCL where we run OpenCL, else CUDA at the device's capability."""
    if OPENCL_MISSING is None:
        return hl.get_host_target().with_feature(hl.TargetFeature.OpenCL)
    target = hl.get_host_target().with_feature(hl.TargetFeature.CUDA)
    capability = f"CUDACapability{CUDA_DEVICE[3:]}"
    if hasattr(hl.TargetFeature, capability):
        target = target.with_feature(getattr(hl.TargetFeature, capability))
    return target


def realize_gpu(outputs, sizes, images, rtol=None):
    """Halide's values on its own GPU target against ours on "opencl" and, where a CUDA device exists,
    on "cuda"; integers bit for bit. Returns our opencl kernel."""
    funcs = outputs if isinstance(outputs, list) else [outputs]
    pipeline = hl.Pipeline(funcs)
    for ip, arr in images.items():
        ip.set(hl.Buffer(arr))
    theirs = pipeline.realize(sizes, halide_gpu_target())
    theirs = [theirs] if isinstance(theirs, hl.Buffer) else list(theirs)
    for b in theirs:
        b.copy_to_host()
    theirs = [np.asarray(b).copy() for b in theirs]
    named = {ip.name(): arr for ip, arr in images.items()}
    cuda_kernel = check_ptx(ms.from_halide(pipeline))
    targets = ([] if OPENCL_MISSING else ["opencl"]) + (["cuda"] if CUDA_DEVICE else [])
    kernels = {"cuda": cuda_kernel}
    for target in targets:
        if target == "opencl":
            kernels[target] = ms.from_halide(pipeline).compile("opencl")
        ours = kernels[target].realize(sizes, **named)
        ours = ours if isinstance(ours, list) else [ours]
        for a, b in zip(ours, theirs):
            assert a.shape == b.shape and a.dtype == b.dtype
            if rtol is None:
                np.testing.assert_array_equal(a, b, err_msg=f"on {target}")
            else:
                np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-6, err_msg=f"on {target}")
    if OPENCL_MISSING:
        pytest.skip(f"no OpenCL here: {OPENCL_MISSING} (cuda checked against Halide's CUDA target)")
    return kernels["opencl"]


def test_blur_gpu_tile_with_boundary_condition():
    x, y, xi, yi, xo, yo = (hl.Var(n) for n in ("x", "y", "xi", "yi", "xo", "yo"))
    inp = hl.ImageParam(hl.UInt(16), 2, "inp")
    clamped = hl.BoundaryConditions.repeat_edge(inp)
    bx, by = hl.Func("blur_x"), hl.Func("blur_y")
    bx[x, y] = (clamped[x - 1, y] + clamped[x, y] + clamped[x + 1, y]) / 3
    by[x, y] = (bx[x, y - 1] + bx[x, y] + bx[x, y + 1]) / 3
    by.gpu_tile(x, y, xo, yo, xi, yi, 16, 8)
    bx.compute_root().gpu_tile(x, y, xo, yo, xi, yi, 16, 8)
    img = rng.integers(0, 60000, (45, 67)).astype(np.uint16)
    k = realize_gpu(by, [67, 45], {inp: img})
    src = k.kernel.source("opencl")
    assert "get_group_id" in src
    # blur_y's kernel (the last): Halide shifts its last tiles inwards, so each thread loop runs the block's
    # threads and each block loop the grid's blocks, and no thread tests a bound (blur_x's kernels, split
    # by the boundary condition, do)
    assert "const bool" in src and "const bool" not in src.split("__kernel")[-1]


def test_gpu_blocks_and_threads_of_a_split():
    x, y, xo, xi = hl.Var("x"), hl.Var("y"), hl.Var("xo"), hl.Var("xi")
    inp = hl.ImageParam(hl.Int(32), 2, "inp")
    f = hl.Func("f")
    f[x, y] = inp[x, y] * 3 - (inp[x, y] >> 2) + y
    f.split(x, xo, xi, 32).gpu_blocks(xo, y).gpu_threads(xi)
    img = rng.integers(-10000, 10000, (20, 100)).astype(np.int32)
    realize_gpu(f, [100, 20], {inp: img})


def test_gpu_single_thread_reduction_then_gpu_tile():
    x, y, xi, yi, xo, yo = (hl.Var(n) for n in ("x", "y", "xi", "yi", "xo", "yo"))
    inp = hl.ImageParam(hl.UInt(8), 2, "inp")
    r = hl.RDom([(0, 16), (0, 12)])
    total = hl.Func("total")
    total[()] = hl.u32(0)
    total[()] += hl.u32(inp[r.x, r.y])
    total.compute_root().gpu_single_thread()
    out = hl.Func("out")
    out[x, y] = hl.u32(inp[x, y]) * 1000 + total[()]
    out.gpu_tile(x, y, xo, yo, xi, yi, 8, 4)
    img = rng.integers(0, 255, (12, 16)).astype(np.uint8)
    realize_gpu(out, [16, 12], {inp: img})


def test_matrix_multiply_update_on_gpu_tiles():
    x, y, xi, yi, xo, yo = (hl.Var(n) for n in ("x", "y", "xi", "yi", "xo", "yo"))
    A = hl.ImageParam(hl.Float(32), 2, "A")
    B = hl.ImageParam(hl.Float(32), 2, "B")
    k = hl.RDom([(0, 24)])
    C = hl.Func("C")
    C[x, y] = hl.f32(0)
    C[x, y] += A[k.x, y] * B[x, k.x]
    C.gpu_tile(x, y, xo, yo, xi, yi, 8, 8)
    C.update().gpu_tile(x, y, xo, yo, xi, yi, 8, 8)
    a = rng.random((16, 24), dtype=np.float32)     # (Halide rounds an update's gpu tiles up: whole tiles)
    b = rng.random((24, 32), dtype=np.float32)
    realize_gpu(C, [32, 16], {A: a, B: b}, rtol=1e-5)


def test_gaussian_two_stages_in_floats():
    x, y, xi, yi, xo, yo = (hl.Var(n) for n in ("x", "y", "xi", "yi", "xo", "yo"))
    inp = hl.ImageParam(hl.Float(32), 2, "inp")
    c = hl.BoundaryConditions.constant_exterior(inp, 0.0)
    w = [0.0625, 0.25, 0.375, 0.25, 0.0625]
    gx, gy = hl.Func("gx"), hl.Func("gy")
    gx[x, y] = sum(w[i] * c[x + i - 2, y] for i in range(5))
    gy[x, y] = sum(w[i] * gx[x, y + i - 2] for i in range(5))
    gy.gpu_tile(x, y, xo, yo, xi, yi, 16, 16)
    gx.compute_root().gpu_tile(x, y, xo, yo, xi, yi, 16, 16)
    img = rng.random((33, 40), dtype=np.float32)
    realize_gpu(gy, [40, 33], {inp: img}, rtol=1e-5)
