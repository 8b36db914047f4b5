"""Julia functions in a benchmark: their printed lowered IR read by `ms.from_julia`, scheduled, called
with Julia's arguments.

Julia cannot run on this project's machines; the suite reads the IR Julia prints for each kernel
from the fixtures of the Julia front-end's tests (tests/julia_fixtures: the kernel's source, `.jl`,
and its `@code_lowered` text), which exist in a source checkout.
"""
from __future__ import annotations

import importlib.util
import sys

from ..machine import repository_root
from ..model import Call, Variant

STYLE = "v1_6.lowered"


def fixtures_module():
    """tests/julia_fixtures of this checkout (the module the tests import as `julia_fixtures`)."""
    mod = sys.modules.get("julia_fixtures")
    if mod is not None:
        return mod
    root = repository_root()
    folder = root / "tests" / "julia_fixtures" if root else None
    if folder is None or not (folder / "__init__.py").exists():
        raise FileNotFoundError("the Julia kernels' printed IR (tests/julia_fixtures) is only in a source "
                                "checkout; run from one, installed with pip install -e .")
    spec = importlib.util.spec_from_file_location("julia_fixtures", folder / "__init__.py",
                                                  submodule_search_locations=[str(folder)])
    mod = importlib.util.module_from_spec(spec)
    sys.modules["julia_fixtures"] = mod
    spec.loader.exec_module(mod)
    return mod


def fixture(name):
    """(printed lowered IR, argtypes) of the fixture kernel `name` (Julia 1.6's @code_lowered)."""
    return fixtures_module().fixture(name, STYLE)


def variant(name, schedule, args, outputs, label="", note="") -> Variant:
    """The fixture kernel `name` through `ms.from_julia`, scheduled by `schedule(f)`; `args(data, size)`
    gives Julia's arguments (arrays with Julia's shape, column-major), `outputs(args)` the arrays to
    check after a call."""
    def build(size):
        import mascarpone as ms
        text, argtypes = fixture(name)
        f = ms.from_julia(text, argtypes)
        schedule(f)
        return f

    def bind(kernel, data, size):
        a = args(data, size)
        return Call(lambda: kernel(*a), lambda: [o.copy() for o in outputs(a)])
    return Variant("julia", build, bind, label=label, note=note)
