"""Vitis-style HLS C++: what the HLS back-end spells differently from portable C.

Every element type of the loop IR has a native C++ type of its width, which
Vitis HLS synthesizes at that width (the 32-bit unsigned work type of 8- and
16-bit arithmetic, see backends/c/printer.py, is narrowed by the tool since
only the low bits are kept), so the program's types need no ap_int; loops
tagged by the schedule get `#pragma HLS` lines inside their body.
"""
from __future__ import annotations

from mascarpone.backends.c.dialect import CDialect


class HLSDialect(CDialect):
    """C++ for Vitis HLS (and g++ for C simulation)."""

    name = "hls"
    prefetches = False   # no caches to hint at on an FPGA
    hoists_allocations = False   # a buffer is a memory block placed where it is declared
    threads_parallel_loops = False   # hardware, not threads: a parallel loop runs in order here
    helper_qualifier = "static inline"
    restrict = ""

    def __init__(self, streams=False):
        self.streams = streams

    def includes(self) -> list:
        lines = ["#include <cmath>", "#include <cstdint>", "#include <cstring>"]
        return lines + (['#include "hls_stream.h"'] if self.streams else [])

    # loops ---------------------------------------------------------------------------------
    def signbit(self, x: str) -> str:
        return f"std::signbit({x})"    # <cmath> makes C's macro a function of namespace std

    def pipeline_pragma(self, ii: int) -> str:
        return f"#pragma HLS PIPELINE II={ii}"

    def unroll_pragma(self, factor: int, full=False) -> str:
        return "#pragma HLS UNROLL" if full else f"#pragma HLS UNROLL factor={factor}"

    def simd_pragma(self, factor: int) -> str:
        # vector lanes are parallel copies of the body in hardware
        return self.unroll_pragma(factor)

    def dataflow_pragma(self) -> str:
        return "#pragma HLS DATAFLOW"

    # memories and interfaces -----------------------------------------------------------------
    def partition_pragma(self, variable: str, dim: int, factor, kind: str) -> str:
        """ARRAY_PARTITION of dimension `dim` (0-based here, 1-based in the pragma)."""
        tail = "" if kind == "complete" else f" factor={factor}"
        return f"#pragma HLS ARRAY_PARTITION variable={variable} type={kind}{tail} dim={dim + 1}"

    def stream_type(self, element: str) -> str:
        return f"hls::stream<{element}>"

    def stream_pragma(self, variable: str, depth: int) -> str:
        return f"#pragma HLS STREAM variable={variable} depth={depth}"

    def maxi_pragma(self, port: str, bundle: str, depth=None) -> str:
        tail = f" depth={depth}" if depth else ""
        return f"#pragma HLS INTERFACE mode=m_axi port={port} offset=slave bundle={bundle}{tail}"

    def axilite_pragma(self, port: str) -> str:
        return f"#pragma HLS INTERFACE mode=s_axilite port={port}"
