"""Layer III: where values live. Buffers for every computation, and accesses rewritten onto them.

A computation without `store_in` gets a buffer of its own: outputs are indexed by
their variables from zero (the caller sees the numbers at the indices it
expects), temporaries by their offset in the bounding box of what is written.
`storage_fold` wraps one dimension into a ring of the given depth.

The program's meaning does not depend on the layout: its dependences are those of
each computation in storage of its own (`logical_write`, `logical_read`); the
layout_check module proves that the storage chosen here keeps them.
"""
from __future__ import annotations

import islpy as isl

from .affine import affine_text, context_on, param_names, pwaff_to_expr
from .buffer import Buffer, as_index_expr
from .errors import DomainError, ScheduleError
from .expr import Access, Const, Sym, floormod, max_, simplify, substitute, transform, walk
from .recent import Recent
from .types import int64


def write_box(comp, context):
    """The elements `comp` and its updates write, and per dimension their (min, max) PwAffs over the
    params; None for the latter where they write nothing."""
    written = comp.domain
    space_dims = [v.name for v in comp.vars]
    for u in comp.updates:
        texts = [affine_text(as_index_expr(a)) for a in u.update_at]
        if any(t is None for t in texts):
            continue  # a data-dependent scatter: sized by the pure definition's domain
        params = sorted(comp.function.param_names)
        m = isl.Map(f"[{', '.join(params)}] -> {{ {u.name}[{', '.join(v.name for v in u.vars)}] -> "
                    f"{comp.name}[{', '.join(texts)}] }}")
        written = written.union(m.intersect_domain(u.domain).range())
    written = written.intersect_params(context_on(written, context)).coalesce()
    if written.is_empty():   # (a loop that runs no iteration at any size allowed, as `for i in 1:0`)
        return written, None
    return written, [(written.dim_min(d), written.dim_max(d)) for d in range(len(space_dims))]


def covers_box(written, bounds, context, comp):
    """Whether the written elements fill their bounding box (`bounds`: per dimension, (min, max) as
    expressions of the sizes), else an output starts zeroed."""
    texts = []
    for v, (lo, hi) in zip(comp.vars, bounds):
        lo_t, hi_t = affine_text(lo), affine_text(hi)
        if lo_t is None or hi_t is None:
            return False
        texts.append(f"{lo_t} <= {v.name} <= {hi_t}")
    params = param_names(context)
    box = isl.Set(f"[{', '.join(params)}] -> {{ {comp.name}[{', '.join(v.name for v in comp.vars)}] : "
                  f"{' and '.join(texts)} }}").intersect_params(context)
    return box.is_subset(written)


def _storage_plan(comp, context, kept):
    """(shape, store index, whether the writes fill it) of `comp` in a buffer of its own, before any
    fold. They depend on its own domain and updates and on the sizes alone, so `kept` (see
    `_storage_plans`) holds them while those stay: a search checks the schedule after each command it
    gives, and neither loop commands nor inlining another computation change them."""
    own = (comp.domain,) + tuple(x for u in comp.updates for x in (u.domain, u.update_at))
    key = (comp.name,) + tuple(map(id, own))
    if key not in kept:
        written, box = write_box(comp, context)
        if box is None:
            if comp.is_output:   # (its shape would come from what it writes)
                raise DomainError(f"output {comp.name} writes no element for these sizes (its domain is empty), so "
                                  f"it has no shape; give sizes where its loops run")
            # a temporary that holds nothing: one element, which every language can declare
            kept[key] = (tuple(Const(1, int64) for _ in comp.vars), tuple(Sym(v.name, int64) for v in comp.vars),
                         True, own)
            return kept[key][:3]
        exprs = [(pwaff_to_expr(lo, context), pwaff_to_expr(hi, context)) for lo, hi in box]   # (each once)
        covered = covers_box(written, exprs, context, comp)
        shape, index = [], []
        for v, (lo, hi), (lo_e, hi_e) in zip(comp.vars, box, exprs):
            if affine_text(lo_e) is None:
                lo = _affine_lower(lo, context)
                lo_e = pwaff_to_expr(lo, context)
            var = Sym(v.name, int64)
            if comp.is_output and lo.is_cst() and _nonneg_constant(lo):
                covered = covered and _constant(lo) == 0
                shape.append(simplify(hi_e + 1))
                index.append(var)
            else:
                shape.append(simplify(pwaff_to_expr(hi.sub(lo), context) + 1))
                index.append(simplify(var - lo_e))
        shape = tuple(_not_negative(e, context, comp.function) for e in shape)
        # (the objects whose ids make the key stay referenced, so no other object takes an id)
        kept[key] = (shape, tuple(index), covered, own)
    return kept[key][:3]


def _storage_plans(function, context) -> dict:
    """The memo of `_storage_plan` at `context`, for the last few contexts."""
    memo = function._kept_results.setdefault("storage plans", Recent(8))
    key = str(context)
    kept = memo.get(key)
    if kept is None:
        kept = {}
        memo.put(key, kept)
    return kept


def assign_storage(function, context):
    """Give every storage owner a buffer and a store index (int64 expressions of its variables).

    Inlined and recomputed producers get one too: the dependence analysis of
    the original program reads and writes it."""
    plans = _storage_plans(function, context)
    for comp in function.computations:
        if comp.updated is not None:
            continue
        if comp.user_buffer is not None:
            if comp.partitions:
                raise ScheduleError(f"{comp.name} is stored in the ms.Buffer {comp.user_buffer.name} (store_in); "
                                    f"partition that buffer instead of the computation")
            comp.buffer = comp.user_buffer
            comp.store_index = [as_index_expr(i) for i in comp.user_store_index]
            continue
        shape, index, covered = _storage_plan(comp, context, plans)
        shape, index = list(shape), list(index)
        folds = {}
        for d, v in enumerate(comp.vars):
            if v.name in comp.folds:
                depth = comp.folds[v.name]
                shape[d] = Const(depth, int64)
                folds[d] = (v.name, depth, index[d])
                index[d] = floormod(index[d], depth)
        kind = "output" if comp.is_output else "temporary"
        comp.buffer = Buffer(comp.name, shape, comp.dtype, kind)
        comp.buffer.partitions = list(comp.partitions)
        comp.buffer.zero_init = comp.is_output and not covered
        comp.buffer.folds = folds
        comp.store_index = index


def _not_negative(extent, context, function):
    """`extent`, or max(extent, 0) where some sizes make it negative: sizes declared with a range
    that allows zero or less (Function.declare_param) can leave a domain empty, and its buffer is
    then empty. (Other extents are left as they are: a shape `c*N + k` tells the kernel N.)"""
    text = affine_text(extent)
    declared = {n.name for n in walk(extent) if isinstance(n, Sym)} & set(function._ranges)
    if text is None or not declared:
        return extent
    negative = isl.Set(f"[{', '.join(param_names(context))}] -> {{ : {text} < 0 }}").intersect(context)
    return extent if negative.is_empty() else simplify(max_(extent, Const(0, int64)))


def _affine_lower(lo, context):
    """For a lower bound `lo` not affine in the sizes (a step such as `N <= 7 ? -2 : -1`), the min of its
    pieces, which is below it everywhere: an index `x - lo` stays affine and its dependences exact."""
    out = None
    for _, aff in lo.get_pieces():
        pa = isl.PwAff.from_aff(aff)
        out = pa if out is None else out.min(pa)
    return out.intersect_params(context).coalesce()


def _nonneg_constant(pa):
    pieces = pa.get_pieces()
    return all(aff.get_constant_val().to_python() >= 0 for _, aff in pieces)


def _constant(pa):
    """The value of a constant PwAff with one piece, else None."""
    pieces = pa.get_pieces()
    return pieces[0][1].get_constant_val().to_python() if len(pieces) == 1 else None


def write_index(comp):
    """The buffer and index (int64 expressions of comp's variables) that `comp` writes."""
    owner = comp.storage_owner
    index = owner.store_index
    if comp.updated is None:
        return owner.buffer, list(index)
    mapping = {v.name: as_index_expr(a) for v, a in zip(owner.vars, comp.update_at)}
    return owner.buffer, [substitute(i, mapping) for i in index]


def read_index(target, indices):
    """The buffer and index expressions that an access `target[indices]` reads."""
    indices = [as_index_expr(i) for i in indices]
    if not hasattr(target, "store_index"):        # an Input
        return target.buffer, indices
    target = target.storage_owner
    return target.buffer, _through(target, indices, target.store_index)


def scheduled_read_index(target, indices):
    """The index an access `target[indices]` reads in the layout a store_in of the schedule gives its
    storage (the logical index where none does); unlike read_index, it needs no assigned storage."""
    owner = getattr(target, "storage_owner", None)
    if owner is None or owner.user_buffer is None:
        return logical_read(target, indices)[1]
    return _through(owner, [as_index_expr(i) for i in indices], [as_index_expr(i) for i in owner.user_store_index])


def _through(owner, indices, store_index):
    """`store_index` (expressions of the owner's variables) at the owner's coordinates `indices`."""
    mapping = {v.name: i for v, i in zip(owner.vars, indices)}
    return [substitute(i, mapping) for i in store_index]


def logical_write(comp):
    """(name, index) of the element `comp` writes in the program's meaning: its storage owner's own
    array (named after the owner), at the owner's coordinates (int64 expressions of comp's variables)."""
    at = comp.update_at if comp.updated is not None else comp.vars
    return comp.storage_owner.name, [as_index_expr(a) for a in at]


def logical_read(target, indices):
    """(name, index) of the element an access `target[indices]` reads in the program's meaning."""
    return getattr(target, "storage_owner", target).name, [as_index_expr(i) for i in indices]


def inline_reads(expr, keep=None):
    """Replace reads of inlined computations by their expressions, recursively (reads of `keep`, an
    inlined computation whose reads are asked for, stay)."""
    def repl(n):
        if isinstance(n, Access) and getattr(n.target, "inlined", False) and n.target is not keep:
            target = n.target
            mapping = {v.name: i for v, i in zip(target.vars, n.indices)}
            return inline_reads(_substitute_vars(target.expr, mapping), keep)
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
