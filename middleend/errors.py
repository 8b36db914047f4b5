"""Typed errors: each names what the user wrote that is wrong."""


class MascarponeError(Exception):
    """Base class of every error mascarpone raises on bad input."""


class ExprTypeError(MascarponeError, TypeError):
    """Operands of different types met without an explicit cast."""


class DomainError(MascarponeError, ValueError):
    """A loop bound, constraint or index that cannot be expressed."""


class ScheduleError(MascarponeError, ValueError):
    """A scheduling command got arguments that make no sense (unknown loop, bad factor...)."""


class IllegalScheduleError(MascarponeError):
    """A schedule that would change the program's results (breaks a dependence)."""

    def __init__(self, message, *, source=None, sink=None, dependence=None, command=None):
        super().__init__(message)
        self.source = source
        self.sink = sink
        self.dependence = dependence
        self.command = command


class LayoutError(IllegalScheduleError):
    """A data layout (Layer III) that would change results or crash: it stores values outside their
    buffer, overwrites a value before a read that needs it, or gives the caller storage it cannot
    read back. `computation`, `buffer` and `instance` name the access that shows it."""

    def __init__(self, message, *, computation=None, buffer=None, instance=None, command=None, source=None,
                 sink=None):
        super().__init__(message, source=source, sink=sink, command=command)
        self.computation = computation
        self.buffer = buffer
        self.instance = instance


class OutOfBoundsError(LayoutError):
    """A write or read through a layout that falls outside its buffer for some sizes the context allows."""


class OverwriteError(LayoutError):
    """A layout that holds two live values in one element: one is overwritten (or raced on by a
    parallel loop) before a read that needs it."""


class NotSupportedError(MascarponeError, NotImplementedError):
    """A construct the project does not handle yet; the message names it."""


class ArgumentError(MascarponeError, ValueError):
    """A compiled kernel was called with a missing argument or a wrong shape or dtype."""


class TargetError(MascarponeError, ValueError):
    """An unknown target or target option, or a target that cannot run on this machine."""


class RankError(MascarponeError, RuntimeError):
    """A distributed run failed on one or more MPI ranks (named by `ranks`, empty when the whole run
    failed: it could not start or did not finish in time)."""

    def __init__(self, message, ranks=()):
        super().__init__(message)
        self.ranks = tuple(ranks)
