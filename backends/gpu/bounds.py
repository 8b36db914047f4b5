"""Ranges of integer index expressions over ranges of their symbols: the grid and block sizes of a launch.

A loop of a kernel runs from `lo` to `hi - 1`, where both may depend on the
loops around it (a thread loop `min(16, N - 16*b)` long in block `b`). Its
largest trip count is found by writing `hi - lo` as a min/max tree of affine
forms (a difference distributes over min and max, so `16*b` cancels) and
bounding each affine form over the box of its symbols' ranges.
"""
from __future__ import annotations

import math

from mascarpone.middleend.expr import BinOp, Cast, Const, Select, Sym, UnOp

INF = math.inf


def _mul(c, v):
    return 0 if c == 0 else c * v


class _Leaf:
    """An affine form `const + sum(coeff * symbol)` plus an interval for the parts that are not affine."""

    __slots__ = ("coeffs", "const", "rest")

    def __init__(self, coeffs=None, const=0, rest=(0, 0)):
        self.coeffs = {k: v for k, v in (coeffs or {}).items() if v}
        self.const = const
        self.rest = rest

    def plus(self, other, sign):
        coeffs = dict(self.coeffs)
        for k, v in other.coeffs.items():
            coeffs[k] = coeffs.get(k, 0) + sign * v
        lo, hi = (other.rest if sign > 0 else (-other.rest[1], -other.rest[0]))
        return _Leaf(coeffs, self.const + sign * other.const, (self.rest[0] + lo, self.rest[1] + hi))

    def scale(self, c):
        lo, hi = _mul(c, self.rest[0]), _mul(c, self.rest[1])
        return _Leaf({k: c * v for k, v in self.coeffs.items()}, c * self.const, (min(lo, hi), max(lo, hi)))

    def range(self, env):
        lo = hi = self.const
        for name, c in self.coeffs.items():
            a, b = env.get(name, (-INF, INF))
            lo += min(_mul(c, a), _mul(c, b))
            hi += max(_mul(c, a), _mul(c, b))
        return lo + self.rest[0], hi + self.rest[1]


def _tree(e, env):
    """`e` as a _Leaf or (op, [trees]) with op 'min' or 'max'."""
    if isinstance(e, Const) and e.dtype.is_int:
        return _Leaf({}, e.value)
    if isinstance(e, Sym) and e.dtype.is_int and e.dtype.bits == 64:
        return _Leaf({e.name: 1})
    if isinstance(e, BinOp) and e.dtype.is_int:
        if e.op in ("min", "max"):
            return (e.op, [_tree(e.a, env), _tree(e.b, env)])
        if e.op in ("add", "sub"):
            return _combine(_tree(e.a, env), _tree(e.b, env), 1 if e.op == "add" else -1)
        if e.op == "mul":
            for c, other in ((e.a, e.b), (e.b, e.a)):
                if isinstance(c, Const):
                    return _scale(_tree(other, env), c.value)
    if isinstance(e, UnOp) and e.op == "neg":
        return _scale(_tree(e.a, env), -1)
    return _Leaf({}, 0, expr_range(e, env, atom=True))


def _combine(x, y, sign):
    if isinstance(x, tuple):
        return (x[0], [_combine(c, y, sign) for c in x[1]])
    if isinstance(y, tuple):
        op = y[0] if sign > 0 else ("min" if y[0] == "max" else "max")
        return (op, [_combine(x, c, sign) for c in y[1]])
    return x.plus(y, sign)


def _scale(t, c):
    if isinstance(t, tuple):
        op = t[0] if c >= 0 else ("min" if t[0] == "max" else "max")
        return (op, [_scale(x, c) for x in t[1]])
    return t.scale(c)


def _range_of_tree(t, env):
    if isinstance(t, _Leaf):
        return t.range(env)
    parts = [_range_of_tree(c, env) for c in t[1]]
    pick = min if t[0] == "min" else max
    return pick(p[0] for p in parts), pick(p[1] for p in parts)


def expr_range(e, env, atom=False):
    """(lo, hi), inclusive, of the integer expression `e` when each symbol lies in its range in `env`
    ({name: (lo, hi)}; a symbol not there is unbounded). Bounds may be -inf or inf."""
    if not atom:
        return _range_of_tree(_tree(e, env), env)
    if isinstance(e, BinOp) and e.dtype.is_int and e.op in ("ediv", "div") and isinstance(e.b, Const) \
            and e.b.value > 0:
        lo, hi = expr_range(e.a, env)
        d = e.b.value
        # floor for ediv; truncation differs only below zero, where floor is the lower one
        return (lo if lo in (-INF, INF) else lo // d if e.op == "ediv" or lo >= 0 else -((-lo) // d),
                hi if hi in (-INF, INF) else hi // d if e.op == "ediv" or hi >= 0 else -((-hi) // d))
    if isinstance(e, BinOp) and e.dtype.is_int and e.op == "mul":
        (a, b), (c, d) = expr_range(e.a, env), expr_range(e.b, env)
        if INF in (abs(a), abs(b), abs(c), abs(d)):
            return e.dtype.min_value(), e.dtype.max_value()
        products = (a * c, a * d, b * c, b * d)
        if min(products) < e.dtype.min_value() or max(products) > e.dtype.max_value():
            return e.dtype.min_value(), e.dtype.max_value()   # (it may wrap)
        return min(products), max(products)
    if isinstance(e, Select):
        a, b = expr_range(e.t, env), expr_range(e.f, env)
        return min(a[0], b[0]), max(a[1], b[1])
    if isinstance(e, Cast) and e.dtype.is_int and e.a.dtype.is_int and e.dtype.bits >= e.a.dtype.bits \
            and (e.dtype.is_signed or not e.a.dtype.is_signed):
        return expr_range(e.a, env)
    if e.dtype.is_int:
        return e.dtype.min_value(), e.dtype.max_value()
    return -INF, INF


def most_iterations(lo, hi, env):
    """The largest `hi - lo` for symbols in their ranges (inf when unbounded), at least 0."""
    return max(_range_of_tree(_combine(_tree(hi, env), _tree(lo, env), -1), env)[1], 0)


def constant_iterations(lo, hi):
    """The trip count `hi - lo` when it is the same for every value of the symbols (`16*b` to `16*b + 16`:
    16), else None."""
    t = _combine(_tree(hi, {}), _tree(lo, {}), -1)
    if isinstance(t, _Leaf) and not t.coeffs and t.rest == (0, 0):
        return max(int(t.const), 0)
    return None


def exact_at_points(e) -> bool:
    """Whether `expr_range` gives `e`'s value exactly when each symbol has one value: `e` is built of
    integer constants, int64 symbols, `+ - min max`, products by a constant and divisions by a positive
    constant (a select or another operation would make it a bound)."""
    if isinstance(e, Const):
        return e.dtype.is_int
    if isinstance(e, Sym):
        return e.dtype.is_int and e.dtype.bits == 64
    if isinstance(e, UnOp):
        return e.op == "neg" and exact_at_points(e.a)
    if isinstance(e, BinOp) and e.dtype.is_int:
        if e.op in ("add", "sub", "min", "max"):
            return exact_at_points(e.a) and exact_at_points(e.b)
        if e.op == "mul":
            return any(isinstance(c, Const) and exact_at_points(o) for c, o in ((e.a, e.b), (e.b, e.a)))
        if e.op in ("ediv", "div"):
            return isinstance(e.b, Const) and e.b.value > 0 and exact_at_points(e.a)
    return False
