"""Full/partial tile separation.

A loop whose trip count is a constant everywhere except at the edges of the
iteration space (the point loop of a split or tile, a vector or unroll loop)
is generated with `min` bounds, which keeps it from vectorizing without
guards. Here each statement's scheduled instances are split into a *full*
piece, where every such loop runs its whole constant trip count, and the rest;
the AST generator then emits the full piece with constant bounds and the
partial tiles as separate code.
"""
from __future__ import annotations

import islpy as isl


def _section_is_full(time_set, k, extent):
    """Prefixes (time dims < k) whose section along dim k holds `extent` consecutive points.

    The sections are intervals no longer than `extent` (the loop's trip count in full tiles), so
    a section is full exactly when it holds both t and t + extent - 1 for some t."""
    n = time_set.dim(isl.dim_type.set)
    upto_k = time_set.project_out(isl.dim_type.set, k + 1, n - k - 1)
    section = isl.Map.from_range(upto_k).move_dims(isl.dim_type.in_, 0, isl.dim_type.out, 0, k)
    reaching = section.apply_range(isl.Map(f"{{ [t] -> [t - {extent - 1}] }}"))
    return section.intersect(reaching).domain()


def full_piece(time_set, dims):
    """The part of a statement's time-space image where each loop runs its whole trip count, or None
    when that is all of it or none of it (nothing to separate). `dims` maps time dims to the trip
    count of their loop in a full tile (a vector or unroll loop's factor).

    A prefix counts as full at a loop only when every iteration of that loop (and of the loops
    between it and the next such loop inside) reaches full trip counts further in as well: the full
    piece is then whole tiles, even where the domain is not a box (a triangle's diagonal tiles, in
    which an unrolled loop runs its 8 rows but the vector loop inside has fewer lanes in all but the
    last, stay partial), so each of its loops has constant bounds."""
    n = time_set.dim(isl.dim_type.set)
    whole_inside, inner = None, None     # prefixes (dims < inner) whose loops from `inner` in run full
    for k in sorted((k for k, extent in dims.items() if extent >= 2), reverse=True):
        full_here = _section_is_full(time_set, k, dims[k])
        if whole_inside is not None:
            prefixes = time_set.project_out(isl.dim_type.set, inner, n - inner)
            short_inside = prefixes.subtract(whole_inside).project_out(isl.dim_type.set, k, inner - k)
            full_here = full_here.subtract(short_inside)
        whole_inside, inner = full_here, k
    if whole_inside is None:
        return None
    return proper_piece(time_set.intersect(whole_inside.insert_dims(isl.dim_type.set, inner, n - inner)), time_set)


def proper_piece(piece: isl.Set, whole: isl.Set):
    """`piece` of `whole`, convex when that is exact, or None when it is empty or all of `whole`."""
    piece = piece.coalesce()
    if piece.is_empty() or piece.is_equal(whole):
        return None
    # a convex piece keeps the generated bounds tight (isl gives a disjunction one loop over its hull);
    # the simple hull is cheap, where the exact convex hull can take minutes on many parameters
    if piece.n_basic_set() > 1:
        hull = isl.Set.from_basic_set(piece.simple_hull())
        if hull.is_equal(piece):
            return hull
    return piece
