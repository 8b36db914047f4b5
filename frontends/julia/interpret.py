"""A reference interpreter of Julia's lowered IR on numpy arrays.

It executes the statements one by one, following the gotos, with Julia's
semantics for the supported subset: Int64 arithmetic wraps, `/` of integers is
Float64, `div`/`rem` truncate, Float32 stays Float32 unless mixed with Float64,
arrays are indexed from 1 in column-major order (`A[i, j]` is numpy `A[i-1, j-1]`
of the Julia-shaped array) with bounds checks, and `setindex!` converts to the
array's element type. It shares nothing with the translation to Layer I.
"""
from __future__ import annotations

import math

import numpy as np

from .ir import Call, CodeIR, Global, JuliaNotSupportedError, Lit, SSA, Slot
from .parser import parse
from .types import check_array, parse_type

_I64 = 1 << 64


def _wrap(v):
    v = (v + (1 << 63)) % _I64 - (1 << 63)
    return v


class JuliaBoundsError(IndexError):
    """An array access outside the array, as Julia's BoundsError."""


class _Range:
    def __init__(self, lo, step, hi):
        self.lo, self.step, self.hi = lo, step, hi

    def values(self):
        if self.step > 0:
            return range(self.lo, self.hi + 1, self.step)
        return range(self.lo, self.hi - 1, self.step)


class _Func:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"<function {self.name}>"


class _Type:
    def __init__(self, t):
        self.t = t


_TYPES = {"Float64": np.float64, "Float32": np.float32, "Int64": int, "Int": int, "Bool": bool}


def _num(v):
    """Julia numbers: Python int for Int64, bool for Bool, numpy floats for Float64/Float32."""
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, float):
        return np.float64(v)
    return v


def _is_float(v):
    return isinstance(v, (np.floating, float))


def _promote(a, b):
    if isinstance(a, bool) and not isinstance(b, bool):
        a = int(a)
    if isinstance(b, bool) and not isinstance(a, bool):
        b = int(b)
    if _is_float(a) and _is_float(b):
        if type(a) is not type(b):
            return np.float64(a), np.float64(b)
        return a, b
    if _is_float(a):
        return a, type(a)(b)
    if _is_float(b):
        return type(b)(a), b
    return a, b


def _arith(op, a, b):
    a, b = _promote(_num(a), _num(b))
    if isinstance(a, int):
        if op == "+":
            return _wrap(a + b)
        if op == "-":
            return _wrap(a - b)
        if op == "*":
            return _wrap(a * b)
    with np.errstate(all="ignore"):
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
    raise AssertionError(op)


def _shift(name, x, n):
    """Julia's shifts of an Int64 `x`: the operators shift the other way for a negative count, the
    intrinsics read the count as unsigned; counts of 64 or more give 0 (or -1 for a negative x and >>)."""
    if name.endswith("_int"):
        name, n = {"shl_int": "<<", "ashr_int": ">>", "lshr_int": ">>>"}[name], n % _I64
    elif n < 0:
        name, n = (">>" if name == "<<" else "<<"), -n
    if name == "<<":
        return _wrap(x << n) if n < 64 else 0
    if name == ">>":
        return x >> min(n, 63)
    return _wrap((x % _I64) >> n) if n < 64 else 0


def _call(name, args, arrays):
    if name in ("+", "*") and len(args) >= 2:
        out = args[0]
        for b in args[1:]:
            out = _arith(name, out, b)
        return out
    if name == "-":
        if len(args) == 1:
            a = _num(args[0])
            return _wrap(-a) if isinstance(a, int) else -a
        return _arith("-", *args)
    if name == "/":
        a, b = _promote(_num(args[0]), _num(args[1]))
        if isinstance(a, int):
            a, b = np.float64(a), np.float64(b)
        with np.errstate(all="ignore"):
            return a / b
    if name in ("÷", "div", "%", "rem"):
        a, b = _num(args[0]), _num(args[1])
        if not isinstance(a, int) or not isinstance(b, int):
            raise JuliaNotSupportedError(f"{name} of non-integers in the interpreter")
        if b == 0:
            raise ZeroDivisionError("DivideError: integer division error")
        q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
        return _wrap(q) if name in ("÷", "div") else _wrap(a - q * b)
    if name in ("<", "<=", ">", ">=", "==", "!=", "≤", "≥", "≠", "===", "!=="):
        a, b = args
        if a is None or b is None:
            same = a is None and b is None
            return same if name in ("==", "===") else not same
        a, b = _promote(_num(a), _num(b))
        return bool({"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "==": a == b, "===": a == b,
                     "!=": a != b, "!==": a != b, "≤": a <= b, "≥": a >= b, "≠": a != b}[name])
    if name in ("!", "not_int", "~"):
        a = _num(args[0])
        return (not a) if isinstance(a, bool) else ~a
    if name in ("&", "|", "⊻", "xor", "and_int", "or_int", "xor_int"):
        a, b = _promote(_num(args[0]), _num(args[1]))   # Python's & | ^ are bitwise on ints, logic on bools
        if name in ("&", "and_int"):
            return a & b
        return a | b if name in ("|", "or_int") else a ^ b
    if name in ("<<", ">>", ">>>", "shl_int", "ashr_int", "lshr_int"):
        return _shift(name, _num(args[0]), _num(args[1]))
    if name in ("min", "max"):
        out = _num(args[0])
        for b in args[1:]:
            x, y = _promote(out, _num(b))
            out = (x if x <= y else y) if name == "min" else (x if x >= y else y)
        return out
    if name == "abs":
        a = _num(args[0])
        return _wrap(abs(a)) if isinstance(a, int) else abs(a)
    if name in ("sqrt", "exp", "log", "sin", "cos", "tan", "tanh"):
        a = _num(args[0])
        a = np.float64(a) if isinstance(a, int) else a
        with np.errstate(all="ignore"):
            return getattr(np, name)(a)
    if name in ("floor", "ceil", "trunc", "round"):
        a = _num(args[0])
        fn = {"floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "round": np.round}[name]
        return fn(a)
    if name == "^":
        a, b = _promote(_num(args[0]), _num(args[1]))
        with np.errstate(all="ignore"):
            return a ** b
    if name == "literal_pow":
        base, p = _num(args[1]), args[2]
        out = type(base)(1) if not isinstance(base, int) else 1
        for _ in range(p):
            out = _arith("*", out, base)
        return out
    if name in ("muladd", "fma"):
        return _arith("+", _arith("*", args[0], args[1]), args[2])
    if name == "ifelse":
        return args[1] if args[0] else args[2]
    if name in ("zero", "one"):
        t = args[0].t if isinstance(args[0], _Type) else type(_num(args[0]))
        return t(0 if name == "zero" else 1)
    if name == "float":
        a = _num(args[0])
        return np.float64(a) if isinstance(a, int) else a
    if name == "oftype":
        return type(_num(args[0]))(args[1])
    if name == "convert":
        return _convert(args[0].t, args[1])
    if name == "typeassert":
        return args[0]
    if name == "eltype":
        return _Type({np.dtype(np.float64): np.float64, np.dtype(np.float32): np.float32,
                      np.dtype(np.int64): int}[args[0].dtype])
    if name == "getindex":
        a, idx = args[0], args[1:]
        return _num(a[_index(a, idx)])
    if name == "setindex!":
        a, v, idx = args[0], args[1], args[2:]
        a[_index(a, idx)] = _convert(_elt(a), v)
        return a
    if name == "size":
        a, d = args
        return a.shape[d - 1] if d <= a.ndim else 1
    if name == "length":
        return int(args[0].size)
    if name == "eachindex":
        return _Range(1, 1, int(args[0].size))
    if name == "axes":
        a, d = args
        return _Range(1, 1, a.shape[d - 1] if d <= a.ndim else 1)
    if name == "OneTo":
        return _Range(1, 1, args[0])
    if name == ":":
        if len(args) == 2:
            return _Range(args[0], 1, args[1])
        return _Range(args[0], args[1], args[2])
    if name in ("firstindex", "lastindex"):
        d = args[1] if len(args) == 2 else 1
        return 1 if name == "firstindex" else args[0].shape[d - 1]
    if name == "iterate":
        r = args[0]
        if len(args) == 1:
            first = r.lo
            done = first > r.hi if r.step > 0 else first < r.hi
            return None if done else (first, first)
        nxt = args[1] + r.step
        done = nxt > r.hi if r.step > 0 else nxt < r.hi
        return None if done else (nxt, nxt)
    if name == "getfield":
        return args[0][args[1] - 1]
    if name == "tuple":
        return tuple(args)
    if name == "apply_type":
        return args[1]      # Val{n}: the exponent of literal_pow
    if name in _TYPES:
        return _convert(_TYPES[name], args[0])
    raise JuliaNotSupportedError(f"the interpreter does not know the function {name}")


def _elt(a):
    return {np.dtype(np.float64): np.float64, np.dtype(np.float32): np.float32, np.dtype(np.int64): int,
            np.dtype(np.bool_): bool}[a.dtype]


def _convert(t, v):
    v = _num(v)
    if t is int:
        if _is_float(v):
            if v != math.floor(v):
                raise ValueError(f"InexactError: Int64({v})")
            return int(v)
        return int(v)
    if t is bool:
        return bool(v)
    return t(v)


def _index(a, idx):
    if len(idx) != a.ndim:
        raise JuliaNotSupportedError(f"indexing a {a.ndim}-d array with {len(idx)} indices")
    out = []
    for i, n in zip(idx, a.shape):
        if not 1 <= i <= n:
            raise JuliaBoundsError(f"BoundsError: attempt to access {a.shape} array at index {tuple(idx)}")
        out.append(i - 1)
    return tuple(out)


def run(text_or_code, argtypes, *args, max_steps=50_000_000, **kwargs):
    """Execute the function on the arguments (Julia-shaped numpy arrays are updated in place)."""
    code = text_or_code if isinstance(text_or_code, CodeIR) else parse(text_or_code)
    names = list(argtypes)
    values = dict(zip(names, args))
    values.update(kwargs)
    slots = {}
    for name in names:
        jt = parse_type(argtypes[name])
        v = values[name]
        if jt.is_array:
            slots[name] = check_array(name, v, jt)
        else:
            slots[name] = _convert(_TYPES[{"float64": "Float64", "float32": "Float32", "int64": "Int64",
                                           "bool": "Bool"}[jt.dtype.name]], v)
    ssa = {}
    pc = 1
    steps = 0
    first_of_block = {b: numbers[0] for b, numbers in code.blocks.items()}

    def ev(e):
        if isinstance(e, SSA):
            return ssa[e.n]
        if isinstance(e, Slot):
            if e.name not in slots:
                raise JuliaNotSupportedError(f"UndefVarError: {e.name} not defined")
            return slots[e.name]
        if isinstance(e, Lit):
            if e.jtype == "Float64":
                return np.float64(e.value)
            if e.jtype == "Float32":
                return np.float32(e.value)
            if e.jtype == "Symbol":
                return _Func(e.value)
            return e.value
        if isinstance(e, Global):
            if e.name in _TYPES:
                return _Type(_TYPES[e.name])
            if e.name == "Val":
                return _Func("Val")
            return _Func(e.name)
        if isinstance(e, Call):
            fn = ev(e.fn)
            args_ = [ev(a) for a in e.args]
            if isinstance(fn, _Type):
                return _convert(fn.t, args_[0])
            if isinstance(fn, int):      # Val{n}() of literal_pow
                return fn
            return _call(fn.name, args_, slots)
        raise JuliaNotSupportedError(f"the interpreter cannot evaluate {e!r}")

    n_stmts = len(code.stmts)
    while True:
        steps += 1
        if steps > max_steps:
            raise RuntimeError("the interpreter ran more than max_steps statements")
        if pc > n_stmts:
            raise RuntimeError("control ran past the last statement")
        s = code.stmt(pc)
        if s.kind == "expr":
            ssa[pc] = ev(s.value)
            pc += 1
        elif s.kind == "assign":
            slots[s.target.name] = ev(s.value)
            pc += 1
        elif s.kind == "meta":
            pc += 1
        elif s.kind == "goto":
            pc = first_of_block[s.target]
        elif s.kind == "gotoifnot":
            c = ev(s.value)
            if not isinstance(c, (bool, np.bool_)):
                raise TypeError(f"non-boolean ({type(c).__name__}) used in boolean context at %{s.number}")
            pc = pc + 1 if c else first_of_block[s.target]
        elif s.kind == "return":
            v = ev(s.value)
            return v
        else:
            raise RuntimeError(f"reached `{s.text}`")
