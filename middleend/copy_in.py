"""Outputs that start as a copy of an input, as an array a function updates in place does.

A computation `A[v] = A_in[v]` over the whole of A_in, read by nothing else, only moves the caller's
values into the output's storage. A target whose caller can bind that output to the input's own
memory (or copy it there before the call) lowers without it (`Function.lower(caller_copies_in=True)`);
the output's buffer then names the input in `initial_input`. This keeps exact dependences (the copy
is still the first writer of every element when the schedule is checked) while the kernel neither
copies nor zeroes an array it is about to update in place.
"""
from __future__ import annotations

import islpy as isl

from .affine import affine_text, param_names
from .algorithm import Input
from .expr import Access, Sym, walk


def copied_inputs(function, context) -> dict:
    """{computation: Input} of the outputs (with updates) whose values before their updates are a plain copy of
    the whole of an input that no other computation reads; each computation keeps its own storage
    (no store_in, no fold) and its place at the root (not inlined, not computed at another's loop)."""
    readers = {}
    for comp in function.computations:
        for e in (comp.expr, comp.predicate):
            if e is None:
                continue
            for n in walk(e):
                if isinstance(n, Access) and isinstance(n.target, Input):
                    readers.setdefault(n.target, set()).add(comp)
    out = {}
    for comp in function.computations:
        source = _copied(comp)
        if source is None or readers.get(source) != {comp}:
            continue
        if _whole(comp, source, context):
            out[comp] = source
    return out


def _copied(comp):
    """The input `comp` copies element for element (its expression is `X[v...]` with its own
    variables in order, of X's type), or None."""
    if (not comp.is_output or not comp.updates or comp.updated is not None or comp.inlined or comp.compute_at_target is not None
            or comp.user_buffer is not None or comp.folds or comp.predicate is not None):
        return None
    e = comp.expr
    if not (isinstance(e, Access) and isinstance(e.target, Input) and e.dtype == comp.dtype):
        return None
    if len(e.indices) != len(comp.vars) or not all(
            isinstance(i, Sym) and i.name == v.name for i, v in zip(e.indices, comp.vars)):
        return None
    return e.target


def _whole(comp, source, context) -> bool:
    """Whether `comp`'s domain is exactly the box of `source`'s elements, and `comp` stores each
    value at its own index (so the output's element k is the input's element k)."""
    names = [v.name for v in comp.vars]
    if [affine_text(i) for i in (comp.store_index or [])] != names:
        return False
    texts = [affine_text(d) for d in source.shape]
    if any(t is None for t in texts):
        return False
    params = param_names(context)
    box = isl.Set(f"[{', '.join(params)}] -> {{ {comp.name}[{', '.join(names)}] : "
                  f"{' and '.join(f'0 <= {n} < {t}' for n, t in zip(names, texts))} }}")
    domain = comp.domain.intersect_params(context)
    box = box.align_params(domain.get_space()).intersect_params(context)
    domain = domain.align_params(box.get_space())
    return domain.is_equal(box.set_tuple_name(domain.get_tuple_name()))
