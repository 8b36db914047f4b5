"""The range of an integer index computed from floats: `i32(clamp(v, 0.0, 1.0) / r_sigma + 0.5)`.

Bounds inference treats a float converted to an integer as data of the integer's type, unless
the float's range is known: a clamp to constants, constants, scalar Params and operations monotone
in each operand (+, -, *, division by one value, min, max, floor...). The range's ends are float
expressions of the Params, in the expression's own precision; since rounding is monotone, every
value the expression takes lies between them. Ends without Params are computed here; ends with
Params (the bilateral grid's bin width) are computed by the kernel on each call and become sizes of
the Function (the translation makes them, see PipelineTranslation.runtime_range).
"""
from __future__ import annotations

import math

import mascarpone.middleend.expr as E

from .requirements import scalar_key
from .scalars import evaluate, float_cast

UNBOUNDED = (None, None)


def _param(e):
    """The Sym standing for a Param's value in `e` (a read of a scalar Param's input, or an integer
    Param that is a size), else None."""
    key = getattr(getattr(e, "target", None), "key", None)
    if isinstance(e, E.Access) and key and key[0] == "scalar":
        return E.Sym(scalar_key(key[1]), e.dtype)
    if isinstance(e, E.Sym) and type(e) is not E.Sym:   # (a middle-end Param: a size)
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
        if e.a.dtype.is_float:
            inner = float_range(e.a)
        elif isinstance(e.a, E.Const) or _param(e.a) is not None:
            inner = float_range(e.a)
        else:
            return UNBOUNDED
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
    if not (isinstance(e, E.BinOp) and e.dtype.is_float):
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
    elif e.op == "div" and bl is bh:
        corners = [al / bl, ah / bl]   # (by one value only: a range holding 0 would be unbounded)
    else:
        return UNBOUNDED
    lo, hi = corners[0], corners[0]
    for c in corners[1:]:
        lo, hi = E.binop("min", lo, c), E.binop("max", hi, c)
    return lo, hi


def needs_params(x):
    """Whether an end of a range is computed from Params (on each call) rather than here."""
    return any(isinstance(n, E.Sym) for n in E.walk(x))


def cast_end(end, env, dtype, side):
    """An end ("min" or "max") of a range of floats, computed with the values in `env`, converted to
    the integer type `dtype` and widened by one (a fused multiply-add may round the last bit the other
    way); None where the value is not finite or does not fit (the conversion is undefined there)."""
    value = float_cast(evaluate(end, env), dtype)
    if value is None:
        return None
    return max(value - 1, dtype.min_value()) if side == "min" else min(value + 1, dtype.max_value())
