"""Affine views of integer index expressions: sums of symbol terms with integer coefficients.

Used to find constant trip counts (`hi - lo`), the stride of an index along a
vectorized loop variable, and which sizes a shape dimension names. Index
arithmetic is int64 without overflow (the loop IR's contract), so wrap-around
is ignored here. A sub-expression that is not affine becomes an opaque atom,
keyed by its printed form, so equal sub-expressions still cancel.
"""
from __future__ import annotations

from mascarpone.middleend.expr import BinOp, Const, Expr, Sym, UnOp, pseudo_c, walk


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


def upper_bound(e: Expr):
    """A constant that no value of the integer expression `e` exceeds, where its form shows one
    (constants, `floormod` by a positive constant, `min`, `max`, sums, a constant subtracted), else
    None: the most iterations of a loop's last partial chunk, `floormod(N, 8)`."""
    c = constant_value(e)
    if c is not None:
        return c
    if not isinstance(e, BinOp):
        return None
    if e.op == "emod":
        return e.b.value - 1 if isinstance(e.b, Const) and e.b.value > 0 else None
    a = upper_bound(e.a)
    if e.op == "sub":
        b = constant_value(e.b)
        return None if a is None or b is None else a - b
    b = upper_bound(e.b)
    if e.op == "min":
        return min((x for x in (a, b) if x is not None), default=None)
    if e.op in ("max", "add") and a is not None and b is not None:
        return max(a, b) if e.op == "max" else a + b
    return None


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
