"""A reference interpreter of Julia's lowered IR on numpy arrays.

It executes the statements one by one, following the gotos, with Julia's semantics for the
supported subset: Int64 (and Int32) arithmetic wraps, `/` of integers is Float64, `div`/`rem`
truncate, Float32 stays Float32 unless mixed with Float64, arrays are indexed from 1 in
column-major order (`A[i, j]` is numpy `A[i-1, j-1]` of the Julia-shaped array) with bounds
checks, `setindex!` converts to the array's element type, and `for` iterates ranges, arrays (in
column-major order), tuples, `enumerate` and `zip` through Julia's iterate protocol. What Julia
would throw (BoundsError, InexactError, DivideError, DomainError...) raises JuliaRuntimeError;
what the interpreter does not know raises JuliaNotSupportedError. It shares nothing with the
translation to Layer I but the parser and the type rules of `types`.
"""
from __future__ import annotations

import math

import numpy as np

import mascarpone.middleend.types as T
from mascarpone.middleend.errors import ArgumentError, MascarponeError

from .arguments import check_read_slots, ordered_argtypes, static_parameters
from .ir import (Call, CodeIR, Global, JuliaBoundsError, JuliaNotSupportedError, JuliaRuntimeError, Lit, SSA,
                 Slot, Special, StaticParam)
from .parser import parse
from .types import JULIA_NAME, JuliaType, TypeValue, check_array, isa, parse_type, promote_dtype, type_from_text, \
    type_value

_WIDTH = {T.int64: 64, T.int32: 32}


class StepLimitError(MascarponeError):
    """The interpreter ran more statements than its `max_steps` (an endless or very long loop)."""


def _wrap(v, bits=64):
    return (v + (1 << (bits - 1))) % (1 << bits) - (1 << (bits - 1))


# values: Python int (Int64), np.int32, bool, np.float64, np.float32, None (nothing), tuples,
# numpy arrays, and the objects below

class _Range:
    """`lo:step:hi` with Julia's last element (a StepRange ends on the last value it reaches)."""

    def __init__(self, lo, step, hi):
        if step == 0:
            raise JuliaRuntimeError("ArgumentError", "step cannot be zero")
        self.lo, self.step = lo, step
        self.hi = hi if (hi - lo) % step == 0 or (hi - lo) * step < 0 else hi - (hi - lo) % step

    def __len__(self):
        return max(0, (self.hi - self.lo) // self.step + 1)


class _Enumerate:
    def __init__(self, inner):
        self.inner = inner


class _Zip:
    def __init__(self, items):
        self.items = items


class _Func:
    def __init__(self, name):
        self.name = name


class _Type:
    def __init__(self, t):
        self.t = t        # a DType, a TypeValue, or ('Val', n)


class _Broadcast:
    """`Base.broadcasted(f, args...)`, computed element by element by `materialize!`."""

    def __init__(self, fn, args):
        self.fn, self.args = fn, args


def _dtype(v):
    """The number type of a scalar value, or None."""
    if isinstance(v, (bool, np.bool_)):
        return T.bool_
    if isinstance(v, int):
        return T.int64
    if isinstance(v, np.int32):
        return T.int32
    if isinstance(v, np.float32):
        return T.float32
    if isinstance(v, (float, np.float64)):
        return T.float64
    return None


def _of(t, v):
    """The value v (a number) as a value of type t (exact where the promotion is exact)."""
    if t == T.bool_:
        return bool(v)
    if t == T.int64:
        return int(v)
    if t == T.int32:
        return np.int32(int(v))
    return np.float32(v) if t == T.float32 else np.float64(v)


def _value_type(v):
    """The JuliaType of a value (for isa), 'Nothing', or None when it is something else."""
    if v is None:
        return "Nothing"
    if isinstance(v, np.ndarray):
        return JuliaType(T.as_dtype(v.dtype.name) if v.dtype != np.bool_ else T.bool_, v.ndim)
    t = _dtype(v)
    return JuliaType(t, 0) if t is not None else None


def _num(name, *args):
    """The arguments of a numeric function, each a number, else MethodError."""
    for a in args:
        if _dtype(a) is None:
            raise JuliaRuntimeError("MethodError", f"no method matching {name} with an argument {_show(a)}")
    return args


def _show(v):
    if isinstance(v, np.ndarray):
        return f"::Array{{{v.dtype}, {v.ndim}}}"
    if isinstance(v, _Func):
        return f"(the function {v.name})"
    if isinstance(v, _Type):
        return "(a type)"
    return repr(v)


def _promoted(name, a, b):
    ta, tb = _dtype(a), _dtype(b)
    t = promote_dtype(ta, tb)
    if t is None:
        _num(name, a, b)
        raise JuliaRuntimeError("MethodError", f"no method matching {name}({_show(a)}, {_show(b)})")
    return _of(t, a), _of(t, b), t


def _arith(op, a, b):
    a, b, t = _promoted(op, a, b)
    if t == T.bool_:             # Bool arithmetic gives Int64
        a, b, t = int(a), int(b), T.int64
    if t.is_int:
        r = {"+": int(a) + int(b), "-": int(a) - int(b), "*": int(a) * int(b)}[op]
        return _of(t, _wrap(r, _WIDTH[t]))
    with np.errstate(all="ignore"):
        return {"+": a + b, "-": a - b, "*": a * b}[op]


def _divide(name, a, b):
    a, b, t = _promoted(name, a, b)
    if not t.is_int and t != T.bool_:
        raise JuliaNotSupportedError(f"{name} of floating-point numbers in the interpreter")
    a, b = int(a), int(b)
    bits = _WIDTH.get(t, 64)
    if b == 0 or (name in ("÷", "div") and b == -1 and a == -(1 << (bits - 1))):
        raise JuliaRuntimeError("DivideError", "integer division error")
    q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
    r = q if name in ("÷", "div") else a - q * b
    return _of(t if t != T.bool_ else T.int64, _wrap(r, bits))


def _plain(v):
    """A number as a Python int or float: Python compares those exactly, as Julia does."""
    return float(v) if _dtype(v).is_float else int(v)


def _compare(name, a, b):
    if a is None or b is None:
        same = a is None and b is None
        if name in ("===", "=="):
            return same
        if name in ("!==", "!=", "≠"):
            return not same
        raise JuliaRuntimeError("MethodError", f"no method matching {name} with `nothing`")
    _num(name, a, b)
    x, y = _plain(a), _plain(b)
    if name in ("===", "!=="):    # egal: same type and same bits (NaN === NaN, 0.0 !== -0.0)
        same = _dtype(a) == _dtype(b) and (x == y or x != x and y != y)
        if same and isinstance(x, float) and x == 0:
            same = math.copysign(1, x) == math.copysign(1, y)
        return same if name == "===" else not same
    op = {"<": "lt", "<=": "le", "≤": "le", ">": "gt", ">=": "ge", "≥": "ge", "==": "eq", "!=": "ne", "≠": "ne",
          "slt_int": "lt", "sle_int": "le"}[name]
    return bool({"lt": x < y, "le": x <= y, "gt": x > y, "ge": x >= y, "eq": x == y, "ne": x != y}[op])


def _shift(name, x, n):
    """Julia's shifts of an integer `x`: the operators shift the other way for a negative count, the
    intrinsics read the count as unsigned; counts of the width or more give 0 (or -1 for >> of a negative x)."""
    t = _dtype(x)
    if t is None or not t.is_int or _dtype(n) is None or not _dtype(n).is_int:
        raise JuliaNotSupportedError(f"{name} of {_show(x)} by {_show(n)} in the interpreter")
    bits = _WIDTH[t]
    x, n = int(x), int(n)
    if name.endswith("_int"):
        name, n = {"shl_int": "<<", "ashr_int": ">>", "lshr_int": ">>>"}[name], n % (1 << 64)
    elif n < 0:
        name, n = (">>" if name == "<<" else "<<"), -n
    if name == "<<":
        r = _wrap(x << n, bits) if n < bits else 0
    elif name == ">>":
        r = x >> min(n, bits - 1)
    else:
        r = _wrap((x % (1 << bits)) >> n, bits) if n < bits else 0
    return _of(t, r)


def _minmax(name, a, b):
    a, b, t = _promoted(name, a, b)
    if t.is_float:    # Julia: NaN wins; -0.0 is below 0.0
        if a != a or b != b:
            return _of(t, float("nan"))
        if a == 0 and b == 0:
            negs = (math.copysign(1, a) < 0, math.copysign(1, b) < 0)
            neg = any(negs) if name == "min" else all(negs)
            return _of(t, -0.0 if neg else 0.0)
    return (a if a <= b else b) if name == "min" else (a if a >= b else b)


_DOMAIN = {"sqrt": lambda x: x < 0, "log": lambda x: x < 0, "sin": math.isinf, "cos": math.isinf,
           "tan": math.isinf}


def _math(name, a):
    (a,) = _num(name, a)
    t = _dtype(a)
    if name in ("floor", "ceil", "trunc", "round"):
        if t.is_int or t == T.bool_:
            return a
        return {"floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "round": np.round}[name](a)
    x = a if t.is_float else np.float64(a)
    if name in _DOMAIN and not np.isnan(x) and _DOMAIN[name](float(x)):
        raise JuliaRuntimeError("DomainError", f"{name}({x}) is outside the function's domain")
    with np.errstate(all="ignore"):
        if t == T.float32:
            # Julia's Float32 functions round within an ulp and mostly correctly; numpy's float32 exp is
            # an ulp off at some arguments (0.44310803f0), so take the correctly rounded value, from Float64
            return np.float32(getattr(np, name)(np.float64(x)))
        return getattr(np, name)(x)


def _power(a, b):
    a, b = _num("^", a, b)
    ta, tb = _dtype(a), _dtype(b)
    if ta.is_int and tb.is_int:
        a, p = int(a), int(b)
        if p < 0:
            if a == 1 or a == -1:
                return _of(ta, a if p % 2 else 1)
            raise JuliaRuntimeError("DomainError", f"{a}^{p}: a negative integer power of an integer")
        return _of(ta, _wrap(pow(a, p, 1 << _WIDTH[ta]), _WIDTH[ta]))
    raise JuliaNotSupportedError("^ with a non-literal exponent on floating-point numbers in the interpreter "
                                 "(Julia's own pow is not the C library's)")


def _literal_pow(base, p):
    """`x^p` with a literal p: Julia's `x*x`, `x*x*x`, `inv(x)`; other powers only of integers."""
    (base,) = _num("^", base)
    t = _dtype(base)
    if p == 0:
        return _of(T.int64 if t == T.bool_ else t, 1)
    if p == 1:
        return base
    if p in (2, 3):
        out = base
        for _ in range(p - 1):
            out = _arith("*", out, base)
        return out
    if p in (-1, -2):
        inv = _divide_float(_of(t, 1) if not t.is_int else 1.0, base)
        return inv if p == -1 else _arith("*", inv, inv)
    if t.is_int:
        return _power(base, p)
    raise JuliaNotSupportedError(f"x^{p} of a floating-point x (Julia's own pow) in the interpreter")


def _divide_float(a, b):
    a, b, t = _promoted("/", a, b)
    if not t.is_float:
        a, b = np.float64(a), np.float64(b)
    with np.errstate(all="ignore"):
        return a / b


def _convert(t, v):
    """`T(v)` / `convert(T, v)` for a number type T: InexactError where Julia throws it."""
    if not isinstance(t, T.DType):
        if isinstance(t, TypeValue) and isa(_value_type(v), t):
            return v
        raise JuliaRuntimeError("MethodError", f"cannot convert {_show(v)} to {t}")
    (v,) = _num(f"convert to {JULIA_NAME.get(t, t)}", v)
    tv = _dtype(v)
    if t.is_int or t == T.bool_:
        if tv.is_float:
            if v != v or math.isinf(v) or v != math.floor(v):
                raise JuliaRuntimeError("InexactError", f"{JULIA_NAME[t]}({v})")
            v = int(v)
        v = int(v)
        lo, hi = (0, 1) if t == T.bool_ else (-(1 << (_WIDTH[t] - 1)), (1 << (_WIDTH[t] - 1)) - 1)
        if not lo <= v <= hi:
            raise JuliaRuntimeError("InexactError", f"{JULIA_NAME[t]}({v})")
        return _of(t, v)
    return _of(t, v)


def _linear(a, k):
    """Element k (1-based, column-major) of array a."""
    return a[np.unravel_index(k - 1, a.shape, order="F")]


def _index(a, idx):
    if not isinstance(a, np.ndarray):
        raise JuliaNotSupportedError(f"indexing {_show(a)} in the interpreter")
    for i in idx:
        if _dtype(i) is None or not _dtype(i).is_int:
            raise JuliaRuntimeError("ArgumentError", f"invalid index {_show(i)} of type {type(i).__name__}")
    idx = [int(i) for i in idx]
    if len(idx) == 1 and a.ndim > 1:
        if not 1 <= idx[0] <= a.size:
            raise JuliaBoundsError(f"attempt to access {a.shape} array at index [{idx[0]}]")
        return np.unravel_index(idx[0] - 1, a.shape, order="F")
    if len(idx) < a.ndim:
        raise JuliaNotSupportedError(f"indexing a {a.ndim}-d array with {len(idx)} indices in the interpreter")
    for i, n in zip(idx, a.shape + (1,) * (len(idx) - a.ndim)):
        if not 1 <= i <= n:
            raise JuliaBoundsError(f"attempt to access {a.shape} array at index {tuple(idx)}")
    return tuple(i - 1 for i in idx[:a.ndim])


def _elt(a):
    return T.bool_ if a.dtype == np.bool_ else T.as_dtype(a.dtype.name)


def _array(name, v):
    if not isinstance(v, np.ndarray):
        raise JuliaRuntimeError("MethodError", f"no method matching {name}({_show(v)})")
    return v


def _int_arg(name, v):
    if _dtype(v) is None or not _dtype(v).is_int:
        raise JuliaRuntimeError("MethodError", f"no method matching {name} with the argument {_show(v)}")
    return int(v)


def _dim(name, a, d):
    d = _int_arg(name, d)
    if d < 1:
        raise JuliaBoundsError(f"{name}: dimension {d} out of range (dimensions are numbered from 1)")
    return a.shape[d - 1] if d <= a.ndim else 1


def _iterate(x, state=None):
    """Julia's iterate protocol: (element, next state) or None."""
    if isinstance(x, _Range):
        nxt = x.lo if state is None else _int_arg("iterate", state) + x.step
        done = nxt > x.hi if x.step > 0 else nxt < x.hi
        return None if done else (nxt, nxt)
    if isinstance(x, np.ndarray):
        k = 1 if state is None else _int_arg("iterate", state)
        return (_scalar(_linear(x, k)), k + 1) if 1 <= k <= x.size else None
    if isinstance(x, tuple):
        k = 1 if state is None else _int_arg("iterate", state)
        return (x[k - 1], k + 1) if 1 <= k <= len(x) else None
    if isinstance(x, _Enumerate):
        count, inner = (1, None) if state is None else state
        n = _iterate(x.inner, inner)
        return None if n is None else ((count, n[0]), (count + 1, n[1]))
    if isinstance(x, _Zip):
        states = state or (None,) * len(x.items)
        steps = [_iterate(it, st) for it, st in zip(x.items, states)]
        if any(s is None for s in steps):
            return None
        return tuple(s[0] for s in steps), tuple(s[1] for s in steps)
    raise JuliaNotSupportedError(f"iterating over {_show(x)} in the interpreter")


def _scalar(v):
    """A numpy element as the interpreter's number (Python int for Int64, bool for Bool)."""
    if isinstance(v, np.bool_):
        return bool(v)
    if isinstance(v, np.int64):
        return int(v)
    return v


def _length(x):
    if isinstance(x, np.ndarray):
        return int(x.size)
    if isinstance(x, (_Range, tuple)):
        return len(x)
    raise JuliaNotSupportedError(f"length of {_show(x)} in the interpreter")


def _eachindex(args):
    """Julia's eachindex of one collection, or of several arrays: 1:length(A) (IndexLinear), after a
    DimensionMismatch unless each has A's length (Julia compares Base.OneTo(length(X)), not shapes)."""
    if len(args) > 1 and not all(isinstance(x, (np.ndarray, _Range)) for x in args):
        raise JuliaNotSupportedError(f"eachindex of several arguments other than arrays and ranges "
                                     f"({', '.join(_show(x) for x in args)}) in the interpreter")
    lengths = [_length(x) for x in args]
    if any(n != lengths[0] for n in lengths):
        ranges = [f"Base.OneTo({n})" for n in lengths]
        raise JuliaRuntimeError("DimensionMismatch", "all inputs to eachindex must have the same indices, got "
                                f"{', '.join(ranges[:-1])} and {ranges[-1]}")
    return _Range(1, 1, lengths[0])


def _isa(v, t):
    if not isinstance(t, _Type) or isinstance(t.t, tuple):
        raise JuliaRuntimeError("TypeError", f"isa: the second argument {_show(t)} is not a type")
    vt = _value_type(v)
    if vt is None:
        if isinstance(t.t, TypeValue) and t.t.name == "Any":
            return True
        raise JuliaNotSupportedError(f"`isa` on {_show(v)} in the interpreter")
    return isa(vt, t.t)


# name -> (allowed argument counts, function of the evaluated arguments)
def _functions():
    f = {}

    def add(names, counts, fn):
        for n in names.split():
            f[n] = (counts, fn)

    add("+ * add_int mul_int", range(2, 64), lambda n, a: _fold(lambda x, y: _arith("+" if n in ("+", "add_int")
                                                                                 else "*", x, y), a))
    add("- sub_int", (1, 2), lambda n, a: _negate(a[0]) if len(a) == 1 else _arith("-", a[0], a[1]))
    add("/", (2,), lambda n, a: _divide_float(*a))
    add("÷ div % rem", (2,), lambda n, a: _divide(n, *a))
    add("< <= > >= == != ≤ ≥ ≠ === !== slt_int sle_int", (2,), lambda n, a: _compare(n, *a))
    add("! not_int ~", (1,), lambda n, a: _not(n, a[0]))
    add("& | ⊻ xor and_int or_int xor_int", (2,), lambda n, a: _bitwise(n, *a))
    add("<< >> >>> shl_int ashr_int lshr_int", (2,), lambda n, a: _shift(n, *a))
    add("min max", range(2, 64), lambda n, a: _fold(lambda x, y: _minmax(n, x, y), a))
    add("abs", (1,), lambda n, a: _abs(a[0]))
    add("sqrt exp log sin cos tan tanh floor ceil trunc round", (1,), lambda n, a: _math(n, a[0]))
    add("√", (1,), lambda n, a: _math("sqrt", a[0]))
    add("^", (2,), lambda n, a: _power(*a))
    add("literal_pow", (3,), lambda n, a: _literal_pow(a[1], _val(a[2])))
    add("muladd", (3,), lambda n, a: _arith("+", _arith("*", a[0], a[1]), a[2]))
    add("ifelse", (3,), lambda n, a: a[1] if _bool(n, a[0]) else a[2])
    add("zero one", (1,), lambda n, a: _zero_one(n, a[0]))
    add("float", (1,), lambda n, a: a[0] if _dtype(_num(n, a[0])[0]).is_float else np.float64(a[0]))
    add("oftype", (2,), lambda n, a: _convert(_dtype(_num(n, a[0])[0]), a[1]))
    add("convert", (2,), lambda n, a: _convert(_type_arg(n, a[0]), a[1]))
    add("typeassert", (2,), lambda n, a: _typeassert(a[0], a[1]))
    add("isa", (2,), lambda n, a: _isa(a[0], a[1]))
    add("eltype", (1,), lambda n, a: _Type(_elt(_array(n, a[0]))))
    add("ndims", (1,), lambda n, a: _array(n, a[0]).ndim)
    add("getindex", range(1, 8), lambda n, a: _getindex(a[0], a[1:]))
    add("setindex!", range(2, 9), lambda n, a: _setindex(a[0], a[1], a[2:]))
    add("size", (1, 2), lambda n, a: tuple(_array(n, a[0]).shape) if len(a) == 1 else _dim(n, _array(n, a[0]), a[1]))
    add("length", (1,), lambda n, a: _length(a[0]))
    add("eachindex", range(1, 64), lambda n, a: _eachindex(a))
    add("axes", (1, 2), lambda n, a: tuple(_Range(1, 1, m) for m in _array(n, a[0]).shape) if len(a) == 1
        else _Range(1, 1, _dim(n, _array(n, a[0]), a[1])))
    add("OneTo", (1,), lambda n, a: _Range(1, 1, _int_arg(n, a[0])))
    add("LinearIndices", (1,), lambda n, a: _Range(1, 1, _array(n, a[0]).size))
    add(":", (2, 3), lambda n, a: _Range(*[_int_arg(":", x) for x in (a if len(a) == 3 else (a[0], 1, a[1]))]))
    add("firstindex", (1, 2), lambda n, a: 1)
    add("lastindex", (1, 2), lambda n, a: _length(a[0]) if len(a) == 1 else _dim(n, _array(n, a[0]), a[1]))
    add("first", (1,), lambda n, a: _first_last(n, a[0]))
    add("last", (1,), lambda n, a: _first_last(n, a[0]))
    add("iterate", (1, 2), lambda n, a: _iterate(*a))
    add("enumerate", (1,), lambda n, a: _Enumerate(a[0]))
    add("zip", range(1, 8), lambda n, a: _Zip(list(a)))
    add("getfield", (2,), lambda n, a: _getfield(*a))
    add("indexed_iterate", (2, 3), lambda n, a: _indexed_iterate(*a))
    add("tuple", range(0, 16), lambda n, a: tuple(a))
    add("apply_type", range(1, 4), lambda n, a: _apply_type(a))
    add("identity", (1,), lambda n, a: a[0])
    add("broadcasted", range(1, 16), lambda n, a: _Broadcast(a[0], a[1:]))
    add("materialize!", (2,), lambda n, a: _materialize_into(*a))
    return f


def _fold(fn, args):
    out = args[0]
    for b in args[1:]:
        out = fn(out, b)
    return out


def _not(name, a):
    (a,) = _num(name, a)
    t = _dtype(a)
    if t == T.bool_:
        return not a
    if name == "!" or t.is_float:
        raise JuliaRuntimeError("MethodError", f"no method matching {name}({_show(a)})")
    return _of(t, ~int(a))


def _negate(a):
    (a,) = _num("-", a)
    t = _dtype(a)
    if t.is_float:
        return -a
    t = T.int64 if t == T.bool_ else t            # -true == -1
    return _of(t, _wrap(-int(a), _WIDTH[t]))


def _bitwise(name, a, b):
    a, b, t = _promoted(name, a, b)
    if t.is_float:
        raise JuliaRuntimeError("MethodError", f"no method matching {name} of floating-point numbers")
    x, y = int(a), int(b)
    r = x & y if name in ("&", "and_int") else (x | y if name in ("|", "or_int") else x ^ y)
    return bool(r) if t == T.bool_ else _of(t, r)


def _abs(a):
    (a,) = _num("abs", a)
    t = _dtype(a)
    if t == T.bool_:
        return a
    if t.is_int:
        return _of(t, _wrap(abs(int(a)), _WIDTH[t]))
    return abs(a)


def _bool(name, c):
    if not isinstance(c, bool):
        raise JuliaRuntimeError("TypeError", f"{name}: non-boolean ({_show(c)}) used in boolean context")
    return c


def _zero_one(name, a):
    t = a.t if isinstance(a, _Type) else _dtype(a)
    if not isinstance(t, T.DType):
        raise JuliaRuntimeError("MethodError", f"no method matching {name}({_show(a)})")
    return _of(t, 0 if name == "zero" else 1)


def _type_arg(name, t):
    if not isinstance(t, _Type) or isinstance(t.t, tuple):
        raise JuliaRuntimeError("MethodError", f"no method matching {name} to {_show(t)}")
    return t.t


def _typeassert(v, t):
    if not _isa(v, t):
        raise JuliaRuntimeError("TypeError", f"typeassert: expected {t.t}, got a value {_show(v)}")
    return v


def _val(v):
    if isinstance(v, _Type) and isinstance(v.t, tuple) and v.t[0] == "Val" and _dtype(v.t[1]) == T.int64:
        return v.t[1]
    raise JuliaNotSupportedError(f"literal_pow with the exponent {_show(v)} in the interpreter")


def _getindex(a, idx):
    if isinstance(a, tuple):
        if len(idx) != 1:
            raise JuliaRuntimeError("MethodError", "indexing a tuple with several indices")
        k = _int_arg("getindex", idx[0])
        if not 1 <= k <= len(a):
            raise JuliaBoundsError(f"attempt to access a {len(a)}-tuple at index [{k}]")
        return a[k - 1]
    return _scalar(_array("getindex", a)[_index(a, idx)])


def _setindex(a, v, idx):
    _array("setindex!", a)
    a[_index(a, idx)] = _convert(_elt(a), v)
    return a


def _apply(fn, args):
    """`fn(args...)` for a function or a type (a conversion)."""
    if isinstance(fn, _Type):
        if len(args) != 1:
            raise JuliaRuntimeError("MethodError", f"a type called with {len(args)} arguments")
        return _convert(fn.t, args[0])
    if not isinstance(fn, _Func):
        raise JuliaRuntimeError("MethodError", f"{_show(fn)} is not a function")
    entry = _FUNCTIONS.get(fn.name)
    if entry is None:
        raise JuliaNotSupportedError(f"the interpreter does not know the function {fn.name}")
    counts, impl = entry
    if len(args) not in counts:
        raise JuliaRuntimeError("MethodError", f"no method of {fn.name} takes {len(args)} argument(s)")
    return impl(fn.name, args)


def _materialize_into(dest, bc):
    """`dest .= bc` with Julia's broadcasting: dimensions align from the first, an argument's dimension of
    size 1 is expanded, any other size than dest's is a DimensionMismatch, and past dest's rank an
    argument's sizes must be 1 (Base.Broadcast.check_broadcast_shape); the elements in column-major
    order, each converted to dest's element type."""
    _array("materialize!", dest)
    if not isinstance(bc, _Broadcast):
        bc = _Broadcast(_Func("identity"), [bc])

    def check(v):
        if isinstance(v, _Broadcast):
            for a in v.args:
                check(a)
        elif isinstance(v, np.ndarray):
            if any(n != 1 for n in v.shape[dest.ndim:]):
                raise JuliaRuntimeError("DimensionMismatch", "cannot broadcast array to have fewer non-singleton "
                                        f"dimensions (sizes {v.shape} and {dest.shape})")
            if any(n not in (1, m) for n, m in zip(v.shape, dest.shape)):
                raise JuliaRuntimeError("DimensionMismatch", f"array could not be broadcast to match destination "
                                        f"(sizes {v.shape} and {dest.shape})")
    check(bc)

    def element(v, index):
        if isinstance(v, _Broadcast):
            return _apply(v.fn, [element(a, index) for a in v.args])
        if isinstance(v, np.ndarray):     # index 1 where the size is 1 (and past dest's rank)
            return _scalar(v[tuple(index[d] if n > 1 else 0 for d, n in enumerate(v.shape))])
        return v
    for index in np.ndindex(*reversed(dest.shape)):
        index = tuple(reversed(index))
        dest[index] = _convert(_elt(dest), element(bc, index))
    return dest


def _first_last(name, x):
    if isinstance(x, _Range):
        if len(x) == 0:
            raise JuliaBoundsError(f"{name} of an empty range")
        return x.lo if name == "first" else x.hi
    if isinstance(x, np.ndarray) and x.size:
        return _scalar(_linear(x, 1 if name == "first" else x.size))
    raise JuliaNotSupportedError(f"{name} of {_show(x)} in the interpreter")


def _getfield(x, k):
    if not isinstance(x, tuple):
        raise JuliaNotSupportedError(f"Core.getfield of {_show(x)} (structs) in the interpreter")
    k = _int_arg("getfield", k)
    if not 1 <= k <= len(x):
        raise JuliaBoundsError(f"getfield: a {len(x)}-tuple has no field {k}")
    return x[k - 1]


def _indexed_iterate(x, i, state=None):
    """Destructuring `a, b = t`: (t[i], i + 1) for tuples; the iterate protocol for other collections."""
    if isinstance(x, tuple):
        i = _int_arg("indexed_iterate", i)
        if not 1 <= i <= len(x):
            raise JuliaBoundsError(f"attempt to access a {len(x)}-tuple at index [{i}]")
        return x[i - 1], i + 1
    n = _iterate(x, state)
    if n is None:
        raise JuliaBoundsError("not enough values to destructure")
    return n


def _apply_type(args):
    head = args[0]
    if isinstance(head, _Func) and head.name == "Val" and len(args) == 2:
        return _Type(("Val", args[1]))
    if isinstance(head, _Type) and isinstance(head.t, TypeValue):
        params = [a.t if isinstance(a, _Type) else a for a in args[1:]]
        t = head.t.apply(params)
        if t is not None:
            return _Type(t)
    raise JuliaNotSupportedError(f"Core.apply_type{tuple(_show(a) for a in args)} in the interpreter")


_FUNCTIONS = _functions()
_NOTHING_NAMES = {"nothing"}


def _global(g: Global):
    t = type_value(g.name)
    if t is not None:
        return _Type(t)
    if g.name in _NOTHING_NAMES:
        return None
    if g.name in _FUNCTIONS or g.name in ("Val",):
        return _Func(g.name)
    raise JuliaNotSupportedError(f"the global {(g.module + '.') if g.module else ''}{g.name} (a function or "
                                 "variable the interpreter does not know)")


def _literal(e: Lit):
    if e.jtype == "Float64":
        return np.float64(e.value)
    if e.jtype == "Float32":
        return np.float32(e.value)
    if e.jtype == "Symbol":
        return _Func(e.value)
    if e.jtype in ("Int64", "Bool", "Nothing"):
        return e.value
    raise JuliaNotSupportedError(f"the literal {e.value!r} of type {e.jtype} in the interpreter")


def _arguments(code, argtypes, args, kwargs):
    argtypes = ordered_argtypes(code, argtypes)
    names = list(argtypes)
    if len(args) > len(names):
        raise ArgumentError(f"the function takes {len(names)} arguments ({names}), got {len(args)}")
    values = dict(zip(names, args))
    for k, v in kwargs.items():
        if k not in names:
            raise ArgumentError(f"the function has no argument {k!r}; its arguments are {names}")
        values[k] = v
    missing = [n for n in names if n not in values]
    if missing:
        raise ArgumentError(f"missing argument(s) {missing}")
    slots = {}
    for name in names:
        jt = parse_type(argtypes[name])
        v = values[name]
        if jt.is_array:
            slots[name] = check_array(name, v, jt)
        elif isinstance(v, np.ndarray) or _dtype(v) is None:
            raise ArgumentError(f"argument {name}::{jt} must be a number, got {type(v).__name__}")
        else:
            try:
                slots[name] = _convert(jt.dtype, _scalar(v))
            except JuliaRuntimeError as err:
                raise ArgumentError(f"argument {name}::{jt}: {err}") from None
    return argtypes, slots


def run(text_or_code, argtypes, *args, max_steps=50_000_000, static_parameters_=None, **kwargs):
    """Execute the function on the arguments (Julia-shaped numpy arrays are updated in place) and return
    its value. `static_parameters_` gives the values of a `where` method's parameters when the text
    does not (see `arguments.static_parameters`)."""
    code = text_or_code if isinstance(text_or_code, CodeIR) else parse(text_or_code)
    argtypes, slots = _arguments(code, argtypes, args, kwargs)
    check_read_slots(code, argtypes)
    sparams = [_Type(type_from_text(v)) if not isinstance(v, int) else v
               for v in static_parameters(code, argtypes, static_parameters_)]
    ssa = {}
    first_of_block = {b: numbers[0] for b, numbers in code.blocks.items()}

    def ev(e):
        if isinstance(e, SSA):
            if e.n not in ssa:
                raise JuliaNotSupportedError(f"%{e.n} is used before it is computed")
            return ssa[e.n]
        if isinstance(e, Slot):
            if e.name not in slots:
                raise JuliaRuntimeError("UndefVarError", f"`{e.name}` not defined")
            return slots[e.name]
        if isinstance(e, Lit):
            return _literal(e)
        if isinstance(e, Global):
            return _global(e)
        if isinstance(e, StaticParam):
            return sparams[e.n - 1]
        if isinstance(e, Special):
            raise JuliaNotSupportedError(f"`{e.text}` in the interpreter")
        if isinstance(e, Call):
            fn = ev(e.fn)
            args_ = [ev(a) for a in e.args]
            if isinstance(fn, _Type) and isinstance(fn.t, tuple) and not args_:
                return fn                     # Val{n}() of literal_pow
            return _apply(fn, args_)
        raise JuliaNotSupportedError(f"the interpreter cannot evaluate {e!r}")

    pc, steps, n_stmts = 1, 0, len(code.stmts)
    while True:
        steps += 1
        if steps > max_steps:
            raise StepLimitError(f"the interpreter ran more than max_steps={max_steps} statements")
        if pc > n_stmts:
            raise JuliaNotSupportedError("control runs past the last statement")
        s = code.stmt(pc)
        try:
            if s.kind == "expr":
                ssa[pc] = ev(s.value)
                pc += 1
            elif s.kind == "assign":
                if isinstance(s.target, Global):
                    raise JuliaNotSupportedError(f"writing the global variable {s.target.name} in the interpreter")
                slots[s.target.name] = ev(s.value)
                pc += 1
            elif s.kind == "meta":
                pc += 1
            elif s.kind == "goto":
                pc = first_of_block[s.target]
            elif s.kind == "gotoifnot":
                pc = pc + 1 if _bool("goto if not", ev(s.value)) else first_of_block[s.target]
            elif s.kind == "return":
                return ev(s.value)
            else:
                raise JuliaRuntimeError("ErrorException", f"reached `{s.text}`")
        except (JuliaRuntimeError, JuliaNotSupportedError) as err:
            if getattr(err, "stmt", None) is None and not str(err).startswith("statement %"):
                err.args = (f"statement %{s.number} (line {s.line}: `{s.text}`): {err.args[0]}",)
                err.stmt = s
            raise
