"""The GPU back-end: OpenCL and CUDA kernels from the same loop IR.

    compile_opencl(lowered, *, fp_contract=True, fast_math=False) -> OpenCLKernel
    compile_cuda(lowered, *, fp_contract=True, fast_math=False, arch=None) -> CUDAKernel

Modules: launches (the host/device split: launches, host loops, kernels of
one thread), bounds (grid and block sizes from loop bounds), printer (the C
printer with block and thread indices, barriers, shared and private memory),
program (one translation unit and the host program), narrow (whether a launch
may run a kernel's 32-bit index variant), host (the call: copies, the host
program, launches, timings), opencl (dialect and pyopencl runtime),
cuda (dialect, PTX through NVRTC or nvcc, the driver API), target (the
"opencl" and "cuda" Targets the registry finds).
"""
from __future__ import annotations

from .program import build


def compile_opencl(lowered, *, fp_contract=True, fast_math=False):
    """Print `lowered` as OpenCL C, build it for the first OpenCL device and wrap it in a kernel."""
    from .opencl import OpenCLDialect, OpenCLKernel, constant_limits, default_runtime
    runtime = default_runtime()
    constant_limits(runtime, lowered)
    pragmas = [] if fp_contract else ["#pragma OPENCL FP_CONTRACT OFF"]
    source, host, kernels, _ = build(lowered, OpenCLDialect(), pragmas=pragmas, check_block=runtime.check_block)
    options = ["-cl-fp32-correctly-rounded-divide-sqrt"]
    if fast_math:
        options += ["-cl-fast-relaxed-math"]
    program = runtime.build(source, options, f"kernel {lowered.name}")
    for k in kernels:
        for variant in (k, k.narrow):
            variant.handle = getattr(program, variant.entry_point)
            runtime.declare_arguments(variant)
    return OpenCLKernel(lowered, host, kernels, runtime, source)


def compile_cuda(lowered, *, fp_contract=True, fast_math=False, arch=None):
    """Print `lowered` as CUDA C and compile it to PTX (NVRTC, else nvcc); it launches where a CUDA device
    exists."""
    from .cuda import compile_cuda as _compile
    return _compile(lowered, fp_contract=fp_contract, fast_math=fast_math, arch=arch)


__all__ = ["compile_opencl", "compile_cuda", "build"]
