"""The OpenMP runtime (libgomp) that parallel loops call, and the default thread count."""
from __future__ import annotations

import ctypes.util
import functools
import os
import subprocess

import llvmlite.binding as llvm

from middleend.errors import NotSupportedError

_default_threads = None
_cpu_count = os.cpu_count() or 1


def set_num_threads(n: int | None) -> None:
    """Set the number of threads parallel loops use in every kernel without its own setting.

    `None` restores the default, `os.cpu_count()`.
    """
    global _default_threads
    if n is not None and (int(n) != n or n < 1):
        raise ValueError(f"the number of threads must be a positive integer, got {n!r}")
    _default_threads = None if n is None else int(n)


def get_num_threads() -> int:
    """The number of threads parallel loops use by default."""
    return _default_threads or _cpu_count


def _candidates():
    found = ctypes.util.find_library("gomp")
    if found:
        yield found
    try:
        out = subprocess.run(["gcc", "-print-file-name=libgomp.so.1"], capture_output=True,
                             text=True, timeout=10, check=False).stdout.strip()
        if out and os.path.isabs(out):
            yield out
    except (OSError, subprocess.SubprocessError):
        pass
    yield "libgomp.so.1"


@functools.lru_cache(maxsize=None)
def load_openmp() -> str:
    """Make libgomp's symbols visible to JIT-compiled code; returns the library loaded."""
    errors = []
    for name in _candidates():
        try:
            llvm.load_library_permanently(name)
            return name
        except RuntimeError as exc:
            errors.append(f"{name}: {exc}")
    raise NotSupportedError("parallel loops need the OpenMP runtime libgomp.so.1 (from gcc), "
                            "which was not found: " + "; ".join(errors))
