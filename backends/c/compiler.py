"""Building C source into a shared library with the system C compiler, cached by content."""
from __future__ import annotations

import functools
import hashlib
import os
import shlex
import shutil
import subprocess
import tempfile

from mascarpone.middleend.errors import NotSupportedError, TargetError


def c_compiler() -> str:
    """The C compiler command: $CC, else gcc."""
    return os.environ.get("CC", "gcc")


@functools.lru_cache(maxsize=None)
def compiler_version(cc: str) -> str:
    """The first line `cc --version` prints (part of the cache key: another compiler, another build)."""
    try:
        out = subprocess.run(shlex.split(cc) + ["--version"], capture_output=True, text=True, timeout=30)
    except OSError:
        return ""
    return out.stdout.splitlines()[0] if out.stdout else ""


def missing_compiler() -> str | None:
    """What is missing to build C here, or None."""
    cc = c_compiler()
    if shutil.which(shlex.split(cc)[0]) is None:
        return f"the C compiler {cc!r} (set CC to another one)"
    return None


def cache_dir() -> str:
    """Where built libraries are kept: $MASCARPONE_CACHE, else ~/.cache/mascarpone (XDG_CACHE_HOME)."""
    root = os.environ.get("MASCARPONE_CACHE")
    if not root:
        root = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "mascarpone")
    return os.path.join(root, "c")


def build_shared_library(source: str, flags: list, what: str, *, compiler=None, suffix=".c",
                         libs=("-lm",)) -> str:
    """The path of a shared library built from `source` with `flags` (reused when the same source was
    built with the same flags and compiler before). `what` names the kernel in errors; `compiler`
    (default: the C compiler), `suffix` (of the source file, which tells the language) and `libs`
    let a C-family dialect build with another compiler (C++ with g++)."""
    cc = compiler or c_compiler()
    text = "\0".join([source, cc, compiler_version(cc), *flags, suffix, *libs])
    key = hashlib.sha256(text.encode()).hexdigest()[:24]
    folder = cache_dir()
    path = os.path.join(folder, f"{key}.so")
    if os.path.exists(path):
        return path
    os.makedirs(folder, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        src = os.path.join(tmp, "kernel" + suffix)
        with open(src, "w") as f:
            f.write(source)
        out = os.path.join(tmp, "kernel.so")
        cmd = shlex.split(cc) + flags + ["-shared", "-fPIC", "-o", out, src, *libs]
        try:
            run = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        except OSError as err:
            raise TargetError(f"{what}: the C compiler {cc!r} could not be run: {err}") from None
        if run.returncode != 0:
            arch = next((f for f in flags if f.startswith("-march=")), None)
            if arch and "-march=" in run.stderr and "bad value" in run.stderr:
                raise TargetError(f"{what}: {cc} does not know the CPU {arch[len('-march='):]!r} (arch=); "
                                  f"{run.stderr.strip().splitlines()[0]}")
            kept = os.path.join(folder, f"{key}.failed{suffix}")
            shutil.copy(src, kept)
            raise NotSupportedError(f"{what}: the C compiler failed on the generated code (kept in {kept}):\n"
                                    + "\n".join(run.stderr.strip().splitlines()[:20]))
        os.replace(out, path)
    return path
