"""What a benchmark is: one algorithm, its variants (one per DSL that writes it), its peers, its data.

A *variant* is the algorithm written in one DSL with its schedule (the mascarpone program, the
Halide pipeline, the Julia function) and compiled by mascarpone for every target; a *peer* is
another compiler or library running the same algorithm (Halide's own JIT, numba, numpy/OpenBLAS).
Both are bound to the benchmark's data as a `Call`, checked against the benchmark's reference, then
timed side by side.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

#: the DSLs a benchmark may be written in, in the order the tables show them
DSLS = ("mascarpone", "halide", "julia")


class Call:
    """One contender bound to its own copy of the data.

    `run()` does one call (what is timed); `outputs()` gives, after a run, the arrays to check, in the
    order and layout of the benchmark's reference. `burst(n)` times n calls in a row; a peer that
    runs in another process times itself there and overrides it.
    """

    def __init__(self, run: Callable[[], object], outputs: Callable[[], list], keep=None):
        self.run = run
        self.outputs = outputs
        self.keep = keep     # what must outlive the call: arrays that another library's buffers point into

    def burst(self, n: int) -> list:
        """Seconds of each of `n` calls in a row."""
        times = []
        for _ in range(n):
            start = time.perf_counter()
            self.run()
            times.append(time.perf_counter() - start)
        return times


@dataclass
class Variant:
    """The benchmark's algorithm in one DSL, with its schedule.

    `build(size)` returns the scheduled ms.Function (the DSL's front-end already applied);
    `bind(kernel, data, size)` returns a `Call` running the compiled kernel on `data`;
    `options(size)` adds compile options (`fixed=` sizes). A variant that does not exist gets
    `cannot` (the reason) and `status`: "cannot express" (the DSL cannot say it), "not supported"
    (our front-end cannot read what the DSL can say) or "not written".
    """

    dsl: str
    build: Callable | None = None
    bind: Callable | None = None
    cannot: str | None = None
    label: str = ""
    options: Callable | None = None
    note: str = ""
    status: str = "cannot express"

    @classmethod
    def absent(cls, dsl: str, status: str, reason: str) -> "Variant":
        """A DSL's missing variant, with why (see the class)."""
        return cls(dsl, cannot=reason, status=status)

    @property
    def name(self) -> str:
        return self.dsl + (f" ({self.label})" if self.label else "")


@dataclass
class Peer:
    """Another compiler or library running the same algorithm.

    `bind(data, size, env)` returns a `Call` (env: the `RunEnv` of the run: threads, the BLAS
    process); `cannot` says why this peer does not apply (e.g. numba's parallel loops where the
    loops carry dependences); `how` describes how it runs, for the report.
    """

    name: str
    bind: Callable | None = None
    cannot: str | None = None
    how: str = ""


@dataclass
class Benchmark:
    """One algorithm: its sizes, data, reference, variants and peers.

    `sizes` maps "small" and "paper" to a size (any value the callables understand); `data(size)`
    returns the inputs as a dict of numpy arrays and scalars, the same on every call; `reference(data,
    size)` returns the expected outputs (numpy, or the DSL's own compiler) as a list of arrays;
    `tol` is None for bit-exact results, else (rtol, atol); `describe(size)` names the size for tables.
    """

    name: str
    suite: str
    sizes: dict
    data: Callable
    reference: Callable
    variants: list = field(default_factory=list)
    peers: list = field(default_factory=list)
    tol: tuple | None = None
    describe: Callable = str
    note: str = ""
