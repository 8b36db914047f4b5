"""isl's scheduler's proposal against the model's choice, without any search.

    .venv/bin/python benchmarks/isl_proposal.py [--only gemm,2mm] [--no-append]

For each Julia kernel of mascarpone/bench/suite/julia_kernels.py at its small size: the model's
choice (the autoscheduler with measure=False) and the same with isl's proposal followed (its fusion
and loop orders, autoschedule/islschedule.py: the choice {"isl": ...} the search offers), both
checked against the naive loops and timed as medians of interleaved calls (autoschedule.py's method).
Ratio: isl's time / the model's (above 1: isl's proposal is slower).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from autoschedule import FIXTURES, julia_sizes, median_times  # noqa: E402
from benchlog import append_results  # noqa: E402

import mascarpone as ms  # noqa: E402
from mascarpone.bench.suite import julia_kernels as jk  # noqa: E402
from mascarpone.middleend.autoschedule.analysis import analyze  # noqa: E402
from mascarpone.middleend.autoschedule.apply import Applier  # noqa: E402
from mascarpone.middleend.autoschedule.islschedule import propose  # noqa: E402
from mascarpone.middleend.autoschedule.legal import Checker  # noqa: E402
from mascarpone.middleend.autoschedule.state import restore, save  # noqa: E402

KERNELS = ("gemm", "2mm", "covariance", "mttkrp", "jacobi-2d", "seidel-2d")


def scheduled(function, sizes, follow_isl):
    """The function compiled with the model's choice, or with isl's proposal followed; its commands;
    whether the proposal differs from the model's choice."""
    start = save(function)
    checker = Checker(function)
    applier = Applier(function, analyze(function, function.context(sizes)), checker,
                      proposal=propose(function, function._prepare(), checker.dependences()))
    applier.apply({"isl": {"*": True}} if follow_isl else {})
    commands = function.history()[start.history_length:]
    kernel = function.compile()
    restore(function, start)
    return kernel, commands, applier.differs


def row(name):
    spec = jk.KERNELS[name]
    text = (FIXTURES / f"{spec['fixture']}.v1_6.lowered.txt").read_text()
    sys.path.insert(0, str(FIXTURES.parent))
    from julia_fixtures.lowering import read_kernel   # noqa: E402  (tests/julia_fixtures)
    f = ms.from_julia(text, argtypes=read_kernel(FIXTURES / f"{spec['fixture']}.jl")[2])
    sizes = julia_sizes(f, jk.arrays(spec["small"]))
    naive = f.compile()
    model, model_commands, differs = scheduled(f, sizes, False)
    isl, isl_commands, _ = scheduled(f, sizes, True)
    outs = {}
    for label, k in (("naive", naive), ("model", model), ("isl", isl)):
        outs[label] = jk.arrays(spec["small"])
        k(*outs[label])
    for label in ("model", "isl"):
        for x, y in zip(outs["naive"], outs[label]):
            if isinstance(x, np.ndarray):
                np.testing.assert_allclose(y, x, rtol=1e-9, err_msg=f"{name} ({label})")
    work = {label: jk.arrays(spec["small"]) for label in ("model", "isl")}
    t = median_times({"model": lambda: model(*work["model"]), "isl": lambda: isl(*work["isl"])})
    print(f"  model: {'; '.join(model_commands)}\n  isl:   {'; '.join(isl_commands)}", flush=True)
    return (f"| {name} | {'yes' if differs else 'no'} | {t['model'] * 1e3:.3f} | {t['isl'] * 1e3:.3f} | "
            f"{t['isl'] / t['model']:.2f} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=None, help="comma-separated kernels of julia_kernels.KERNELS")
    ap.add_argument("--no-append", action="store_true")
    args = ap.parse_args()
    names = KERNELS if args.only is None else [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = sorted(set(names) - set(jk.KERNELS))
    if unknown:
        ap.error(f"--only: no kernel {', '.join(unknown)}; kernels: {', '.join(jk.KERNELS)}")
    rows = ["| kernel | proposal differs | model ms | isl's proposal ms | isl / model |", "|---|---|---|---|---|"]
    for name in names:
        rows.append(row(name))
        print(rows[-1], flush=True)
    intro = ("benchmarks/isl_proposal.py: the model's choice and isl's scheduler's proposal followed (fusion and "
             "loop orders), no search, each checked against the naive loops; medians of interleaved calls "
             f"(each the second of two in a row), {ms.get_num_threads()} threads.")
    print(intro)
    if not args.no_append:
        append_results("isl's scheduler's proposal against the model (issue 17)", "\n".join(rows), intro)


if __name__ == "__main__":
    main()
