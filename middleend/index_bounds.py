"""Bounds of index expressions as isl functions of a statement's instances.

An affine index is exact. Data in an index (a load, a cast from a float) is bounded by its type,
and by the min, max, clamp, Euclidean or C division and modulo, or mask applied to it; a select
with an affine condition takes each branch's bounds where it is chosen. What cannot be bounded
(a product of two variables, data of a 64-bit type) has no bound on that side.
"""
from __future__ import annotations

import islpy as isl

from .affine import IslAff, affine_text, const_value, constraint_text, pwaff_on, space_text
from .buffer import as_index_expr
from .expr import Access, BinOp, Call, Cast, Select


def index_range(stmt, e, facts=None):
    """(lo, hi): isl PwAffs on the statement's instances bounding the index expression `e` (one
    object when exact: `e` is affine, or a select of affine branches on an affine condition); None
    for a side without a bound. `facts` (see `guard_facts`) bound subexpressions where the access
    runs only under the statement's predicate."""
    lo, hi = _range(stmt, e, facts or {})
    return lo, hi


def _range(stmt, e, facts):
    lo, hi = _plain_range(stmt, e, facts)
    known = facts.get(expr_key(e)) if facts and not _exact(lo, hi) else None
    if known is not None:
        lo, hi = _either(lo, known[0], "max"), _either(hi, known[1], "min")
    return lo, hi


def _plain_range(stmt, e, facts):
    if isinstance(e, IslAff):
        return e.pwaff, e.pwaff
    text = affine_text(e)
    if text is not None:
        pa = pwaff_on(stmt.domain, text, stmt.params)
        return pa, pa
    if isinstance(e, BinOp):
        return _binop_range(stmt, e, facts)
    if isinstance(e, Select):
        (lt, ht), (lf, hf) = _range(stmt, e.t, facts), _range(stmt, e.f, facts)
        cond = constraint_text(e.cond)
        if cond is not None:     # an affine condition picks a branch exactly
            which = _set_on(stmt, cond).indicator_function()
            if _exact(lt, ht) and _exact(lf, hf):
                return _same(which.cond(lt, lf))
            return _both_cond(which, lt, lf), _both_cond(which, ht, hf)
        return _both(lt, lf, "min"), _both(ht, hf, "max")
    if isinstance(e, Cast) and e.dtype.is_int and e.a.dtype.is_int:
        lo, hi = _range(stmt, e.a, facts)
        if lo is None or hi is None:
            lo, hi = _type_range(stmt, e.a.dtype)
        tlo, thi = _type_range(stmt, e.dtype)
        # a value of the destination type keeps its value; others wrap
        if _widens(e.a.dtype, e.dtype) or (lo.lt_set(tlo).union(hi.gt_set(thi)).intersect(stmt.domain).is_empty()):
            return lo, hi
        return tlo, thi
    if e.dtype.is_int and isinstance(e, (Access, Cast, Call)):
        return _type_range(stmt, e.dtype)
    return None, None


def _binop_range(stmt, e, facts):
    op = e.op
    if op in ("add", "sub", "min", "max"):
        (la, ha), (lb, hb) = _range(stmt, e.a, facts), _range(stmt, e.b, facts)
        if _exact(la, ha) and _exact(lb, hb):
            return _same(getattr(la, op)(lb))
        if op == "add":
            return _both(la, lb, "add"), _both(ha, hb, "add")
        if op == "sub":
            return _both(la, hb, "sub"), _both(ha, lb, "sub")
        if op == "min":    # below both, so bounded above by either
            return _both(la, lb, "min"), _either(ha, hb, "min")
        return _either(la, lb, "max"), _both(ha, hb, "max")
    if op == "mul":
        for factor, other in ((const_value(e.a), e.b), (const_value(e.b), e.a)):
            if factor is not None:
                lo, hi = _range(stmt, other, facts)
                if _exact(lo, hi):
                    return _same(_scale(lo, factor))
                lo, hi = _scale(lo, factor), _scale(hi, factor)
                return (lo, hi) if factor >= 0 else (hi, lo)
        return None, None
    if op == "bitand":       # x & m for a mask m >= 0 lies in [0, m]
        for mask in (const_value(e.a), const_value(e.b)):
            if mask is not None and mask >= 0:
                return _const(stmt, 0), _const(stmt, mask)
        return None, None
    k = const_value(e.b)
    if k is None or k <= 0 or op not in ("ediv", "shr", "emod", "div", "mod") or (op == "shr" and k >= 63):
        return None, None
    lo, hi = _range(stmt, e.a, facts)
    # C's division and modulo (toward zero) are Euclid's on natural numbers
    natural = lo is not None and lo.lt_set(_const(stmt, 0)).intersect(stmt.domain).is_empty()
    if op in ("ediv", "shr") or (op == "div" and natural):
        divisor = 1 << k if op == "shr" else k
        if _exact(lo, hi):
            return _same(_floor_div(lo, divisor))
        return _floor_div(lo, divisor), _floor_div(hi, divisor)
    if op == "div":      # toward zero: between the floor of the least and the ceiling of the greatest
        return _floor_div(lo, k), None if hi is None else hi.scale_down_val(isl.Val(str(k))).ceil()
    if _exact(lo, hi) and (op == "emod" or natural):
        return _same(lo.mod_val(isl.Val(str(k))))
    return _const(stmt, 0 if op == "emod" or natural else 1 - k), _const(stmt, k - 1)


def _exact(lo, hi):
    return lo is not None and lo is hi


def _same(pa):
    return pa, pa


def _both(a, b, op):
    return None if a is None or b is None else getattr(a, op)(b)


def _both_cond(which, a, b):
    """`a` where `which` is 1, `b` where it is 0 (None when either is)."""
    return None if a is None or b is None else which.cond(a, b)


def _either(a, b, op):
    if a is None or b is None:
        return a if b is None else b
    return getattr(a, op)(b)


def _scale(pa, k):
    return None if pa is None else pa.scale_val(isl.Val(str(k)))


def _floor_div(pa, k):
    return None if pa is None else pa.scale_down_val(isl.Val(str(k))).floor()


def _set_on(stmt, text):
    """The instances of `stmt` where the isl constraint `text` (over its variables and sizes) holds."""
    dims = [stmt.domain.get_dim_name(isl.dim_type.set, i) for i in range(stmt.domain.dim(isl.dim_type.set))]
    return isl.Set(f"{space_text(stmt.params, stmt.domain.get_tuple_name(), dims)} : {text} }}") \
        .intersect(stmt.domain)


def _const(stmt, value):
    return isl.PwAff.val_on_domain(stmt.domain, isl.Val(str(value)))


def _type_range(stmt, dtype):
    return _const(stmt, dtype.min_value()), _const(stmt, dtype.max_value())


def _widens(src, dst):
    """Whether every value of integer type `src` is a value of `dst`."""
    if src.is_signed == dst.is_signed:
        return src.bits <= dst.bits
    return not src.is_signed and src.bits < dst.bits


def expr_key(e):
    """A structural key of an expression (equal for equal trees; loads keyed by their buffer)."""
    if isinstance(e, IslAff):
        return ("aff", str(e.pwaff))
    slots = {a for k in type(e).__mro__ for a in getattr(k, "__slots__", ())}
    own = tuple(getattr(e, a) for a in ("op", "value", "name", "fn") if a in slots)
    target = (id(e.target),) if isinstance(e, Access) else ()
    return (type(e).__name__, str(e.dtype)) + own + target + tuple(expr_key(c) for c in e.children)


def guard_facts(stmt, predicate):
    """{expr_key: (lo, hi)}: bounds of the non-affine subexpressions that the statement's predicate
    compares with bounded ones (`i >= 0 && i < n` in `if (i >= 0 && i < n) A[i] = ...`): they hold
    wherever the statement runs its store."""
    facts = {}
    if predicate is None:
        return facts
    for c in _conjuncts(predicate):
        if not (isinstance(c, BinOp) and c.op in ("lt", "le", "gt", "ge") and c.a.dtype.is_int):
            continue
        for e, other, op in ((c.a, c.b, c.op), (c.b, c.a, _MIRROR[c.op])):
            if affine_text(e) is not None:
                continue
            lo_o, hi_o = index_range(stmt, other)
            # keyed as the indices it bounds are written (int64 symbols, see as_index_expr), not as the
            # predicate writes it (a loop's Var, a size's Param)
            key = expr_key(as_index_expr(e))
            lo, hi = facts.get(key, (None, None))
            if op in ("ge", "gt") and lo_o is not None:
                bound = lo_o if op == "ge" else lo_o.add(_const(stmt, 1))
                lo = _either(lo, bound, "max")
            if op in ("le", "lt") and hi_o is not None:
                bound = hi_o if op == "le" else hi_o.sub(_const(stmt, 1))
                hi = _either(hi, bound, "min")
            facts[key] = (lo, hi)
    return facts


_MIRROR = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}


def _conjuncts(e):
    if isinstance(e, BinOp) and e.op == "and":
        return _conjuncts(e.a) + _conjuncts(e.b)
    return [e]
