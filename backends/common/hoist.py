"""Temporaries allocated once per thread rather than once per loop iteration.

A tile that compute_at (or cache_read) places at a loop is allocated inside that loop's body: on
the heap, where it is larger than the stack takes, that is a malloc and a free per iteration, and
for blocks of a few hundred KB fresh pages each time (glibc maps such blocks anew). Every value a
tile holds is written in the iteration that reads it (the layout check proves each read covered),
so one allocation serves all iterations run one after the other: `hoist_allocations` moves each
allocation whose size does not depend on a loop's variable out of that loop where the loop is serial
or unrolled, up to the nearest loop whose iterations may run at once (a parallel loop's threads, a
vector loop's lanes: each needs its own) or the function.
"""
from __future__ import annotations

from mascarpone.middleend.expr import Sym, walk
from mascarpone.middleend.loopir import Allocate, Block, For, If, LoopKind

#: loops whose iterations run one after the other, out of which an allocation may move
SEQUENTIAL = (LoopKind.SERIAL, LoopKind.UNROLL)


def hoist_allocations(body):
    """`body` with each Allocate moved out of the serial and unrolled loops around it whose variable its
    size does not read."""
    inner, lifted = _hoist(body)
    return _wrap(inner, lifted)


def _hoist(s):
    """(the statement without the allocations that may leave it, those allocations' buffers)."""
    if isinstance(s, Allocate):
        inner, lifted = _hoist(s.body)
        return inner, _union(lifted, [s.buffer])
    if isinstance(s, Block):
        parts = [_hoist(c) for c in s.body]
        lifted = []
        for _, bufs in parts:
            lifted = _union(lifted, bufs)
        return Block([p for p, _ in parts]), lifted
    if isinstance(s, If):
        then, lifted = _hoist(s.then)
        other = None
        if s.else_ is not None:
            other, more = _hoist(s.else_)
            lifted = _union(lifted, more)
        return If(s.cond, then, other), lifted
    if isinstance(s, For):
        inner, lifted = _hoist(s.body)
        stay = [b for b in lifted if s.kind not in SEQUENTIAL or _reads(b, s.var)]
        leave = [b for b in lifted if b not in stay]
        return For(s.var, s.lo, s.hi, _wrap(inner, stay), s.kind, s.factor, s.origin), leave
    return s, []


def _reads(buffer, var) -> bool:
    return any(isinstance(n, Sym) and n.name == var for d in buffer.shape for n in walk(d))


def _union(a, b):
    return a + [x for x in b if not any(x is y for y in a)]


def _wrap(body, buffers):
    for b in reversed(buffers):
        body = Allocate(b, body)
    return body
