"""The autoscheduler's search with and without its screening of tile sizes by parametric tiles.

    .venv/bin/python benchmarks/screening.py [--budget 20] [--only blur,gemm,2mm] [--no-append]

For each kernel whose band the search tiles (the two-stage blur of examples.py, Julia kernels of
mascarpone/bench/suite/julia_kernels.py at their small sizes, Halide pipelines of
benchmarks/halide/autoschedule.py without a schedule at 1536x2560, their estimates), two searches from empty caches: one
screens each band's tile sizes by one kernel with parametric tiles (the default), the other measures
only the sizes it offers, each as a compiled kernel (search.SCREEN_SHARE = 0). Both chosen schedules
are compiled in this process and timed as medians of interleaved calls (autoschedule.py's method).
Ratios: time without the screening / time with it (above 1: the screening found a faster schedule).
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from autoschedule import FIXTURES, julia_sizes, median_times  # noqa: E402
from benchlog import append_results  # noqa: E402

import mascarpone as ms  # noqa: E402
from mascarpone import examples  # noqa: E402
from mascarpone.bench.suite import julia_kernels as jk  # noqa: E402
from mascarpone.middleend.autoschedule import cache  # noqa: E402

search = importlib.import_module("mascarpone.middleend.autoschedule.search")   # (the package's `search` is its function)


def blur():
    img = np.random.default_rng(0).random((1026, 1026), dtype=np.float32)
    return "blur 1024x1024 float32", lambda: examples.blur()[0], dict(H=1024, W=1024), lambda k: k(img=img)


def julia(name, size="small"):
    spec = jk.KERNELS[name]
    text = (FIXTURES / f"{spec['fixture']}.v1_6.lowered.txt").read_text()
    sys.path.insert(0, str(FIXTURES.parent))
    from julia_fixtures.lowering import read_kernel   # noqa: E402  (tests/julia_fixtures)
    argtypes = read_kernel(FIXTURES / f"{spec['fixture']}.jl")[2]
    make = lambda: ms.from_julia(text, argtypes=argtypes)   # noqa: E731
    work = jk.arrays(spec[size])
    return f"Julia {name} ({size} sizes), float64", make, julia_sizes(make(), work), lambda k: k(*work)


def _halide_benchmark():
    """benchmarks/halide/autoschedule.py as a module (its name is this folder's autoschedule.py's too)."""
    loader = importlib.util.spec_from_file_location("halide_autoschedule", HERE / "halide" / "autoschedule.py")
    bench = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(bench)
    return bench


def halide(name):
    import halide as hl   # noqa: E402
    bench = _halide_benchmark()
    spec = bench.estimated_spec(bench.PIPELINES[name], 1536, 2560)
    inputs = {ip.name(): a for ip, a in spec["images"].items()}
    outs = {}

    def make():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ms.from_halide(hl.Pipeline(spec["outputs"]))

    def call(kernel):
        if kernel not in outs:
            outs[kernel] = kernel.realize(spec["sizes"], **inputs)
        return kernel.realize(outs[kernel], **inputs)
    return f"Halide {name} 1536x2560", make, None, call


def searched(make, sizes, budget, screen):
    """(the compiled kernel, search seconds, the report) of a search from an empty cache."""
    os.environ[cache.ENV] = tempfile.mkdtemp(prefix="screening-bench-")
    search.SCREEN_SHARE = 0.5 if screen else 0.0
    f = make()
    t0 = time.perf_counter()
    report = f.autoschedule("cpu", budget_s=budget, sizes=sizes)
    return f.compile("cpu"), time.perf_counter() - t0, report


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=float, default=20.0, help="autoschedule budget_s per search")
    ap.add_argument("--only", default="blur,gemm,2mm,blur repeat_edge,pyramid",
                    help="comma-separated: blur, julia_kernels names, Halide pipeline names")
    ap.add_argument("--paper", action="store_true", help="Julia kernels at their paper sizes, not the small ones")
    ap.add_argument("--no-append", action="store_true", help="print only; do not append to RESULTS.md")
    args = ap.parse_args()
    share = search.SCREEN_SHARE
    rows = ["| kernel | screened ms | not screened ms | not / screened | search s (screened, not) "
            "| compiled (screened, not) | sizes screened |", "|---|---|---|---|---|---|---|"]
    names = [w.strip() for w in args.only.split(",") if w.strip()]
    halide_names = set(_halide_benchmark().PIPELINES)
    unknown = [n for n in names if n != "blur" and n not in jk.KERNELS and n not in halide_names]
    if unknown:
        ap.error(f"--only: no kernel {', '.join(unknown)}; kernels: blur, {', '.join(jk.KERNELS)}, "
                 f"{', '.join(sorted(halide_names))}")
    for name in names:
        title, make, sizes, call = (blur() if name == "blur" else
                                    julia(name, "paper" if args.paper else "small") if name in jk.KERNELS else
                                    halide(name))
        on, on_s, on_report = searched(make, sizes, args.budget, True)
        off, off_s, off_report = searched(make, sizes, args.budget, False)
        search.SCREEN_SHARE = share
        t = median_times({"on": lambda: call(on), "off": lambda: call(off)})
        rows.append(f"| {title} | {t['on'] * 1e3:.3f} | {t['off'] * 1e3:.3f} | {t['off'] / t['on']:.2f} | "
                    f"{on_s:.1f}, {off_s:.1f} | {on_report.measured}, {off_report.measured} | "
                    f"{sum(map(len, on_report.screened.values()))} |")
        print(rows[-1], flush=True)
        print(f"  screened: {on_report.commands}\n  not:      {off_report.commands}", flush=True)
    intro = (f"benchmarks/screening.py, budget_s={args.budget:g} per search, {ms.get_num_threads()} threads; "
             f"medians of interleaved calls (each the second of two in a row). 'compiled': schedules each "
             f"search compiled and timed; 'sizes screened': tile sizes timed on kernels with parametric tiles.")
    print(intro)
    if not args.no_append:
        append_results("Tile sizes screened by parametric tiles", "\n".join(rows), intro)


if __name__ == "__main__":
    main()
