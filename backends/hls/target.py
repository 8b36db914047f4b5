"""The "hls" target: Vitis-style HLS C++ printed from the loop IR, run by C simulation with g++."""
from __future__ import annotations

from mascarpone.middleend.targets import Target

from . import toolchain


class HLSTarget(Target):
    name = "hls"
    description = ("Vitis HLS C++ (pragmas, m_axi/s_axilite interfaces, dataflow streams), run by C simulation "
                   "with g++ and Xilinx's HLS headers; k.report() estimates cycles and block RAM")
    options = {
        "fp_contract": "let g++ fuse a float multiply and add in C simulation (default False: every operation "
                       "rounds, as Vitis's separate operator cores do)",
        "strict_ii": "refuse (IllegalScheduleError) a pipelined loop whose requested II its dependences or "
                     "memory ports cannot meet (default False: a warning, and the report gives the achievable II)",
    }
    write_options = {
        "strict_ii": options["strict_ii"],
        "data": "{argument name: numpy array or size} the testbench runs on; outputs are computed by C "
                "simulation and checked by the testbench (default: no data files, the testbench only builds)",
        "part": "the FPGA part run_hls.tcl synthesizes for (default xcu250-figd2104-2L-e)",
        "clock_ns": "the clock period run_hls.tcl asks for (default 3.33, the latency table's 300 MHz)",
    }
    install = toolchain.INSTALL

    def missing(self):
        return toolchain.missing()

    def compile(self, lowered, **options):
        from . import compile_hls
        return compile_hls(lowered, **options)

    def write(self, lowered, path, **options):
        from .project import write_project
        self.require()
        return write_project(lowered, path, **options)


TARGET = HLSTarget()
