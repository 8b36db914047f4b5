"""The stamp of a run: the commit, the machine (CPU model, ISA features, cores, memory), library versions."""
from __future__ import annotations

import datetime
import importlib.metadata
import os
import platform
import re
import subprocess
from pathlib import Path

from mascarpone.middleend.autoschedule.machine import cpuinfo

#: the ISA features worth naming in a benchmark report (of /proc/cpuinfo's flags)
ISA_FEATURES = ("sse4_2", "avx", "avx2", "fma", "f16c", "bmi2", "avx512f", "avx512dq", "avx512cd", "avx512bw",
                "avx512vl", "avx512ifma", "avx512vbmi", "avx512_vbmi2", "avx512_vnni", "avx512_bf16",
                "avx512_fp16", "avx_vnni", "amx_tile", "amx_bf16", "amx_int8", "neon", "asimd", "sve")
LIBRARIES = ("mascarpone", "numpy", "llvmlite", "islpy", "halide", "numba", "threadpoolctl", "matplotlib")


def repository_root() -> Path | None:
    """The source checkout this mascarpone runs from (an editable install), or None."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / ".git").exists() and (root / "pyproject.toml").exists() else None


def commit() -> dict:
    """The checkout's commit and whether its tracked files differ from it."""
    root = repository_root()
    if root is None:
        return {"commit": None, "dirty": None}
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                              timeout=10).stdout.strip()
        changed = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                                 capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    return {"commit": head or None, "dirty": bool(changed)}


def _memory_bytes() -> int | None:
    try:
        m = re.search(r"MemTotal:\s+(\d+) kB", Path("/proc/meminfo").read_text())
    except OSError:
        return None
    return int(m.group(1)) * 1024 if m else None


def _gcc_version() -> str | None:
    cc = os.environ.get("CC", "gcc")
    try:
        out = subprocess.run([cc, "-dumpfullversion"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{cc} {out.stdout.strip()}" if out.returncode == 0 else None


def machine() -> dict:
    """CPU model, ISA features, cores (and those this process may use), memory, OS."""
    info = cpuinfo()
    flags = set((info.get("flags") or info.get("Features") or "").split())
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    return {"cpu": info.get("model name") or platform.processor() or platform.machine(),
            "isa": [f for f in ISA_FEATURES if f in flags],
            "cores": os.cpu_count(), "usable_cores": usable, "memory_bytes": _memory_bytes(),
            "os": platform.platform(), "python": platform.python_version()}


def versions() -> dict:
    """Versions of the libraries a run uses (None: not installed), LLVM's and the C compiler's."""
    out = {}
    for name in LIBRARIES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    try:
        import llvmlite.binding as llvm
        out["llvm"] = ".".join(map(str, llvm.llvm_version_info))
    except ImportError:
        out["llvm"] = None
    out["cc"] = _gcc_version()
    return out


def stamp(options: dict) -> dict:
    """Everything a result file needs to be read later: when, which commit, which machine, what ran."""
    return {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"), **commit(),
            "machine": machine(), "versions": versions(), "options": options}
