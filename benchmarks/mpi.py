"""The MPI target on the image set of the Tiramisu papers' distributed experiments (benchmarks/mpi_programs.py).

    .venv/bin/python benchmarks/mpi.py [--quick] [--only bytes|time|scale]

1. Bytes sent at 2112x3520 on 4 ranks: mascarpone's exact exchange (measured in a run, and counted
   from the isl element sets: the two must agree) against a bounding-box exchange of the same
   accesses, as Distributed Halide does (the receiver asks for the box of what it reads, each owner
   sends its part of that box); the ratio is box / exact (>= 1: the exact exchange never sends more).
2. Time at 2112x3520 on 1, 2 and 4 ranks of this machine (one thread each) against the
   single-process cpu kernel of the same function (and the c target's, whose printer the MPI target
   shares; these schedules have no parallel loop, so both run on one core): the
   kernel's own time (the slowest rank; the scatter, gather and process start are not counted) and the
   whole call with mpiexec, in 3 interleaved rounds (the machine is shared).
   On a 2-core machine more ranks only share the same two cores: the ratio shows the cost of
   distribution, not a speedup.
3. Bytes each rank would send for 16, 64 and 1024 ranks at 16384x16384, counted from the same isl
   sets without running (1024 ranks: the first two, the middle and the last rank are counted).

Results are appended to benchmarks/RESULTS.md.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import mpi_programs  # noqa: E402
from benchlog import append_results  # noqa: E402

import mascarpone as ms  # noqa: E402
from mascarpone.middleend import volume  # noqa: E402


def sizes_of(kernel, inputs):
    """The size values a call with `inputs` takes (from the shapes of whole arrays)."""
    ints = {k: v for k, v in inputs.items() if not isinstance(v, np.ndarray)}
    shapes = [inputs[b.name].shape if b.name in inputs else None for b in kernel.lowered.arguments]
    return kernel._binder.sizes(ints, shapes)


def kib(n):
    return f"{n / 1024:.1f}"


def bytes_table(programs, width, height, ranks):
    rows = ["| program | exact, measured (KiB) | exact, counted (KiB) | bounding box (KiB) | box / exact | "
            "messages | max per rank (KiB) |", "|---|---|---|---|---|---|---|"]
    for name in programs:
        prog = mpi_programs.IMAGE_SET[name]()
        kernel = prog.function.compile("mpi")
        inputs = prog.inputs(height, width, np.random.default_rng(0))
        run = kernel.with_ranks(ranks, timeout=600)
        run(**inputs)
        measured = sum(s["bytes_sent"] for s in run.stats())
        sizes = sizes_of(kernel, inputs)
        exact = volume.sent(kernel.dist, sizes, ranks)
        box = volume.sent(kernel.dist, sizes, ranks, model="box")
        total, box_total = sum(s.bytes for s in exact), sum(s.bytes for s in box)
        assert total == measured, f"{name}: counted {total} bytes but the run sent {measured}"
        ratio = f"{box_total / total:.3f}" if total else "-"
        rows.append(f"| {name} | {kib(measured)} | {kib(total)} | {kib(box_total)} | {ratio} | "
                    f"{sum(s.messages for s in exact)} | {kib(max(s.bytes for s in exact))} |")
        print(rows[-1], flush=True)
    return "\n".join(rows)


def _median_ms(kernel, inputs, runs=9):
    kernel(**inputs)
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        kernel(**inputs)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1e3


def time_table(programs, width, height, rank_counts, rounds=3):
    """Per program: `rounds` interleaved rounds of (cpu, c, each rank count); each cell is the median
    over the rounds of that round's median (the machine is shared: its load moves between rounds)."""
    head = ("| program | cpu, 1 process (ms) | c, 1 process (ms) | "
            + " | ".join(f"{r} rank{'s' if r > 1 else ''}: kernel (ms) / call (s)" for r in rank_counts))
    rows = [head + " | kernel / cpu |", "|" + "---|" * (4 + len(rank_counts))]
    for name in programs:
        prog = mpi_programs.IMAGE_SET[name]()
        inputs = prog.inputs(height, width, np.random.default_rng(0))
        cpu = prog.function.compile("cpu", num_threads=2)
        c = prog.function.compile("c", num_threads=2)
        # one thread per rank: the single-process kernels of these schedules are serial too, so the ranks
        # are the only parallelism (on this shared 2-core machine, OpenMP threads waiting for each other
        # at each parallel loop's end cost tens of ms per call under load)
        kernel = prog.function.compile("mpi", num_threads=1)
        runs = {key: [] for key in ["cpu", "c"] + [f"k{r}" for r in rank_counts] + [f"call{r}" for r in rank_counts]}
        for _ in range(rounds):
            runs["cpu"].append(_median_ms(cpu, inputs, 5))
            runs["c"].append(_median_ms(c, inputs, 5))
            for r in rank_counts:
                run = kernel.with_ranks(r, timeout=600, repeat=5)
                start = time.perf_counter()
                run(**inputs)
                runs[f"call{r}"].append(time.perf_counter() - start)
                runs[f"k{r}"].append(run.last_seconds * 1e3)
        m = {key: statistics.median(v) for key, v in runs.items()}
        cells = [f"{m[f'k{r}']:.2f} / {m[f'call{r}']:.2f}" for r in rank_counts]
        ratios = [f"{m[f'k{r}'] / m['cpu']:.2f}" for r in rank_counts]
        rows.append(f"| {name} | {m['cpu']:.2f} | {m['c']:.2f} | " + " | ".join(cells) + f" | {' / '.join(ratios)} |")
        print(rows[-1], flush=True)
    return "\n".join(rows)


def scaling_table(programs, side, rank_counts):
    head = "| program | " + " | ".join(f"{r} ranks: max per rank (KiB) / total (MiB)" for r in rank_counts) + " |"
    rows = [head, "|" + "---|" * (1 + len(rank_counts))]
    for name in programs:
        prog = mpi_programs.IMAGE_SET[name]()
        lowered = prog.function.lower()
        dist = lowered.spmd()
        sizes = {p: side for p in dist.sizes}
        cells = []
        for r in rank_counts:
            senders = None if r <= 64 else sorted({0, 1, r // 2, r - 1})
            start = time.perf_counter()
            counted = volume.sent(dist, sizes, r, senders=senders)
            per_rank = max(s.bytes for s in counted)
            if senders is None:
                cells.append(f"{kib(per_rank)} / {sum(s.bytes for s in counted) / 2**20:.2f}")
            else:   # ranks inside the line send alike: the total from the middle rank's count
                middle = next(s.bytes for s in counted if s.rank == r // 2)
                ends = sum(s.bytes for s in counted if s.rank in (0, r - 1))
                cells.append(f"{kib(per_rank)} / {(ends + middle * (r - 2)) / 2**20:.2f}*")
            print(f"  {name} {r} ranks counted in {time.perf_counter() - start:.1f} s", flush=True)
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
        print(rows[-1], flush=True)
    return "\n".join(rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (a check that it runs)")
    parser.add_argument("--only", choices=("bytes", "time", "scale"), help="one of the three parts")
    args = parser.parse_args()
    if any(not t.available for t in ms.targets() if t.name == "mpi"):
        sys.exit("the mpi target is not available: pip install 'mascarpone[mpi]'")
    width, height, side = (256, 192, 1024) if args.quick else (2112, 3520, 16384)
    programs = list(mpi_programs.IMAGE_SET)
    parts = ("bytes", "time", "scale") if args.only is None else (args.only,)
    tables = []
    if "bytes" in parts:
        print(f"bytes sent at {width}x{height} on 4 ranks")
        tables.append((f"MPI target: bytes sent, exact vs bounding box, {width}x{height}, 4 ranks",
                       bytes_table(programs, width, height, 4), ""))
    if "time" in parts:
        print(f"time at {width}x{height}")
        tables.append((f"MPI target: time at {width}x{height} on 1, 2 and 4 ranks vs the cpu kernel",
                       time_table(programs, width, height, (1, 2, 4)),
                       "cpu, c: the same function in one process (its schedule has no parallel loop); ranks: one "
                       "thread each; kernel: the slowest rank's time in the kernel; call: the whole launched call "
                       "(mpiexec, scatter, 5 runs, gather); each cell the median of 3 interleaved rounds of medians "
                       "of 5 runs; kernel / cpu for 1, 2 and 4 ranks"))
    if "scale" in parts:
        print(f"bytes per rank at {side}x{side}, counted")
        tables.append((f"MPI target: bytes per rank at {side}x{side} for 16, 64 and 1024 ranks, counted from the "
                       "isl sets", scaling_table(programs, side, (16, 64, 1024)),
                       "max per rank / total; * 1024 ranks: the first two, the middle and the last rank counted, "
                       "the total from the end ranks and the middle rank's count"))
    if not args.quick:
        for title, table, intro in tables:
            append_results(title, table, intro)

if __name__ == "__main__":
    main()
