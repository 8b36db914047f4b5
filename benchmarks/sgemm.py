"""sgemm against numpy's OpenBLAS at its best kernel: the hand schedule (examples.gemm_packed with
schedule_gemm_packed) on "cpu" and "c", and the autoscheduler's choice for the plain gemm.

    .venv/bin/python benchmarks/sgemm.py [--sizes 1024 2048] [--budget 30] [--rounds 11] [--no-append]

Run it with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset, so OpenBLAS picks its kernel for this CPU;
the kernel it ran (threadpoolctl's `architecture`) is printed and recorded. All variants use every
core. Each call is timed alone after a pause of QUIET_S (mascarpone.bench.timing): OpenBLAS's threads,
and ours, keep spinning for a while after a call, and a call that starts while another library's threads
spin loses a core (on 2 cores, whichever ran right after numpy took 1.5x its time). Times are medians
of `--rounds` interleaved rounds; ratios are numpy's time over ours (above 1: ours is faster).
"""
from __future__ import annotations

import argparse
import os
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
from mascarpone.bench.timing import QUIET_S  # noqa: E402


def openblas_kernel() -> str:
    """The BLAS numpy uses and the kernel it chose ('openblas SkylakeX, 2 threads')."""
    from threadpoolctl import threadpool_info
    blas = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    return ", ".join(f"{i['internal_api']} {i.get('architecture', '?')}, {i['num_threads']} threads" for i in blas)


def hand(n, target):
    """The packed hand schedule with the blocks gemm_packed_blocks picks for this machine."""
    blocks = examples.gemm_packed_blocks(n, n, n)
    f, Ap, Bp, Ct, acc, C = examples.gemm_packed(mr=blocks["mr"], nr=blocks["nr"])
    examples.schedule_gemm_packed(Ap, Bp, Ct, acc, C, **blocks)
    return f.compile(target, fixed=dict(N=n, M=n, K=n))


def auto(n, budget):
    """The plain gemm (C = 0; C += A B) autoscheduled for n^3 with a fresh cache; (kernel, search s)."""
    f = examples.gemm()[0]
    with tempfile.TemporaryDirectory() as folder:
        os.environ["MASCARPONE_AUTOSCHEDULE_CACHE"] = folder
        t0 = time.perf_counter()
        f.autoschedule("cpu", budget_s=budget, sizes=dict(N=n, M=n, K=n))
        search = time.perf_counter() - t0
    return f.compile("cpu", fixed=dict(N=n, M=n, K=n)), search, f


def measure(n, budget, rounds):
    rng = np.random.default_rng(0)
    a = rng.random((n, n), dtype=np.float32)
    b = rng.random((n, n), dtype=np.float32)
    out = np.empty((n, n), np.float32)
    want = a @ b
    kernels = {"hand, cpu": hand(n, "cpu"), "hand, c": hand(n, "c")}
    kernels["auto, cpu"], search, f = auto(n, budget)
    calls = {"numpy": lambda: np.matmul(a, b, out=out)}
    for name, k in kernels.items():
        if name.startswith("hand"):
            calls[name] = lambda k=k: k(A=a, B=b, C=out)
        else:
            calls[name] = lambda k=k: k(A=a, B=b)
        got = calls[name]()
        np.testing.assert_allclose(out if got is None else got, want, rtol=1e-3, err_msg=name)
    times = {name: [] for name in calls}
    names = list(calls)
    for r in range(rounds):
        for name in names if r % 2 == 0 else reversed(names):
            time.sleep(QUIET_S)
            t0 = time.perf_counter()
            calls[name]()
            times[name].append(time.perf_counter() - t0)
    medians = {name: float(np.median(ts)) for name, ts in times.items()}
    commands = "; ".join(str(c) for c in f.history())
    return medians, search, commands


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[1024, 2048])
    ap.add_argument("--budget", type=float, default=30.0)
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--no-append", action="store_true")
    args = ap.parse_args()
    for var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        if var in os.environ:
            print(f"warning: {var}={os.environ[var]} is set: OpenBLAS may not run its best kernel")
    blas = openblas_kernel()
    print(f"numpy: {blas}; {ms.get_num_threads()} threads for mascarpone; load {os.getloadavg()[0]:.2f}")
    lines = ["| n | numpy (ms, GFLOP/s) | hand, cpu | hand, c | auto, cpu | search (s) |", "|---|---|---|---|---|---|"]
    notes = []
    for n in args.sizes:
        medians, search, commands = measure(n, args.budget, args.rounds)
        flops = 2.0 * n ** 3

        def cell(name):
            t = medians[name]
            ratio = "" if name == "numpy" else f", {medians['numpy'] / t:.2f}x numpy"
            return f"{t * 1e3:.1f} ({flops / t / 1e9:.0f}{ratio})"
        lines.append(f"| {n} | " + " | ".join(cell(k) for k in ("numpy", "hand, cpu", "hand, c", "auto, cpu"))
                     + f" | {search:.1f} |")
        notes.append(f"auto at {n}: {commands}")
        print(lines[-1], flush=True)
    table = "\n".join(lines)
    print(table)
    for note in notes:
        print(note)
    if not args.no_append:
        intro = (f"`benchmarks/sgemm.py --budget {args.budget:g} --rounds {args.rounds}`: numpy ran {blas} "
                 f"(OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset); each call timed alone after a {QUIET_S} s "
                 f"pause; medians; load at the end {os.getloadavg()[0]:.2f}. Cells: ms (GFLOP/s, numpy's time "
                 "/ ours).\n\n" + "\n".join(f"- {note}" for note in notes))
        append_results("sgemm against OpenBLAS at its best kernel", table, intro)


if __name__ == "__main__":
    main()
