"""Affine views of integer index expressions: sums of symbol terms with integer coefficients.

Used to find constant trip counts (`hi - lo`), the stride of an index along a
vectorized loop variable, and which sizes a shape dimension names. Index
arithmetic is int64 without overflow (the loop IR's contract), so wrap-around
is ignored here. A sub-expression that is not affine becomes an opaque atom,
keyed by its printed form, so equal sub-expressions still cancel.
"""
from __future__ import annotations

from mascarpone.middleend.expr import BinOp, Const, Expr, Sym, UnOp, cast, pseudo_c, walk
from mascarpone.middleend.types import int64


class Affine:
    """`const + sum(coeff * term)`; a term is ('sym', name) or ('atom', text), where `exprs[text]` is an
    atom's expression (one of those that print as `text`)."""

    __slots__ = ("terms", "const", "exprs")

    def __init__(self, terms=None, const=0, exprs=None):
        self.terms = {k: v for k, v in (terms or {}).items() if v != 0}
        self.const = const
        self.exprs = exprs or {}

    def __add__(self, o):
        t = dict(self.terms)
        for k, v in o.terms.items():
            t[k] = t.get(k, 0) + v
        return Affine(t, self.const + o.const, {**self.exprs, **o.exprs})

    def scale(self, c):
        return Affine({k: v * c for k, v in self.terms.items()}, self.const * c, self.exprs)

    def __sub__(self, o):
        return self + o.scale(-1)

    @property
    def is_const(self):
        return not self.terms

    def coeff(self, name):
        """The coefficient of the symbol `name`."""
        return self.terms.get(("sym", name), 0)

    def atoms(self):
        """The opaque sub-expressions (non-affine parts)."""
        return [self.exprs[k[1]] for k in self.terms if k[0] == "atom"]

    def atom_terms(self):
        """(expression, coefficient) of each opaque sub-expression."""
        return [(self.exprs[k[1]], c) for k, c in self.terms.items() if k[0] == "atom"]


def _atom(e: Expr) -> Affine:
    text = pseudo_c(e)
    return Affine({("atom", text): 1}, exprs={text: e})


def linearize(e: Expr) -> Affine:
    """The affine form of an integer expression (non-affine parts become atoms)."""
    if isinstance(e, Const) and e.dtype.is_int:
        return Affine({}, e.value)
    if isinstance(e, Sym) and e.dtype.is_int and e.dtype.bits == 64:
        return Affine({("sym", e.name): 1})
    if isinstance(e, BinOp) and e.dtype.is_int and e.dtype.bits == 64:
        if e.op in ("add", "sub"):
            a, b = linearize(e.a), linearize(e.b)
            return a + b if e.op == "add" else a - b
        if e.op == "mul":
            a, b = linearize(e.a), linearize(e.b)
            if a.is_const:
                return b.scale(a.const)
            if b.is_const:
                return a.scale(b.const)
    if isinstance(e, UnOp) and e.op == "neg" and e.dtype.is_int and e.dtype.bits == 64:
        return linearize(e.a).scale(-1)
    return _atom(e)


def mentions(e: Expr, name: str) -> bool:
    """Whether the symbol `name` occurs anywhere in `e`."""
    return any(isinstance(n, Sym) and n.name == name for n in walk(e))


def constant_difference(hi: Expr, lo: Expr):
    """`hi - lo` as a Python int when it is the same for every value of the symbols, else None."""
    d = linearize(hi) - linearize(lo)
    return d.const if d.is_const else None


def constant_value(e: Expr):
    """The value of `e` when it is a compile-time integer constant, else None."""
    a = linearize(e)
    return a.const if a.is_const else None


def value_range(e: Expr, ranges=None):
    """(least, most): constants between which every value of the integer expression `e` lies, where its
    form shows them (constants, symbols given a range in `ranges` {name: (least, most)}, sums, products
    by a constant, `min`, `max`, `floormod` by a positive constant), else None. A partial chunk's trip
    count: `floormod(N, 8)` lies in (0, 7), and `j + 1` in (1, 8) for `j` in (0, 7)."""
    c = constant_value(e)
    if c is not None:
        return c, c
    if isinstance(e, Sym):
        return (ranges or {}).get(e.name)
    if not isinstance(e, BinOp):
        return None
    if e.op == "emod":
        return (0, e.b.value - 1) if isinstance(e.b, Const) and e.b.value > 0 else None
    a, b = value_range(e.a, ranges), value_range(e.b, ranges)
    if e.op in ("min", "max"):   # (min(x, 7) is at most 7 whatever x is)
        a, b = a or (None, None), b or (None, None)
        if e.op == "min":
            lo = None if None in (a[0], b[0]) else min(a[0], b[0])
            hi = min((x for x in (a[1], b[1]) if x is not None), default=None)
        else:
            lo = max((x for x in (a[0], b[0]) if x is not None), default=None)
            hi = None if None in (a[1], b[1]) else max(a[1], b[1])
        return None if lo is None and hi is None else (lo, hi)
    if a is None or b is None:
        return None
    if e.op == "add":
        return _sum(a[0], b[0]), _sum(a[1], b[1])
    if e.op == "sub":
        return _sum(a[0], b[1], -1), _sum(a[1], b[0], -1)
    if e.op == "mul" and b[0] == b[1] is not None:
        ends = [None if x is None else x * b[0] for x in a]
        return tuple(ends) if b[0] >= 0 else (ends[1], ends[0])
    return None


def _sum(x, y, sign=1):
    return None if x is None or y is None else x + sign * y


def stride_along(e: Expr, name: str):
    """How `e` changes when the symbol `name` grows by one.

    0 when `e` does not mention `name`; an int when `e` is affine in it; None
    when `e` depends on it in a non-affine way (through a product of symbols,
    a division, a load...).
    """
    if not mentions(e, name):
        return 0
    a = linearize(e)
    if any(mentions(x, name) for x in a.atoms()):
        return None
    return a.coeff(name)


def split_along(e: Expr, name: str):
    """`(moving, fixed)`: the integer index `e` as the sum of its terms that mention the symbol `name` and
    of those that do not (its constant among them), each an int64 expression, or None where there are
    none. A gather's lanes share the address of their moving part; the fixed part is one offset."""
    a = linearize(e)
    moving, fixed = [], [] if a.const == 0 else [Const(a.const, int64)]
    for key, coeff in a.terms.items():
        term = Sym(key[1], int64) if key[0] == "sym" else cast(int64, a.exprs[key[1]])
        if coeff != 1:
            term = BinOp("mul", Const(coeff, int64), term)
        (moving if mentions(term, name) else fixed).append(term)

    def total(terms):
        out = None
        for t in terms:
            out = t if out is None else BinOp("add", out, t)
        return out
    return total(moving), total(fixed)
