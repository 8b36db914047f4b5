"""Targets found by name: the registry `Function.compile` consults, filled from entry points.

A back-end declares an entry point in the group `mascarpone.targets` whose
name is the target's and whose object is a `Target`:

    [project.entry-points."mascarpone.targets"]
    cpu = "mascarpone.backends.cpu.target:TARGET"

so a third party adds a target by installing a distribution that declares
one. The middle-end imports no back-end: an entry point is loaded the first
time its target is asked for.
"""
from __future__ import annotations

import difflib
import functools
import importlib.metadata
from dataclasses import dataclass

from .errors import TargetError

GROUP = "mascarpone.targets"


class Target:
    """A back-end: compiles a `LoweredFunction` into a kernel, and writes files to build elsewhere.

    Subclasses set `name`, `description`, `options` ({option: what it does}, what `compile` takes
    besides the lowered function), `write_options` (the same for `write`) and `install` (the command
    that installs what the target needs), and implement `compile`, and `write` when the target has
    ahead-of-time output, and `missing` when it needs something this machine may lack.
    """

    name = ""
    description = ""
    options: dict = {}
    write_options: dict = {}
    install = ""
    #: whether the target's call binds outputs in place and makes the copies of whole inputs into
    #: outputs itself (Binder's `initial_input`), so the kernel is lowered without them
    binds_in_place = False

    def missing(self) -> str | None:
        """What this machine lacks to run the target's kernels (a compiler, a runtime), or None."""
        return None

    def compile(self, lowered, **options):
        """A callable kernel for `lowered`."""
        raise NotImplementedError

    def write(self, lowered, path, **options) -> list:
        """Write the kernel's code for use outside Python to `path` (and files beside it); returns the
        paths written."""
        raise TargetError(f"target {self.name!r} has no ahead-of-time output")

    def check_options(self, options: dict, for_write=False) -> None:
        """Refuse an option the target does not take, listing those it does."""
        known = self.write_options if for_write else self.options
        unknown = sorted(set(options) - set(known))
        if unknown:
            close = difflib.get_close_matches(unknown[0], list(known), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            takes = ", ".join(known) or "no options"
            raise TargetError(f"target {self.name!r} takes no option {', '.join(map(repr, unknown))}{hint}; "
                              f"it takes {takes}")

    def require(self) -> None:
        """Raise a TargetError saying what is missing and how to install it, if the target cannot run."""
        lack = self.missing()
        if lack:
            raise TargetError(f"target {self.name!r} cannot run here: {lack}; install it with: {self.install}")


@dataclass(frozen=True)
class TargetInfo:
    """One line of `ms.targets()`: whether a target can run here and, if not, why and how to fix it."""

    name: str
    description: str
    available: bool
    missing: str | None
    install: str | None


class TargetList(list):
    """`ms.targets()`: a list of TargetInfo that prints as a table."""

    def __str__(self):
        rows = []
        for t in self:
            state = "available" if t.available else f"missing {t.missing}; install: {t.install}"
            rows.append(f"{t.name:<8} {t.description} [{state}]")
        return "\n".join(rows)


@functools.lru_cache(maxsize=None)
def _entry_points():
    """{name: [entry points]} of the group (several when distributions disagree)."""
    found = {}
    for ep in importlib.metadata.entry_points(group=GROUP):
        found.setdefault(ep.name, [])
        if all(ep.value != e.value for e in found[ep.name]):
            found[ep.name].append(ep)
    return found


def target_names() -> list:
    """The names of every registered target."""
    return sorted(_entry_points())


@functools.lru_cache(maxsize=None)
def get_target(name) -> Target:
    """The registered target called `name`."""
    eps = _entry_points()
    if name not in eps:
        names = ", ".join(map(repr, target_names())) or "none (is mascarpone installed? pip install -e .)"
        raise TargetError(f"unknown target {name!r}; the registered targets are {names}")
    if len(eps[name]) > 1:
        raise TargetError(f"target {name!r} is registered twice, by {' and '.join(e.value for e in eps[name])}; "
                          f"uninstall one of the distributions")
    ep = eps[name][0]
    try:
        target = ep.load()
    except Exception as err:  # a broken third-party back-end must not break the others
        raise TargetError(f"target {name!r} ({ep.value}) failed to load: {type(err).__name__}: {err}") from err
    if not isinstance(target, Target):
        raise TargetError(f"target {name!r}: {ep.value} is not a mascarpone Target")
    return target


def targets() -> TargetList:
    """Every registered target, whether it can run here and, if not, why and the command that installs
    what it lacks."""
    out = TargetList()
    for name in target_names():
        try:
            t = get_target(name)
            lack = t.missing()
            out.append(TargetInfo(name, t.description, lack is None, lack, t.install if lack else None))
        except TargetError as err:
            out.append(TargetInfo(name, "", False, str(err), None))
    return out
