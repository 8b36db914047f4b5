"""`CpuKernel`: a kernel compiled by LLVM into this process."""
from __future__ import annotations

import ctypes

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

    def release_memory(self):
        """Free the heap temporaries the kernel keeps for its next call (it takes them again then)."""
        self._release()

    def __del__(self):
        release = getattr(self, "_release", None)
        if release is not None:
            release()   # (the engine holding the code is this object's: still there)

    def source(self, kind: str = "llvm") -> str:
        """The generated code: 'llvm' (optimized IR), 'llvm-unoptimized' or 'asm'."""
        if kind == "llvm":
            return self._jit.optimized_ir
        if kind == "llvm-unoptimized":
            return self._ir
        if kind == "asm":
            return self._jit.assembly()
        raise ValueError(f"unknown source kind {kind!r}; use 'llvm', 'llvm-unoptimized' or 'asm'")
