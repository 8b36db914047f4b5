"""The OpenMP runtime (libgomp) that JIT-compiled parallel loops call."""
from __future__ import annotations

import ctypes.util
import functools
import os
import subprocess

import llvmlite.binding as llvm

from mascarpone.middleend.errors import NotSupportedError


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
