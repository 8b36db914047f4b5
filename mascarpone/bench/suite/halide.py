"""The Halide suite: pipelines written in Halide with their schedules (halide_pipelines.py), read by
mascarpone with the same schedule, against Halide's own JIT and its autoschedulers."""
from __future__ import annotations

from ..model import Benchmark
from . import halide_variants as H

SIZES = {"small": (512, 384), "paper": (2112, 3520)}


def benchmarks() -> list:
    from . import halide_pipelines as HP
    pipelines = {"rgbyuv420": HP.rgbyuv420, "blur repeat_edge": HP.blur_repeat_edge, "histogram": HP.histogram,
                 "iir": HP.iir, "bilateral grid": HP.bilateral_grid, "pyramid": HP.pyramid, "tuple": HP.tuple_func}
    return [Benchmark(name, "halide", SIZES, H.data(builder), H.reference(builder), variants=[H.variant(builder)],
                      peers=H.peers(builder), tol=H.tolerance(builder, SIZES["small"]), describe=H.describe)
            for name, builder in pipelines.items()]
