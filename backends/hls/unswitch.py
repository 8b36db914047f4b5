"""Conditions that do not change within a pipelined loop, taken out of it (loop unswitching).

A pipelined loop starts an iteration every II cycles whatever branch it takes,
so a branch that runs only in some iterations of an outer loop (the first row
of a sliding window, a partial tile) sets the II of all of them. When a
condition inside a pipelined loop depends only on outer loops and sizes, the
loop is printed twice, under the condition and under its negation, each with
its own pipeline. The statements and their order are unchanged.
"""
from __future__ import annotations

from mascarpone.middleend.expr import Access, Sym, walk
from mascarpone.middleend.loopir import Allocate, Block, For, If, walk_stmts


def _invariant_if(loop):
    """The first If under `loop` whose condition uses no variable bound at or inside it and no data."""
    bound = {loop.var} | {s.var for s in walk_stmts(loop.body) if isinstance(s, For)}
    for s in walk_stmts(loop.body):
        if isinstance(s, If):
            names = set()
            for n in walk(s.cond):
                if isinstance(n, Access):
                    break
                if isinstance(n, Sym):
                    names.add(n.name)
            else:
                if not names & bound:
                    return s
    return None


def _choose(s, target, branch):
    """`s` with the If `target` replaced by its `branch` (True: then, False: else)."""
    if s is target:
        taken = s.then if branch else s.else_
        return taken if taken is not None else Block([])
    if isinstance(s, Block):
        return Block([_choose(c, target, branch) for c in s.body])
    if isinstance(s, For):
        return For(s.var, s.lo, s.hi, _choose(s.body, target, branch), s.kind, s.factor, s.origin)
    if isinstance(s, If):
        return If(s.cond, _choose(s.then, target, branch),
                  None if s.else_ is None else _choose(s.else_, target, branch))
    if isinstance(s, Allocate):
        return Allocate(s.buffer, _choose(s.body, target, branch))
    return s


def unswitch(s):
    """`s` with every pipelined loop's invariant conditions taken out of it."""
    if isinstance(s, Block):
        return Block([unswitch(c) for c in s.body])
    if isinstance(s, If):
        return If(s.cond, unswitch(s.then), None if s.else_ is None else unswitch(s.else_))
    if isinstance(s, Allocate):
        return Allocate(s.buffer, unswitch(s.body))
    if isinstance(s, For):
        if s.kind == "pipeline":
            cond = _invariant_if(s)
            if cond is not None:
                return unswitch(If(cond.cond, _choose(s, cond, True), _choose(s, cond, False)))
            return s
        return For(s.var, s.lo, s.hi, unswitch(s.body), s.kind, s.factor, s.origin)
    return s
