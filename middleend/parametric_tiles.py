"""Tiles whose sizes are run-time parameters (parametric tiling, as Hartono et al., ICS'09).

`c.tile(i, j, Ti, Tj)` with `Param` sizes cannot be written as an isl map (`i = Ti*i0 + i1` is not
affine), so the band keeps its loops in the schedule and is cut after code generation: each band loop
`for (v = lo; v < hi; v++)` becomes a tile loop `for (v_t = 0; v_t < ceil((hi - lo) / T); v_t++)`
outside the band and a point loop over `[lo + v_t*T, min(lo + (v_t + 1)*T, hi))` inside it, with the
full tiles generated apart from the partial ones (no `min` in their bounds). One compiled kernel then
runs every tile size it is called with, which is what a search over tile sizes wants.

What makes it legal is checked on the exact dependences, as every schedule is: the band must be
permutable (no dependence between its instances goes backwards along any of its loops), and the point
loop vectorized must carry none within a chunk. A parallel tile loop is its band loop tagged parallel
(checked as every tag is: no dependence crosses that loop's iterations, so none crosses its tiles).
What makes it expressible is checked on the generated loops: the band's loops must nest perfectly
(nothing between them), and a bound that depends on an outer loop of the band (a skewed band) must be
affine in it (or a max or min of such): the tile loop then runs over the bound's extremes in the tile
of the outer loops, and the point loop over what the tile and the bound share.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import reduce
from itertools import product

import islpy as isl

from . import loopir as L
from .errors import IllegalScheduleError, ScheduleError
from .expr import BinOp, Const, Sym, binop, floordiv, max_, min_, pseudo_c, simplify, substitute, walk
from .types import int64


@dataclass(frozen=True)
class ParametricBand:
    """A band of a computation's loops tiled by sizes given at call time."""

    loops: tuple           # the band's loops (isl loops of the computation), outermost first
    sizes: tuple           # the size parameter of each, by name
    tile_loops: tuple      # the names of the tile loops made around the band
    command: str           # the command that made it, as history() shows it
    vector: int = 0        # lanes of the innermost point loop (0: not vectorized)


def size_name(size, cmd) -> str:
    """The name of a tile size given as a Param, checked."""
    from .algorithm import Param
    if not isinstance(size, Param):
        raise ScheduleError(f"{cmd}: a parametric tile size must be an ms.Param, got {size!r}")
    return size.name


# legality ---------------------------------------------------------------------------------------

def violations(stmts, checked, context):
    """(statement, band, what, kind, dependence map, witness) for each band a dependence forbids.

    `checked` is legality's list of (kind, dependence, source times, sink times, pairs)."""
    out = []
    for s in stmts:
        for band in s.comp.parametric_bands:
            ks = [s.prefix_depth + k for k in positions(s.comp.name, s.comp.loops, band)]
            for what, carried in _forbidden(band, ks, s):
                for kind, m, ts, tk, pairs in checked:
                    space = ts.get_space().range()
                    times = ts.apply_range(carried(space)).apply_range(tk.reverse())
                    bad = pairs.intersect(times.intersect_params(context))
                    if not bad.is_empty():
                        out.append((s, band, what, kind, m, bad))
                        break
    return out


def positions(comp_name, loops, band) -> list:
    """The positions of the band's loops among a computation's `loops`, which must hold them, adjacent
    and in order."""
    k = loops.index(band.loops[0]) if band.loops[0] in loops else -1
    if k < 0 or tuple(loops[k:k + len(band.loops)]) != band.loops:
        raise ScheduleError(f"{comp_name}: loops {', '.join(band.loops)} are tiled by {band.command} and "
                            f"must stay adjacent, in that order (the loops would be {loops}); give "
                            f"loop commands before the parametric tile")
    return list(range(k, k + len(band.loops)))


def _forbidden(band, ks, s):
    """(what the band does, time pairs -> the pairs of times no dependence may join) for the band's
    permutability and the vectorized point loop (a parallel tile loop is its band loop's tag, checked as
    every tag is)."""
    first = 2 * ks[0] + 1
    betas = s.betas[:ks[0] + 1]
    yield "tiles", lambda space: _within(space, first, betas, backwards=[2 * k + 1 for k in ks])
    if band.vector:
        k = ks[-1]
        yield f"vectorizes point loop {band.loops[-1]}", \
            lambda space: _within(space, 2 * k + 1, s.betas[:k + 1], differs=2 * k + 1)


def _within(space, p, betas, backwards=(), differs=None):
    """Pairs of times equal above dimension p, the first in the nest `betas` places it, and either
    going backwards along one of the dimensions `backwards` or differing at `differs`."""
    n = space.dim(isl.dim_type.set)
    a, b = [f"a{i}" for i in range(n)], [f"b{i}" for i in range(n)]
    common = [f"a{i} = b{i}" for i in range(p)] + [f"a{2 * j} = {beta}" for j, beta in enumerate(betas)]
    alternatives = [f"b{d} < a{d}" for d in backwards] or [f"a{differs} != b{differs}"]
    text = " or ".join(f"({' and '.join(common + [alt])})" for alt in alternatives)
    return isl.Map(f"{{ [{', '.join(a)}] -> [{', '.join(b)}] : {text} }}")


def raise_first(found, witness, short):
    """Raise IllegalScheduleError for the first of `violations`' findings."""
    s, band, what, kind, m, bad = found[0]
    src, snk = m.get_tuple_name(isl.dim_type.in_), m.get_tuple_name(isl.dim_type.out)
    if what == "tiles":
        why = (f"the band {', '.join(band.loops)} of {s.name} is not permutable: a {kind} dependence from "
               f"{src} to {snk} goes backwards along one of its loops ({witness(bad)}), so tiles of some "
               f"sizes would run it in the wrong order; skew the band first, or tile other loops")
    else:
        why = (f"{band.command} {what}, but a {kind} dependence from {src} to {snk} crosses its "
               f"iterations ({witness(bad)})")
    raise IllegalScheduleError(f"{why}; by {band.command}. Dependence: {short(m)}", source=src, sink=snk,
                               dependence=m, command=band.command)


# the loop IR pass -------------------------------------------------------------------------------

def strip_mine(body, bands, fixed, params):
    """`body` with every band of `bands` ({computation name: [ParametricBand]}) cut into tile loops
    around point loops; a size in `fixed` ({name: value}) is that constant. The tile loops' variables
    get names no loop, size parameter (`params`, derived sizes included) or tile size uses."""
    if not bands:
        return body
    taken = set(params) | {n.name for e in L.walk_exprs(body) for n in walk(e) if isinstance(n, Sym)}
    taken |= {st.var for st in L.walk_stmts(body) if isinstance(st, L.For)}
    taken |= {n for comp_bands in bands.values() for b in comp_bands for n in b.sizes}
    return _Cutter(bands, fixed, taken).visit(body)


class _Cutter:
    """The cut of every band in one loop IR, naming the tile loops apart from every name in use."""

    def __init__(self, bands, fixed, taken):
        self.bands, self.fixed, self.taken = bands, fixed, taken

    def visit(self, s):
        if isinstance(s, L.For):
            for comp_name, comp_bands in self.bands.items():
                for band in comp_bands:
                    if (comp_name, band.loops[0]) in s.origin:
                        return _tile(s, comp_name, band, self)
            return replace(s, body=self.visit(s.body))
        if isinstance(s, L.Block):
            return L.Block([self.visit(c) for c in s.body])
        if isinstance(s, L.If):
            return L.If(s.cond, self.visit(s.then), None if s.else_ is None else self.visit(s.else_))
        if isinstance(s, L.Allocate):
            return L.Allocate(s.buffer, self.visit(s.body))
        return s

    def fresh(self, base):
        from .schedule import fresh_name    # (schedule imports this module)
        name = fresh_name(base, self.taken)
        self.taken.add(name)
        return name


def _tile(outer, comp_name, band, cutter):
    nest = [outer]
    for loop in band.loops[1:]:
        inner = _only_statement(nest[-1].body)
        if not (isinstance(inner, L.For) and (comp_name, loop) in inner.origin):
            found = "nothing" if inner is None else _describe(nest[-1].body)
            raise ScheduleError(f"{band.command}: loop {loop} of {comp_name} must be the only statement in "
                                f"loop {band.loops[len(nest) - 1]} to be tiled with it, but that loop holds "
                                f"{found}; tile loops that nest perfectly (a vector remainder or another "
                                f"computation between them prevents it)")
        nest.append(inner)
    band_vars = [f.var for f in nest]
    skewed = [bool(_mentions(f.lo, band_vars) | _mentions(f.hi, band_vars)) for f in nest]
    body = cutter.visit(nest[-1].body)
    fixed = cutter.fixed
    sizes = [Const(fixed[n], int64) if n in fixed else Sym(n, int64) for n in band.sizes]
    tile_vars = [cutter.fresh(t) for t in band.tile_loops]
    firsts, lasts, starts, ends, box = [], [], [], [], {}
    for f, size, t, skew in zip(nest, sizes, tile_vars, skewed):
        # a bound that moves with an outer loop of the band (a skewed band) is bounded over the tile of
        # the outer loops: the tiles of this loop then cover all its values in that tile
        first = _extreme(f.lo, True, box, band) if skew else f.lo
        last = _extreme(f.hi, False, box, band) if skew else f.hi
        start = simplify(binop("add", first, binop("mul", Sym(t, int64), size)))
        end = simplify(binop("add", start, size))
        firsts.append(first)
        lasts.append(last)
        starts.append(start)
        ends.append(end)
        box[f.var] = (start, simplify(binop("sub", end, 1)))
    point_starts = [max_(f.lo, start) if skew else start for f, start, skew in zip(nest, starts, skewed)]
    partial = [min_(end, f.hi) for f, end in zip(nest, ends)]
    if any(skewed):
        inner = _points(nest, band, point_starts, partial, body)
    else:
        fits = None
        for f, end in zip(nest, ends):
            cond = binop("le", end, f.hi)
            fits = cond if fits is None else binop("and", fits, cond)
        inner = L.If(fits, _points(nest, band, starts, ends, body),
                     _points(nest, band, starts, partial, _fresh_copy(body)))
    for f, size, tile_loop, var, first, last in reversed(list(zip(nest, sizes, band.tile_loops, tile_vars,
                                                                   firsts, lasts))):
        trips = floordiv(binop("add", binop("sub", last, first), binop("sub", size, 1)), size)
        inner = L.For(var, Const(0, int64), simplify(trips), inner,
                      L.LoopKind.PARALLEL if f.kind == L.LoopKind.PARALLEL else L.LoopKind.SERIAL, 1,
                      ((comp_name, tile_loop),))
    return inner


def _mentions(e, names) -> set:
    return {n.name for n in walk(e) if isinstance(n, Sym)} & set(names)


def _extreme(e, lowest, box, band):
    """A bound of `e` over the values `box` ({loop: (first, last)}) gives the loops it mentions: at most
    every value of `e` there when `lowest`, else at least. A max or min of bounds is bounded piece by
    piece; each piece must be affine in the loops (or an affine floor-divided by a constant), whose
    extremes lie at the corners of the box."""
    if isinstance(e, BinOp) and e.op in ("max", "min"):
        return binop(e.op, _extreme(e.a, lowest, box, band), _extreme(e.b, lowest, box, band))
    used = sorted(_mentions(e, box))
    if not used:
        return e
    if not _monotone(e, set(used)):
        raise ScheduleError(f"{band.command}: a bound of the band, {pseudo_c(e)}, is not affine in its loops "
                            f"{', '.join(used)}; parametric tiles take rectangular bands and bands whose "
                            f"bounds are affine in the outer loops (a skew)")
    corners = [substitute(e, dict(zip(used, values))) for values in product(*(box[v] for v in used))]
    return simplify(reduce(min_ if lowest else max_, corners))


def _monotone(e, names) -> bool:
    """Whether `e` is affine in the loops `names` (sums, differences, products by terms free of them),
    or such a function floor- or C-divided by a positive constant."""
    if isinstance(e, BinOp) and e.op in ("ediv", "div") and isinstance(e.b, Const) and e.b.value > 0:
        return _affine(e.a, names)
    return _affine(e, names)


def _affine(e, names) -> bool:
    if not _mentions(e, names):
        return True
    if isinstance(e, Sym):
        return True
    if isinstance(e, BinOp) and e.op in ("add", "sub"):
        return _affine(e.a, names) and _affine(e.b, names)
    if isinstance(e, BinOp) and e.op == "mul":
        return (not _mentions(e.a, names) and _affine(e.b, names)) or \
            (not _mentions(e.b, names) and _affine(e.a, names))
    return False


def _points(nest, band, starts, ends, body):
    """The point loops of one tile, outermost first, each from its tile's start to its end."""
    for k in reversed(range(len(nest))):
        f = nest[k]
        kind, factor = f.kind, f.factor
        if kind == L.LoopKind.PARALLEL:
            kind = L.LoopKind.SERIAL     # (its tile loop runs in parallel instead)
        if k == len(nest) - 1 and band.vector:
            kind, factor = L.LoopKind.VECTOR, band.vector
        body = L.For(f.var, starts[k], ends[k], body, kind, factor, f.origin)
    return body


def _fresh_copy(s):
    """A copy of a statement tree with statements of its own (each appears once in the loop IR) and the
    same expressions and buffers."""
    if isinstance(s, L.Block):
        return L.Block([_fresh_copy(c) for c in s.body])
    if isinstance(s, L.If):
        return L.If(s.cond, _fresh_copy(s.then), None if s.else_ is None else _fresh_copy(s.else_))
    if isinstance(s, (L.For, L.Allocate)):
        return replace(s, body=_fresh_copy(s.body))
    return replace(s)


def _only_statement(s):
    while isinstance(s, L.Block) and len(s.body) == 1:
        s = s.body[0]
    if isinstance(s, L.Block):
        return None if not s.body else s
    return s


def _describe(s):
    kinds = [type(c).__name__ for c in (s.body if isinstance(s, L.Block) else [s])]
    return f"{len(kinds)} statements ({', '.join(kinds)})"
