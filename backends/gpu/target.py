"""The "opencl" and "cuda" targets the registry finds."""
from __future__ import annotations

from mascarpone.middleend.targets import Target


class OpenCLTarget(Target):
    name = "opencl"
    description = "OpenCL C kernels built and launched with pyopencl (PoCL runs them on the CPU)"
    options = {
        "fp_contract": "allow a float multiply and add to be one FMA (default True; False rounds every "
                       "operation, as numpy does)",
        "fast_math": "the OpenCL compiler's -cl-fast-relaxed-math (default False)",
    }
    install = ("apt-get install pocl-opencl-icd ocl-icd-opencl-dev && pip install 'mascarpone[gpu]' "
               "(make .venv/.installed does both)")

    def missing(self):
        from .opencl import missing
        return missing()

    def compile(self, lowered, **options):
        from . import compile_opencl
        return compile_opencl(lowered, **options)


class CUDATarget(Target):
    name = "cuda"
    description = ("CUDA C kernels compiled to PTX by NVRTC (or nvcc), launched through the CUDA driver "
                   "where a GPU exists")
    options = {
        "fp_contract": "allow a float multiply and add to be one FMA (default True; False is -fmad=false)",
        "fast_math": "the CUDA compiler's -use_fast_math (default False)",
        "arch": "the GPU architecture of the PTX, such as 'sm_80' or 'sm_90' (default: the device's, else "
                "sm_80)",
    }
    install = "pip install 'mascarpone[gpu]' (cuda-python and NVIDIA's NVRTC wheel), or a CUDA toolkit's nvcc"

    def missing(self):
        from .cuda import missing_compiler
        return missing_compiler()

    def compile(self, lowered, **options):
        from . import compile_cuda
        return compile_cuda(lowered, **options)


OPENCL = OpenCLTarget()
CUDA = CUDATarget()
