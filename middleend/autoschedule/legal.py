"""The legality check of a hand-written schedule (middleend/legality.py and layout_check.py), run
after each command the autoscheduler gives, for all sizes (the layout part only after commands
that can change its outcome: placements, and tags where storage is shared or folded); it answers yes or no where
`Function.lower` raises with the culprit command, so a refused choice costs one check."""
from __future__ import annotations

from .. import layout_check, legality
from ..errors import LayoutError
from ..statements import build_statements


class Checker:
    """Checks the function's current schedule against its dependences (computed once per set of
    computations and of those inlined: inlining changes which values a computation reads)."""

    def __init__(self, function):
        self.function = function
        self.checks = 0

    def legal(self, layout=True) -> bool:
        """Whether the current schedule keeps every dependence and, with `layout`, a valid data layout
        (loop order and tiling leave the layout's validity as it was: they move no element)."""
        f = self.function
        self.checks += 1
        context = f._prepare()
        deps = self.dependences(context)
        stmts = build_statements(f, context)
        if legality.gpu_nesting_violations(stmts) or legality.window_violations(stmts, context):
            return False
        if legality.recompute_violations(stmts, deps):
            return False
        checked = legality.checked_pairs(stmts, deps, f, context)
        if legality.ordering_violations(stmts, deps, f, context, checked) or \
                legality.tag_violations(stmts, deps, f, context, checked) or \
                legality.band_violations(stmts, deps, f, context, checked):
            return False
        if not layout:
            return True
        try:
            layout_check.check(stmts, f, context)
        except LayoutError:
            return False
        return True

    def dependences(self, context=None):
        """The exact dependences of the function's computations as they are now."""
        f = self.function
        return f._dependences_at(f._prepare() if context is None else context)
