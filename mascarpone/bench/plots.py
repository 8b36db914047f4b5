"""The plots of a run (matplotlib): times as grouped bars per benchmark, and speedups over each peer.

    times.png/.svg    per suite, one group of bars per benchmark: each variant on each target and
                      each peer, median time on a log axis, the interquartile range as an error bar
    speedup.png/.svg  one group per benchmark: the fastest variant's speedup over each peer
                      (peer time / our time) on a log axis, 1 marked
"""
from __future__ import annotations

from pathlib import Path

from . import views


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")          # files only, no display
    import matplotlib.pyplot as plt
    return plt


def _save(fig, out: Path, stem: str) -> list:
    paths = [out / f"{stem}.png", out / f"{stem}.svg"]
    for p in paths:
        fig.savefig(p, dpi=120 if p.suffix == ".png" else None, bbox_inches="tight")
    return paths


def times_figure(doc):
    """Grouped bars: per suite a panel; per benchmark a group; per contender a bar (ms, log axis)."""
    plt = _pyplot()
    timed = [r for r in doc["results"] if views.ok(r)]
    suites = list(dict.fromkeys(r["suite"] for r in timed))
    labels = list(dict.fromkeys(views.label(r) for r in timed))
    colors = {lab: plt.get_cmap("tab20")(k % 20) for k, lab in enumerate(labels)}
    fig, axes = plt.subplots(max(1, len(suites)), 1, figsize=(max(8, 1.1 * len({r['benchmark'] for r in timed})),
                                                               3.2 * max(1, len(suites))), squeeze=False)
    for ax, suite in zip(axes[:, 0], suites):
        recs = [r for r in timed if r["suite"] == suite]
        benches = list(dict.fromkeys(r["benchmark"] for r in recs))
        width = 0.85 / max(1, max(sum(1 for r in recs if r["benchmark"] == b) for b in benches))
        shown = set()
        for i, b in enumerate(benches):
            group = [r for r in recs if r["benchmark"] == b]
            for k, r in enumerate(group):
                lab = views.label(r)
                ms = r["median"] * 1e3
                err = [[ms - r["q1"] * 1e3], [r["q3"] * 1e3 - ms]]
                ax.bar(i - 0.425 + (k + 0.5) * width, ms, width, yerr=err, color=colors[lab],
                       label=lab if lab not in shown else None, capsize=1.5)
                shown.add(lab)
        ax.set_yscale("log")
        ax.set_xticks(range(len(benches)), benches, rotation=30, ha="right")
        ax.set_ylabel("time (ms)")
        ax.set_title(f"{suite} ({recs[0]['size'] if len({r['size'] for r in recs}) == 1 else 'sizes in the table'})")
        ax.legend(fontsize=6, ncol=2, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    return fig


def speedup_figure(doc):
    """Per benchmark, the fastest variant's speedup over each peer, log axis."""
    plt = _pyplot()
    rows = views.speedups(doc)
    best = {}
    for r in rows:
        if r["benchmark"] not in best or r["median"] < best[r["benchmark"]]["median"]:
            best[r["benchmark"]] = r
    peers = views.peer_names(doc)
    fig, ax = plt.subplots(figsize=(max(8, 0.6 * len(best) + 2), 4))
    benches = list(best)
    width = 0.85 / max(1, len(peers))
    for k, p in enumerate(peers):
        xs = [i for i, b in enumerate(benches) if p in best[b]["peers"]]
        ys = [best[benches[i]]["peers"][p][0] for i in xs]
        if xs:
            ax.bar([x - 0.425 + (k + 0.5) * width for x in xs], ys, width, label=f"over {p}")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_xticks(range(len(benches)), benches, rotation=40, ha="right")
    ax.set_ylabel("peer time / our time")
    ax.set_title("speedup of mascarpone's fastest variant and target over each peer (above 1: faster)")
    if peers and benches:
        ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    return fig


def plot(doc, out) -> list:
    """Write both plots into folder `out`; returns the paths."""
    plt = _pyplot()
    out = Path(out)
    paths = []
    for stem, make in (("times", times_figure), ("speedup", speedup_figure)):
        fig = make(doc)
        paths += _save(fig, out, stem)
        plt.close(fig)
    return paths
