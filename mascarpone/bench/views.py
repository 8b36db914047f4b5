"""Views of a result document: what the tables and plots show, computed once from the records.

A result document (runner.run) holds one record per (benchmark, variant, target) and per peer. The
views pair them up: each variant's speedup over each peer, the parity of one benchmark's variants
across DSLs on a target, and the c target against the cpu target.
"""
from __future__ import annotations

import math
from collections import defaultdict

from .loopnest import summary
from .timing import beyond_noise


def ok(r) -> bool:
    return r["status"] == "ok" and r["median"] is not None


def by_benchmark(doc) -> dict:
    """{benchmark name: its records}, in the order they ran."""
    out = defaultdict(list)
    for r in doc["results"]:
        out[r["benchmark"]].append(r)
    return dict(out)


def label(r) -> str:
    """A record's name in tables: 'halide on cpu', 'Halide JIT'."""
    return f"{r['name']} on {r['target']}" if r["kind"] == "variant" and r["target"] else r["name"]


def geomean(values) -> float | None:
    values = [v for v in values if v and v > 0]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def differs(a, b) -> bool:
    return beyond_noise(a["q1"], a["q3"], b["q1"], b["q3"])


def speedups(doc) -> list:
    """Per timed variant on a target: {peer name: (peer time / variant time, beyond noise)}."""
    rows = []
    for bench, recs in by_benchmark(doc).items():
        peers = [r for r in recs if r["kind"] == "peer" and ok(r)]
        for v in recs:
            if v["kind"] == "variant" and ok(v):
                rows.append({"benchmark": bench, "variant": v["name"], "target": v["target"], "median": v["median"],
                             "peers": {p["name"]: (p["median"] / v["median"], differs(p, v)) for p in peers}})
    return rows


def peer_names(doc) -> list:
    names = []
    for r in doc["results"]:
        if r["kind"] == "peer" and r["name"] not in names:
            names.append(r["name"])
    return names


def parity(doc) -> list:
    """Per benchmark and target with two timed variants or more from different DSLs: their times, the
    slowest over the fastest, whether that is beyond noise, and whether their loop nests are the same."""
    rows = []
    for bench, recs in by_benchmark(doc).items():
        targets = []
        for r in recs:
            if r["kind"] == "variant" and r["target"] and r["target"] not in targets:
                targets.append(r["target"])
        for t in targets:
            vs = [r for r in recs if r["kind"] == "variant" and r["target"] == t and ok(r)]
            if len({v["dsl"] for v in vs}) < 2:
                continue
            fastest, slowest = min(vs, key=lambda v: v["median"]), max(vs, key=lambda v: v["median"])
            nests = {v["name"]: v["loop_nest"] for v in vs}
            same = len(set(nests.values())) == 1
            rows.append({"benchmark": bench, "target": t, "times": {v["name"]: v["median"] for v in vs},
                         "ratio": slowest["median"] / fastest["median"], "fastest": fastest["name"],
                         "slowest": slowest["name"], "beyond_noise": differs(slowest, fastest),
                         "same_loop_nest": same,
                         "loop_nests": {n: summary(s) for n, s in nests.items() if s}})
    return rows


def targets(doc, base="cpu") -> list:
    """Every other target against `base` for each variant timed on both: time ratio, noise, compile."""
    rows = []
    for bench, recs in by_benchmark(doc).items():
        variants = defaultdict(dict)
        for r in recs:
            if r["kind"] == "variant" and ok(r):
                variants[r["name"]][r["target"]] = r
        for name, per_target in variants.items():
            if base not in per_target:
                continue
            b = per_target[base]
            for t, r in per_target.items():
                if t != base:
                    rows.append({"benchmark": bench, "variant": name, "target": t, "base": base,
                                 "base_median": b["median"], "median": r["median"], "ratio": r["median"] / b["median"],
                                 "beyond_noise": differs(r, b), "compile": (b["compile_s"], r["compile_s"])})
    return rows


def problems(doc) -> list:
    """Records that did not give a time, with why: failures, wrong results, targets that cannot run."""
    return [r for r in doc["results"] if r["status"] in ("failed", "wrong", "cannot run")]
