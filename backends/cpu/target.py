"""The "cpu" target: LLVM (llvmlite) compiling into this process, or to an object file."""
from __future__ import annotations

from mascarpone.middleend.targets import Target

_CODE_OPTIONS = {
    "fast_math": "allow reassociation and other non-IEEE rewrites of float operations (default False)",
    "fp_contract": "allow a float multiply and add to be one FMA (default True; False rounds every operation, "
                   "as numpy does)",
    "arch": "the CPU to generate code for: 'native' (default) or an LLVM CPU name such as 'x86-64-v3'",
}


class CpuTarget(Target):
    name = "cpu"
    description = "this machine's cores through LLVM (llvmlite): JIT in-process, or object files"
    options = {"num_threads": "threads of parallel loops (default: ms.set_num_threads's, the core count)",
               **_CODE_OPTIONS}
    write_options = dict(_CODE_OPTIONS)
    install = "pip install llvmlite"
    binds_in_place = True   # the call copies in-place arrays' inputs (Binder), not the kernel

    def compile(self, lowered, **options):
        from . import compile_cpu
        return compile_cpu(lowered, **options)

    def write(self, lowered, path, **options):
        from . import emit_object
        return [str(path), emit_object(lowered, path, **options)]


TARGET = CpuTarget()
