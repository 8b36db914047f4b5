"""`CpuKernel`: a kernel compiled by LLVM into this process."""
from __future__ import annotations

import ctypes
import weakref

from mascarpone.backends.common.kernel import NativeKernel


class CpuKernel(NativeKernel):
    """A kernel JIT-compiled for this machine (see `Kernel` for the calling rules)."""

    target = "cpu"

    def __init__(self, lowered, jit, unoptimized_ir: str, *, num_threads=None):
        self._jit = jit
        self._ir = unoptimized_ir
        super().__init__(lowered, jit.function_address(lowered.name),
                         jit.global_address(f"{lowered.name}.num_threads"), num_threads=num_threads, code=jit)
        self._release = ctypes.CFUNCTYPE(None)(jit.function_address(f"{lowered.name}_release_memory"))
        # the heap temporaries are freed when the kernel goes, by a finalizer that holds the engine: a
        # kernel caught in a reference cycle (a traceback of one of its calls) is collected with
        # everything only it reaches, in no set order, so its own __del__ could run after the engine's
        # had freed the code it calls
        weakref.finalize(self, _release_with, self._release, jit)

    def release_memory(self):
        """Free the heap temporaries the kernel keeps for its next call (it takes them again then)."""
        self._release()

    def source(self, kind: str = "llvm") -> str:
        """The generated code: 'llvm' (optimized IR), 'llvm-unoptimized' or 'asm'."""
        if kind == "llvm":
            return self._jit.optimized_ir
        if kind == "llvm-unoptimized":
            return self._ir
        if kind == "asm":
            return self._jit.assembly()
        raise ValueError(f"unknown source kind {kind!r}; use 'llvm', 'llvm-unoptimized' or 'asm'")


def _release_with(release, code):
    """Call `release` (a function of `code`, which the caller keeps loaded until then)."""
    release()
