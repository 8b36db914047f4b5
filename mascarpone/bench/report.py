"""Writing a run: results.json (every measurement), results.csv, results.md (tables) and the plots."""
from __future__ import annotations

import csv
import json
from pathlib import Path

from . import views

CSV_COLUMNS = ("benchmark", "suite", "size", "kind", "name", "dsl", "target", "status", "compile_s", "median_ms",
               "q1_ms", "q3_ms", "min_ms", "n", "max_error", "error", "how", "times_ms")


def _ms(seconds) -> str:
    if seconds is None:
        return "–"
    ms = seconds * 1e3
    return f"{ms:.3g}" if ms < 1 else f"{ms:.2f}" if ms < 100 else f"{ms:.0f}"


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _ratio(x) -> str:
    return "–" if x is None else f"{x:.3g}"


def stamp_text(doc) -> str:
    """Where and how the run ran, in a few lines of Markdown."""
    s = doc["stamp"]
    m, v, o = s["machine"], s["versions"], s["options"]
    mem = f"{m['memory_bytes'] / 2 ** 30:.0f} GiB" if m.get("memory_bytes") else "memory unknown"
    commit = (s["commit"] or "no commit")[:12] + (" (with uncommitted changes)" if s.get("dirty") else "")
    libs = ", ".join(f"{k} {val}" for k, val in v.items() if val)
    when = f"Run started {s['date']}" if s.get("seconds") else f"Run {s['date']}"     # older files: the end
    took = f", {s['seconds'] / 60:.0f} minutes" if s.get("seconds") else ""
    lines = [f"{when} at commit {commit}, `{o['sizes']}` sizes{took}.",
             f"Machine: {m['cpu']}, {m['cores']} cores ({m['usable_cores']} usable), {mem}; "
             f"ISA: {' '.join(m['isa']) or 'unknown'}; {m['os']}, Python {m['python']}.",
             f"Libraries: {libs}.",
             f"Options: targets {', '.join(o['targets'])}; peers "
             f"{o['peers'] if isinstance(o['peers'], str) else ', '.join(o['peers']) or 'none'}; {o['threads']} threads; "
             f"{o['repeat']} interleaved rounds (bursts of {o['burst']} calls, the first not counted; a call over "
             f"0.2 s runs once per round, in at least 3 rounds within {o['budget_s']} s); {o['warmup_s']} s "
             f"warm-up; {o['pause_s']} s pause before each burst."]
    load = s.get("load")
    if load:
        busy = max(load["start"], load["end"]) > m["cores"]
        lines.append(f"Load average (1 min) of the machine: {load['start']:.2f} at the start, {load['end']:.2f} at the "
                     f"end, for {m['cores']} cores" + (": above the core count, other work competed for them and "
                     "times of multi-threaded kernels suffer most." if busy else "."))
    if doc.get("interrupted"):
        lines.append(f"**Interrupted** during {doc['interrupted']}: the benchmarks from there on did not run.")
    return "\n".join(lines)


def peers_text(doc) -> str:
    return "\n".join(f"- **{name}**: {how}" for name, how in doc.get("peers_how", {}).items())


def results_table(doc) -> str:
    """Every record: one row per variant and target, one per peer."""
    rows = ["| suite | benchmark | size | variant or peer | target | compile (s) | time (ms) | ± | fastest (ms) | status |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for r in doc["results"]:
        spread = f"{(r['q3'] - r['q1']) / r['median'] * 100:.0f}%" if views.ok(r) and r["median"] else ""
        status = r["status"] if r["status"] == "ok" else f"{r['status']}: {r['error']}"
        compile_s = f"{r['compile_s']:.2f}" if r["compile_s"] is not None else ""
        rows.append(f"| {r['suite']} | {r['benchmark']} | {r['size']} | {_cell(r['name'])} | {r['target'] or ''} | "
                    f"{compile_s} | {_ms(r['median']) if views.ok(r) else ''} | {spread} | "
                    f"{_ms(r.get('min')) if views.ok(r) else ''} | {_cell(status)} |")
    return "\n".join(rows)


def speedup_table(doc) -> str:
    """Each variant's speedup over each peer (peer time / our time), '*' when beyond noise."""
    names = views.peer_names(doc)
    rows = views.speedups(doc)
    if not rows or not names:
        return "No variant and peer were both timed."
    out = ["| benchmark | variant | target | time (ms) | " + " | ".join(names) + " |",
           "|---|---|---|---|" + "---|" * len(names)]
    for r in rows:
        cells = []
        for n in names:
            if n in r["peers"]:
                x, beyond = r["peers"][n]
                cells.append(f"{x:.3g}{'' if beyond else ' ~'}")
            else:
                cells.append("")
        out.append(f"| {r['benchmark']} | {_cell(r['variant'])} | {r['target']} | {_ms(r['median'])} | "
                   + " | ".join(cells) + " |")
    geo = [views.geomean([r["peers"][n][0] for r in rows if n in r["peers"]]) for n in names]
    out.append("| **geometric mean** | | | | " + " | ".join(f"**{_ratio(g)}**" for g in geo) + " |")
    return "\n".join(out)


def parity_table(doc) -> str:
    rows = views.parity(doc)
    if not rows:
        return "No benchmark had two DSLs' variants timed on one target."
    out = ["| benchmark | target | variants (ms) | slowest / fastest | beyond noise | loop nests |",
           "|---|---|---|---|---|---|"]
    for r in rows:
        times = ", ".join(f"{n} {_ms(t)}" for n, t in r["times"].items())
        nests = "same" if r["same_loop_nest"] else "differ: " + "; ".join(f"{n}: {s}" for n, s in r["loop_nests"].items())
        flag = f"**yes** ({r['slowest']} slower)" if r["beyond_noise"] else "no"
        out.append(f"| {r['benchmark']} | {r['target']} | {_cell(times)} | {r['ratio']:.2f} | {flag} | {_cell(nests)} |")
    return "\n".join(out)


def targets_table(doc, base="cpu") -> str:
    rows = views.targets(doc, base)
    if not rows:
        return f"No variant was timed on {base} and another target."
    out = [f"| benchmark | variant | target | {base} (ms) | target (ms) | target / {base} | beyond noise | "
           f"compile {base} / target (s) |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        c = r["compile"]
        out.append(f"| {r['benchmark']} | {_cell(r['variant'])} | {r['target']} | {_ms(r['base_median'])} | "
                   f"{_ms(r['median'])} | {r['ratio']:.2f} | {'yes' if r['beyond_noise'] else 'no'} | "
                   f"{c[0]:.2f} / {c[1]:.2f} |")
    for t in sorted({r["target"] for r in rows}):
        g = views.geomean([r["ratio"] for r in rows if r["target"] == t])
        out.append(f"| **geometric mean** | | {t} | | | **{_ratio(g)}** | | |")
    return "\n".join(out)


def problems_text(doc) -> str:
    probs = views.problems(doc)
    if not probs:
        return "None: every variant that exists compiled, ran and gave the reference's result."
    return "\n".join(f"- {r['benchmark']}, {views.label(r)}: **{r['status']}**: {_cell(r['error'])}" for r in probs)


NOTE = ("Times are medians; ± is the interquartile range over the median. Ratios are marked `~` when the "
        "interquartile ranges of the two timings overlap (a difference within the measured noise).")


def markdown(doc) -> str:
    """The whole report."""
    return "\n\n".join([
        "# mascarpone bench", stamp_text(doc), NOTE,
        "## How the peers ran", peers_text(doc) or "No peer ran.",
        "## Speedup over the peers", "Peer time / our time: above 1, mascarpone's kernel is faster.",
        speedup_table(doc),
        "## Cross-DSL parity", "The same algorithm and schedule entered through different DSLs, on one target: "
        "the times should match and the loop nests (loops, their kinds, conditions and stores) should be the same.",
        parity_table(doc),
        "## Targets", "Each target against the cpu target (LLVM), on the same lowered functions.",
        targets_table(doc),
        "## Problems", problems_text(doc),
        "## Every measurement", results_table(doc)]) + "\n"


def write_csv(doc, path):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(CSV_COLUMNS)
        for r in doc["results"]:
            ms = (lambda s: "" if s is None else f"{s * 1e3:.6g}")
            w.writerow([r["benchmark"], r["suite"], r["size"], r["kind"], r["name"], r["dsl"] or "", r["target"] or "",
                        r["status"], "" if r["compile_s"] is None else f"{r['compile_s']:.4f}", ms(r["median"]),
                        ms(r["q1"]), ms(r["q3"]), ms(r.get("min")), r["n"], "" if r["max_error"] is None else f"{r['max_error']:.3g}",
                        r["error"] or "", r["how"] or "", ";".join(f"{t * 1e3:.6g}" for t in r["times"])])


def write(doc, out) -> list:
    """Write results.json, results.csv, results.md and the plots into folder `out`; returns the paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "results.json", out / "results.csv", out / "results.md"]
    paths[0].write_text(json.dumps(doc, indent=1) + "\n")
    write_csv(doc, paths[1])
    paths[2].write_text(markdown(doc))
    from .plots import plot
    return paths + plot(doc, out)


def load(path) -> dict:
    """A result document written by `write` (results.json, or the folder holding it)."""
    p = Path(path)
    if p.is_dir():
        p = p / "results.json"
    doc = json.loads(p.read_text())
    if doc.get("format") != 1 or "results" not in doc:
        raise ValueError(f"{p} is not a result file of mascarpone bench")
    return doc
