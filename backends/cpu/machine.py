"""The target machine: LLVM initialisation, a target machine for this CPU (or a named one), and the O3
pipeline."""
from __future__ import annotations

import functools
import subprocess
import sys

import llvmlite.binding as llvm

from mascarpone.middleend.errors import TargetError

#: `arch=` value meaning the machine we run on
NATIVE = "native"


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


def slow_gathers(arch: str = NATIVE) -> bool:
    """Whether the CPU `arch` names (this machine's for 'native') loads a vector's lanes faster one by one
    than with its gather instruction: AMD's Zen cores, for which LLVM's own tuning also prefers no gather.
    (On a Zen 5 with AVX-512, Halide's warpAffine under Mullapudi2016's schedule: 3.6-3.9 ms with lane
    loads, 4.1-4.8 ms with vgatherqps.)"""
    cpu = host_cpu()[0] if arch == NATIVE else arch
    return cpu.startswith("znver")


#: LLVM CPU names with AVX-512 (byte and word lanes included) besides those of this machine
_AVX512_CPUS = ("x86-64-v4", "skylake-avx512", "cascadelake", "cooperlake", "cannonlake", "icelake-client",
                "icelake-server", "tigerlake", "rocketlake", "sapphirerapids", "emeraldrapids", "graniterapids",
                "znver4", "znver5")


def masked_memory(arch: str = NATIVE) -> bool:
    """Whether the CPU `arch` names (this machine's for 'native') masks vector loads and stores lane by
    lane in one instruction for every element size (AVX-512 F and BW), so that a vector loop's last
    few iterations run as one masked chunk rather than one at a time."""
    if arch == NATIVE:
        features = host_cpu()[1].split(",")
        return "+avx512f" in features and "+avx512bw" in features
    return arch in _AVX512_CPUS


_PROBE = """
import llvmlite.binding as llvm
llvm.initialize_native_target(); llvm.initialize_native_asmprinter()
t = llvm.Target.from_triple(llvm.get_process_triple())
t.create_target_machine(cpu={cpu!r}, features="", opt=0).emit_assembly(llvm.parse_assembly("define void @f() {{ ret void }}"))
"""


@functools.lru_cache(maxsize=None)
def check_arch(arch: str) -> str:
    """`arch` when LLVM knows it as a CPU of this machine's architecture (x86-64-v3, skylake-avx512,
    znver4, ...), else a TargetError. (LLVM aborts the process on some unknown names, so a separate
    process tries the name first.)"""
    if arch == NATIVE:
        return arch
    if not isinstance(arch, str) or not arch.replace("-", "").replace("_", "").isalnum():
        raise TargetError(f"arch={arch!r} is not a CPU name; use 'native' or a name such as 'x86-64-v3'")
    probe = subprocess.run([sys.executable, "-c", _PROBE.format(cpu=arch)], capture_output=True, text=True,
                           timeout=60, check=False)
    if probe.returncode != 0 or "not a recognized processor" in probe.stderr:
        raise TargetError(f"arch={arch!r} is not a CPU LLVM knows for {llvm.get_process_triple()}; use 'native' "
                          f"or a name such as 'x86-64-v2', 'x86-64-v3', 'x86-64-v4', 'skylake-avx512', 'znver4'")
    return arch


def target_machine(kind: str = "jit", arch: str = NATIVE):
    """A new target machine at -O3 for the host CPU (`arch="native"`) or the CPU `arch` names; `kind` is
    'jit' or 'object' (position independent).

    Not shared: an MCJIT engine takes ownership of the target machine it is given.
    """
    _init()
    cpu, features = host_cpu() if check_arch(arch) == NATIVE else (arch, "")
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
