"""Layer III: where values live. Buffers for every computation, and accesses rewritten onto them.

A computation without `store_in` gets a buffer of its own: outputs are indexed by
their variables from zero (the caller sees the numbers at the indices it
expects), temporaries by their offset in the bounding box of what is written.
`storage_fold` wraps one dimension into a ring of the given depth.
"""
from __future__ import annotations

import islpy as isl

from .affine import affine_text, pwaff_to_expr
from .buffer import Buffer, as_index_expr
from .errors import DomainError
from .expr import Access, Const, Sym, floormod, substitute, transform
from .types import int64


def write_box(comp, context):
    """Per dimension, (min, max) PwAffs over the params of the elements `comp` and its updates write."""
    written = comp.domain
    space_dims = [v.name for v in comp.vars]
    for u in comp.updates:
        texts = [affine_text(as_index_expr(a)) for a in u.update_at]
        if any(t is None for t in texts):
            continue  # a data-dependent scatter: sized by the pure definition's domain
        params = sorted(set(_params(u.domain)) | set(_params(written)))
        m = isl.Map(f"[{', '.join(params)}] -> {{ {u.name}[{', '.join(v.name for v in u.vars)}] -> "
                    f"{comp.name}[{', '.join(texts)}] }}")
        written = written.union(m.intersect_domain(u.domain).range())
    written = written.intersect_params(context).coalesce()
    if written.is_empty():
        raise DomainError(f"computation {comp.name} has an empty domain")
    return [(written.dim_min(d), written.dim_max(d)) for d in range(len(space_dims))]


def _params(s):
    return [s.get_dim_name(isl.dim_type.param, i) for i in range(s.dim(isl.dim_type.param))]


def assign_storage(function, context):
    """Give every non-inlined storage owner a buffer and a store index (int64 expressions of its variables)."""
    for comp in function.computations:
        if comp.updated is not None or comp.inlined:
            continue
        if comp.user_buffer is not None:
            comp.buffer = comp.user_buffer
            comp.store_index = [as_index_expr(i) for i in comp.user_store_index]
            continue
        box = write_box(comp, context)
        shape, index = [], []
        for v, (lo, hi) in zip(comp.vars, box):
            lo_e, hi_e = pwaff_to_expr(lo, context), pwaff_to_expr(hi, context)
            var = Sym(v.name, int64)
            starts_at_zero = comp.is_output and lo.is_cst() and _nonneg_constant(lo)
            if starts_at_zero:
                shape.append(hi_e + 1)
                index.append(var)
            else:
                shape.append(hi_e - lo_e + 1)
                index.append(var - lo_e)
        for d, v in enumerate(comp.vars):
            if v.name in comp.folds:
                depth = comp.folds[v.name]
                shape[d] = Const(depth, int64)
                index[d] = floormod(index[d], depth)
        kind = "output" if comp.is_output else "temporary"
        comp.buffer = Buffer(comp.name, shape, comp.dtype, kind)
        comp.store_index = index


def _nonneg_constant(pa):
    pieces = pa.get_pieces()
    return all(aff.get_constant_val().to_python() >= 0 for _, aff in pieces)


def write_index(comp):
    """The buffer and index (int64 expressions of comp's variables) that `comp` writes."""
    owner = comp.storage_owner
    if comp.updated is None:
        return owner.buffer, list(owner.store_index)
    mapping = {v.name: as_index_expr(a) for v, a in zip(owner.vars, comp.update_at)}
    return owner.buffer, [substitute(i, mapping) for i in owner.store_index]


def read_index(target, indices):
    """The buffer and index expressions that an access `target[indices]` reads."""
    indices = [as_index_expr(i) for i in indices]
    if not hasattr(target, "store_index"):        # an Input
        return target.buffer, indices
    mapping = {v.name: i for v, i in zip(target.vars, indices)}
    return target.buffer, [substitute(i, mapping) for i in target.store_index]


def inline_reads(expr):
    """Replace reads of inlined computations by their expressions, recursively."""
    def repl(n):
        if isinstance(n, Access) and getattr(n.target, "inlined", False):
            target = n.target
            mapping = {v.name: i for v, i in zip(target.vars, n.indices)}
            return inline_reads(_substitute_vars(target.expr, mapping))
        return None
    return transform(expr, repl)


def _substitute_vars(expr, mapping):
    """Substitute Layer I variables (int32 in value context) by index expressions of the reader."""
    from .algorithm import Var
    from .expr import cast

    def repl(n):
        if isinstance(n, Var) and n.name in mapping:
            value = mapping[n.name]
            return value if value.dtype == n.dtype else cast(n.dtype, value)
        return None
    return transform(expr, repl)
