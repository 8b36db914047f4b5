"""Halide's Python apps (blur, bilateral grid, interpolate, local Laplacian) with the schedule the app
writes by hand and with the schedules of Halide's autoschedulers, by Halide's JIT and by mascarpone.

    python benchmarks/halide/apps.py [--size W H] [--only APP ...] [--schedules hand Adams2019 ...]
                                     [--repeat N] [--no-append]

Per app and schedule: the translation time (from_halide) and the compile time, the outputs checked
against Halide's, then medians of interleaved rounds of both realizing into preallocated outputs in
this process, and their ratio (ours / Halide, below 1: faster). An app whose values depend on the
last bit of a float (`ieee` in its spec: the local Laplacian) is compiled without contraction
(fp_contract=False) and checked against Halide's realize on its strict_float target; it is timed
against Halide's default target, which contracts and reassociates. A schedule mascarpone refuses is
listed with the error. The pipelines are our reproductions of the apps' algorithms
(app_pipelines.py); the autoscheduled schedules are made here, with this machine's target, by the
plugins of the halide wheel. Results are appended to benchmarks/RESULTS.md.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from pathlib import Path

import halide as hl
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import mascarpone as ms  # noqa: E402
import app_pipelines  # noqa: E402
from benchlog import append_results  # noqa: E402

SCHEDULES = ("hand",) + app_pipelines.AUTOSCHEDULERS


def paired_medians(calls, repeat, burst=3, warmup=0.5):
    """Median seconds of each of `calls` over `repeat` interleaved rounds (a load that drifts on a
    shared machine touches them alike); each round runs each call `burst` times in a row and does not
    count the first (it wakes the worker threads of an idle machine)."""
    for call in calls:
        start = time.perf_counter()
        while time.perf_counter() - start < warmup:
            call()
    times = [[] for _ in calls]
    for _ in range(repeat):
        for call, out in zip(calls, times):
            for k in range(burst):
                start = time.perf_counter()
                call()
                if k:
                    out.append(time.perf_counter() - start)
    return [float(np.median(t)) for t in times]


def halide_realizer(pipeline, spec):
    """Halide realizing into output buffers allocated once."""
    pipeline.compile_jit()
    sizes = spec["sizes"]
    outs = [hl.Buffer(f.type(), sizes) for f in spec["outputs"]]
    return lambda: (pipeline.realize(outs), outs)[1]


def strict_float_target():
    """This machine's JIT target computing floats as IEEE does: no contraction, no reassociation."""
    return hl.get_jit_target_from_environment().with_feature(hl.TargetFeature.StrictFloat)


def _as_list(realized):
    """A realize's outputs as a list (one output comes as a Buffer, several as a tuple)."""
    return [realized] if isinstance(realized, hl.Buffer) else list(realized)


def our_realizer(kernel, spec, inputs):
    """mascarpone realizing into output arrays allocated once, like halide_realizer."""
    outs = kernel.realize(spec["sizes"], **inputs)
    outs = outs if isinstance(outs, list) else [outs]
    return lambda: kernel.realize(outs, **inputs)


def compare(ours, theirs, tol, what):
    """Outputs equal to Halide's: exactly (tol None), within `tol` absolutely for integers, or
    relatively and absolutely for floats."""
    ours = ours if isinstance(ours, list) else [ours]
    for a, b in zip(ours, theirs):
        if tol is None:
            np.testing.assert_array_equal(a, b, err_msg=what)
        elif np.issubdtype(a.dtype, np.integer):
            assert np.abs(a.astype(np.int64) - b.astype(np.int64)).max() <= tol, what
        else:
            np.testing.assert_allclose(a, b, rtol=tol, atol=tol, err_msg=what)


def bench_app(name, schedule, w, h, repeat, levels):
    """A row: the times of one app with one schedule, or the error that refused it."""
    kwargs = {} if levels is None or name not in ("interpolate", "local_laplacian") else {"levels": levels}
    spec = app_pipelines.APPS[name]("hand" if schedule == "hand" else "none", w, h, np.random.default_rng(0),
                                    **kwargs)
    pipeline = hl.Pipeline(spec["outputs"]) if schedule == "hand" else app_pipelines.autoschedule(spec, schedule)[0]
    for ip, array in spec["images"].items():
        ip.set(hl.Buffer(array))
    for p, value in spec["params"]:
        p.set(value)
    row = {"app": name, "schedule": schedule}
    start = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            f = ms.from_halide(pipeline)
            row["translate"] = time.perf_counter() - start
            start = time.perf_counter()
            kernel = f.compile("cpu", **({"fp_contract": False} if spec.get("ieee") else {}))
            row["compile"] = time.perf_counter() - start
    except ms.MascarponeError as err:
        row["error"] = f"{type(err).__name__}: {str(err)[:160]}"
        return row
    # (the strict_float realize first: realizing for another target replaces the pipeline's JIT code)
    strict = [np.asarray(b) for b in _as_list(pipeline.realize(spec["sizes"], strict_float_target()))] \
        if spec.get("ieee") else None
    halide_run = halide_realizer(pipeline, spec)
    theirs = [np.asarray(b).copy() for b in halide_run()]
    inputs = {ip.name(): a for ip, a in spec["images"].items()}
    inputs.update({p.name(): v for p, v in spec["params"]})
    ours_run = our_realizer(kernel, spec, inputs)
    compare(ours_run(), strict or theirs, spec["tol"],
            f"{name} ({schedule}){' against strict_float' if strict else ''}")
    row["halide"], row["ours"] = paired_medians([halide_run, ours_run], repeat)
    return row


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", nargs=2, type=int, default=[1536, 2560], metavar=("W", "H"),
                        help="the apps' estimate size by default")
    parser.add_argument("--only", nargs="*", choices=sorted(app_pipelines.APPS))
    parser.add_argument("--schedules", nargs="*", choices=SCHEDULES)
    parser.add_argument("--levels", type=int, help="pyramid levels of interpolate and local_laplacian "
                                                   "(the apps' own: 10 and 8)")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--no-append", action="store_true")
    args = parser.parse_args()
    w, h = args.size
    rows = []
    for name in args.only or app_pipelines.APPS:
        for schedule in args.schedules or SCHEDULES:
            row = bench_app(name, schedule, w, h, args.repeat, args.levels)
            rows.append(row)
            if "error" in row:
                print(f"{name} ({schedule}): refused: {row['error']}", flush=True)
            else:
                print(f"{name} ({schedule}): translate {row['translate']:.1f} s, compile {row['compile']:.1f} s, "
                      f"ours {row['ours'] * 1e3:.2f} ms, Halide {row['halide'] * 1e3:.2f} ms", flush=True)
    header = ("| app | schedule | translate (s) | compile (s) | Halide JIT (ms) | mascarpone (ms) | ours / Halide |\n"
              "|---|---|---|---|---|---|---|")
    lines = []
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['app']} | {r['schedule']} | | | | | refused: {r['error']} |")
        else:
            lines.append(f"| {r['app']} | {r['schedule']} | {r['translate']:.1f} | {r['compile']:.1f} | "
                         f"{r['halide'] * 1e3:.2f} | {r['ours'] * 1e3:.2f} | {r['ours'] / r['halide']:.2f} |")
    timed = [r for r in rows if "error" not in r]
    if timed:
        geo = math.exp(sum(math.log(r["ours"] / r["halide"]) for r in timed) / len(timed))
        lines.append(f"| **geometric mean** | | | | | | **{geo:.2f}** |")
    table = "\n".join([header] + lines)
    print(table)
    if not args.no_append:
        levels = f", {args.levels} pyramid levels" if args.levels else ""
        append_results(f"Halide apps, {w}x{h}{levels}", table,
                       f"`benchmarks/halide/apps.py`: Halide's Python apps (our reproductions) with their hand "
                       f"schedules and the Adams2019 / Mullapudi2016 autoschedulers' schedules; medians of "
                       f"{args.repeat} interleaved rounds in one process, ratio ours / Halide (below 1: faster). "
                       f"The local Laplacian is checked against Halide's strict_float target and ours runs "
                       f"without contraction (fp_contract=False); Halide runs its default target.")


if __name__ == "__main__":
    main()
