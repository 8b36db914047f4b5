"""`HLSKernel`: the C simulation of an HLS kernel, called like every other kernel."""
from __future__ import annotations

import ctypes

from mascarpone.backends.common.kernel import NativeKernel


class HLSKernel(NativeKernel):
    """A kernel of the "hls" target: calls run the generated C++ built with g++ (C simulation), with the
    arguments, checks and results of the CPU kernel (see `Kernel`). `source("hls")` is the C++ Vitis
    reads, `source("csim")` the whole simulated unit; `report()` estimates cycles and resources."""

    target = "hls"

    def __init__(self, lowered, source: str, csim_source: str, library_path: str, report):
        self._source = source
        self._csim = csim_source
        self._report = report
        self._lib = ctypes.CDLL(library_path)
        self.library_path = library_path
        fn = getattr(self._lib, f"{lowered.name}_csim")
        threads = ctypes.c_int32.in_dll(self._lib, f"{lowered.name}_num_threads")
        super().__init__(lowered, ctypes.cast(fn, ctypes.c_void_p).value, ctypes.addressof(threads), code=self._lib)

    def source(self, kind: str = "hls") -> str:
        """The generated code: 'hls' (the C++ for Vitis HLS) or 'csim' (with the C simulation entry)."""
        if kind == "hls":
            return self._source
        if kind == "csim":
            return self._csim
        raise ValueError(f"unknown source kind {kind!r} for an HLS kernel; use 'hls' or 'csim'")

    def report(self, show=True, **sizes):
        """The estimated schedule (see backends/hls/report.py), for the sizes given by keyword (or the
        fixed ones); printed unless `show=False`, and returned."""
        rep = self._report(sizes)
        if show:
            print(rep)
        return rep
