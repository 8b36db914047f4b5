"""How much of the corpus of printed IR as users paste it (tests/julia_corpus) the Julia front-end reads.

    python benchmarks/julia/corpus.py [--append]

For each text: whether it translates, compiles and matches the reference interpreter on random
arguments (or, for the texts that reproduce unsupported constructs, the error it is refused with);
then the fractions over the whole corpus.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from julia_corpus import CASES, run_case  # noqa: E402

STAGES = ("refused", "translated", "compiled", "matched")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--append", action="store_true", help="append the fractions to benchmarks/RESULTS.md")
    args = ap.parse_args()
    reached = {}
    for case in CASES:
        try:
            stage, detail = run_case(case)
        except Exception as err:           # noqa: BLE001 - a bug: reported, counted as not translated
            stage, detail = "refused", f"UNEXPECTED {type(err).__name__}: {err}"
        reached[case.file] = stage
        expected = "refused" if case.refused else "matched"
        mark = "" if stage == expected else "   <-- expected " + expected
        print(f"{case.file:45s} {stage:10s} {detail[:110]}{mark}")
    n = len(CASES)
    rank = {s: k for k, s in enumerate(STAGES)}
    lines = []
    for stage, label in (("translated", "translates"), ("compiled", "compiles"), ("matched", "matches the interpreter")):
        k = sum(rank[reached[c.file]] >= rank[stage] for c in CASES)
        lines.append((label, k))
    supported = [c for c in CASES if not c.refused]
    refused_ok = sum(reached[c.file] == "refused" for c in CASES if c.refused)
    print(f"\n{n} texts ({len(supported)} of supported constructs, {n - len(supported)} of unsupported ones)")
    for label, k in lines:
        print(f"  {label:26s} {k:3d} / {n}  ({100 * k / n:.0f} %)")
    print(f"  {'refused by name':26s} {refused_ok:3d} / {n - len(supported)} of the unsupported constructs")
    if args.append:
        from benchlog import append_results
        table = "| of the corpus | texts |\n|---|---|\n" + "\n".join(f"| {label} | {k} / {n} |" for label, k in lines)
        table += f"\n| unsupported constructs refused by name | {refused_ok} / {n - len(supported)} |"
        append_results("Julia printed-IR corpus (benchmarks/julia/corpus.py)", table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
