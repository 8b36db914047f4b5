"""What the autoscheduler needs to know about the host: SIMD width, cache sizes, and a fingerprint
that keys the disk cache (a schedule measured on one CPU says little about another)."""
from __future__ import annotations

import functools
import os
import platform
from pathlib import Path

#: bytes of one SIMD register for the widest vector extension the CPU flags name
_SIMD_BYTES = (("avx512f", 64), ("avx2", 32), ("avx", 32), ("sse2", 16), ("asimd", 16), ("neon", 16))
#: when sysfs says nothing: a common L1d and L2
_DEFAULT_CACHES = {1: 32 * 1024, 2: 512 * 1024}


@functools.lru_cache(maxsize=None)
def cpuinfo() -> dict:
    """The fields of /proc/cpuinfo for the first CPU (empty where there is none)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return {}
    fields = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    return fields


def cpu_model() -> str:
    """The CPU's model name (platform's processor where /proc/cpuinfo is missing)."""
    info = cpuinfo()
    return info.get("model name") or info.get("Model") or platform.processor() or platform.machine()


def simd_bytes() -> int:
    """Bytes per SIMD register of this CPU (16 when the flags name no wider extension)."""
    flags = set((cpuinfo().get("flags") or cpuinfo().get("Features") or "").split())
    for flag, width in _SIMD_BYTES:
        if flag in flags:
            return width
    return 16


def vector_lanes(dtype) -> int:
    """Lanes of one SIMD register for elements of `dtype` (a DType)."""
    return max(2, simd_bytes() // dtype.bytes)


@functools.lru_cache(maxsize=None)
def cache_bytes(level: int) -> int:
    """Size of the data (or unified) cache of `level` seen by one core, from sysfs."""
    root = Path("/sys/devices/system/cpu/cpu0/cache")
    for index in sorted(root.glob("index*")):
        try:
            if int((index / "level").read_text()) != level or (index / "type").read_text().strip() == "Instruction":
                continue
            text = (index / "size").read_text().strip().upper()
        except (OSError, ValueError):
            continue
        scale = {"K": 1024, "M": 1024 * 1024}.get(text[-1:], 1)
        return int(text.rstrip("KM")) * scale
    return _DEFAULT_CACHES.get(level, 1024 * 1024)


def cores() -> int:
    """CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def fingerprint() -> str:
    """The machine as the cache keys it: CPU model, cores, SIMD width."""
    return f"{cpu_model()}|{cores()} cores|{simd_bytes() * 8}-bit SIMD"
