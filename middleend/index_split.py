"""Index-set splitting: a clamp-free steady state for statements with piecewise indices.

A boundary condition reads `in[min(max(x - 1, 0), W - 1)]`: a piecewise affine
index. Generated as is, every access is a select chain, and a vector of such
accesses is a gather. Halide marks the interior with `likely` and partitions
the loop; here each statement's instances are split into the *steady* part,
where every piecewise index takes its main piece (`x - 1`), and the rest. At
code generation each piece's indices are simplified over the piece's own
instances, so the steady part gets plain affine accesses (contiguous vector
loads) and only the edges keep the clamps.

The rest is cut, as Halide's loop partitioning does, loop by loop around the
steady part (`edges`): at each loop level the instances before and after the
steady range get loops of their own, so no guard is left in the steady loops.
"""
from __future__ import annotations

import islpy as isl

from .affine import IslAff
from .expr import Access, walk
from .separation import proper_piece

#: the size parameters take this value when pieces are compared by how many instances they cover
_SAMPLE_SIZE = 1024


def piecewise_indices(exprs, written=()):
    """The isl functions among the IslAff nodes of `exprs` and of the written index `written` that can
    take several forms along a loop: those with more than one piece (a clamp), and those with a floor
    (`x / 8`), which a loop whose last iteration is shifted back (Halide's ShiftInwards tail of a vector
    loop) sees in two forms. The reads a scatter's index makes are left out: their clamps only select
    the element to update (a gather either way), and splitting at them cut a histogram's vector loops
    into pieces with guards inside."""
    nodes = [n for e in exprs if e is not None for n in walk(e)]
    nodes += [n for e in written for n in _outside_reads(e)]
    return [n.pwaff for n in nodes if isinstance(n, IslAff) and (n.pwaff.n_piece() > 1 or _has_floor(n.pwaff))]


def _outside_reads(e):
    """The nodes of `e` that are not inside a read (an Access)."""
    stack = [e]
    while stack:
        n = stack.pop()
        yield n
        if not isinstance(n, Access):
            stack.extend(reversed(n.children))


def _has_floor(pwaff: isl.PwAff) -> bool:
    return any(aff.dim(isl.dim_type.div) > 0 for _, aff in pwaff.get_pieces())


def _volume(s: isl.Set) -> int:
    """Roughly how many points `s` holds at sample sizes: the volume of its bounding box."""
    for k in range(s.dim(isl.dim_type.param)):
        s = s.fix_val(isl.dim_type.param, k, isl.Val(_SAMPLE_SIZE))
    if s.is_empty():
        return 0
    volume = 1
    for d in range(s.dim(isl.dim_type.set)):
        lo, hi = s.dim_min_val(d), s.dim_max_val(d)
        if not (lo.is_int() and hi.is_int()):
            return 0
        volume *= hi.to_python() - lo.to_python() + 1
    return volume


def _main_piece(pwaff: isl.PwAff, domain: isl.Set) -> isl.Set:
    """Where `pwaff` takes its main piece: the one that depends on the most loop variables (the
    clamp's `x - 1`, not its constant edges), then the one covering the most instances."""
    by_aff = {}
    for dom, aff in pwaff.get_pieces():
        key = str(aff)
        prev = by_aff.get(key)
        by_aff[key] = (aff, dom if prev is None else prev[1].union(dom))
    n_in = pwaff.dim(isl.dim_type.in_)

    def weight(item):
        aff, dom = item
        depends = sum(1 for i in range(n_in) if not aff.get_coefficient_val(isl.dim_type.in_, i).is_zero())
        return depends, _volume(dom.intersect(domain))
    return max(by_aff.values(), key=weight)[1]


def _varies_in_loop(in_time: isl.PwAff, dim: int) -> bool:
    """Whether the pieces of `in_time` (an index as a function of time) move differently along time
    dimension `dim`: only then does the loop at `dim` see a gather instead of a strided access. A
    clamp on the row of a pixel, or the corner of a tile, is the same for a whole row; `x / 8` is
    the same for the 8 lanes of a vector that starts at a multiple of 8, not for one shifted back."""
    slopes = set()
    for piece, aff in in_time.get_pieces():
        aff = aff.gist(piece)
        slopes.add((aff.involves_dims(isl.dim_type.in_, dim, 1),
                    aff.get_coefficient_val(isl.dim_type.in_, dim).to_python()))
    return len(slopes) > 1


def _main_time_piece(in_time: isl.PwAff) -> isl.Set:
    """The main piece, in time, of an index with one piece in instance space: it takes several in time
    where the schedule is piecewise (a shifted last vector), and its steady form is the regular
    iterations' one, where the floor is gone (`x / 8` of the vector starting at `8 * xo` is `xo`);
    then the piece covering the most instances."""
    def weight(piece):
        domain, aff = piece
        return aff.gist(domain).dim(isl.dim_type.div) == 0, _volume(domain)
    return max(in_time.get_pieces(), key=weight)[0]


def steady_state(domain: isl.Set, time: isl.Map, pwaffs, loops) -> isl.Set | None:
    """The points of `time` (the statement's schedule over `domain`) where each of `pwaffs` that
    varies along one of the statement's `loops` (positions, outermost 0: its innermost loop and its
    vector loops, where a varying piece makes a gather) takes its main piece, or None when that is
    all of them or none (nothing to split). A clamp's main piece is a set of instances (its
    interior); a floor's is a set of times (the regular iterations: an instance that a shifted last
    vector computes again is steady in its own tile, not in that vector)."""
    if not loops:
        return None
    scheduled = time.intersect_domain(domain)
    to_instance = isl.PwMultiAff.from_map(scheduled.reverse())
    # time dims alternate constants and loops, [c0, l0, c1, ..., l_last, c_last, ...], padded to the
    # deepest statement's: loop k is dimension 2k + 1
    dims = [2 * k + 1 for k in loops]
    instances, times = domain, None
    for pa in pwaffs:
        in_time = pa.pullback_pw_multi_aff(to_instance)
        if not any(_varies_in_loop(in_time, d) for d in dims):
            continue
        if pa.n_piece() > 1:
            instances = instances.intersect(_main_piece(pa, domain))
        else:
            piece = _main_time_piece(in_time)
            times = piece if times is None else times.intersect(piece)
    interior = proper_piece(instances, domain)
    if times is None:
        return None if interior is None else scheduled.intersect_domain(interior).range()
    everything = scheduled.range()
    steady = everything if interior is None else scheduled.intersect_domain(interior).range()
    return proper_piece(steady.intersect(times), everything)


def _prefix(s: isl.Set, k: int) -> isl.Set:
    """The first k dims of `s` (its projection onto the outer k loops)."""
    n = s.dim(isl.dim_type.set)
    return s.project_out(isl.dim_type.set, k, n - k)


def _with_prefix_in(s: isl.Set, prefixes: isl.Set, k: int) -> isl.Set:
    """The points of `s` whose first k dims lie in `prefixes`."""
    n = s.dim(isl.dim_type.set)
    return s.intersect(prefixes.insert_dims(isl.dim_type.set, k, n - k))


def edges(time_set: isl.Set, steady: isl.Set):
    """The instances of `time_set` outside `steady` (both in time space), as disjoint pieces
    [(name suffix, set)]: for loop level k, those whose outer loops (dims < k) reach the steady part
    but whose loop k does not, split into the ones before and after the steady range of that loop."""
    n = time_set.dim(isl.dim_type.set)
    rest = time_set.subtract(steady)
    out = []
    for k in range(n):
        if rest.is_empty():
            break
        outer = _prefix(steady, k)
        here = _with_prefix_in(rest, outer, k).subtract(_with_prefix_in(rest, _prefix(steady, k + 1), k + 1))
        rest = rest.subtract(here)
        if here.is_empty():
            continue
        # before: some steady point shares the outer loops and comes later in loop k
        later = isl.Map(f"{{ [{', '.join(f't{i}' for i in range(k + 1))}] -> "
                        f"[{', '.join(f't{i}' for i in range(k))}{', ' if k else ''}s] : s > t{k} }}")
        steady_later = later.intersect_range(_prefix(steady, k + 1)).domain()
        before = _with_prefix_in(here, steady_later, k + 1).coalesce()
        after = here.subtract(before).coalesce()
        out += [(f"_edge{k}a", p) for p in (before,) if not p.is_empty()]
        out += [(f"_edge{k}b", p) for p in (after,) if not p.is_empty()]
    if not rest.is_empty():
        out.append(("_edge", rest.coalesce()))
    return out
