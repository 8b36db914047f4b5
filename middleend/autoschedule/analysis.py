"""The program as the model sees it: per computation its loops, their trip counts for the sizes
being scheduled for, and each memory reference's coefficients per loop; per producer its readers.

Storage is row-major (the last index is stride-one) for every buffer, including the arrays
of Julia functions, whose front-end writes Julia's column-major indices reversed.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import islpy as isl

from ..affine import affine_text
from ..expr import Access, BinOp, Call, Cast, Const, Select, Sym, UnOp, walk
from ..layout import inline_reads, logical_read, logical_write, scheduled_read_index

#: bytes of one cache line: a stride below it still reuses each line it touches
CACHE_LINE = 64


@dataclass
class Reference:
    """One memory reference of a computation: the array it touches, per index dimension the
    coefficient of each loop variable ({} for a constant index, None where the index is not affine)
    and the constant term (None where it is not an integer: it involves a size, or the index is not
    affine), and its element size."""

    array: str
    dims: list
    elem_bytes: int
    is_write: bool = False
    constants: list = field(default_factory=list)

    def coefficient(self, var, dim):
        """The coefficient of `var` in index dimension `dim`; None when that index is not affine."""
        coeffs = self.dims[dim]
        return None if coeffs is None else coeffs.get(var, 0)

    def touches(self, var) -> bool:
        """Whether the element this reference touches moves with `var` (or might: a non-affine index)."""
        return any(c is None or c.get(var, 0) != 0 for c in self.dims)

    def consecutive_in(self, var) -> bool:
        """Whether successive iterations of `var` touch neighbouring elements (within a cache line)."""
        if not self.dims or any(c is None or c.get(var, 0) != 0 for c in self.dims[:-1]):
            return False
        last = self.dims[-1]
        return last is not None and 0 < abs(last.get(var, 0)) * self.elem_bytes < CACHE_LINE


@dataclass
class Stage:
    """A computation with its loops' trip counts and its memory references."""

    comp: object
    extents: dict                 # variable -> trip count for the sizes scheduled for (None: unbounded)
    refs: list = field(default_factory=list)
    context: object = None        # the sizes scheduled for (an isl parameter set), where known

    @property
    def name(self):
        return self.comp.name

    @property
    def vars(self):
        return [v.name for v in self.comp.vars]

    def trip(self, var, default=256):
        """The trip count of `var`, or `default` where it is unknown."""
        e = self.extents.get(var)
        return default if e is None else e

    def work(self) -> int:
        """Iterations of the whole nest (the stage's weight in the search)."""
        n = 1
        for v in self.vars:
            n *= max(1, self.trip(v))
        return n


def elements(stage, ref) -> int:
    """Elements of `ref`'s array that the nest touches (the box its affine indices span)."""
    count = 1
    for coeffs in ref.dims:
        count *= 1 + sum(abs(c) * (stage.trip(var) - 1) for var, c in (coeffs or {}).items())
    return count


def untouched(comp) -> bool:
    """Whether no command has changed the computation's loops, tags or placement (a front-end's
    identity set_schedule, or its nesting of statements as in the source, leaves it untouched)."""
    f = comp.function
    placed = any(not from_source(e, f) and (e[1] is comp or e[2] is comp) for e in f._ordering)
    return (not placed and not comp.inlined and comp.compute_at_target is None and not comp.tags
            and comp.loops == [v.name for v in comp.vars])


def analyze(function, context) -> dict:
    """{computation name: Stage} for every computation that is not inlined, under `context`
    (the function's parameters, usually fixed to the sizes scheduled for)."""
    stages = {}
    for comp in function.computations:
        if comp.inlined:
            continue
        stages[comp.name] = Stage(comp, _extents(comp, context), references(comp), context)
    return stages


def references(comp, stored=False) -> list:
    """The computation's memory references, its write first, then its reads: at the elements they touch
    in the program's meaning, or with `stored`, where a layout of the schedule's (store_in) puts them."""
    array, index = logical_write(comp)
    coefficients, constants = _affine_parts(comp, index)
    refs = [Reference(array, coefficients, comp.dtype.bytes, True, constants)]
    for node in _reads(comp):
        array, index = logical_read(node.target, node.indices)
        if stored:
            index = scheduled_read_index(node.target, node.indices)
        coefficients, constants = _affine_parts(comp, index)
        refs.append(Reference(array, coefficients, node.dtype.bytes, constants=constants))
    return refs


def constant_lower_bound(comp, var):
    """The first value of `comp`'s variable `var` when it is the same constant for all sizes, else None."""
    names = [v.name for v in comp.vars]
    if var not in names or comp.domain.is_empty():
        return None
    values = {piece.get_constant_val().to_python() if piece.is_cst() else None
              for _, piece in comp.domain.dim_min(names.index(var)).get_pieces()}
    return values.pop() if len(values) == 1 else None


def from_source(entry, function) -> bool:
    """Whether the placement `entry` (how, computation, other, level) is the front-end's nesting of
    the source program (`original_ordering`) rather than a command (compared by identity)."""
    original = getattr(function, "original_ordering", None) or []
    return any(all(a is b for a, b in zip(entry, o)) for o in original)


def readers(function, producer) -> list:
    """[(reader computation, [Access nodes reading producer's storage])] of the computations that
    read `producer` directly (an update writing its storage is not a reader)."""
    out = []
    for comp in function.computations:
        if comp.storage_owner is producer.storage_owner or comp.inlined:
            continue
        nodes = [n for e in _exprs(comp) for n in walk(e)
                 if isinstance(n, Access) and getattr(n.target, "storage_owner", None) is producer]
        if nodes:
            out.append((comp, nodes))
    return out


def is_copy(comp) -> bool:
    """Whether the computation's value is one read of another array, converted or not (an input's
    wrapper): reading it where it is used costs what reading a stored copy would."""
    e = comp.expr
    while isinstance(e, Cast):
        e = e.a
    return isinstance(e, Access) and comp.predicate is None


def constant_offsets(nodes, reader) -> bool:
    """Whether every access in `nodes` reads at the reader's own variables plus constants (a stencil,
    or a pointwise read), the shape compute_at handles with small overlaps between tiles."""
    names = {v.name for v in reader.vars}
    for n in nodes:
        for idx in n.indices:
            text = affine_text(idx)
            if text is None:
                return False
            coeffs = _aff_coefficients(text, sorted(names), sorted(reader.function.param_names))
            if coeffs is None or any(abs(c) > 1 for c in coeffs.values()) or len(coeffs) > 1:
                return False
    return True


def reads_each_element_once(nodes, reader) -> bool:
    """Whether the accesses in `nodes` read no element twice over the reader's iterations: each indexes
    its dimensions by the reader's variables, each variable once, or by constants; all put the variables
    in the same dimensions, and no two have the same constants (the channels of a pixel:
    `interp[x, y, 0] / interp[x, y, 1]`). Inlining such a producer computes nothing twice."""
    names = {v.name for v in reader.vars}
    layouts, constants = set(), set()
    for n in nodes:
        layout = tuple(i.name if isinstance(i, Sym) and i.name in names else None for i in n.indices)
        fixed = tuple(i.value for i in n.indices if isinstance(i, Const))
        if sorted(d for d in layout if d) != sorted(names) or len(names) + len(fixed) != len(n.indices):
            return False
        layouts.add(layout)
        constants.add(fixed)
    return len(layouts) == 1 and len(constants) == len(nodes)


#: operations a producer's value may take for it to be inlined into several readers (recomputed by each)
CHEAP_OPS = 4


def recomputed_cheaply(comp, reads) -> bool:
    """Whether inlining `comp` into each of its readers (`reads`: `readers`' list) costs less than storing
    it: its value takes at most CHEAP_OPS operations, reads other arrays only at its own point, and each
    reader reads it only at the reader's own point (nb's `f = 255 - img`, read by `h = f + g` and
    `k = f - g`). Each value is then computed once per reader instead of stored and loaded back."""
    if comp.predicate is not None:
        return False
    ops = 0
    for n in walk(comp.expr):
        if isinstance(n, Access) and not _at_own_point(n, comp):
            return False
        ops += isinstance(n, (BinOp, UnOp, Select, Call, Cast))
    return ops <= CHEAP_OPS and all(_at_own_point(n, reader) for reader, nodes in reads for n in nodes)


def _at_own_point(access, comp) -> bool:
    """Whether `access` indexes each dimension by a variable of `comp`, each of them once."""
    names = [i.name if isinstance(i, Sym) else None for i in access.indices]
    return None not in names and sorted(names) == sorted(v.name for v in comp.vars)


def _exprs(comp):
    return [comp.expr] + ([comp.predicate] if comp.predicate is not None else [])


def _reads(comp):
    return [n for e in _exprs(comp) for n in walk(inline_reads(e)) if isinstance(n, Access)]


def _extents(comp, context) -> dict:
    dom = comp.domain.intersect_params(context)
    out = {}
    for k, v in enumerate(comp.vars):
        if dom.is_empty():
            out[v.name] = 0
            continue
        lo, hi = dom.dim_min_val(k), dom.dim_max_val(k)
        out[v.name] = hi.to_python() - lo.to_python() + 1 if lo.is_int() and hi.is_int() else None
    return out


def _affine_parts(comp, index) -> tuple:
    """([coefficients per index dimension], [constant term per dimension]) of an access (see Reference)."""
    names = [v.name for v in comp.vars]
    params = sorted(comp.function.param_names)
    parts = [_aff_parts(text, names, params) if text is not None else (None, None)
             for text in map(affine_text, index)]
    return [c for c, _ in parts], [k for _, k in parts]


def _aff_coefficients(text, names, params):
    """{variable: nonzero coefficient} of an affine index, None when isl cannot read it as one."""
    return _aff_parts(text, names, params)[0]


def _aff_parts(text, names, params):
    """({variable: nonzero coefficient}, the integer constant term or None where a size takes part) of
    an affine index; (None, None) when isl cannot read it as one."""
    try:
        aff = isl.PwAff(f"[{', '.join(params)}] -> {{ [{', '.join(names)}] -> [({text})] }}")
    except isl.Error:
        return None, None
    pieces = aff.get_pieces()
    if len(pieces) != 1:
        return None, None
    a = pieces[0][1]
    out = {}
    for k, n in enumerate(names):
        c = a.get_coefficient_val(isl.dim_type.in_, k)
        if not c.is_int():
            return None, None
        if c.to_python():
            out[n] = c.to_python()
    if any(not a.get_div(k).is_cst() for k in range(a.dim(isl.dim_type.div))):
        return None, None     # a floor division of the variables: not a plain stride
    constant = a.get_constant_val()
    sized = any(not a.get_coefficient_val(isl.dim_type.param, k).is_zero()
                for k in range(a.dim(isl.dim_type.param)))
    return out, (constant.to_python() if constant.is_int() and not sized else None)
