"""Perfectly nested parallel loops run as one parallel loop.

The "cpu" and "c" targets run only the outermost parallel loop on threads; one nested in a thread's
iteration runs serially there (nested thread teams cost more than they give). A schedule that
parallelizes 3 channels and, in each, 24 strips would then share out only 3 iterations. As OpenMP's
`collapse` clause does, `collapse_parallel_nests` makes each parallel loop whose whole body is another
parallel loop, with bounds that do not read the outer loop's variable, one parallel loop over the
product of both ranges; its body recovers both variables by a division and a remainder. Neither loop
carries a dependence (the middle-end checked both tags), so neither does the product.
"""
from __future__ import annotations

from mascarpone.middleend.expr import Const, Sym, max_, simplify
from mascarpone.middleend.loopir import Allocate, Block, For, If, LoopKind, Store, substitute_stmt, walk_stmts
from mascarpone.middleend.types import int64

from .affine import mentions

_KNOWN = (Block, For, If, Store, Allocate)


def collapse_parallel_nests(s):
    """`s` with each perfect nest of rectangular parallel loops made one parallel loop."""
    if isinstance(s, Block):
        return Block([collapse_parallel_nests(c) for c in s.body])
    if isinstance(s, If):
        return If(s.cond, collapse_parallel_nests(s.then),
                  None if s.else_ is None else collapse_parallel_nests(s.else_))
    if isinstance(s, Allocate):
        return Allocate(s.buffer, collapse_parallel_nests(s.body))
    if isinstance(s, For):
        body = collapse_parallel_nests(s.body)
        inner = _only_statement(body)
        if s.kind == LoopKind.PARALLEL and isinstance(inner, For) and _collapsible(s, inner):
            return _product(s, inner)
        return For(s.var, s.lo, s.hi, body, s.kind, s.factor, s.origin)
    return s


def _only_statement(s):
    while isinstance(s, Block) and len(s.body) == 1:
        s = s.body[0]
    return s


def _collapsible(outer: For, inner: For) -> bool:
    if inner.kind != LoopKind.PARALLEL or mentions(inner.lo, outer.var) or mentions(inner.hi, outer.var):
        return False
    for st in walk_stmts(inner.body):
        if not isinstance(st, _KNOWN):   # a statement another back-end adds: no substitution into it
            return False
        if isinstance(st, Allocate) and any(mentions(d, v) for d in st.buffer.shape
                                            for v in (outer.var, inner.var)):
            return False
    return True


def _product(outer: For, inner: For) -> For:
    """One loop over outer x inner. Its trip count clamps both factors at 0 (two empty ranges must not
    make a non-empty product); in the body both ranges are known not empty."""
    zero = Const(0, int64)
    outer_trips, inner_trips = simplify(outer.hi - outer.lo), simplify(inner.hi - inner.lo)
    var = f"{outer.var}.{inner.var}"
    flat = Sym(var, int64)
    body = substitute_stmt(inner.body, {outer.var: simplify(outer.lo + flat / inner_trips),
                                        inner.var: simplify(inner.lo + flat % inner_trips)})
    trips = simplify(max_(outer_trips, zero) * max_(inner_trips, zero))
    return For(var, zero, trips, body, LoopKind.PARALLEL, 1, outer.origin + inner.origin)
