"""Halide pipelines without a schedule: mascarpone's autoscheduler against Halide's (Adams2019 and
Mullapudi2016 from the halide wheel), each given the same estimates.

    python benchmarks/halide/autoschedule.py [--size W H] [--only NAME ...] [--budget S]
                                             [--repeat N] [--no-append]

Per pipeline of mascarpone/bench/suite/halide_pipelines.py, built without its schedule: the outputs'
and images' estimates are set to the benchmark's size; Halide's autoschedulers schedule one copy each
(parallelism = the cores) and its JIT realizes it; mascarpone reads another copy, autoschedules it at
the same estimates (`HalideFunction.autoschedule`, a fresh cache, `--budget` seconds of search) and
compiles it for "cpu". Every output is checked against Halide's before timing; then medians of
interleaved rounds of all three realizing into preallocated outputs, and ours / each (below 1: ours
is faster). Results are appended to benchmarks/RESULTS.md unless --no-append.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

import halide as hl
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import mascarpone as ms  # noqa: E402
from mascarpone.bench.suite import halide_pipelines as HP  # noqa: E402
from mascarpone.middleend.autoschedule import cache  # noqa: E402
from apps import compare, paired_medians  # noqa: E402
from benchlog import append_results  # noqa: E402

PIPELINES = {"cvtColor": HP.cvt_color, "conv3x3": HP.conv3x3, "gaussian": HP.gaussian, "warpAffine": HP.warp_affine,
             "rgbyuv420": HP.rgbyuv420, "blur repeat_edge": HP.blur_repeat_edge, "histogram": HP.histogram,
             "iir": HP.iir, "bilateral grid": HP.bilateral_grid, "pyramid": HP.pyramid, "tuple": HP.tuple_func,
             "nb": HP.nb, "heat2d": HP.heat2d}
HALIDE_AUTOSCHEDULERS = {"Adams2019": "autoschedule_adams2019", "Mullapudi2016": "autoschedule_mullapudi2016"}
_loaded = set()   # the autoscheduler plugins loaded in this process


def estimated_spec(builder, w, h):
    """The pipeline without a schedule, its estimates set to the sizes it is realized at."""
    spec = builder(w, h, np.random.default_rng(0), schedule=False)
    for f, s in zip(spec["outputs"], _per_output(spec)):
        f.set_estimates([(0, n) for n in s])
    for ip, array in spec["images"].items():
        ip.set_estimates([(0, n) for n in reversed(array.shape)])
        ip.set(hl.Buffer(array))
    return spec


def halide_autoscheduled(builder, name, w, h):
    """(realize, first outputs, spec) of Halide's JIT with the schedule its autoscheduler `name` chose."""
    if name not in _loaded:
        lib = os.path.join(os.path.dirname(hl.__file__), "lib64", f"lib{HALIDE_AUTOSCHEDULERS[name]}.so")
        hl.load_plugin(lib if os.path.exists(lib) else HALIDE_AUTOSCHEDULERS[name])
        _loaded.add(name)
    spec = estimated_spec(builder, w, h)
    pipeline = hl.Pipeline(spec["outputs"])
    pipeline.apply_autoscheduler(hl.get_host_target(),
                                 hl.AutoschedulerParams(name, {"parallelism": str(os.cpu_count())}))
    pipeline.compile_jit()
    outs = [hl.Buffer(f.type(), s) for f, s in zip(spec["outputs"], _per_output(spec))]

    def run(keep=spec):   # the ImageParams' buffers point into spec's arrays: keep them alive
        pipeline.realize(outs)
        return outs
    return run, [np.asarray(b).copy() for b in run()], spec


def _per_output(spec):
    sizes = spec["sizes"]
    return sizes if sizes and isinstance(sizes[0], list) else [sizes] * len(spec["outputs"])


def ours_autoscheduled(builder, w, h, budget):
    """(realize, row facts) of mascarpone autoscheduling the same pipeline at the same estimates."""
    spec = estimated_spec(builder, w, h)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f = ms.from_halide(hl.Pipeline(spec["outputs"]))
        translate = time.perf_counter() - start
        start = time.perf_counter()
        report = f.autoschedule("cpu", budget_s=budget)
        search = time.perf_counter() - start
        start = time.perf_counter()
        kernel = f.compile("cpu")
        compile_s = time.perf_counter() - start
    inputs = {ip.name(): a for ip, a in spec["images"].items()}
    outs = kernel.realize(spec["sizes"], **inputs)
    outs = outs if isinstance(outs, list) else [outs]
    facts = dict(translate=translate, search=search, compile=compile_s, timed=report.measured,
                 commands=len(report.commands))
    return (lambda: kernel.realize(outs, **inputs)), facts, spec


def bench(name, builder, w, h, budget, repeat):
    """A row: Halide's two autoschedulers and ours on one pipeline, or the error that stopped ours."""
    row = {"name": name}
    runs = {}
    reference = None
    for auto in HALIDE_AUTOSCHEDULERS:
        try:
            runs[auto], outputs, spec = halide_autoscheduled(builder, auto, w, h)
        except Exception as err:   # a Halide autoscheduler may refuse a pipeline; the row says so
            row[auto + " error"] = f"{type(err).__name__}: {str(err)[:100]}"
            continue
        reference = reference if reference is not None else (outputs, spec.get("tol"))
    try:
        runs["ours"], facts, spec = ours_autoscheduled(builder, w, h, budget)
    except ms.MascarponeError as err:
        row["error"] = f"{type(err).__name__}: {str(err)[:160]}"
        return row
    row.update(facts)
    if reference is not None:
        compare(runs["ours"](), reference[0], reference[1], f"{name} (autoscheduled)")
    names = list(runs)
    for k, t in zip(names, paired_medians([runs[k] for k in names], repeat)):
        row[k] = t
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", nargs=2, type=int, default=[1536, 2560], metavar=("W", "H"))
    parser.add_argument("--only", nargs="*", choices=sorted(PIPELINES))
    parser.add_argument("--budget", type=float, default=15.0, help="our search's budget_s per pipeline")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--no-append", action="store_true")
    args = parser.parse_args()
    os.environ[cache.ENV] = tempfile.mkdtemp(prefix="ms-autoschedule-")   # a fresh search for each run
    w, h = args.size
    rows = []
    for name in args.only or PIPELINES:
        row = bench(name, PIPELINES[name], w, h, args.budget, args.repeat)
        rows.append(row)
        print({k: (round(v, 5) if isinstance(v, float) else v) for k, v in row.items()}, flush=True)
    header = ("| pipeline | Adams2019 (ms) | Mullapudi2016 (ms) | ours auto (ms) | ours / Adams2019 | "
              "ours / Mullapudi2016 | search (s) | timed | commands |\n|---|---|---|---|---|---|---|---|---|")
    lines, ratios = [], {a: [] for a in HALIDE_AUTOSCHEDULERS}
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['name']} | | | | | | | | refused: {r['error']} |")
            continue
        cells = []
        for a in HALIDE_AUTOSCHEDULERS:
            cells.append(f"{r[a] * 1e3:.2f}" if a in r else f"({r.get(a + ' error', '-')})")
        cells.append(f"{r['ours'] * 1e3:.2f}")
        for a in HALIDE_AUTOSCHEDULERS:
            if a in r:
                ratios[a].append(r["ours"] / r[a])
            cells.append(f"{r['ours'] / r[a]:.2f}" if a in r else "-")
        cells += [f"{r['search']:.1f}", str(r["timed"]), str(r["commands"])]
        lines.append(f"| {r['name']} | " + " | ".join(cells) + " |")
    geo = [f"**{math.exp(sum(map(math.log, v)) / len(v)):.2f}**" if v else "-" for v in ratios.values()]
    lines.append(f"| **geometric mean** | | | | {geo[0]} | {geo[1]} | | | |")
    table = "\n".join([header] + lines)
    print(table)
    if not args.no_append:
        append_results(f"Halide pipelines autoscheduled, {w}x{h}", table,
                       f"`benchmarks/halide/autoschedule.py --budget {args.budget:g}`: each pipeline without a "
                       f"schedule, estimates = the realized size; Halide's Adams2019 and Mullapudi2016 "
                       f"(parallelism {os.cpu_count()}) by its JIT, ours by `HalideFunction.autoschedule` for "
                       f"\"cpu\" (fresh cache); medians of {args.repeat} interleaved rounds in one process.")


if __name__ == "__main__":
    main()
