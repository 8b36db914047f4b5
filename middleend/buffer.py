"""Buffers: the storage that Layer III maps computations onto and back-ends allocate."""
from __future__ import annotations

from .errors import DomainError, ScheduleError
from .expr import Access, Cast, Const, Expr, Sym, lift, simplify, pseudo_c
from .types import as_dtype, int64

BUFFER_KINDS = ("input", "output", "temporary")
#: how an array is split into banks (memories accessed in the same cycle): element k of a dimension goes
#: to bank k mod factor (cyclic), to bank k // ceil(extent / factor) (block), or every element is a
#: register of its own (complete)
PARTITION_KINDS = ("cyclic", "block", "complete")


def partition_spec(what, names, dim, factor, kind):
    """`(dim, factor, kind)` of a partitioning of the storage `what` whose dimensions are `names`, checked:
    `dim` an index or one of `names`; `factor` a positive integer (ignored, None, for 'complete')."""
    cmd = f"{what}.partition({dim!r}, {factor!r}, kind={kind!r})"
    if kind not in PARTITION_KINDS:
        raise ScheduleError(f"{cmd}: kind must be one of {', '.join(PARTITION_KINDS)}")
    if not isinstance(dim, (int, str)):
        dim = getattr(dim, "name", dim)
    if isinstance(dim, str):
        if dim not in names:
            raise ScheduleError(f"{cmd}: {what} has no dimension {dim!r}; its dimensions are {names}")
        dim = names.index(dim)
    if isinstance(dim, bool) or not isinstance(dim, int) or not 0 <= dim < len(names):
        raise ScheduleError(f"{cmd}: the dimension must be a name in {names} or an index in [0, {len(names)})")
    if kind == "complete":
        factor = None
    elif isinstance(factor, bool) or not isinstance(factor, int) or factor < 1:
        raise ScheduleError(f"{cmd}: a {kind} partitioning needs a positive integer factor")
    return dim, factor, kind
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
        raise DomainError(f"sizes and indices must be integers, got {pseudo_c(e)} of type {e.dtype}")
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
        #: (dim, factor, kind) per partitioned dimension (see `partition`), for back-ends with banked memories
        self.partitions = []
        self.memory = "global"
        #: the input whose values an output starts with, copied in (or bound in place) by the call,
        #: not by the kernel (see middleend/copy_in.py); None: the kernel writes all it holds
        self.initial_input = None
        #: {dimension: (variable, depth, offset)}: rings (storage_fold). The value at coordinate v of
        #: the variable lies at `offset mod depth` (offset: an expression of v, v itself for an output
        #: starting at 0; None for a tile), so the last `depth` values along it remain
        self.folds = {}
        #: a register tile's vector width (backends/common/promote.py): its last dimension is rounded up
        #: to whole vectors of that many elements, so a partial chunk may load and store whole vectors
        #: there (the lanes past the end are the tile's own); 0: not padded
        self.padded_lanes = 0

    def ring_text(self):
        """What a folded buffer holds, in words ('' when it is not folded)."""
        parts = []
        for _, (var, depth, offset) in sorted(self.folds.items()):
            at = "" if offset is None else pseudo_c(offset) if isinstance(offset, Sym) else f"({pseudo_c(offset)})"
            parts.append(f"the last {depth} values along {var}" + (f", at {at} mod {depth}" if at else ""))
        return "; ".join(parts)

    @property
    def ndim(self):
        return len(self.shape)

    def partition(self, dim, factor=None, kind="cyclic"):
        """Split dimension `dim` into banks that hardware reads in the same cycle (FPGA back-ends; other
        targets ignore it): `kind` 'cyclic' (element k in bank k mod factor), 'block' (consecutive runs
        of elements per bank) or 'complete' (one register per element). Returns the buffer."""
        spec = partition_spec(self.name, [f"d{k}" for k in range(self.ndim)], dim, factor, kind)
        self.partitions = [p for p in self.partitions if p[0] != spec[0]] + [spec]
        return self

    def __getitem__(self, idx):
        idx = idx if isinstance(idx, tuple) else (idx,)
        if len(idx) != self.ndim:
            raise DomainError(f"buffer {self.name} has {self.ndim} dimensions, indexed with {len(idx)}")
        return Access(self, [lift(i) for i in idx])

    def __repr__(self):
        return f"Buffer({self.name}, [{', '.join(pseudo_c(d) for d in self.shape)}], {self.dtype}, {self.kind})"
