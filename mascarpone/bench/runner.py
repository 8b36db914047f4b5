"""Running a suite: every (benchmark, variant, target) and every peer compiled, checked, then timed.

For each benchmark the runner builds the data and the reference once, compiles each variant for each
target (timing the compilation), runs every contender once on its own copy of the data and checks
its outputs against the reference, and times the contenders that gave the right result side by side
in interleaved rounds (timing.py). A variant that fails to build or compile, a wrong result or a
peer that fails is recorded with its error, and the run goes on. Ctrl-C stops the run and keeps the
benchmarks that finished.
"""
from __future__ import annotations

import copy
import os
import sys
import time
import traceback
from dataclasses import dataclass, field

import numpy as np

from mascarpone.backends.common.kernel import Kernel
from mascarpone.middleend.errors import NotSupportedError, TargetError
from mascarpone.middleend.targets import get_target, targets as registered_targets

from . import loopnest, timing
from .machine import stamp
from .model import Benchmark

#: defaults per size class: rounds, seconds per slow contender, warm-up seconds per contender, pause
#: before each burst (timing.interleaved)
DEFAULTS = {"small": dict(repeat=3, budget_s=2.0, warmup_s=0.0, pause_s=0.0),
            "paper": dict(repeat=11, budget_s=20.0, warmup_s=0.5, pause_s=0.1)}


@dataclass
class RunEnv:
    """What the contenders of a run share: the thread count and the numpy peer's process."""
    threads: int
    _blas: object = None
    peers_how: dict = field(default_factory=dict)

    @property
    def blas(self):
        if self._blas is None:
            from .blas_process import BlasProcess
            self._blas = BlasProcess(self.threads)
        return self._blas

    def close(self):
        if self._blas is not None:
            self._blas.close()


class Progress:
    """One line saying what runs and about how long is left (estimated from the benchmarks done)."""

    def __init__(self, total, stream=None, enabled=True):
        self.total, self.done, self.started = total, 0, time.perf_counter()
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.tty = enabled and hasattr(self.stream, "isatty") and self.stream.isatty()
        self.current = ""

    def left(self) -> str:
        if not self.done:
            return "time left unknown"
        per = (time.perf_counter() - self.started) / self.done
        s = int(per * (self.total - self.done))
        return f"about {s // 60}m{s % 60:02d}s left"

    def show(self, what: str):
        if not self.enabled or (not self.tty and what.startswith("timing, round") and
                                not what.startswith("timing, round 1/")):
            return      # a log (not a terminal) gets one line per step, not one per round
        line = f"[{self.done + 1}/{self.total}] {self.current} · {what} · {self.left()}"
        if self.tty:
            self.stream.write("\r\033[K" + line[:160])
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def finish(self, text: str):
        if self.enabled:
            self.stream.write(("\r\033[K" if self.tty else "") + text + "\n")
            self.stream.flush()


def _record(bench, size, kind, name, **fields) -> dict:
    base = {"benchmark": bench.name, "suite": bench.suite, "size": bench.describe(size), "kind": kind,
            "name": name, "dsl": None, "target": None, "status": "ok", "error": None, "compile_s": None,
            "times": [], "median": None, "q1": None, "q3": None, "min": None, "n": 0, "max_error": None,
            "loop_nest": None, "how": None, "note": None}
    base.update(fields)
    return base


def _error(err: BaseException) -> str:
    return f"{type(err).__name__}: {err}".strip()


def check(outputs, reference, tol):
    """None when `outputs` match `reference` (bit for bit, or within tol = (rtol, atol)), else what
    differs; and the largest absolute difference."""
    outputs = list(outputs)
    if len(outputs) != len(reference):
        return f"{len(outputs)} outputs, the reference has {len(reference)}", None
    worst = 0.0
    for k, (got, want) in enumerate(zip(outputs, reference)):
        got, want = np.asarray(got), np.asarray(want)
        if got.shape != want.shape:
            return f"output {k} has shape {got.shape}, the reference {want.shape}", None
        diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
        bad = ~((got == want) | (np.isnan(got.astype(np.float64)) & np.isnan(want.astype(np.float64))))
        if tol is not None:
            rtol, atol = tol
            bad &= ~(diff <= atol + rtol * np.abs(want.astype(np.float64)))
        finite = diff[np.isfinite(diff)]
        worst = max(worst, float(finite.max()) if finite.size else 0.0)
        if bad.any():
            first = tuple(int(i) for i in np.argwhere(bad)[0])
            return (f"output {k}: {int(bad.sum())} of {bad.size} elements differ, first at {first}: "
                    f"{got[first]!r} instead of {want[first]!r}"), worst
    return None, worst


def _inner_kernel(kernel):
    """The target's kernel inside a front-end's wrapper (HalideKernel, JuliaKernel)."""
    return getattr(kernel, "kernel", kernel)


class Runner:
    """Runs benchmarks on targets and peers; see `run`."""

    def __init__(self, targets, peers, size_class, repeat, budget_s, warmup_s, pause_s, env, progress):
        self.targets, self.peers = targets, peers
        self.size_class, self.repeat, self.budget_s, self.warmup_s = size_class, repeat, budget_s, warmup_s
        self.pause_s = pause_s
        self.env, self.progress = env, progress

    def benchmark(self, bench: Benchmark) -> list:
        """The records of one benchmark: every variant on every target, every peer."""
        size = bench.sizes[self.size_class]
        show = self.progress.show
        show("data and reference")
        try:
            data = bench.data(size)
            reference = bench.reference(copy.deepcopy(data), size)
        except Exception as err:  # the benchmark cannot run at all; say why and go on
            return [_record(bench, size, "benchmark", "reference", status="failed",
                            error=f"building the data or the reference: {_error(err)}")]
        records, contenders = [], []
        for variant in bench.variants:
            records += self._variant(bench, variant, size, data, reference, contenders)
        for peer in bench.peers:
            if self.peers is not None and peer.name not in self.peers:
                continue
            records.append(self._peer(bench, peer, size, data, reference, contenders))
        self._time(contenders)
        return records

    def _variant(self, bench, variant, size, data, reference, contenders) -> list:
        if variant.cannot:
            return [_record(bench, size, "variant", variant.name, dsl=variant.dsl, status=variant.status,
                            error=variant.cannot)]
        self.progress.show(f"{variant.name}: building")
        try:
            function = variant.build(size)
        except Exception as err:
            return [_record(bench, size, "variant", variant.name, dsl=variant.dsl, target=t, status="failed",
                            error=f"building the program: {_error(err)}") for t, _ in self.targets]
        out = []
        for target, missing in self.targets:
            rec = _record(bench, size, "variant", variant.name, dsl=variant.dsl, target=target, note=variant.note)
            out.append(rec)
            if missing:
                rec.update(status="cannot run", error=missing)
                continue
            self.progress.show(f"{variant.name} on {target}: compiling")
            options = dict(variant.options(size) if variant.options else {})
            if "num_threads" in get_target(target).options:
                options["num_threads"] = self.env.threads
            try:
                start = time.perf_counter()
                kernel = function.compile(target, **options)
                rec["compile_s"] = time.perf_counter() - start
            except Exception as err:   # reported in the table; the other targets and benchmarks go on
                status = "cannot run" if isinstance(err, NotSupportedError) else "failed"
                rec.update(status=status, error=f"compiling: {_error(err)}")
                continue
            inner = _inner_kernel(kernel)
            if not isinstance(inner, Kernel):
                rec.update(status="cannot run", error=f"target {target!r} gives {type(inner).__name__} kernels, "
                                                      f"which take another call than mascarpone's Kernel")
                continue
            rec["loop_nest"] = loopnest.signature(inner.lowered)
            self._check_and_queue(rec, lambda d: variant.bind(kernel, d, size), data, reference, bench.tol,
                                  contenders)
        return out

    def _peer(self, bench, peer, size, data, reference, contenders) -> dict:
        rec = _record(bench, size, "peer", peer.name, how=peer.how)
        if peer.cannot:
            rec.update(status="n/a", error=peer.cannot)
            return rec
        self.progress.show(f"peer {peer.name}: preparing")
        self._check_and_queue(rec, lambda d: peer.bind(d, size, self.env), data, reference, bench.tol, contenders)
        rec["how"] = self.env.peers_how.get(peer.name) or rec["how"]
        return rec

    def _check_and_queue(self, rec, bind, data, reference, tol, contenders):
        """Run once on a copy of the data and check; if right, bind a fresh copy for timing."""
        self.progress.show(f"{rec['name']}{' on ' + rec['target'] if rec['target'] else ''}: checking")
        try:
            call = bind(copy.deepcopy(data))
            start = time.perf_counter()
            call.run()
            single = time.perf_counter() - start
            wrong, worst = check(call.outputs(), reference, tol)
        except Exception as err:
            rec.update(status="failed", error=f"running: {_error(err)}")
            if os.environ.get("MASCARPONE_BENCH_TRACEBACK"):
                traceback.print_exc()
            return
        rec["max_error"] = worst
        if wrong:
            rec.update(status="wrong", error=wrong)
            return
        try:
            timed = bind(copy.deepcopy(data))
        except Exception as err:
            rec.update(status="failed", error=f"binding: {_error(err)}")
            return
        contenders.append((rec, timed, timing.plan(single, self.repeat, self.budget_s)))

    def _time(self, contenders):
        if not contenders:
            return
        recs, calls, plans = zip(*contenders)
        self.progress.show("warming up")
        timing.warm_up(calls, self.warmup_s)
        rounds = max(p.rounds for p in plans)
        samples = timing.interleaved(calls, plans, self.pause_s,
                                     on_round=lambda r: self.progress.show(f"timing, round {r}/{rounds}"))
        for rec, times in zip(recs, samples):
            s = timing.Stats.of(times)
            rec.update(times=[float(t) for t in times], median=s.median, q1=s.q1, q3=s.q3, min=float(min(times)),
                       n=s.n)


def resolve_targets(names=None) -> list:
    """[(target, None or why it cannot run here)] for the named targets, or every registered one."""
    infos = {t.name: t for t in registered_targets()}
    names = list(names) if names else sorted(infos, key=lambda n: (n != "cpu", n))   # the base target first
    unknown = [n for n in names if n not in infos]
    if unknown:
        raise TargetError(f"unknown target(s) {unknown}; the registered targets are {sorted(infos)}")
    return [(n, None if infos[n].available else
             f"target {n!r} cannot run here: {infos[n].missing}; install: {infos[n].install}") for n in names]


def run(benchmarks: list, *, size_class="small", targets=None, peers=None, repeat=None, threads=None,
        budget_s=None, warmup_s=None, progress=True, stream=None, options=None) -> dict:
    """Run `benchmarks` (model.Benchmark) on `targets` (names; default every registered target) beside
    their peers (names; default all); returns the result document (stamp, one record per measurement,
    whether the run was interrupted). See the module for what each step does."""
    if size_class not in DEFAULTS:
        raise ValueError(f"sizes must be one of {sorted(DEFAULTS)}, got {size_class!r}")
    d = DEFAULTS[size_class]
    threads = threads or os.cpu_count() or 1
    os.environ.setdefault("HL_NUM_THREADS", str(threads))   # Halide's thread pool, read when it starts
    resolved = resolve_targets(targets)
    env = RunEnv(threads)
    bar = Progress(len(benchmarks), stream, progress)
    runner = Runner(resolved, set(peers) if peers is not None else None, size_class,
                    repeat or d["repeat"], budget_s if budget_s is not None else d["budget_s"],
                    warmup_s if warmup_s is not None else d["warmup_s"], d["pause_s"], env, bar)
    records, interrupted = [], None
    opts = {"sizes": size_class, "targets": [t for t, _ in resolved], "peers": sorted(peers) if peers is not None
            else "all", "repeat": runner.repeat, "threads": threads, "budget_s": runner.budget_s,
            "warmup_s": runner.warmup_s, "pause_s": runner.pause_s, "burst": timing.BURST, **(options or {})}
    st = stamp(opts)           # the commit and the machine as the run starts
    load_start = _load()
    try:
        for bench in benchmarks:
            bar.current = f"{bench.name} ({bench.describe(bench.sizes[size_class])})"
            try:
                records += runner.benchmark(bench)
            except KeyboardInterrupt:
                interrupted = bench.name
                break
            bar.done += 1
        peers_how = _peers_how(env, records)
    finally:
        env.close()
    bar.finish(f"{bar.done} of {len(benchmarks)} benchmarks done in {time.perf_counter() - bar.started:.0f} s"
               + (f"; interrupted during {interrupted}" if interrupted else ""))
    st["seconds"] = round(time.perf_counter() - bar.started, 1)
    if load_start is not None:
        st["load"] = {"start": load_start, "end": _load()}
    return {"format": 1, "stamp": st, "peers_how": peers_how, "results": records, "interrupted": interrupted}


def _load():
    """The machine's load average over the last minute (None where the OS does not say)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def _peers_how(env, records) -> dict:
    """How each peer ran, for the report: the descriptions its records carry, and OpenBLAS's kernel."""
    how = {}
    for r in records:
        if r["kind"] == "peer" and r["how"]:
            how.setdefault(r["name"], r["how"])
    numpy = numpy_how(env)
    if numpy is not None:
        how["numpy/OpenBLAS"] = numpy
    return how


def numpy_how(env) -> str | None:
    """How the numpy peer's process ran OpenBLAS (its kernel, as threadpoolctl saw it there), or None
    where the run started no such process."""
    if env._blas is None or env._blas._proc is None:
        return None
    info = env._blas.info()
    b = (info.get("blas") or [{}])[0]
    unset = ", ".join(f"{k} (was {v})" if v is not None else f"{k} (was not set)" for k, v in info["unset"].items())
    return (f"numpy {info.get('numpy')} with {b.get('internal_api', '?')} {b.get('version', '?')}, "
            f"kernel {b.get('architecture', '?')} (threadpoolctl), {b.get('num_threads', '?')} "
            f"threads, in a process started without {unset}")

