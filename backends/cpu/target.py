"""The host target: LLVM initialisation, a target machine for this CPU, and the O3 pipeline."""
from __future__ import annotations

import functools

import llvmlite.binding as llvm


@functools.lru_cache(maxsize=None)
def _init():
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    llvm.initialize_native_asmparser()


@functools.lru_cache(maxsize=None)
def host_cpu():
    """`(cpu_name, feature_string)` of the machine we run on (AVX-512 etc. when present)."""
    _init()
    try:
        features = llvm.get_host_cpu_features().flatten()
    except RuntimeError:  # some hosts cannot report features; the CPU name still implies them
        features = ""
    return llvm.get_host_cpu_name(), features


def target_machine(kind: str = "jit"):
    """A new target machine for the host CPU at -O3; `kind` is 'jit' or 'object' (position independent).

    Not shared: an MCJIT engine takes ownership of the target machine it is given.
    """
    _init()
    cpu, features = host_cpu()
    target = llvm.Target.from_triple(llvm.get_process_triple())
    if kind == "object":
        return target.create_target_machine(cpu=cpu, features=features, opt=3, reloc="pic",
                                            codemodel="default")
    return target.create_target_machine(cpu=cpu, features=features, opt=3, jit=True)


def prepare(module_text: str, tm) -> "llvm.ModuleRef":
    """Parse and verify LLVM IR text for the target machine `tm`."""
    mod = llvm.parse_assembly(module_text)
    mod.triple = tm.triple
    mod.data_layout = str(tm.target_data)
    mod.verify()
    return mod


def optimize(mod, tm) -> None:
    """Run the O3 pipeline with loop and SLP vectorization on `mod`, in place."""
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pto.loop_unrolling = True
    pto.loop_interleaving = True
    pb = llvm.create_pass_builder(tm, pto)
    mpm = pb.getModulePassManager()
    mpm.run(mod, pb)
