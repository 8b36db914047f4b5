"""The same programs on the "c" target (the C printer, built by gcc) beside the "cpu" target (LLVM), timed
in one process.

    python benchmarks/targets.py [--quick] [--only NAME ...] [--no-append]

Programs: the packed sgemm and the two-stage blur of benchmarks/run.py, the Halide
pipelines of benchmarks/halide (at 2112x3520) and the Julia kernels of
benchmarks/julia, each with its schedule there. Both targets get the same lowered
function and the same options (fp_contract on, as users compile); their outputs are
compared before timing. Times are medians of interleaved rounds; the ratio is
c / cpu (below 1: the C compiler's code is faster). A record of where the portable C
stands, not a target to reach.
"""
from __future__ import annotations

import argparse
import copy
import math
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
for folder in (HERE, HERE / "halide", HERE / "julia", HERE.parent / "tests"):
    sys.path.insert(0, str(folder))

import mascarpone as ms  # noqa: E402
from benchlog import append_results  # noqa: E402
from mascarpone import examples  # noqa: E402

THREADS = 2


def paired_medians(fns, repeat, burst=3):
    """Medians over `repeat` rounds, each running every contender `burst` times in a row (the first run
    of a burst, which wakes the worker threads, not counted), after one warm-up run each."""
    for fn in fns:
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


def compiled(f, **options):
    """(cpu kernel, c kernel, seconds to compile each) for one Function."""
    kernels, seconds = [], []
    for target in ("cpu", "c"):
        start = time.perf_counter()
        kernels.append(f.compile(target, num_threads=THREADS, **options))
        seconds.append(time.perf_counter() - start)
    return kernels, seconds


def agree(a, b, name, rtol):
    for x, y in zip(a if isinstance(a, (list, tuple)) else [a], b if isinstance(b, (list, tuple)) else [b]):
        if np.issubdtype(np.asarray(x).dtype, np.floating):
            np.testing.assert_allclose(x, y, rtol=rtol, atol=rtol, err_msg=name)
        else:
            np.testing.assert_array_equal(x, y, err_msg=name)


def core_programs(quick):
    """sgemm and blur: (name, cpu run, c run, compile seconds)."""
    from run import SGEMM_BLOCKS, schedule_blur, sgemm_function
    n = 512 if quick else 2048
    f = sgemm_function()
    (kc, kg), secs = compiled(f, fixed=dict(N=n, M=n, K=n))
    rng = np.random.default_rng(0)
    A, B = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
    outs = [np.empty((n, n), np.float32) for _ in range(2)]
    agree(kc(A=A, B=B, C=outs[0]), kg(A=A, B=B, C=outs[1]), "sgemm", 1e-4)
    yield (f"sgemm {n} (packed, {SGEMM_BLOCKS['mr']}x{SGEMM_BLOCKS['nr']} tile)",
           lambda: kc(A=A, B=B, C=outs[0]), lambda: kg(A=A, B=B, C=outs[1]), secs)
    n = 512 if quick else 4096
    f, bx, by = examples.blur()
    schedule_blur(bx, by)
    (kc, kg), secs = compiled(f)
    img = rng.random((n + 2, n + 2), dtype=np.float32)
    outs = [np.empty((n, n), np.float32) for _ in range(2)]
    agree(kc(img=img, by=outs[0]), kg(img=img, by=outs[1]), "blur", 1e-6)
    yield (f"blur 3x3 {n}x{n}", lambda: kc(img=img, by=outs[0]), lambda: kg(img=img, by=outs[1]), secs)


def halide_programs(quick):
    import halide as hl
    import pipelines
    w, h = (512, 512) if quick else (2112, 3520)
    for name, build in pipelines.ALL.items():
        spec = build(w, h, np.random.default_rng(0))
        p = hl.Pipeline(spec["outputs"])
        (kc, kg), secs = compiled(ms.from_halide(p))
        inputs = {ip.name(): arr for ip, arr in spec["images"].items()}
        runs = []
        for k in (kc, kg):
            outs = k.realize(spec["sizes"], **inputs)
            outs = outs if isinstance(outs, list) else [outs]
            runs.append((k, outs))
        agree(runs[0][1], runs[1][1], name, spec.get("tol") or 1e-5)
        yield (f"Halide {name}", *(lambda k=k, o=o: k.realize(o, **inputs) for k, o in runs), secs)


def julia_programs(quick):
    from julia_fixtures import fixture
    import run as julia_run  # benchmarks/julia/run.py (the folder is first on the path)
    for name, (fx, _, schedule, spec, quick_spec) in julia_run.KERNELS.items():
        text, argtypes = fixture(fx)
        f = ms.from_julia(text, argtypes)
        schedule(f)
        (kc, kg), secs = compiled(f)
        base = julia_run.arrays(quick_spec if quick else spec)
        args = [copy.deepcopy(base), copy.deepcopy(base)]
        kc(*args[0])
        kg(*args[1])
        agree([a for a in args[0] if isinstance(a, np.ndarray)], [a for a in args[1] if isinstance(a, np.ndarray)],
              name, 1e-9)
        yield f"Julia {name}", lambda: kc(*args[0]), lambda: kg(*args[1]), secs


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--only", nargs="*", help="substrings of the program names to run")
    parser.add_argument("--no-append", action="store_true")
    args = parser.parse_args()
    repeat = 3 if args.quick else 7
    rows = []
    # benchmarks/run.py and benchmarks/julia/run.py share a module name: import each in turn
    for family in (core_programs, halide_programs, julia_programs):
        sys.modules.pop("run", None)
        sys.path.insert(0, str(HERE / "julia") if family is julia_programs else str(HERE))
        for name, cpu_run, c_run, secs in family(args.quick):
            if args.only and not any(s in name for s in args.only):
                continue
            t_cpu, t_c = paired_medians([cpu_run, c_run], repeat)
            rows.append((name, t_cpu, t_c, secs))
            print(f"{name}: cpu {t_cpu * 1e3:.2f} ms, c {t_c * 1e3:.2f} ms, c / cpu {t_c / t_cpu:.2f}", flush=True)
        sys.path.pop(0)
    geo = math.exp(sum(math.log(c / cpu) for _, cpu, c, _ in rows) / len(rows))
    header = ("| program | cpu, LLVM (ms) | c, gcc (ms) | c / cpu | compile cpu / c (s) |\n"
              "|---|---|---|---|---|")
    lines = [f"| {n} | {cpu * 1e3:.2f} | {c * 1e3:.2f} | {c / cpu:.2f} | {s[0]:.2f} / {s[1]:.2f} |"
             for n, cpu, c, s in rows]
    lines.append(f"| **geometric mean** | | | **{geo:.2f}** | |")
    table = "\n".join([header] + lines)
    print(table)
    if not args.no_append:
        append_results(f"C target beside the LLVM target{' (quick)' if args.quick else ''}", table,
                       f"`benchmarks/targets.py`: the same lowered functions and options on both targets, "
                       f"{THREADS} threads, medians of {repeat} interleaved rounds; c / cpu below 1: gcc's code "
                       f"is faster.")


if __name__ == "__main__":
    main()
