"""The HLS back-end: Vitis-style HLS C++ from the loop IR, verified by C simulation, with a report.

    compile_hls(lowered, *, strict_ii=False) -> HLSKernel
    hls_source(lowered) -> the C++ Vitis HLS reads

The C++ is the C printer's (backends/c) in the HLS dialect: the same
expressions and helpers, with `#pragma HLS` lines where the schedule tagged
loops (PIPELINE II, UNROLL), ARRAY_PARTITION for partitioned buffers, m_axi
and s_axilite interfaces, and a dataflow region of stage functions joined by
`hls::stream` FIFOs (Function.dataflow). The kernel runs that C++ built with
g++ against Xilinx's headers (C simulation) with the CPU kernel's calling
convention and checks; `report()` gives the initiation intervals the
dependences allow and estimates of latency and block RAM.

Modules: dialect (C++ spelling and pragmas), placement (where buffers live),
processes (dataflow stages and FIFOs), printer (loop IR -> HLS C++), latency
(the operation latency table), report, kernel, toolchain (g++, the headers),
project (the files for vitis_hls), target.
"""
from __future__ import annotations

import dataclasses
import warnings

from mascarpone.backends.c.compiler import build_shared_library
from mascarpone.middleend.errors import IllegalScheduleError

from . import report as R
from . import toolchain
from .kernel import HLSKernel
from .printer import HLSPrinter, csim_wrapper
from .unswitch import unswitch


class HLSWarning(UserWarning):
    """A pipelined loop cannot run at the initiation interval the schedule asked for."""


def prepare(lowered):
    """`lowered` as the HLS back-end prints it: invariant conditions out of pipelined loops."""
    return dataclasses.replace(lowered, body=unswitch(lowered.body))


def hls_source(lowered, banner=(), depths=None):
    """(the printer, the C++ for Vitis HLS) of `lowered`."""
    printer = HLSPrinter(lowered, depths)
    return printer, printer.source(banner)


def check_ii(lowered, strict=False):
    """Warn (HLSWarning), or raise IllegalScheduleError when `strict`, for each pipelined loop whose
    requested initiation interval is below what its dependences and memory ports allow."""
    rep = R.build(lowered)
    for r in rep.pipelined():
        if r.ii is None or r.requested_ii is None or r.ii <= r.requested_ii:
            continue
        message = (f"{lowered.name}: loop {r.var} ({r.origin}) is pipelined with II={r.requested_ii} but "
                   f"can start an iteration only every {r.ii} cycles: {r.limit}")
        if strict:
            raise IllegalScheduleError(message + " (strict_ii=True)")
        warnings.warn(HLSWarning(message), stacklevel=5)
    return rep


def compile_hls(lowered, *, strict_ii=False, fp_contract=False) -> HLSKernel:
    """Print `lowered` as HLS C++, check its initiation intervals, build the C simulation and load it."""
    lowered = prepare(lowered)
    check_ii(lowered, strict_ii)
    printer, source = hls_source(lowered)
    csim = source + csim_wrapper(printer)
    path = build_shared_library(csim, toolchain.flags(fp_contract), f"kernel {lowered.name}",
                                compiler=toolchain.cxx_compiler(), suffix=".cpp", libs=())
    return HLSKernel(lowered, source, csim, path, lambda sizes: R.build(lowered, sizes))


__all__ = ["compile_hls", "hls_source", "check_ii", "HLSKernel", "HLSPrinter", "HLSWarning"]
