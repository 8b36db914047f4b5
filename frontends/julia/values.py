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
    """`lo:step:hi` with an integer literal step (UnitRange, StepRange, Base.OneTo). `of` names the N-d
    array (N >= 2) whose linear indices 1:length(A) it is (eachindex(A), 1:length(A), LinearIndices(A)):
    `for` visits them in a loop per dimension of A, as it visits A's elements."""
    lo: Expr
    step: int
    hi: Expr
    of: str | None = None


@dataclass(frozen=True)
class ArrayLength:
    """`length(A)` (or `lastindex(A)`) of an N-d array A (N >= 2): the number size(A, 1) * ... * size(A, N),
    which remembers A so that `1:length(A)` is A's linear indices."""
    array: str
    number: Expr


@dataclass(frozen=True)
class LinearIndex:
    """A linear index of the N-d array `array` (N >= 2) that a loop nest over A's dimensions visits: the
    number i1 + (i2 - 1) * size(A, 1) + ... (not affine), and its Cartesian index (i1, ..., iN), which
    `B[i]` reads for an array B of A's sizes (an affine access)."""
    array: str
    index: tuple
    number: Expr


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
#: numbers that remember where they come from: an alias where assigned once, else their `number`
TAGGED_NUMBERS = (ArrayLength, LinearIndex)


def number(v):
    """The number a value stands for where Julia uses it as a number (arithmetic, stores, calls)."""
    return v.number if isinstance(v, TAGGED_NUMBERS) else v


@dataclass(frozen=True)
class BroadcastValue:
    """`Base.broadcasted(f, args...)`: the lazy elementwise `f.(args...)` that `materialize!` writes."""
    fn: object       # a FunctionRef or TypeRef
    args: tuple      # numbers, ArrayRefs, nested BroadcastValues, functions and types
