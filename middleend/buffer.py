"""Buffers: the storage that Layer III maps computations onto and back-ends allocate."""
from __future__ import annotations

from .errors import DomainError
from .expr import Access, Cast, Const, Expr, Sym, lift, simplify, to_c
from .types import as_dtype, int64

BUFFER_KINDS = ("input", "output", "temporary")
#: where a buffer lives on a GPU: device memory ("global"), the read-only constant cache ("constant",
#: `Input.gpu_constant`) or the memory a thread block shares ("shared", `cache_shared`); other
#: targets keep every buffer in ordinary memory
MEMORY_SPACES = ("global", "constant", "shared")


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
    return simplify(_widen(e))


def _widen(n: Expr) -> Expr:
    """Integer index arithmetic at int64; float parts keep their types (see `_keep_types`)."""
    if isinstance(n, Sym):
        return Sym(n.name, int64)
    if isinstance(n, Const):
        return Const(n.value, int64) if n.dtype.is_int else n
    if n.dtype.is_float:
        return _keep_types(n)
    kids = n.children
    if kids:
        new = tuple(_widen(k) for k in kids)
        if any(a is not b for a, b in zip(new, kids)):
            n = n.rebuild(new)
    if n.dtype.is_int and n.dtype != int64 and isinstance(n, (Access, Cast)):
        return Cast(int64, n)
    return n    # other nodes are rebuilt from widened children and take their type


def _keep_types(n: Expr) -> Expr:
    """A float part of an index at its own types, with each narrow variable the value it has there
    (`(int32)v` of the int64 loop variable): a coordinate computed in float from int32 variables
    converts 32-bit integers, as the source program does, which vectorizes (int64 to float does not)."""
    if isinstance(n, Sym):
        return n if n.dtype == int64 or not n.dtype.is_int else Cast(n.dtype, Sym(n.name, int64))
    if isinstance(n, Access):   # its indices are index arithmetic again
        new = tuple(_widen(k) for k in n.children)
        return n.rebuild(new) if any(a is not b for a, b in zip(new, n.children)) else n
    kids = n.children
    if kids:
        new = tuple(_keep_types(k) for k in kids)
        if any(a is not b for a, b in zip(new, kids)):
            n = n.rebuild(new)
    return n


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
        self.memory = "global"

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
