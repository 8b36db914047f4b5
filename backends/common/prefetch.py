"""`Prefetch`: a loop IR statement that asks for a box of a buffer to be brought into the cache.

It is a hint with no effect on any value: a back-end may emit it as prefetch instructions or drop it.
The promotion of accumulator tiles (promote.py) adds one for the tile the next iteration of the
enclosing loop will load, so that the loads before the next reduction loop hit the cache instead of
stalling every accumulator on a miss.
"""
from __future__ import annotations

from dataclasses import dataclass

from mascarpone.middleend import loopir as L
from mascarpone.middleend.expr import Access, pseudo_c

#: Most prefetch instructions one statement expands to (a box wider than this is not worth a hint).
MAX_LINES = 64


@dataclass(eq=False)
class Prefetch(L.Stmt):
    """The box of `first.target` from the element `first` on, `extents` (constants) elements per
    dimension, into cache `level` (1: the nearest)."""

    first: Access
    extents: tuple
    level: int = 1

    def exprs(self):
        return (self.first,)

    def pseudo_c(self):
        idx = ", ".join(pseudo_c(i) for i in self.first.indices)
        box = " x ".join(str(e) for e in self.extents)
        return [f"prefetch(&{self.first.target.name}[{idx}], {box}, L{self.level});  // a hint: no effect on values"]


def line_offsets(extents, element_bytes, line_bytes=64):
    """Offsets (per dimension, in elements) of the elements whose cache lines cover the box: every
    point of the outer dimensions, and along the innermost one an element per `line_bytes` plus the
    last (the box need not start on a line). Empty when that is more than MAX_LINES."""
    *outer, inner = extents
    step = max(1, line_bytes // element_bytes)
    along = sorted(set(range(0, inner, step)) | {inner - 1})
    count = len(along)
    for e in outer:
        count *= e
    if count > MAX_LINES:
        return []
    points = [()]
    for e in outer:
        points = [p + (k,) for p in points for k in range(e)]
    return [p + (k,) for p in points for k in along]
