"""Saving and restoring a Function's schedule, so that a choice the legality check refuses, or a
candidate the search has measured, leaves no trace (neither in the loops nor in the history)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Saved:
    states: dict        # computation -> its snapshot
    ordering: list
    history_length: int
    dataflow: object


def save(function) -> Saved:
    """The function's schedule as it is now."""
    return Saved({c: c.snapshot() for c in function.computations}, list(function._ordering),
                 len(function._history), function._dataflow)


def restore(function, saved: Saved) -> None:
    """Put back the schedule `saved` recorded, dropping the commands given since."""
    for comp, state in saved.states.items():
        comp.restore(state)
    function._ordering = list(saved.ordering)
    del function._history[saved.history_length:]
    function._dataflow = saved.dataflow
