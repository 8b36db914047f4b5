"""The default thread count of parallel loops, and how their OpenMP threads are placed, shared by the
targets that run on this machine's cores."""
from __future__ import annotations

import os

_default_threads = None
_cpu_count = os.cpu_count() or 1


def set_num_threads(n: int | None) -> None:
    """Set the number of threads parallel loops use in every kernel without its own setting.

    `None` restores the default, `os.cpu_count()`.
    """
    global _default_threads
    if n is not None and (isinstance(n, bool) or int(n) != n or n < 1):
        raise ValueError(f"the number of threads must be a positive integer, got {n!r}")
    _default_threads = None if n is None else int(n)


def get_num_threads() -> int:
    """The number of threads parallel loops use by default."""
    return _default_threads or _cpu_count


#: libgomp's thread binding unless the environment says otherwise (read once, when libgomp loads): with
#: its threads bound, a parallel loop called after the process idled starts on every core at once.
#: Unbound, the woken worker may wait for the scheduler to move it off the caller's core: the packed
#: sgemm at 1024 on 2 threads took 15.7 ms after a 0.3 s pause against 4.9 ms back to back; bound,
#: 6.0 and 5.1 (numpy's OpenBLAS 6.2 and 4.7; 2026-11-27, 2-core Zen 4).
THREAD_BINDING = ("OMP_PROC_BIND", "true")


def bind_openmp_threads() -> None:
    """Ask libgomp, before it loads, to bind its threads to cores, unless OMP_PROC_BIND is set (a
    libgomp loaded earlier in the process keeps its own setting)."""
    os.environ.setdefault(*THREAD_BINDING)
