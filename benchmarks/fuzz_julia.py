"""Mutation fuzzing of the Julia front-end, run for longer than the test (tests/julia_fuzz.py).

    python benchmarks/fuzz_julia.py [--seed 7] [--minutes 10] [--cases N] [--append] [--log FILE]

Prints the number of mutants of each outcome (typed error, accepted and equal, Julia throws,
interpreter limit, accepted and different, raw exception, crash, hang) and the first cases of each
outcome that is a bug; `--append` adds the counts to benchmarks/RESULTS.md.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from julia_fuzz import BUGS, OUTCOMES, counts, fuzz  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", default="7")
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--cases", type=int, default=10**9)
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds one case may take before it is a hang")
    ap.add_argument("--append", action="store_true", help="append the counts to benchmarks/RESULTS.md")
    ap.add_argument("--log", help="write every outcome as a JSON line to this file")
    args = ap.parse_args()
    log = open(args.log, "w") if args.log else None
    start = time.time()
    results = fuzz(seed=args.seed, budget_s=args.minutes * 60, cases=args.cases, case_timeout_s=args.timeout,
                   log=(lambda r: (log.write(json.dumps(r) + "\n"), log.flush())) if log else None)
    elapsed = time.time() - start
    found = counts(results)
    print(f"{len(results)} mutants of seed {args.seed} in {elapsed:.0f} s")
    width = max(map(len, OUTCOMES))
    for outcome in OUTCOMES:
        print(f"  {outcome:<{width}}  {found[outcome]:>7}")
    for outcome in BUGS:
        for r in [r for r in results if r["outcome"] == outcome][:5]:
            print(f"\n{outcome}: case {r['i']} ({r.get('seed', '?')}): {r['detail'][-800:]}")
    if args.append:
        from benchlog import append_results
        table = "| outcome | mutants |\n|---|---|\n" + "\n".join(f"| {o} | {found[o]} |" for o in OUTCOMES)
        append_results("Julia front-end fuzzing (benchmarks/fuzz_julia.py)", table,
                       f"{len(results)} mutants of the fixtures' and corpus' printed IR, seed {args.seed}, "
                       f"{elapsed / 60:.1f} minutes, one worker process, {args.timeout:.0f} s per case")
    return 1 if any(found[o] for o in BUGS) else 0


if __name__ == "__main__":
    sys.exit(main())
