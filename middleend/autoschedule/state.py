"""Saving and restoring a Function's schedule, so that a choice the legality check refuses, or a
candidate the search has measured, leaves no trace (neither in the loops nor in the history, nor the
copies a staging command such as cache_read added, the reads it redirected to them and the buffers
store_in added)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Saved:
    states: dict        # computation -> its snapshot
    ordering: list
    history_length: int
    dataflow: object
    computations: list   # the function's computations (a staging command adds its copy)
    exprs: dict          # computation -> (its expression, its predicate): what a staging command rewrites
    buffers: list        # the function's buffers (store_in adds one, as a transposed copy's layout does)


def save(function) -> Saved:
    """The function's schedule as it is now."""
    return Saved({c: c.snapshot() for c in function.computations}, list(function._ordering),
                 len(function._history), function._dataflow, list(function.computations),
                 {c: (c.expr, c.predicate) for c in function.computations}, list(function.buffers))


def restore(function, saved: Saved) -> None:
    """Put back the schedule `saved` recorded, dropping the commands given since."""
    function.computations[:] = saved.computations
    for comp, state in saved.states.items():
        comp.restore(state)
        comp.expr, comp.predicate = saved.exprs[comp]
    function._ordering = list(saved.ordering)
    del function._history[saved.history_length:]
    function._dataflow = saved.dataflow
    function.buffers[:] = saved.buffers
