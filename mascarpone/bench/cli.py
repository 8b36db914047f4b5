"""The `mascarpone bench` command (mascarpone/cli.py hands its arguments here)."""
from __future__ import annotations

import sys

DESCRIPTION = """Run the cross-DSL benchmarks: each benchmark's variants (mascarpone, Halide, Julia, each
with its schedule) on every target that can run here, beside Halide's JIT and autoschedulers, numba and
numpy/OpenBLAS; results are checked before timing. Writes results.json, results.csv, results.md,
times.png/svg and speedup.png/svg into --out. Ctrl-C stops and keeps what finished."""


def _list(text):
    return [s.strip() for s in text.split(",") if s.strip()]


def add_parser(sub):
    """The `bench` subcommand's options."""
    p = sub.add_parser("bench", help="run the cross-DSL benchmarks", description=DESCRIPTION)
    p.add_argument("--suite", default="default", type=_list,
                   help="suites, comma-separated: default, core, tiramisu, halide, julia, or a module path")
    p.add_argument("--filter", action="append", default=None, metavar="REGEX",
                   help="run the benchmarks whose suite/name matches (repeatable)")
    p.add_argument("--targets", type=_list, default=None,
                   help="targets, comma-separated (default: every registered one; `mascarpone targets` lists them)")
    p.add_argument("--peers", type=_list, default=None,
                   help="peers to run, comma-separated (e.g. 'Halide JIT,numba'); 'none' for none; default all")
    p.add_argument("--sizes", choices=("small", "paper"), default="small", help="problem sizes (default small)")
    p.add_argument("--repeat", type=int, default=None, help="interleaved rounds (default 3 small, 11 paper)")
    p.add_argument("--threads", type=int, default=None, help="threads for every contender (default: the cores)")
    p.add_argument("--out", default="bench-results", help="folder for the results (default bench-results)")
    p.add_argument("--compare", nargs="+", metavar="JSON",
                   help="OLD.json: after the run, print what got faster or slower beyond noise; "
                        "OLD.json NEW.json: compare two stored runs without running")
    p.add_argument("--list", action="store_true", help="list the benchmarks and their variants, run nothing")
    p.add_argument("--publish", metavar="DIR",
                   help="write a finished run into README.md and benchmarks/RESULTS.md, run nothing")
    return p


def main(args) -> int:
    """Run `mascarpone bench` with parsed `args`; returns the exit status."""
    try:
        return _main(args)
    except (OSError, ValueError) as err:   # a result file that is missing or not one of ours
        print(f"mascarpone bench: {err}", file=sys.stderr)
        return 2


def _main(args) -> int:
    from . import publish, report
    from .comparison import compare
    from .runner import run
    from .suite import select
    if args.publish:
        for path in publish.publish(args.publish):
            print(f"wrote {path}")
        return 0
    if args.compare and len(args.compare) == 2:
        print(compare(report.load(args.compare[0]), report.load(args.compare[1])).text())
        return 0
    if args.compare and len(args.compare) > 2:
        print("mascarpone bench: --compare takes OLD.json, or OLD.json NEW.json", file=sys.stderr)
        return 2
    old = report.load(args.compare[0]) if args.compare else None
    chosen = select(args.suite, args.filter)
    if args.list:
        for b in chosen:
            variants = ", ".join(v.name + (f" ({v.status})" if v.cannot else "") for v in b.variants)
            peers = ", ".join(p.name for p in b.peers) or "none"
            print(f"{b.suite}/{b.name}: variants {variants}; peers {peers}")
        return 0
    peers = [] if args.peers == ["none"] else args.peers
    doc = run(chosen, size_class=args.sizes, targets=args.targets, peers=peers, repeat=args.repeat,
              threads=args.threads, options={"suite": args.suite, "filter": args.filter or []})
    paths = report.write(doc, args.out)
    print(f"wrote {', '.join(str(p) for p in paths)}")
    if old is not None:
        print(compare(old, doc).text())
    return 130 if doc["interrupted"] else 0
