"""Evaluation of scalar integer expressions in Python, with the semantics of middleend/semantics.py.

The kernel wrapper uses it to compute buffer shapes from size parameters
before a call; tests use it as a reference.
"""
from __future__ import annotations

import math
import struct

from mascarpone.middleend.errors import NotSupportedError
from mascarpone.middleend.expr import BinOp, Call, Cast, Const, Expr, Reinterpret, Select, Sym, UnOp, pseudo_c
from mascarpone.middleend.semantics import float_to_int_via
from mascarpone.middleend.types import DType


def wrap(value: int, dt: DType) -> int:
    """`value` reduced to the range of the integer type `dt` (two's complement)."""
    if dt.is_bool:
        return int(bool(value))
    if not dt.is_int:
        return value
    mask = (1 << dt.bits) - 1
    v = int(value) & mask
    if dt.is_signed and v >> (dt.bits - 1):
        v -= 1 << dt.bits
    return v


def trunc_div(a: int, b: int) -> int:
    """C division (toward zero); 0 when `b` is 0."""
    if b == 0:
        return 0
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def trunc_mod(a: int, b: int) -> int:
    """C remainder (sign of `a`); 0 when `b` is 0."""
    return 0 if b == 0 else a - b * trunc_div(a, b)


def euclid_div(a: int, b: int) -> int:
    """Halide division: the remainder `a - q*b` is never negative; 0 when `b` is 0."""
    if b == 0:
        return 0
    q = trunc_div(a, b)
    if a - q * b < 0:
        q += -1 if b > 0 else 1
    return q


def euclid_mod(a: int, b: int) -> int:
    """Halide modulo: never negative; 0 when `b` is 0."""
    return 0 if b == 0 else a - b * euclid_div(a, b)


def shift(a: int, b: int, dt: DType, left: bool) -> int:
    """`a << b` or `a >> b` in `dt`: a negative `b` shifts the other way, amounts of the width or
    more saturate (0, or -1 for a negative `a` shifted right)."""
    if b < 0:
        left, b = not left, -b
    b = min(b, dt.bits)
    return wrap(a << b, dt) if left else a >> b   # Python's >> floors: arithmetic for negative a


def bit_count(fn: str, a: int, dt: DType) -> int:
    """popcount, clz or ctz of the integer `a` of type `dt` (clz and ctz of 0 are the width)."""
    u = a & ((1 << dt.bits) - 1)
    if fn == "popcount":
        return bin(u).count("1")
    if fn == "clz":
        return dt.bits - u.bit_length()
    return dt.bits if u == 0 else (u & -u).bit_length() - 1


def float_to_int(value: float, dt: DType) -> int:
    """The float `value` converted to the integer type `dt`: toward zero, saturating at the range of
    `float_to_int_via(dt)` (NaN -> 0), then wrapped to `dt`."""
    via = float_to_int_via(dt)
    if math.isnan(value):
        return 0
    lo, hi = via.min_value(), via.max_value()
    v = lo if value <= lo else hi if value >= hi else math.trunc(value)
    return wrap(v, dt)


_STRUCT = {"int": "bhiq", "uint": "BHIQ", "float": "  fd"}


def reinterpret(value, src: DType, dst: DType):
    """The bits of `value` (of type `src`) read as `dst`, a type of the same width."""
    k = {8: 0, 16: 1, 32: 2, 64: 3}[src.bits]
    return struct.unpack(_STRUCT[dst.kind][k], struct.pack(_STRUCT[src.kind][k], value))[0]


_ARITH = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": trunc_div,
    "mod": trunc_mod,
    "ediv": euclid_div,
    "emod": euclid_mod,
    "min": min,
    "max": max,
    "bitand": lambda a, b: a & b,
    "bitor": lambda a, b: a | b,
    "bitxor": lambda a, b: a ^ b,
}
_COMPARE = {
    "lt": lambda a, b: a < b, "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b,
}


def evaluate(e: Expr, env: dict) -> int:
    """The value of the integer (or bool) expression `e` with symbols bound by `env`."""
    if isinstance(e, Const):
        return e.value
    if isinstance(e, Sym):
        if e.name not in env:
            raise KeyError(e.name)
        return wrap(env[e.name], e.dtype)
    if isinstance(e, BinOp):
        a, b = evaluate(e.a, env), evaluate(e.b, env)
        if e.op in _COMPARE:
            return _COMPARE[e.op](a, b)
        if e.op == "and":
            return bool(a and b)
        if e.op == "or":
            return bool(a or b)
        if e.dtype.is_float:
            raise NotSupportedError(f"floating-point arithmetic in a size expression: {pseudo_c(e)}")
        if e.op in ("shl", "shr"):
            return shift(a, b, e.dtype, e.op == "shl")
        if e.op in ("ediv", "emod") and not e.dtype.is_signed:
            return wrap(_ARITH["div" if e.op == "ediv" else "mod"](a, b), e.dtype)
        return wrap(_ARITH[e.op](a, b), e.dtype)
    if isinstance(e, UnOp):
        a = evaluate(e.a, env)
        if e.op == "not":
            return not a
        return wrap(~a if e.op == "bitnot" else -a, e.dtype)
    if isinstance(e, Select):
        return evaluate(e.t, env) if evaluate(e.cond, env) else evaluate(e.f, env)
    if isinstance(e, Cast):
        a = evaluate(e.a, env)
        if e.dtype.is_float:
            return float(a)
        if isinstance(a, float):
            return float_to_int(a, e.dtype)
        return wrap(a, e.dtype)
    if isinstance(e, Reinterpret):
        return reinterpret(evaluate(e.a, env), e.a.dtype, e.dtype)
    if isinstance(e, Call) and e.dtype.is_int:
        return bit_count(e.fn, evaluate(e.args[0], env), e.dtype)
    raise NotSupportedError(f"cannot evaluate {pseudo_c(e)} before the call (sizes may use only parameters)")


def compile_int(e: Expr):
    """`evaluate(e, env)` as a closure `f(env)`, for expressions evaluated on every call."""
    if isinstance(e, Const):
        v = e.value
        return lambda env: v
    if isinstance(e, Sym) and e.dtype.is_int and e.dtype.bits == 64 and e.dtype.is_signed:
        name = e.name
        return lambda env: env[name]
    if isinstance(e, BinOp) and e.op in ("add", "sub", "mul") and e.dtype.is_int:
        fa, fb, dt = compile_int(e.a), compile_int(e.b), e.dtype
        f = _ARITH[e.op]
        lo, hi = dt.min_value(), dt.max_value()

        def arith(env):
            v = f(fa(env), fb(env))
            return v if lo <= v <= hi else wrap(v, dt)
        return arith
    return lambda env: evaluate(e, env)
