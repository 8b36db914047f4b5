"""The default thread count of parallel loops, shared by the targets that run on this machine's cores."""
from __future__ import annotations

import ctypes
import os

_default_threads = None
_cpu_count = os.cpu_count() or 1
#: the default as native code reads it (`pyentry`): an int32 that set_num_threads keeps equal to it
DEFAULT_THREADS_CELL = ctypes.c_int32(_cpu_count)


def set_num_threads(n: int | None) -> None:
    """Set the number of threads parallel loops use in every kernel without its own setting.

    `None` restores the default, `os.cpu_count()`.
    """
    global _default_threads
    if n is not None and (isinstance(n, bool) or int(n) != n or n < 1):
        raise ValueError(f"the number of threads must be a positive integer, got {n!r}")
    _default_threads = None if n is None else int(n)
    DEFAULT_THREADS_CELL.value = get_num_threads()


def get_num_threads() -> int:
    """The number of threads parallel loops use by default."""
    return _default_threads or _cpu_count
