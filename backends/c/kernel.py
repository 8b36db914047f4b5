"""`CKernel`: a kernel built by the C compiler and loaded with ctypes."""
from __future__ import annotations

import ctypes

from mascarpone.backends.common.kernel import NativeKernel
from mascarpone.backends.common.openmp import load_openmp


class CKernel(NativeKernel):
    """A kernel of the "c" target (see `Kernel` for the calling rules); `source("c")` is its code."""

    target = "c"

    def __init__(self, lowered, source: str, library_path: str, flags: list, *, num_threads=None):
        self._source = source
        self.flags = list(flags)
        if "-fopenmp" in self.flags:
            load_openmp()  # before the kernel's library pulls libgomp in unbound
        self._lib = ctypes.CDLL(library_path)
        self.library_path = library_path
        fn = getattr(self._lib, lowered.name)
        threads = ctypes.c_int32.in_dll(self._lib, f"{lowered.name}_num_threads")
        super().__init__(lowered, ctypes.cast(fn, ctypes.c_void_p).value, ctypes.addressof(threads),
                         num_threads=num_threads, code=self._lib)

    def source(self, kind: str = "c") -> str:
        """The generated code: 'c'."""
        if kind == "c":
            return self._source
        raise ValueError(f"unknown source kind {kind!r} for a C kernel; use 'c'")
