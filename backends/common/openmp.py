"""The OpenMP runtime (libgomp) that parallel loops of the "cpu" and "c" targets call.

libgomp is loaded once per process with its worker threads bound to cores
(`OMP_PROC_BIND=true`, `OMP_PLACES=cores`, in the environment only while it
loads). Unbound, a worker woken after an idle spell is often queued on the
caller's core and starts milliseconds late (a 5 ms parallel loop measured
11.9 ms after a 0.1 s pause, 5.4 ms with bound workers). libgomp also binds the
calling thread when it loads; that binding is undone at once, so the caller,
and every thread it starts later, keeps its own cores. Nothing is bound when
the user's environment sets OpenMP's affinity variables or when libgomp was
already loaded by another library: their settings stand.
"""
from __future__ import annotations

import contextlib
import ctypes.util
import functools
import os
import subprocess

import llvmlite.binding as llvm

from mascarpone.middleend.errors import NotSupportedError

AFFINITY_VARIABLES = ("OMP_PROC_BIND", "OMP_PLACES", "GOMP_CPU_AFFINITY")
BOUND_WORKERS = {"OMP_PROC_BIND": "true", "OMP_PLACES": "cores"}


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


def _already_loaded() -> bool:
    try:
        with open("/proc/self/maps", encoding="utf-8") as maps:
            return any("libgomp" in line for line in maps)
    except OSError:
        return True  # cannot tell: leave the runtime's settings alone


@contextlib.contextmanager
def _environment(values: dict):
    """Set environment variables for the duration of the block (libgomp reads them when it loads)."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _binds_workers() -> bool:
    return (hasattr(os, "sched_getaffinity") and not _already_loaded()
            and not any(name in os.environ for name in AFFINITY_VARIABLES))


@functools.lru_cache(maxsize=None)
def load_openmp() -> str:
    """Load libgomp for parallel loops, its workers bound to cores; returns the library loaded."""
    bind = _binds_workers()
    caller_cores = os.sched_getaffinity(0) if bind else None
    errors = []
    for name in _candidates():
        try:
            with _environment(BOUND_WORKERS if bind else {}):
                llvm.load_library_permanently(name)
        except RuntimeError as exc:
            errors.append(f"{name}: {exc}")
            continue
        if bind:
            os.sched_setaffinity(0, caller_cores)
        return name
    raise NotSupportedError("parallel loops need the OpenMP runtime libgomp.so.1 (from gcc), "
                            "which was not found: " + "; ".join(errors))
