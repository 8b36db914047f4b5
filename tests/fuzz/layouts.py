"""A long run of random schedules with layout commands (tests/random_programs.py: loop commands,
store_in with buffers of every shape class, storage_fold), each case in a worker process so that a
crash or a hang is counted. Prints the counts by outcome and the cases that were not a typed refusal
or a run with the program's values.

    .venv/bin/python tests/fuzz/layouts.py --cases 2000 --seed 1 --workers 2 --timeout 120
"""
import argparse
import collections
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))      # tests/, for random_programs


def worker():
    """Run cases read from stdin (one JSON list of commands per line); one JSON result per line."""
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)            # anything else printed goes to stderr
    from random_programs import run_case
    for line in sys.stdin:
        seq = [tuple(c) for c in json.loads(line)]
        start = time.perf_counter()
        try:
            outcome = run_case(seq)
        except Exception as err:     # not a typed refusal: counted as such
            outcome = f"raw exception: {type(err).__name__}: {str(err)[:200]}"
        out.write(json.dumps({"outcome": outcome, "seconds": time.perf_counter() - start}) + "\n")


class Worker:
    """A worker process, restarted after a crash or a hang."""

    def __init__(self):
        self._start()

    def _start(self):
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
        self.lines = queue.Queue()
        threading.Thread(target=self._read, args=(self.proc, self.lines), daemon=True).start()

    @staticmethod
    def _read(proc, lines):
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    def run(self, seq, timeout):
        start = time.perf_counter()
        try:
            self.proc.stdin.write(json.dumps(seq) + "\n")
            self.proc.stdin.flush()
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            self.proc.kill()
            self.proc.wait()
            self._start()
            return {"outcome": "hang", "seconds": timeout}
        except BrokenPipeError:
            line = None
        if line is None:
            code = self.proc.wait()
            self._start()
            name = signal.Signals(-code).name if code < 0 else f"exit {code}"
            return {"outcome": f"crash ({name})", "seconds": time.perf_counter() - start}
        return json.loads(line)

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def kind(outcome):
    """The outcome's class: refused (typed error), equal, wrong, raw exception, crash, hang."""
    for k in ("refused", "equal", "wrong", "raw exception", "crash", "hang"):
        if outcome.startswith(k):
            return k
    return outcome


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds before a case counts as a hang")
    parser.add_argument("--max-len", type=int, default=6, help="commands per case, at most")
    parser.add_argument("--log", help="write each case and its outcome to this file (JSON lines)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker()
    import numpy as np
    from random_programs import random_case
    generator = np.random.default_rng(args.seed)
    cases = [random_case(generator, args.max_len) for _ in range(args.cases)]
    pool = queue.Queue()
    for _ in range(args.workers):
        pool.put(Worker())

    def run(seq):
        w = pool.get()
        try:
            return w.run(seq, args.timeout)
        finally:
            pool.put(w)

    start = time.time()
    with ThreadPoolExecutor(args.workers) as ex:
        results = list(ex.map(run, cases))
    while not pool.empty():
        pool.get().close()
    if args.log:
        with open(args.log, "w") as log:
            for seq, r in zip(cases, results):
                log.write(json.dumps({"case": seq, **r}) + "\n")
    counts = collections.Counter(kind(r["outcome"]) for r in results)
    refusals = collections.Counter(r["outcome"].split(": ", 1)[1] for r in results if kind(r["outcome"]) == "refused")
    seconds = sorted(r["seconds"] for r in results)
    print(f"{args.cases} cases (seed {args.seed}, up to {args.max_len} commands each) in {time.time() - start:.0f} s; "
          f"median {seconds[len(seconds) // 2]:.2f} s, slowest {seconds[-1]:.1f} s per case")
    for k in ("equal", "refused", "wrong", "raw exception", "crash", "hang"):
        extra = f"  ({', '.join(f'{n} {c}' for c, n in refusals.most_common())})" if k == "refused" else ""
        print(f"  {k:14s} {counts.get(k, 0):6d}{extra}")
    bad = [(seq, r) for seq, r in zip(cases, results) if kind(r["outcome"]) not in ("refused", "equal")]
    for seq, r in bad[:20]:
        print(f"  {r['outcome']}: {seq}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
