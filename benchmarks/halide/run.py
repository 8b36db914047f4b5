"""Halide pipelines compiled by Halide's JIT and by mascarpone with the same schedule, timed in one process.

    python benchmarks/halide/run.py [--quick] [--only NAME ...] [--no-append]

Each pipeline is realized at 2112x3520 (width x height, the image size of the
Tiramisu papers), outputs are checked against Halide's, and the median of
repeated runs is reported with the ratio ours / Halide (below 1: we are
faster), then their geometric mean. 'nb fused' compares Halide's best schedule
for nb with the four stages fused into one loop nest by `after`, which Halide's
scheduling language cannot express. Results are appended to benchmarks/RESULTS.md.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import halide as hl
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import mascarpone as ms  # noqa: E402
import pipelines  # noqa: E402
from benchlog import append_results  # noqa: E402



def paired_medians(fns, repeat, burst=3, warmup=0.5):
    """Medians over `repeat` rounds after `warmup` seconds of runs of each; each round runs each of `fns` `burst` times in a row and keeps
    all but the first run. Rounds interleave the contenders, so a load that drifts on a shared
    machine affects them alike; within a burst the worker threads are awake and the caches warm,
    as in a steady stream of frames (the first run of a burst pays for waking the threads of an
    idle virtual machine, which can take longer than the pipeline itself)."""
    for fn in fns:   # warm up: caches, page tables and the threads' first wake-ups
        start = time.perf_counter()
        while time.perf_counter() - start < warmup:
            fn()
    times = [[] for _ in fns]
    for _ in range(repeat):
        for fn, out in zip(fns, times):
            for k in range(burst):
                start = time.perf_counter()
                fn()
                if k:
                    out.append(time.perf_counter() - start)
    return [float(np.median(t)) for t in times]


def _halide_realizer(p, sizes, outputs):
    """Halide realizing into output buffers allocated once (as Halide's own benchmarks do)."""
    p.compile_jit()
    per_output = sizes if sizes and isinstance(sizes[0], list) else [sizes] * len(outputs)
    bufs = [hl.Buffer(f.type(), s) for f, s in zip(outputs, per_output)]
    return lambda: (p.realize(bufs), bufs)[1]


def _our_realizer(kernel, sizes, inputs):
    """mascarpone realizing into output arrays allocated once, like `_halide_realizer`: neither side
    pays for the page faults of fresh output memory, and both allocate their temporaries each run."""
    outs = kernel.realize(sizes, **inputs)
    outs = outs if isinstance(outs, list) else [outs]
    return lambda: kernel.realize(outs, **inputs)


def _arrays(result):
    if isinstance(result, hl.Buffer):
        return [np.asarray(result).copy()]
    return [np.asarray(b).copy() for b in result]


def compare(ours, theirs, tol, name):
    ours = ours if isinstance(ours, list) else [ours]
    for a, b in zip(ours, theirs):
        if tol is None:
            np.testing.assert_array_equal(a, b, err_msg=name)
        else:
            np.testing.assert_allclose(a, b, rtol=tol, atol=tol, err_msg=name)


def bench_pipeline(name, build, w, h, repeat):
    spec = build(w, h, np.random.default_rng(0))
    outputs, images, sizes, tol = spec["outputs"], spec["images"], spec["sizes"], spec.get("tol")
    for ip, arr in images.items():
        ip.set(hl.Buffer(arr))
    p = hl.Pipeline(outputs)
    halide_run = _halide_realizer(p, sizes, outputs)
    theirs = _arrays(halide_run())
    start = time.perf_counter()
    kernel = ms.from_halide(p).compile("cpu")
    compile_s = time.perf_counter() - start
    inputs = {ip.name(): arr for ip, arr in images.items()}
    ours_run = _our_realizer(kernel, sizes, inputs)
    compare(ours_run(), theirs, tol, name)
    t_halide, t_ours = paired_medians([halide_run, ours_run], repeat)
    return {"name": name, "halide": t_halide, "ours": t_ours, "note": f"compile {compile_s:.1f} s"}


def bench_nb_fused(w, h, repeat):
    """Halide's best nb schedule (of three) against the four stages fused with `after` in mascarpone."""
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, (h, w), dtype=np.uint8)
    schedules = ("inline", "root", "compute_with")
    runs, reference = [], None
    for schedule in schedules:
        inp, outs = pipelines.nb_pipeline(schedule)
        inp.set(hl.Buffer(img))
        runs.append(_halide_realizer(hl.Pipeline(outs), [w, h], outs))
        reference = _arrays(runs[-1]())
    inp, outs = pipelines.nb_pipeline("stages")
    f = ms.from_halide(hl.Pipeline(outs))
    fused = fuse_nb(f)
    kernel = f.compile("cpu")
    ours_run = _our_realizer(kernel, [w, h], {"img": img})
    compare(ours_run(), reference, None, "nb fused")
    *theirs, ours = paired_medians(runs + [ours_run], repeat)
    best = min(theirs)
    best_name = schedules[theirs.index(best)]
    return {"name": "nb fused with after", "halide": best, "ours": ours,
            "note": f"Halide's best of inline/root/compute_with: {best_name}; ours: {fused}"}


def fuse_nb(f):
    """f and g inlined into h and k, and h and k fused into one loop nest: `k.after(h, x)` shares
    every loop down to the vector one, so each pixel of the input is read once for both outputs.
    Rows in parallel, 32 lanes; the outputs are promised to have one size, so the fused loops need
    no guards."""
    # Halide renames repeated Func names f$1, f$2...: find the computations by the Funcs' base names
    comps = {info.name.split("$")[0]: info.comps[0][0] for info in f.translation.funcs if info.comps}
    fc, gc, hc, kc = comps["f"], comps["g"], comps["h"], comps["k"]
    fc.inline()
    gc.inline()
    for c in (hc, kc):
        c.parallelize("y")
        c.vectorize("x", 32)
    kc.after(hc, hc.loops[-1])
    f.assume_same_output_sizes()
    return "f, g inlined; h, k fused down to the vector loop with after; rows in parallel"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="512x512, for a smoke run")
    parser.add_argument("--only", nargs="*", help="pipeline names to run")
    parser.add_argument("--no-append", action="store_true")
    args = parser.parse_args()
    w, h = (512, 512) if args.quick else (2112, 3520)
    repeat = 3 if args.quick else 11
    rows = []
    for name, build in pipelines.ALL.items():
        if args.only and name not in args.only:
            continue
        row = bench_pipeline(name, build, w, h, repeat)
        print(f"{name}: ours {row['ours'] * 1e3:.2f} ms, Halide {row['halide'] * 1e3:.2f} ms", flush=True)
        rows.append(row)
    geo = math.exp(sum(math.log(r["ours"] / r["halide"]) for r in rows) / len(rows)) if rows else float("nan")
    fused = None if args.only and "nb fused" not in args.only else bench_nb_fused(w, h, repeat)
    header = ("| pipeline | Halide JIT (ms) | mascarpone (ms) | ours / Halide | note |\n"
              "|---|---|---|---|---|")
    lines = [f"| {r['name']} | {r['halide'] * 1e3:.2f} | {r['ours'] * 1e3:.2f} | {r['ours'] / r['halide']:.2f} | "
             f"{r['note']} |" for r in rows]
    lines.append(f"| **geometric mean** | | | **{geo:.2f}** | same schedules |")
    if fused:
        lines.append(f"| {fused['name']} | {fused['halide'] * 1e3:.2f} | {fused['ours'] * 1e3:.2f} | "
                     f"{fused['ours'] / fused['halide']:.2f} ({fused['halide'] / fused['ours']:.2f}x faster) | "
                     f"{fused['note']} |")
    table = "\n".join([header] + lines)
    print(table)
    if not args.no_append:
        append_results(f"Halide front-end, {w}x{h}{' (quick)' if args.quick else ''}", table,
                       f"`benchmarks/halide/run.py`: medians of {repeat} interleaved rounds, each running Halide and then mascarpone three times in a row (the first run of each not counted), Halide 21 JIT and "
                       f"mascarpone with the same schedule in one process; ratio ours / Halide (below 1: faster).")


if __name__ == "__main__":
    main()
