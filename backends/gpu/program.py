"""A lowered function as a GPU program: the host program and one translation unit of kernels."""
from __future__ import annotations

from mascarpone.middleend.errors import NotSupportedError
from mascarpone.middleend.loopir import DEFAULT_SIZE_RANGE

from .bounds import INF, expr_range, most_iterations
from .host import CompiledKernel
from .launches import free_symbols, host_temporaries, split
from .printer import DevicePrinter, narrow_name


def size_ranges(lowered):
    """{size: (lo, hi)} the code may see: fixed sizes exactly, declared ranges, else at least 1."""
    ranges = {}
    for p in lowered.params:
        if p in lowered.fixed_params:
            v = lowered.fixed_params[p]
            ranges[p] = (v, v)
        else:
            lo, hi = lowered.param_ranges.get(p, DEFAULT_SIZE_RANGE)
            ranges[p] = (-INF if lo is None else lo, INF if hi is None else hi)
    return ranges


def most_threads(spec, ranges):
    """The largest thread block `spec` launches for sizes in `ranges` (entries may be inf)."""
    env = dict(ranges)
    for var, lo, hi in spec.ranged:
        lo_v, hi_v = expr_range(lo, env)[0], expr_range(hi, env)[1] - 1
        if var in env:
            lo_v, hi_v = min(lo_v, env[var][0]), max(hi_v, env[var][1])
        env[var] = (lo_v, hi_v)
    block = [1, 1, 1]
    for loop in spec.thread_loops():
        d = spec.thread_dims[id(loop)]
        block[d] = max(block[d], most_iterations(loop.lo, loop.hi, env))
    return block


def build(lowered, dialect, *, pragmas=(), constants_at_module=False, check_block=None):
    """(source, host program, [CompiledKernel], {constant input: its module-scope name}) of `lowered` in
    `dialect`. `check_block(name, block)` refuses
    a thread block the device cannot run, for blocks whose size is known at compile time."""
    host, specs = split(lowered)
    ranges = size_ranges(lowered)
    printer = DevicePrinter(dialect, lowered, ranges)
    sizes = list(lowered.params) + [name for name, _ in lowered.derived]
    globals_ = list(lowered.arguments) + host_temporaries(host)
    constants = {b.name for b in lowered.inputs if b.memory == "constant"} if constants_at_module else set()
    kernels, texts = [], []
    for spec in specs:
        scalars = sizes + [v for v in spec.host_vars if v not in sizes]
        shapes = {n.name for b in globals_ for d in b.shape for n in _syms(d)}
        unknown = free_symbols(spec.body) - set(scalars) - shapes
        if unknown:
            raise NotSupportedError(f"{spec.name}: the kernel reads {sorted(unknown)}, which are neither sizes nor "
                                    f"host loop variables")
        if check_block is not None:
            block = most_threads(spec, ranges)
            if INF not in block:
                check_block(spec.name, tuple(int(b) for b in block))
        lines, args, scratch = printer.device_kernel(spec, globals_, scalars, constants)
        texts.append("\n".join(lines))
        kernel = CompiledKernel(spec, args, scalars, scratch)
        lines, args, scratch = printer.device_kernel(spec, globals_, scalars, constants, narrow=True)
        texts.append("\n".join(lines))
        kernel.narrow = CompiledKernel(spec, args, scalars, scratch, entry=narrow_name(spec))
        kernels.append(kernel)
    module = []
    if constants_at_module:
        module = [dialect.constant_array(dialect.memory(b.dtype), printer.names(b.name, "buffer"),
                                         dialect.constant_capacity(b))
                  for b in lowered.inputs if b.memory == "constant"]
    out = list(dialect.includes()) + list(pragmas) + [""] + module + printer.helpers.definitions() + [""]
    out += [t + "\n" for t in texts]
    names = {b.name: printer.names(b.name, "buffer") for b in lowered.inputs if b.name in constants}
    return "\n".join(out), host, kernels, names


def _syms(e):
    from mascarpone.middleend.expr import Sym, walk
    return [n for n in walk(e) if isinstance(n, Sym)]
