"""Scalar expressions of the Params evaluated in Python before a call, with the IR's semantics.

Two uses: a pipeline's requirements (`Pipeline.add_requirement`), checked on each
`realize`, and the range of an index that a float Param scales (see bounds.py),
computed on each `realize` from the Param's value. Integers wrap at their type's
width, floats are computed in their own precision with numpy (IEEE, no
contraction), integer `/` and `%` are Halide's.
"""
from __future__ import annotations

import math

import numpy as np

import mascarpone.middleend.expr as E
from mascarpone.middleend.errors import NotSupportedError

_NP_FLOAT = {32: np.float32, 64: np.float64}


def wrapped(value: int, dtype) -> int:
    """`value` reduced to the integer type `dtype` (two's complement)."""
    if dtype.is_bool:
        return int(bool(value))
    span = 1 << dtype.bits
    v = int(value) & (span - 1)
    return v - span if dtype.is_signed and v >= span >> 1 else v


def _euclid(a, b):
    """Halide's integer division and modulo: the remainder is never negative; both 0 when b is 0."""
    if b == 0:
        return 0, 0
    q = a // b   # floor
    r = a - q * b
    if r < 0:    # b < 0 and a remainder of b's sign
        q, r = q + 1, r - b
    return q, r


def float_cast(value, dtype):
    """A float converted to `dtype` (float: rounded to its precision; integer: truncated, None when it
    is not finite or does not fit, where the machine's conversion is undefined)."""
    if dtype.is_float:
        return _NP_FLOAT[dtype.bits](value)
    if not math.isfinite(value):
        return None
    v = math.trunc(float(value))
    if dtype.is_bool:
        return int(v != 0)
    return v if dtype.min_value() <= v <= dtype.max_value() else None


def evaluate(e: E.Expr, env: dict):
    """The value of `e` (ints, bools and numpy floats) with its symbols bound by `env` ({name: value}).
    Raises NotSupportedError for what cannot be computed before the call (a read of data)."""
    if isinstance(e, E.Const):
        return _NP_FLOAT[e.dtype.bits](e.value) if e.dtype.is_float else e.value
    if isinstance(e, E.Sym):
        v = env[e.name]
        return _NP_FLOAT[e.dtype.bits](v) if e.dtype.is_float else wrapped(v, e.dtype) if e.dtype.is_int else bool(v)
    if isinstance(e, E.Cast):
        a = evaluate(e.a, env)
        if e.a.dtype.is_float:
            out = float_cast(a, e.dtype)
            if out is None:
                raise NotSupportedError(f"the float {a} converted to {e.dtype} is undefined")
            return out
        if e.dtype.is_float:
            return _NP_FLOAT[e.dtype.bits](a)
        return wrapped(a, e.dtype)
    if isinstance(e, E.UnOp):
        a = evaluate(e.a, env)
        if e.op == "not":
            return not a
        if e.op == "neg":
            return -a if e.dtype.is_float else wrapped(-a, e.dtype)
        return wrapped(~a, e.dtype)
    if isinstance(e, E.Select):
        return evaluate(e.t, env) if evaluate(e.cond, env) else evaluate(e.f, env)
    if isinstance(e, E.BinOp):
        a, b = evaluate(e.a, env), evaluate(e.b, env)
        return _binary(e, a, b)
    if isinstance(e, E.Call) and e.dtype.is_float:
        args = [evaluate(a, env) for a in e.args]
        fn = {"fabs": np.abs, "round": np.rint, "atan2": np.arctan2, "pow": np.power}.get(e.fn) or getattr(np, e.fn)
        with np.errstate(all="ignore"):
            return _NP_FLOAT[e.dtype.bits](fn(*args))
    raise NotSupportedError(f"{E.pseudo_c(e)} cannot be computed before the call")


def _binary(e, a, b):
    op = e.op
    if op in ("lt", "le", "gt", "ge", "eq", "ne"):
        return {"lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b, "eq": a == b, "ne": a != b}[op]
    if op == "and":
        return bool(a and b)
    if op == "or":
        return bool(a or b)
    if op == "min":
        return a if a < b else b
    if op == "max":
        return a if a > b else b
    if e.dtype.is_float:
        with np.errstate(all="ignore"):
            return {"add": a + b, "sub": a - b, "mul": a * b, "div": a / b}[op]
    if op in ("ediv", "emod"):
        q, r = _euclid(a, b)
        return wrapped(q if op == "ediv" else r, e.dtype)
    if op in ("div", "mod"):
        q = 0 if b == 0 else abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
        return wrapped(q if op == "div" else (0 if b == 0 else a - b * q), e.dtype)
    if op in ("shl", "shr"):
        left, amount = op == "shl", b
        if amount < 0:
            left, amount = not left, -amount
        amount = min(amount, e.dtype.bits)
        return wrapped(a << amount, e.dtype) if left else a >> amount
    arith = {"add": a + b, "sub": a - b, "mul": a * b, "bitand": a & b, "bitor": a | b, "bitxor": a ^ b}
    return wrapped(arith[op], e.dtype)
