"""Scratch arrays given a copy per iteration (`Computation.expand`) before the model schedules.

A Julia function's scratch array (doitgen's `sum[p]`, zeroed and filled anew for every (r, q))
chains the iterations of the loops around it: none of them can run in parallel, and the nest is
a matrix-vector product per (r, q) instead of one matrix product. Expanding it over those loops
gives the model a nest it tiles as any product. An array is expanded over the loops that all its
updates and reads in a loop nest share and that its written elements do not move with, each
where `expand`'s check proves it private to the loop's iterations, and only while the
expanded array holds no more elements than the largest array the nest reads (the memory it
takes stays of the order the program already uses). Each new dimension goes where its loop runs
along the program's other arrays: the loop that walks their stride-one dimension becomes the
expanded array's stride-one dimension too, so that one vector loop serves both.
"""
from __future__ import annotations

from ..errors import ScheduleError
from ..expansion import expand, touching
from ..dependences import source_nests
from .analysis import analyze, elements


def _shared_loops(group):
    """The loop names every computation of `group` has at the same depth, outermost first."""
    shared = []
    for names in zip(*[[v.name for v in c.vars] for c in group]):
        if len(set(names)) != 1:
            break
        shared.append(names[0])
    return shared


def _nest_groups(function, array):
    """Per loop nest of the source that updates `array`, the computations there that touch it."""
    nests = source_nests(function)
    groups = {}
    for c in touching(function, array):
        groups.setdefault(nests.get(c, id(c)) if nests else 0, []).append(c)
    return [g for g in groups.values() if any(c.updated is array for c in g)]


def _rank(stages, group, array, loop):
    """How far from the stride-one dimension `loop` indexes the other arrays the group touches (0: it
    walks a stride-one dimension); large where it indexes none."""
    best = 1 << 20
    for c in group:
        for ref in stages[c.name].refs:
            if ref.array == array.name:
                continue
            for d in range(len(ref.dims)):
                if ref.coefficient(loop, d) not in (0, None):
                    best = min(best, len(ref.dims) - 1 - d)
    return best


def expand_scratch_arrays(function, context) -> list:
    """Expand the function's scratch arrays (see the module's doc); returns the commands given."""
    if function.history():
        return []
    given = []
    for array in [c for c in function.computations if c.updated is None and c.updates]:
        for group in _nest_groups(function, array):
            stages = analyze(function, context)
            written = [r for c in group if c.updated is array for r in stages[c.name].refs[:1]]
            loops = [x for x in _shared_loops(group)
                     if not any(r.touches(x) for r in written)]
            if not loops:
                continue
            heaviest = max(group, key=lambda c: stages[c.name].work())
            stage = stages[heaviest.name]
            largest = max((elements(stage, r) for r in stage.refs if r.array != array.name), default=0)
            size = elements(stage, stage.refs[0]) if heaviest.updated is array else 0
            target, new = array, []     # (loop, rank) of the dimensions added so far, in their order
            for loop in loops:
                size *= max(1, stage.trip(loop))
                if size > largest:
                    break
                rank = _rank(stages, group, array, loop)
                at = len(target.vars) - len(new) + sum(1 for _, r in new if r > rank)
                try:
                    target = expand(target, loop, at)
                except ScheduleError:       # not private to the loop's iterations: left as it is
                    break
                new.insert(at - (len(target.vars) - 1 - len(new)), (loop, rank))
                given.append(function.history()[-1])
    return given
