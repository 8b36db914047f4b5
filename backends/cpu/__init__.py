"""The CPU back-end: loop IR -> LLVM IR (llvmlite) -> machine code for this host.

    compile_cpu(lowered, *, num_threads=None, fast_math=False, fp_contract=True, arch="native") -> CpuKernel
    emit_object(lowered, path, *, fast_math=False, fp_contract=True, arch="native") -> header path

Modules: target (the "cpu" Target the registry finds), llvm_types (type
mapping), ops (operation semantics), memory (addressing, temporaries), loops
(loop skeletons, metadata), context (generation state), exprgen
(expressions), stmtgen (statements, serial/unroll loops), vectorize (SIMD
loops), parallel (OpenMP outlining), codegen (module), machine (target
machine, O3 pipeline), jit (MCJIT, object code), kernel (CpuKernel), objfile
(object file and C header). What every target shares (argument checks, the
kernel base, accumulator promotion, the OpenMP runtime, ...) is in
backends/common.
"""
from __future__ import annotations

from mascarpone.middleend.loopir import For, walk_stmts

from .codegen import build_module
from .context import Options
from .jit import JitModule
from .kernel import CpuKernel
from .objfile import emit_object
from .machine import NATIVE, check_arch, masked_memory, slow_gathers
from mascarpone.backends.common.openmp import load_openmp


def compile_cpu(lowered, *, num_threads=None, fast_math=False, fp_contract=True, arch=NATIVE) -> CpuKernel:
    """JIT-compile a `LoweredFunction` for this machine.

    num_threads: threads for parallel loops of this kernel (None: the global
        default, see `set_num_threads`); also settable later as `kernel.num_threads`.
    fast_math: allow LLVM's fast-math rewrites (reassociation, reciprocals,
        no NaN/inf) on float operations. Off by default: IEEE semantics.
    fp_contract: allow a float multiply and a following add/sub to be fused
        into one FMA with a single rounding, as Halide does (LLVM may also fuse
        across statements once a temporary lives in a register). Nothing is
        reassociated. On by default because FMA doubles peak throughput; set
        False for results rounded after every operation (bit-identical to numpy
        for +, -, *, /).
    arch: the CPU to generate code for, 'native' (this machine) or an LLVM CPU
        name ('x86-64-v3', 'skylake-avx512', ...); the code runs where that CPU's
        instructions do.
    """
    if any(isinstance(s, For) and s.kind == "parallel" for s in walk_stmts(lowered.body)):
        load_openmp()
    module = build_module(lowered, Options(fast_math=fast_math, fp_contract=fp_contract,
                                           lane_loads=slow_gathers(check_arch(arch)),
                                           masked_tails=masked_memory(arch)))
    text = str(module)
    return CpuKernel(lowered, JitModule(text, arch), text, num_threads=num_threads)


__all__ = ["compile_cpu", "emit_object", "CpuKernel"]
