"""`CpuKernel`: a JIT-compiled kernel called with numpy arrays."""
from __future__ import annotations

import ctypes

import islpy as isl

from middleend.errors import ArgumentError

from .arguments import Binder
from .codegen import param_names
from .runtime import get_num_threads


class CpuKernel:
    """A compiled kernel: `kernel(**arrays_and_params)`.

    Inputs are numpy arrays and size parameters ints, by keyword (buffer and
    parameter names). Parameters that a shape determines may be left out.
    Non-contiguous inputs are copied to C order first. Outputs not passed are
    allocated and returned (the array, or a tuple in declaration order when
    there are several); outputs passed are filled in place and returned too
    (see `arguments` for the exact rules). Bad arguments raise
    `middleend.errors.ArgumentError`; a failed allocation of a temporary,
    `MemoryError`. The call releases the GIL. `num_threads` (None: the global
    default of `set_num_threads`, initially `os.cpu_count()`) sets the threads
    of parallel loops.
    """

    def __init__(self, lowered, jit, unoptimized_ir: str, *, num_threads=None):
        self.name = lowered.name
        self.lowered = lowered
        self.num_threads = num_threads
        self._jit = jit
        self._ir = unoptimized_ir
        params = param_names(lowered)
        self._binder = Binder(lowered.name, lowered.inputs, lowered.outputs, params, lowered.derived,
                              lowered.param_ranges)
        nbuf = len(lowered.inputs) + len(lowered.outputs)
        proto = ctypes.CFUNCTYPE(ctypes.c_int32, *([ctypes.c_void_p] * nbuf + [ctypes.c_int64] * len(params)))
        self._fn = proto(jit.function_address(self.name))
        self._threads = ctypes.c_int32.from_address(jit.global_address(f"{self.name}.num_threads"))
        self._single = len(lowered.outputs) == 1
        self._fixed = [(params.index(p), p, v) for p, v in lowered.fixed_params.items()]
        self._assumed = None
        if lowered.assumptions:
            assumed = isl.Set(f"[{', '.join(params)}] -> {{ : }}")
            for _, a in lowered.assumptions:
                assumed = assumed.intersect(a.align_params(assumed.get_space()))
            self._assumed = assumed
            self._assumed_ok = set()

    def _check_fixed(self, values):
        for pos, name, expected in self._fixed:
            if values[pos] != expected:
                raise ArgumentError(f"{self.name} was compiled for {name} = {expected} (fixed=...), "
                                    f"called with {name} = {values[pos]}")

    def _check_assumed(self, values):
        key = tuple(values)
        if key in self._assumed_ok:
            return
        point = self._assumed
        for k, v in enumerate(values):
            point = point.fix_val(isl.dim_type.param, k, isl.Val(int(v)))
        if point.is_empty():
            names = param_names(self.lowered)
            raise ArgumentError(f"{self.name} was compiled assuming {' and '.join(text for text, _ in self.lowered.assumptions)}; "
                                f"called with {', '.join(f'{n} = {v}' for n, v in zip(names, values))}")
        self._assumed_ok.add(key)

    def __call__(self, **kwargs):
        arrays, params, outputs = self._binder.bind(kwargs)
        if self._fixed:
            self._check_fixed(params)
        if self._assumed is not None:
            self._check_assumed(params)
        self._threads.value = self.num_threads or get_num_threads()
        status = self._fn(*[a.ctypes.data for a in arrays], *params)
        if status:
            raise MemoryError(f"{self.name}: a temporary buffer could not be allocated")
        if self._single:
            return outputs[0]
        return tuple(outputs)

    def source(self, kind: str = "llvm") -> str:
        """The generated code: 'llvm' (optimized IR), 'llvm-unoptimized' or 'asm'."""
        if kind == "llvm":
            return self._jit.optimized_ir
        if kind == "llvm-unoptimized":
            return self._ir
        if kind == "asm":
            return self._jit.assembly()
        raise ValueError(f"unknown source kind {kind!r}; use 'llvm', 'llvm-unoptimized' or 'asm'")

    def __repr__(self):
        args = [f"{b.name}: {b.dtype}[{', '.join(map(str, b.shape))}]" for b in self.lowered.arguments]
        return f"<CpuKernel {self.name}({', '.join(args + param_names(self.lowered))})>"
