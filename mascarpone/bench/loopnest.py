"""The shape of a loop nest, for comparing what two front-ends made of the same algorithm and schedule.

The signature keeps the loop IR's structure (loops with their kind, conditions, stores, allocations)
and drops names and index expressions, which differ between front-ends that number arrays and name
loops their own way.
"""
from __future__ import annotations

from collections import Counter

from mascarpone.middleend import loopir as L


def signature(lowered) -> str:
    """The structure of `lowered`'s loop nest as text, e.g. `for[parallel](for[vector8](store))`."""
    return _sig(lowered.body)


def _sig(s) -> str:
    if isinstance(s, L.For):
        tag = "" if s.kind == "serial" else f"[{s.kind}{s.factor if s.factor > 1 else ''}]"
        return f"for{tag}({_sig(s.body)})"
    if isinstance(s, L.If):
        return f"if({_sig(s.then)}" + (f";else {_sig(s.else_)}" if s.else_ is not None else "") + ")"
    if isinstance(s, L.Block):
        return ",".join(_sig(b) for b in s.body)
    if isinstance(s, L.Allocate):
        return f"alloc({_sig(s.body)})"
    if isinstance(s, L.Store):
        return "store"
    return type(s).__name__.lower()


def summary(sig: str) -> str:
    """How many loops of each kind a signature has: '5 loops: 2 parallel, 2 vector8, 1 serial'."""
    kinds = Counter()
    for part in sig.split("for")[1:]:
        kinds[part[1:part.index("]")] if part.startswith("[") else "serial"] += 1
    total = sum(kinds.values())
    return f"{total} loop{'s' if total != 1 else ''}: " + ", ".join(f"{n} {k}" for k, n in kinds.most_common())
