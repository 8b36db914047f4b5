"""The range of an integer index computed from floats: `clamp(i32(clamp(v, 0.0, 1.0) / r_sigma + 0.5), 0, 12)`.

Bounds inference treats a float converted to an integer as data of the integer's type, unless
the float's range is known: a clamp to constants, constants, scalar Params and operations monotone
in each operand (+, -, *, division by one value, min, max, floor...), and so on through the integer
operations around the conversion. The range's ends are expressions of the Params, in the
expression's own types; since rounding is monotone, every value the expression takes lies between
them. Ends without Params are computed here; ends with
Params (the bilateral grid's bin width) are computed by the kernel on each call and become sizes of
the Function (the translation makes them, see PipelineTranslation.runtime_range).
"""
from __future__ import annotations

import math

import mascarpone.middleend.expr as E
from mascarpone.middleend.algorithm import Param
from mascarpone.middleend.errors import NotSupportedError

from .requirements import scalar_key
from .scalars import evaluate

UNBOUNDED = (None, None)


def _param(e):
    """The Sym standing for a Param's value in `e` (a read of a scalar Param's input, or an integer
    Param that is a size), else None."""
    key = getattr(getattr(e, "target", None), "key", None)
    if isinstance(e, E.Access) and key and key[0] == "scalar":
        return E.Sym(scalar_key(key[1]), e.dtype)
    if isinstance(e, Param):   # (a size; loop variables, Vars, are not Params)
        return e
    return None


def _both(op, a, b):
    return None if a is None or b is None else E.binop(op, a, b)


def float_range(e):
    """(lo, hi) expressions bounding the float expression `e`; a side is None where unbounded."""
    if isinstance(e, E.Const):
        return (e, e) if not e.dtype.is_float or math.isfinite(e.value) else UNBOUNDED
    param = _param(e)
    if param is not None:
        return param, param
    if isinstance(e, E.Cast):
        narrowing = e.dtype.is_int and e.a.dtype.is_int and (
            e.dtype.bits < e.a.dtype.bits or (e.dtype.bits == e.a.dtype.bits and e.dtype.is_signed != e.a.dtype.is_signed))
        if e.dtype.is_bool or e.a.dtype.is_bool or narrowing:
            return UNBOUNDED   # (a wrapping conversion is not monotone)
        inner = float_range(e.a)
        if e.dtype.is_int and e.a.dtype.is_float:
            # a float's last bit may round the other way where a multiply-add is fused: one more each
            # side (max(v, v + 1): no wrap at the type's end)
            lo, hi = (None if x is None else E.cast(e.dtype, x) for x in inner)
            return (None if lo is None else E.binop("min", lo, lo - 1)), \
                (None if hi is None else E.binop("max", hi, hi + 1))
        if inner[0] is inner[1] and inner[0] is not None:
            one = E.cast(e.dtype, inner[0])   # (one value stays one: a division by it is bounded)
            return one, one
        return tuple(None if x is None else E.cast(e.dtype, x) for x in inner)
    if isinstance(e, E.UnOp) and e.op == "neg":
        lo, hi = float_range(e.a)
        return (None if hi is None else -hi), (None if lo is None else -lo)
    if isinstance(e, E.Select):
        (tl, th), (fl, fh) = float_range(e.t), float_range(e.f)
        return _both("min", tl, fl), _both("max", th, fh)
    if isinstance(e, E.Call) and e.fn in ("floor", "ceil", "trunc", "round"):
        return tuple(None if x is None else E.call(e.fn, x) for x in float_range(e.args[0]))
    if not isinstance(e, E.BinOp) or e.dtype.is_bool or e.op not in ("min", "max", "add", "sub", "mul", "div", "ediv"):
        return UNBOUNDED
    (al, ah), (bl, bh) = float_range(e.a), float_range(e.b)
    if e.op == "min":   # unbounded above on one side: the other's max bounds it
        return _both("min", al, bl), (ah if bh is None else bh if ah is None else E.binop("min", ah, bh))
    if e.op == "max":
        return (al if bl is None else bl if al is None else E.binop("max", al, bl)), _both("max", ah, bh)
    if e.op == "add":
        return _both("add", al, bl), _both("add", ah, bh)
    if e.op == "sub":
        return _both("sub", al, bh), _both("sub", ah, bl)
    if any(x is None for x in (al, ah, bl, bh)):
        return UNBOUNDED
    if e.op == "mul":
        corners = [x * y for x in (al, ah) for y in (bl, bh)]
    elif e.op == "div" and bl is bh and e.dtype.is_float:
        corners = [al / bl, ah / bl]   # (by one value only: a range holding 0 would be unbounded)
    elif e.op == "ediv" and isinstance(bl, E.Const) and bl is bh and bl.value > 0:
        return E.binop("ediv", al, bl), E.binop("ediv", ah, bl)
    else:
        return UNBOUNDED
    lo, hi = corners[0], corners[0]
    for c in corners[1:]:
        lo, hi = E.binop("min", lo, c), E.binop("max", hi, c)
    return lo, hi


def needs_params(x):
    """Whether an end of a range is computed from Params (on each call) rather than here."""
    return any(isinstance(n, E.Sym) for n in E.walk(x))


def has_float_cast(e):
    """Whether the integer expression `e` converts a float somewhere (where float_range may help)."""
    return any(isinstance(n, E.Cast) and n.dtype.is_int and n.a.dtype.is_float for n in E.walk(e))


def cast_end(end, env):
    """An end of the range of an integer expression, computed with the values in `env`; None where a
    float is not finite or does not fit the integer it becomes (the conversion is undefined there)."""
    try:
        return evaluate(end, env)
    except NotSupportedError:
        return None
