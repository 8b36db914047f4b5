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


def _section_is_full(time_set, k):
    """Prefixes (time dims < k) whose section along dim k spans the dim's largest constant extent, or None
    when the extent is not a constant larger than one."""
    n = time_set.dim(isl.dim_type.set)
    upto_k = time_set.project_out(isl.dim_type.set, k + 1, n - k - 1)
    section = isl.Map.from_range(upto_k).move_dims(isl.dim_type.in_, 0, isl.dim_type.out, 0, k)
    lo = section.lexmin_pw_multi_aff()
    extent = section.lexmax_pw_multi_aff().get_pw_aff(0).sub(lo.get_pw_aff(0)).max_val()
    if not extent.is_int() or extent.to_python() < 1:
        return None
    box = isl.Map.from_pw_multi_aff(lo).apply_range(
        isl.Map(f"{{ [a] -> [b] : a <= b <= a + {extent.to_python()} }}"))
    missing = box.subtract(section)
    return section.domain().subtract(missing.domain())


def full_piece(time_set, dims):
    """The part of a statement's time-space image where each of the loops at time dims `dims` runs its
    whole constant trip count, or None when that is all of it or none of it (nothing to separate)."""
    n = time_set.dim(isl.dim_type.set)
    full = time_set
    for k in dims:
        prefixes = _section_is_full(time_set, k)
        if prefixes is None:
            continue
        full = full.intersect(prefixes.insert_dims(isl.dim_type.set, k, n - k))
    full = full.coalesce()
    if full.is_empty() or full.is_equal(time_set):
        return None
    # a convex piece keeps the generated bounds tight (isl gives a disjunction one loop over its hull)
    hull = isl.Set.from_basic_set(full.convex_hull())
    return hull if hull.is_equal(full) else full
