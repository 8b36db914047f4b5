"""The legality check of a hand-written schedule (middleend/legality.py and layout_check.py), run
after each command the autoscheduler gives, for all sizes (the layout part only after commands
that can change its outcome: placements, and tags where storage is shared or folded); it answers yes or no where
`Function.lower` raises with the culprit command, so a refused choice costs one check. A choice whose layout
holds only for fewer sizes than the schedule it started from (an inlined read the checks can bound no longer,
so the kernel would refuse calls the naive loops run) is refused too."""
from __future__ import annotations

from .. import layout_check, legality
from ..affine import on_sizes, param_names
from ..errors import DomainError, LayoutError, MascarponeError, ScheduleError
from ..statements import build_statements


class Checker:
    """Checks the function's current schedule against its dependences (computed once per set of
    computations and of those inlined: inlining changes which values a computation reads)."""

    def __init__(self, function):
        self.function = function
        self.checks = 0
        self.admitted = self._sizes_admitted()   # by the schedule the autoscheduler starts from

    def _sizes_admitted(self):
        """The isl set of the sizes for which the current schedule's layout holds (the kernel refuses
        the others at the call), or None where it does not hold at all."""
        f = self.function
        try:
            context = f._prepare()
            requirements = layout_check.check(build_statements(f, context), f, context)
        except MascarponeError:
            return None
        return _admitted(requirements, f, context)

    def legal(self, layout=True) -> bool:
        """Whether the current schedule keeps every dependence and, with `layout`, a valid data layout
        (loop order and tiling leave the layout's validity as it was: they move no element)."""
        f = self.function
        self.checks += 1
        context = f._prepare()
        deps = self.dependences(context)
        try:
            stmts = build_statements(f, context)
        except (ScheduleError, DomainError):   # (a placement the commands broke: a tile read outside its loop)
            return False
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
            requirements = layout_check.check(stmts, f, context)
        except LayoutError:
            return False
        if self.admitted is None:
            return True
        # (over the sizes it started from: a size a command derives from them is existentially theirs)
        return self.admitted.is_subset(on_sizes(_admitted(requirements, f, context), param_names(self.admitted)))

    def dependences(self, context=None):
        """The exact dependences of the function's computations as they are now."""
        f = self.function
        return f._dependences_at(f._prepare() if context is None else context)


def _admitted(requirements, function, context):
    """The sizes that satisfy every requirement of a layout check ([(text, isl set of the sizes)])."""
    admitted = on_sizes(context, function.sizes())
    for _, sizes in requirements:
        admitted = admitted.intersect(sizes)
    return admitted
