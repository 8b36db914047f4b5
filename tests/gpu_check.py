"""Shared checks of the GPU tests: run a program on "opencl" beside "cpu" and compile it as CUDA to PTX."""
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
ARCHS = ("sm_80", "sm_90")


def check_ptx(f, **options):
    """Compile `f` as CUDA to PTX for each of ARCHS (and assemble it with ptxas where installed)."""
    if CUDA_MISSING:
        pytest.skip(f"no CUDA compiler: {CUDA_MISSING}")
    kernel = f.compile("cuda", arch=ARCHS[0], **options)
    kernel = getattr(kernel, "kernel", kernel)    # (a Halide pipeline's kernel wraps the target's)
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
    return kernel


def run_gpu(f, *, fixed=None, **args):
    """The outputs of `f` on opencl (fp_contract=False), checked bit for bit against cpu; its CUDA PTX
    compiled too. Returns (opencl kernel, outputs)."""
    check_ptx(f, fixed=fixed, fp_contract=False)
    if OPENCL_MISSING:
        pytest.skip(f"no OpenCL here: {OPENCL_MISSING}")
    k = f.compile("opencl", fixed=fixed, fp_contract=False)
    ref = f.compile("cpu", fixed=fixed, fp_contract=False)
    copies = {n: np.array(v, copy=True) if isinstance(v, np.ndarray) else v for n, v in args.items()}
    got = k(**args)
    want = ref(**copies)
    for g, w, b in zip(_tuple(got), _tuple(want), k.lowered.outputs):
        same_bits(g, w, f"{f.name}: output {b.name} on opencl and cpu")
    return k, got


def _tuple(x):
    return x if isinstance(x, tuple) else (x,)
