"""Values of the translation other than scalar expressions: arrays, ranges, tuples, types, functions."""
from __future__ import annotations

from dataclasses import dataclass

from mascarpone.middleend.expr import Expr


@dataclass(frozen=True)
class NothingValue:
    """Julia's `nothing`."""


NOTHING_VALUE = NothingValue()


@dataclass(frozen=True)
class FunctionRef:
    """A known function used as a value (`Main.:+`, `Base.getindex`)."""
    name: str


@dataclass(frozen=True)
class TypeRef:
    """A type used as a value: a DType, a types.TypeValue, or ('Val', n) of literal_pow."""
    dtype: object


@dataclass(frozen=True)
class ArrayRef:
    """An array argument (by its Julia name)."""
    name: str


@dataclass(frozen=True)
class RangeValue:
    """`lo:step:hi` with an integer literal step (UnitRange, StepRange, Base.OneTo)."""
    lo: Expr
    step: int
    hi: Expr


@dataclass(frozen=True)
class TupleValue:
    """A tuple (`size(A)`, `Core.tuple(a, b)`, the element of `enumerate` or `zip`); taken apart by
    `Base.indexed_iterate` and `Core.getfield`."""
    items: tuple


@dataclass(frozen=True)
class EnumerateValue:
    """`enumerate(X)`: its elements are the tuples (k, X's k-th element)."""
    inner: object


@dataclass(frozen=True)
class ZipValue:
    """`zip(X, Y, ...)`: its elements are tuples, as many as the shortest has."""
    items: tuple


ITERABLE = (RangeValue, ArrayRef, EnumerateValue, ZipValue)
ALIASES = (ArrayRef, RangeValue, TypeRef, FunctionRef, TupleValue, EnumerateValue, ZipValue, NothingValue)


@dataclass(frozen=True)
class BroadcastValue:
    """`Base.broadcasted(f, args...)`: the lazy elementwise `f.(args...)` that `materialize!` writes."""
    fn: object       # a FunctionRef or TypeRef
    args: tuple      # numbers, ArrayRefs, nested BroadcastValues, functions and types
