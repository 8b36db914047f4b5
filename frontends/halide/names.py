"""Halide names (`f$1`, `r$x`, `x.xo`, `_0`) to unique mascarpone identifiers."""
from __future__ import annotations

import re

from mascarpone.middleend.affine import ISL_KEYWORDS


def sanitize(name: str) -> str:
    """An identifier close to a Halide name: other characters become '_'."""
    out = re.sub(r"\W", "_", name) or "v"
    if out[0].isdigit() or out in ISL_KEYWORDS:
        out = "h_" + out
    return out


class NameTable:
    """Hands out identifiers that are unique within one table."""

    def __init__(self, taken=()):
        self.taken = set(taken)

    def fresh(self, name: str) -> str:
        """A sanitized version of `name` no one has yet (suffixed `_2`, `_3`... when needed)."""
        base = sanitize(name)
        out, k = base, 2
        while out in self.taken:
            out, k = f"{base}_{k}", k + 1
        self.taken.add(out)
        return out
