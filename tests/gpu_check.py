"""Shared checks of the GPU tests: run a program on "opencl" beside "cpu", compile it as CUDA to PTX, and,
where a CUDA device exists, run it on "cuda" too."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

import numpy as np
import pytest

from differential import same_bits
from mascarpone.backends.gpu import cuda
from mascarpone.middleend.targets import get_target

OPENCL_MISSING = get_target("opencl").missing()
CUDA_MISSING = get_target("cuda").missing()
needs_opencl = pytest.mark.skipif(OPENCL_MISSING is not None, reason=f"no OpenCL here: {OPENCL_MISSING}")
#: the CUDA device's architecture ('sm_90'), or None where kernels compile to PTX only
CUDA_DEVICE = cuda.device_arch() if CUDA_MISSING is None else None
needs_cuda_device = pytest.mark.skipif(CUDA_DEVICE is None, reason="no CUDA device here: CUDA kernels are "
                                       "compiled to PTX (and assembled by ptxas) but not launched")
ARCHS = ("sm_80", "sm_90")


def check_ptx(f, **options):
    """Compile `f` as CUDA to PTX for each of ARCHS (and assemble it with ptxas where installed); returns
    the compiled kernel (for a Halide pipeline, the wrapper with `realize`)."""
    if CUDA_MISSING:
        pytest.skip(f"no CUDA compiler: {CUDA_MISSING}")
    compiled = f.compile("cuda", arch=ARCHS[0], **options)
    kernel = getattr(compiled, "kernel", compiled)    # (a Halide pipeline's kernel wraps the target's)
    source = kernel.source("cuda")
    for arch in ARCHS:
        code = kernel.source("ptx") if arch == ARCHS[0] else cuda.ptx(source, arch, what=f.name)
        assert f".target {arch}" in code
        ptxas = shutil.which("ptxas")
        if ptxas:
            with tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "k.ptx")
                with open(path, "w") as fh:
                    fh.write(code)
                run = subprocess.run([ptxas, f"-arch={arch}", path, "-o", os.path.join(tmp, "k.cubin")],
                                     capture_output=True, text=True)
                assert run.returncode == 0, run.stderr
    return compiled


def run_gpu(f, *, fixed=None, **args):
    """The outputs of `f` on opencl (fp_contract=False), checked bit for bit against cpu; its CUDA PTX
    compiled too, and run and checked the same way where a CUDA device exists. Returns (opencl kernel,
    outputs)."""
    cuda_kernel = check_ptx(f, fixed=fixed, fp_contract=False)
    ref = f.compile("cpu", fixed=fixed, fp_contract=False)
    want = ref(**_copies(args))
    if CUDA_DEVICE is not None:
        got = cuda_kernel(**_copies(args))
        for g, w, b in zip(_tuple(got), _tuple(want), cuda_kernel.lowered.outputs):
            same_bits(g, w, f"{f.name}: output {b.name} on cuda ({CUDA_DEVICE}) and cpu")
    if OPENCL_MISSING:
        pytest.skip(f"no OpenCL here: {OPENCL_MISSING}" + (" (cuda checked)" if CUDA_DEVICE else ""))
    k = f.compile("opencl", fixed=fixed, fp_contract=False)
    got = k(**args)
    for g, w, b in zip(_tuple(got), _tuple(want), k.lowered.outputs):
        same_bits(g, w, f"{f.name}: output {b.name} on opencl and cpu")
    return k, got


def _copies(args):
    return {n: np.array(v, copy=True) if isinstance(v, np.ndarray) else v for n, v in args.items()}


def _tuple(x):
    return x if isinstance(x, tuple) else (x,)


class DeviceSide:
    """Device arrays of one GPU target, for tests that pass them to kernels: `to_device(a)`, `empty(shape,
    dtype)` and `array_type`; the arrays have `get()`, `set(a)` and `fill(v)` (pyopencl's, or ours on CUDA)."""

    def __init__(self, target):
        self.target = target
        if target == "opencl":
            import pyopencl.array as cla

            from mascarpone.backends.gpu.opencl import default_runtime
            queue = default_runtime().queue
            self.to_device = lambda a: cla.to_device(queue, a)
            self.empty = lambda shape, dtype: cla.empty(queue, shape, dtype)
            self.array_type = cla.Array
        else:
            self.to_device = cuda.to_device
            self.empty = cuda.DeviceArray
            self.array_type = cuda.DeviceArray


def require(target):
    """Skip the test where GPU target `target` cannot run kernels here (opencl without a platform, cuda
    without a device: its kernels are still compiled to PTX by the other tests)."""
    if target == "opencl" and OPENCL_MISSING:
        pytest.skip(f"no OpenCL here: {OPENCL_MISSING}")
    if target == "cuda" and CUDA_DEVICE is None:
        pytest.skip("no CUDA device here: CUDA kernels are compiled to PTX but not launched")


@pytest.fixture(params=["opencl", "cuda"])
def device(request):
    """A DeviceSide of each GPU target this machine runs (opencl with a platform, cuda with a device)."""
    require(request.param)
    return DeviceSide(request.param)
