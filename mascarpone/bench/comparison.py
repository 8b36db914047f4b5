"""Comparing two runs: what got faster or slower beyond the measured noise, and what changed status."""
from __future__ import annotations

from dataclasses import dataclass, field

from . import views


def _key(r):
    return (r["benchmark"], r["size"], r["kind"], r["name"], r["target"])


@dataclass
class Comparison:
    """Matched measurements of an old and a new run (ratios are new time / old time)."""
    faster: list = field(default_factory=list)      # (record, ratio)
    slower: list = field(default_factory=list)
    within_noise: list = field(default_factory=list)
    status_changes: list = field(default_factory=list)   # (new record, old status, new status)
    only_old: list = field(default_factory=list)
    only_new: list = field(default_factory=list)

    def text(self) -> str:
        """A report for the terminal: faster, slower, changes of status, then counts."""
        lines = []
        for title, items in (("faster", self.faster), ("slower", self.slower)):
            if items:
                lines.append(f"{title} beyond noise ({len(items)}):")
                for r, ratio in sorted(items, key=lambda x: x[1]):
                    lines.append(f"  {r['benchmark']} ({r['size']}), {views.label(r)}: "
                                 f"{ratio:.2f}x the old time ({r['median'] * 1e3:.3g} ms)")
        if self.status_changes:
            lines.append(f"status changed ({len(self.status_changes)}):")
            for r, old, new in self.status_changes:
                why = f": {r['error']}" if r.get("error") and new != "ok" else ""
                lines.append(f"  {r['benchmark']} ({r['size']}), {views.label(r)}: {old} -> {new}{why}")
        lines.append(f"{len(self.within_noise)} within noise, {len(self.only_old)} only in the old run, "
                     f"{len(self.only_new)} only in the new one")
        return "\n".join(lines)


def compare(old: dict, new: dict) -> Comparison:
    """Match the records of two result documents by benchmark, size, variant or peer, and target."""
    olds = {_key(r): r for r in old["results"]}
    news = {_key(r): r for r in new["results"]}
    c = Comparison(only_old=[olds[k] for k in olds if k not in news], only_new=[news[k] for k in news if k not in olds])
    for k, n in news.items():
        o = olds.get(k)
        if o is None:
            continue
        if views.ok(o) and views.ok(n):
            ratio = n["median"] / o["median"]
            if not views.differs(n, o):
                c.within_noise.append((n, ratio))
            elif ratio < 1:
                c.faster.append((n, ratio))
            else:
                c.slower.append((n, ratio))
        elif o["status"] != n["status"]:
            c.status_changes.append((n, o["status"], n["status"]))
    return c
