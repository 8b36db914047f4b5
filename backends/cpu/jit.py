"""Compilation of a module for this machine: O3, then MCJIT in memory or an object file."""
from __future__ import annotations

import llvmlite.binding as llvm

from .machine import NATIVE, optimize, prepare, target_machine


class JitModule:
    """An optimized module loaded into its own MCJIT engine; it lives as long as this object."""

    def __init__(self, ir_text: str, arch: str = NATIVE):
        tm = target_machine("jit", arch)
        mod = prepare(ir_text, tm)
        optimize(mod, tm)
        self.optimized_ir = str(mod)
        self._tm = tm
        self._engine = llvm.create_mcjit_compiler(mod, tm)
        self._engine.finalize_object()

    def function_address(self, name: str) -> int:
        """The address of the compiled function `name`."""
        addr = self._engine.get_function_address(name)
        if not addr:
            raise LookupError(f"no function {name} in the compiled module")
        return addr

    def global_address(self, name: str) -> int:
        """The address of the global variable `name`."""
        addr = self._engine.get_global_value_address(name)
        if not addr:
            raise LookupError(f"no global {name} in the compiled module")
        return addr

    def assembly(self) -> str:
        """The machine code as assembly text."""
        return self._tm.emit_assembly(llvm.parse_assembly(self.optimized_ir))


def compile_object(ir_text: str, arch: str = NATIVE) -> tuple[bytes, str]:
    """Object code (position independent) for the host or the CPU `arch` names, and the optimized IR."""
    tm = target_machine("object", arch)
    mod = prepare(ir_text, tm)
    optimize(mod, tm)
    return tm.emit_object(mod), str(mod)
