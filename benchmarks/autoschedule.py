"""The automatic scheduler against the naive loops and the hand schedules of the suite.

    .venv/bin/python benchmarks/autoschedule.py [--budget 20] [--threads N] [--quick] [--no-append]
                                                [--only sgemm,blur,jacobi-2d,...] [--sizes paper] [--rounds 5]

Kernels: gemm (mascarpone/examples.py, float32; hand: schedule_gemm_two_level), the two-stage blur
(examples.py; hand: the README's 32x256 tiles with bx computed per tile), and the ten Julia kernels of
mascarpone/bench/suite/julia_kernels.py at their small sizes, or the paper's with --sizes paper
(hand: the suite's schedules; peers: numba's @njit of the same loops and, for the linear-algebra
kernels, numpy/OpenBLAS as numpy_peers.py writes them, in a process of its own with the BLAS kernel of
this CPU: the speed a library reaches on the same work). Each variant is compiled for the
cpu target in this process and timed as the median of 15 calls (--rounds) after a warm-up, all variants of a kernel interleaved round by round
(in a turning order); in each round a variant is called CALLS times in a row and the last call is
timed, as a program calling it in a loop would see it (the first calls may find the arrays in another
core's cache, where the variant before left them, a cost of that other variant's threads, or in
memory: a 27 MB gesummv needed two calls to be back in the caches after the other variants ran,
0.59 ms timed after one against 0.36 ms after two and 0.35 after four).
A Julia kernel's variants all run on the same PLACEMENTS placements of its arrays, one a round in turn.
The autoscheduler's search runs with a fresh cache (a temporary folder) and its search time is
reported. Ratios are times over the autoscheduled time (above 1: the autoscheduler is faster); the
last row is the geometric mean of numba's time over the autoscheduled one for the Julia kernels run.
Results are appended to benchmarks/RESULTS.md unless --no-append.
"""
from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from benchlog import append_results  # noqa: E402

import mascarpone as ms  # noqa: E402
from mascarpone import examples  # noqa: E402
from mascarpone.bench.runner import RunEnv, numpy_how  # noqa: E402
from mascarpone.bench.suite import julia_kernels as jk  # noqa: E402
from mascarpone.bench.suite.julia import TOL as JULIA_TOL, numpy_peer  # noqa: E402
from mascarpone.middleend.autoschedule import cache, machine  # noqa: E402
from mascarpone.middleend.autoschedule.measure import placed_copy, random_offset  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "julia_fixtures"
ROUNDS = 15
#: calls of a variant in a row in each round, the last one timed
CALLS = 3
#: seconds to wait after the numpy peer's calls, for its BLAS threads to stop polling (OpenBLAS keeps
#: idle threads busy for a while after a call; OPENBLAS_THREAD_TIMEOUT)
PEER_SETTLE_S = 0.3


#: placements of a Julia kernel's arrays, each variant timed on each in turn (one a round): the time of a
#: short stencil moves by a third with where its two arrays lie modulo 4 KB (jacobi-1d at 2000 points:
#: 86 to 120 us ours, 149 to 245 us numba's), so that one placement each would rank them by chance
PLACEMENTS = 5


def placed(arrays, offsets) -> list:
    """Copies of the numpy arrays among `arrays` (the others as they are), the k-th starting `offsets[k]`
    bytes past a 4 KB boundary."""
    return [placed_copy(a, offset) if isinstance(a, np.ndarray) else a for a, offset in zip(arrays, offsets)]


class Rotating:
    """A variant's call on one of several argument sets, the set chosen by the round (`median_times`)."""

    def __init__(self, fn, sets):
        self.fn, self.sets = fn, sets

    def __call__(self, round_=0):
        return self.fn(*self.sets[round_ % len(self.sets)])


def median_times(calls: dict, rounds=ROUNDS) -> dict:
    """{name: median seconds} of the zero-argument callables, interleaved round by round; the order
    turns each round, so that no variant always runs right after a parallel one (whose threads
    may still be waking or spinning). Each round times the last of CALLS calls in a row. A peer in a
    process of its own (a `Call` with `burst`: numpy/OpenBLAS) is timed there, after the others'
    rounds: its BLAS threads spin on the cores for a while after each call, which would slow whatever
    ran next here. A `Rotating` call is told the round, and takes that round's arguments."""
    local = {name: fn for name, fn in calls.items() if not hasattr(fn, "burst")}
    for fn in local.values():
        fn()
    times = {name: [] for name in calls}
    names = list(local)
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            call = functools.partial(local[name], r) if isinstance(local[name], Rotating) else local[name]
            for _ in range(CALLS - 1):
                call()
            t0 = time.perf_counter()
            call()
            times[name].append(time.perf_counter() - t0)
    for name, peer in calls.items():
        if name not in local:
            peer.burst(1)
            times[name] = [peer.burst(CALLS)[-1] for _ in range(rounds)]
    if len(local) < len(calls):
        time.sleep(PEER_SETTLE_S)
    return {name: statistics.median(ts) for name, ts in times.items()}


def milliseconds(seconds) -> str:
    """Milliseconds to at least 3 significant digits, without an exponent (a small jacobi-1d takes 3 µs,
    a naive gemm seconds)."""
    ms_ = seconds * 1e3
    return f"{ms_:.0f}" if ms_ >= 100 else f"{ms_:.3g}"


def autoscheduled(function, sizes, budget):
    """Autoschedule `function` for `sizes`; returns (search seconds, the report)."""
    t0 = time.perf_counter()
    report = function.autoschedule("cpu", budget_s=budget, sizes=sizes)
    return time.perf_counter() - t0, report


def gemm_case(n, budget):
    a = np.random.default_rng(0).random((n, n), dtype=np.float32)
    b = np.random.default_rng(1).random((n, n), dtype=np.float32)
    sizes = dict(N=n, M=n, K=n)
    naive = examples.gemm()[0].compile("cpu")
    f, C, acc = examples.gemm()
    examples.schedule_gemm_two_level(C, acc)
    hand = f.compile("cpu")
    g = examples.gemm()[0]
    search_s, report = autoscheduled(g, sizes, budget)
    auto = g.compile("cpu")
    want = a @ b
    for k in (naive, hand, auto):
        np.testing.assert_allclose(k(A=a, B=b), want, rtol=1e-3)
    calls = {"naive": lambda: naive(A=a, B=b), "hand": lambda: hand(A=a, B=b), "auto": lambda: auto(A=a, B=b)}
    return f"gemm {n}^3 float32", calls, search_s, report


def blur_case(h, w, budget):
    img = np.random.default_rng(0).random((h + 2, w + 2), dtype=np.float32)
    naive = examples.blur()[0].compile("cpu")
    f, bx, by = examples.blur()
    y0, x0, y1, x1 = by.tile("y", "x", 32, 256)
    by.vectorize(x1, 8)
    by.parallelize(y0)
    bx.compute_at(by, x0)
    hand = f.compile("cpu")
    g = examples.blur()[0]
    search_s, report = autoscheduled(g, dict(H=h, W=w), budget)
    auto = g.compile("cpu")
    want = naive(img=img)
    for k in (hand, auto):
        np.testing.assert_allclose(k(img=img), want, rtol=1e-5)
    calls = {"naive": lambda: naive(img=img), "hand": lambda: hand(img=img), "auto": lambda: auto(img=img)}
    return f"blur {h}x{w} float32", calls, search_s, report


def julia_sizes(f, args) -> dict:
    """The size parameters of a Julia function for its arguments (array extents, integer arguments)."""
    sizes = {}
    for (name, jt), v in zip(f.julia_argtypes.items(), args):
        if jt.is_array:
            for d in range(1, jt.ndim + 1):
                sizes[f.julia_params[(name, d)].name] = v.shape[d - 1]
        elif jt.dtype.is_int or jt.dtype.is_bool:   # (a Bool is a size that is 0 or 1)
            sizes[f.julia_params[name].name] = int(v)
    return {p: v for p, v in sizes.items() if p in f.sizes()}


def julia_case(name, budget, size="small", env=None):
    spec = jk.KERNELS[name]
    text = (FIXTURES / f"{spec['fixture']}.v1_6.lowered.txt").read_text()
    from julia_fixtures.lowering import read_kernel   # noqa: E402  (tests/julia_fixtures)
    argtypes = read_kernel(FIXTURES / f"{spec['fixture']}.jl")[2]
    naive = ms.from_julia(text, argtypes=argtypes).compile()
    f = ms.from_julia(text, argtypes=argtypes)
    spec["schedule"](f)
    hand = f.compile()
    g = ms.from_julia(text, argtypes=argtypes)
    args = jk.arrays(spec[size])
    search_s, report = autoscheduled(g, julia_sizes(g, args), budget)
    auto = g.compile()
    outs = {}
    for label, k in (("naive", naive), ("hand", hand), ("auto", auto), ("numba", spec["numba"])):
        fresh = jk.arrays(spec[size])
        k(*fresh)
        outs[label] = fresh
    for label in ("hand", "auto", "numba"):
        for x, y in zip(outs["naive"], outs[label]):
            if isinstance(x, np.ndarray):
                np.testing.assert_allclose(y, x, rtol=1e-9)
    # every variant is timed on the same placements of the arguments (`random_offset`), its own copy of
    # each (kernels that update in place drift otherwise)
    rng = np.random.default_rng(0)
    where = [[random_offset(rng) for _ in spec[size]] for _ in range(PLACEMENTS)]
    calls = {label: Rotating(fn, [placed(jk.arrays(spec[size]), offsets) for offsets in where])
             for label, fn in (("naive", naive), ("hand", hand), ("auto", auto), ("numba", spec["numba"]))}
    if env is not None and spec["numpy"]:
        call = numpy_peer(spec["numpy"]).bind(jk.arrays(spec[size]), size, env)
        call.run()
        naive_arrays = [a for a in outs["naive"] if isinstance(a, np.ndarray)]
        for x, y in zip(naive_arrays, call.outputs()):   # (BLAS adds in its own order)
            np.testing.assert_allclose(y, x, rtol=JULIA_TOL[0], atol=JULIA_TOL[1])
        calls["numpy"] = call
    arrays = [s for s in spec[size] if isinstance(s, tuple)]
    shapes = "x".join(str(s) for s in [s for s in arrays if len(s) > 1] or arrays)
    steps = next((s for s in spec[size] if isinstance(s, int)), None) if name.startswith(("jacobi", "seidel")) else None
    shapes += f", {steps} steps" if steps is not None else ""
    return f"Julia {name} ({shapes}), float64", calls, search_s, report


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=float, default=20.0, help="autoschedule budget_s per kernel")
    ap.add_argument("--quick", action="store_true", help="smaller gemm and blur, two Julia kernels")
    ap.add_argument("--sizes", choices=("small", "paper"), default="small",
                    help="the Julia kernels' sizes (paper: PolyBench's, as benchmarks of the suite run them)")
    ap.add_argument("--rounds", type=int, default=ROUNDS, help=f"interleaved rounds (default {ROUNDS})")
    ap.add_argument("--threads", type=int, default=None, help="threads of parallel loops (default: all cores)")
    ap.add_argument("--no-append", action="store_true", help="print only; do not append to RESULTS.md")
    ap.add_argument("--only", default=None,
                    help="comma-separated kernels to run: sgemm (the float32 gemm), blur and names of "
                         "julia_kernels.KERNELS (default: all of them)")
    args = ap.parse_args()
    if args.rounds < 1:
        ap.error(f"--rounds: at least 1, got {args.rounds}")
    os.environ[cache.ENV] = tempfile.mkdtemp(prefix="autoschedule-bench-")
    if args.threads:
        ms.set_num_threads(args.threads)
    sys.path.insert(0, str(FIXTURES.parent))
    names = ["gemm", "jacobi-2d"] if args.quick else list(jk.KERNELS)
    wanted = None if args.only is None else [w.strip() for w in args.only.split(",") if w.strip()]
    unknown = sorted(set(wanted or []) - {"sgemm", "blur"} - set(jk.KERNELS))
    if unknown:
        ap.error(f"--only: no kernel {', '.join(unknown)}; kernels: sgemm, blur, {', '.join(jk.KERNELS)}")
    cases = []
    if wanted is None or "sgemm" in wanted:
        cases.append(lambda: gemm_case(256 if args.quick else 512, args.budget))
    if wanted is None or "blur" in wanted:
        cases.append(lambda: blur_case(*((256, 512) if args.quick else (1024, 1024)), args.budget))
    julia = names if wanted is None else [w for w in wanted if w in jk.KERNELS]
    env = RunEnv(ms.get_num_threads())
    cases += [lambda n=n: julia_case(n, args.budget, args.sizes, env) for n in julia]
    rows = ["| kernel | naive ms | hand ms | auto ms | numba ms | numpy ms | naive/auto | hand/auto | numba/auto "
            "| numpy/auto | search s | timed | screened | commands |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    load = os.getloadavg()[0]
    over_numba = {}
    for case in cases:
        title, calls, search_s, report = case()
        t = median_times(calls, args.rounds)
        if "numba" in t:
            over_numba[title] = t["numba"] / t["auto"]
        fmt = lambda k: milliseconds(t[k]) if k in t else "-"   # noqa: E731
        ratio = lambda k: f"{t[k] / t['auto']:.2f}" if k in t else "-"   # noqa: E731
        rows.append(f"| {title} | {fmt('naive')} | {fmt('hand')} | {fmt('auto')} | {fmt('numba')} | {fmt('numpy')} | "
                    f"{ratio('naive')} | {ratio('hand')} | {ratio('numba')} | {ratio('numpy')} | {search_s:.1f} | "
                    f"{report.measured} | "
                    f"{sum(map(len, report.screened.values()))} | {len(report.commands)} |")
        print(rows[-1], flush=True)
        print(f"  auto: {'; '.join(map(str, report.commands)) or '(naive loops)'}", flush=True)
    load = max(load, os.getloadavg()[0])
    intro = (f"benchmarks/autoschedule.py, budget_s={args.budget:g} per kernel, Julia kernels at {args.sizes} sizes, "
             f"{ms.get_num_threads()} threads, {machine.simd_bytes() * 8}-bit SIMD; median of {args.rounds} interleaved "
             f"calls (each the last of {CALLS} in a row); load average up to "
             f"{load:.1f} during the run (the machine is shared). Ratios: time / autoscheduled time "
             f"(above 1: the autoscheduler is faster). 'timed': schedules the search measured (compiled); "
             f"'screened': tile sizes it timed on one kernel with parametric tiles. numpy: {numpy_how(env) or 'not run'}.")
    if over_numba:
        mean = statistics.geometric_mean(over_numba.values())
        below = [f"{title.split(' (')[0]} {r:.2f}" for title, r in over_numba.items() if r < 2]
        rows.append(f"| **geometric mean of numba/auto over the {len(over_numba)} Julia kernels** | | | | | | | | "
                    f"**{mean:.2f}** | | | | | |")
        print(rows[-1])
        print(f"  below 2x numba: {', '.join(below) or 'none'}")
    env.close()
    table = "\n".join(rows)
    print(intro)
    if not args.no_append:
        append_results("Automatic scheduling", table, intro)


if __name__ == "__main__":
    main()
