"""`mascarpone bench`: one runner for the cross-DSL benchmarks.

    import mascarpone.bench as mb
    doc = mb.bench(suite="tiramisu", filter=["gaussian"], targets=["cpu", "c"], sizes="small", out="results")

runs each benchmark's variants (the algorithm written in mascarpone, Halide and Julia, each with its
schedule) on every target `ms.targets()` can run, beside the peers (Halide's JIT and autoschedulers,
numba, numpy/OpenBLAS), checks every result against a reference before timing, and writes
results.json, results.csv, results.md and plots into `out`. The suites are in `suite/`; the data
model in `model.py`.
"""
from __future__ import annotations

from . import report
from .comparison import compare
from .model import Benchmark, Call, Peer, Variant
from .runner import run
from .suite import select

__all__ = ["Benchmark", "Call", "Peer", "Variant", "bench", "compare", "run", "select", "report"]


def bench(suite="default", filter=None, targets=None, peers=None, sizes="small", repeat=None, threads=None,
          out=None, benchmarks=None, progress=True, stream=None) -> dict:
    """Run a suite (or `benchmarks`, a list of model.Benchmark) and write its files into `out` if given;
    returns the result document. See the module and runner.run for the arguments."""
    chosen = benchmarks if benchmarks is not None else select(suite, filter)
    doc = run(chosen, size_class=sizes, targets=targets, peers=peers, repeat=repeat, threads=threads,
              progress=progress, stream=stream,
              options={"suite": suite if benchmarks is None else "given", "filter": filter or []})
    if out is not None:
        report.write(doc, out)
    return doc
