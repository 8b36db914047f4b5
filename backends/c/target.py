"""The "c" target: portable C printed from the loop IR, built by the system C compiler."""
from __future__ import annotations

from mascarpone.middleend.targets import Target

from .compiler import missing_compiler


class CTarget(Target):
    name = "c"
    description = "portable C99 + OpenMP, built by the system C compiler ($CC, else gcc), loaded with ctypes"
    options = {
        "num_threads": "threads of parallel loops (default: ms.set_num_threads's, the core count)",
        "fast_math": "the compiler's -ffast-math (default False)",
        "fp_contract": "allow a float multiply and add to be one FMA (default True; False rounds every "
                       "operation, as numpy does)",
        "arch": "the compiler's -march: 'native' (default) or a CPU name such as 'x86-64-v3'",
    }
    write_options = {"fp_contract": options["fp_contract"]}
    install = "apt-get install gcc"
    binds_in_place = True   # the call copies in-place arrays' inputs (Binder), not the kernel

    def missing(self):
        return missing_compiler()

    def compile(self, lowered, **options):
        from . import compile_c
        return compile_c(lowered, **options)

    def write(self, lowered, path, **options):
        from . import write_c
        return write_c(lowered, path, **options)


TARGET = CTarget()
