"""The suites: modules whose `benchmarks()` returns model.Benchmark objects.

    core      sgemm and the two-stage blur (mascarpone/examples.py)
    tiramisu  the Tiramisu papers' image set, in mascarpone, Halide and Julia
    halide    Halide pipelines with hand-written schedules
    julia     PolyBench-style kernels written in Julia

Another suite is a module with a `benchmarks()` function: add it to SUITES, or name the module
(`--suite package.module`) to run it without touching this file. Benchmarks need the halide wheel
and numba (pip install -e ".[bench]").
"""
from __future__ import annotations

import importlib
import re

from mascarpone.middleend.errors import MascarponeError

SUITES = {"core": "mascarpone.bench.suite.core", "tiramisu": "mascarpone.bench.suite.tiramisu",
          "halide": "mascarpone.bench.suite.halide", "julia": "mascarpone.bench.suite.julia"}
#: what `make bench` and `mascarpone bench` run
DEFAULT = ("core", "tiramisu", "halide", "julia")


class SuiteError(MascarponeError):
    """A suite that does not exist or cannot load, or a filter that selects nothing."""


def load(name: str) -> list:
    """The benchmarks of suite `name` (a name of SUITES, "default", or a module path)."""
    if name == "default":
        return [b for n in DEFAULT for b in load(n)]
    module = SUITES.get(name, name if "." in name else None)
    if module is None:
        raise SuiteError(f"no suite {name!r}; the suites are {', '.join(['default', *SUITES])}, or a module path")
    try:
        return list(importlib.import_module(module).benchmarks())
    except ImportError as err:
        raise SuiteError(f"suite {name!r} cannot load: {err}; the benchmarks need the bench extras: "
                         f"pip install -e \".[bench]\"") from err


def select(suites="default", filters=None) -> list:
    """The benchmarks of `suites` (a name or a list) whose "suite/name" matches one of `filters`
    (regular expressions, case-insensitive; none: all)."""
    names = [suites] if isinstance(suites, str) else list(suites)
    benchmarks = [b for n in names for b in load(n)]
    if not filters:
        return benchmarks
    try:
        patterns = [re.compile(f, re.I) for f in filters]
    except re.error as err:
        raise SuiteError(f"bad filter: {err}") from err
    chosen = [b for b in benchmarks if any(p.search(f"{b.suite}/{b.name}") for p in patterns)]
    if not chosen:
        raise SuiteError(f"no benchmark of {', '.join(names)} matches {filters}; they are "
                         f"{', '.join(f'{b.suite}/{b.name}' for b in benchmarks)}")
    return chosen
