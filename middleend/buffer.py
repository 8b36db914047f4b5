"""Buffers: the storage that Layer III maps computations onto and back-ends allocate."""
from __future__ import annotations

from .errors import DomainError
from .expr import Access, Cast, Const, Expr, Sym, lift, simplify, to_c, transform
from .types import as_dtype, int64

BUFFER_KINDS = ("input", "output", "temporary")


def as_index_expr(e) -> Expr:
    """An int64 expression for index arithmetic (shapes, bounds, indices).

    Params and variables become int64 symbols of the same name; narrower
    integer values computed from data (a load, a cast) are sign- or
    zero-extended at their own type first. Float or bool parts of a
    data-dependent index (a coordinate computed in float and converted) keep
    their types; only the value of the whole must be an integer.
    """
    e = lift(e)
    if not e.dtype.is_int:
        raise DomainError(f"sizes and indices must be integers, got {to_c(e)} of type {e.dtype}")

    def widen(n):
        if isinstance(n, Sym):
            return Sym(n.name, int64)
        if isinstance(n, Const):
            return Const(n.value, int64) if n.dtype.is_int else None
        if n.dtype.is_int and n.dtype != int64 and isinstance(n, (Access, Cast)):
            return Cast(int64, n)
        return None  # other nodes are rebuilt from widened children and take their type

    return simplify(transform(e, widen))


class Buffer:
    """Dense row-major storage: a name, a shape (ints or expressions of Params), an element type, a kind.

    kind is 'input' (read from the caller), 'output' (returned to the caller) or
    'temporary' (allocated by the kernel where it lives).
    """

    def __init__(self, name, shape, dtype, kind="temporary"):
        if kind not in BUFFER_KINDS:
            raise DomainError(f"buffer {name}: kind must be one of {BUFFER_KINDS}, got {kind!r}")
        self.name = name
        self.dtype = as_dtype(dtype)
        self.kind = kind
        self.shape = tuple(as_index_expr(d) for d in shape)
        # outputs whose elements are not all written start zeroed; user-declared ones always do
        self.zero_init = kind == "output"

    @property
    def ndim(self):
        return len(self.shape)

    def __getitem__(self, idx):
        idx = idx if isinstance(idx, tuple) else (idx,)
        if len(idx) != self.ndim:
            raise DomainError(f"buffer {self.name} has {self.ndim} dimensions, indexed with {len(idx)}")
        return Access(self, [lift(i) for i in idx])

    def __repr__(self):
        return f"Buffer({self.name}, [{', '.join(to_c(d) for d in self.shape)}], {self.dtype}, {self.kind})"
