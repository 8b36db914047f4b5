"""Ahead-of-time output: an object file for this machine and a C header for it."""
from __future__ import annotations

import os

from mascarpone.backends.common.cheader import header_text

from .codegen import build_module
from .context import Options
from .jit import compile_object
from .machine import NATIVE, check_arch, masked_memory, slow_gathers


def emit_object(lowered, path, *, fast_math=False, fp_contract=True, arch=NATIVE) -> str:
    """Write an object file to `path` and its C header beside it; return the header's path.

    The header is `path` with its extension replaced by `.h`. The code is for this machine's CPU, or the
    one `arch` names ('x86-64-v3', 'skylake-avx512', ...: LLVM's CPU names). Other options are those
    of `compile_cpu`.
    """
    path = os.fspath(path)
    module = build_module(lowered, Options(fast_math=fast_math, fp_contract=fp_contract,
                                           lane_loads=slow_gathers(check_arch(arch)),
                                           masked_tails=masked_memory(arch)))
    obj, _ = compile_object(str(module), arch)
    with open(path, "wb") as f:
        f.write(obj)
    header = os.path.splitext(path)[0] + ".h"
    with open(header, "w") as f:
        f.write(header_text(lowered, "mascarpone's CPU back-end (LLVM)",
                            "Link with -lm, and with -lgomp (or -fopenmp) when the kernel has parallel loops."))
    return header
