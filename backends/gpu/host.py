"""The host side of a GPU kernel: binding, copies, the host program between launches, and timings.

A call binds its arguments (numpy arrays, or the target's device arrays),
copies numpy inputs to the device and zeroes outputs that may be left
partly unwritten, runs the host program (host loops and conditions in
Python, each launch with its grid and thread block sized for the current
sizes), and copies numpy outputs back. Given device arrays, the call copies
nothing and the outputs it allocates are device arrays. `profile()` gives the
kernel and transfer times of the last call from the runtime's events.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from mascarpone.backends.common.evaluate import evaluate
from mascarpone.backends.common.kernel import Kernel
from mascarpone.middleend.errors import ArgumentError, NotSupportedError, TargetError

from .bounds import INF, expr_range, most_iterations
from .launches import HostAlloc, HostBlock, HostFor, HostIf, Launch


@dataclass
class Profile:
    """Times of the last call, in milliseconds: kernels, copies host->device and device->host, and each
    launch and copy by name."""

    kernel_ms: float = 0.0
    upload_ms: float = 0.0
    download_ms: float = 0.0
    launches: int = 0
    events: list = field(default_factory=list)   # (kind, name, ms)

    @property
    def transfer_ms(self):
        return self.upload_ms + self.download_ms

    def __str__(self):
        return (f"kernels {self.kernel_ms:.3f} ms in {self.launches} launch(es), copies in {self.upload_ms:.3f} ms, "
                f"out {self.download_ms:.3f} ms")


@dataclass(eq=False)
class CompiledKernel:
    """A kernel of the program as the runtime holds it: spec, buffer arguments, scalar names, scratch."""

    spec: object
    buffers: list
    scalars: list
    scratch: list
    handle: object = None
    shapes: dict = None          # (values of the names the launch shape reads) -> (grid, block)
    shape_inputs: tuple = None


class GPUKernel(Kernel):
    """A kernel of a GPU target: `kernel(**arrays_and_sizes)` as every kernel (see `Kernel`), plus
    device arrays and `profile()`."""

    def __init__(self, lowered, host, kernels, runtime, source):
        super().__init__(lowered)
        self.host = host
        self.kernels = {k.spec.name: k for k in kernels}
        self.runtime = runtime
        self._source = source
        self._profile = Profile()

    def source(self, kind=None) -> str:
        raise NotImplementedError

    def profile(self) -> Profile:
        """Kernel and transfer times of the last call (see Profile)."""
        return self._profile

    def __call__(self, **kwargs):
        rt = self.runtime.ready()
        arrays, values, outputs = self._binder.bind(kwargs, device=rt)
        self.check(values)
        env = dict(zip(self.lowered.params, values))
        for name, value in self.lowered.derived:
            env[name] = evaluate(value, env)
        rt.begin()
        handles = {}
        n_in = len(self.lowered.inputs)
        try:
            for pos, (buf, a) in enumerate(zip(self.lowered.arguments, arrays)):
                if rt.owns(a):
                    handles[buf.name] = rt.handle_of(a)
                    continue
                h = rt.alloc(a.nbytes)
                handles[buf.name] = h
                if pos < n_in or buf.zero_init:   # outputs that may be left partly unwritten start as zeros
                    rt.upload(h, a, buf.name)
            rt.prepare(list(zip(self.lowered.arguments, arrays)), handles)
            self._run(self.host, env, handles)
            for buf, a in zip(self.lowered.outputs, arrays[n_in:]):
                if not rt.owns(a):
                    rt.download(a, handles[buf.name], buf.name)
            rt.finish()
        finally:
            self._profile = rt.end()
        return outputs[0] if self._single else tuple(outputs)

    # the host program ------------------------------------------------------------------------
    def _run(self, node, env, handles):
        if isinstance(node, HostBlock):
            for c in node.body:
                self._run(c, env, handles)
        elif isinstance(node, HostFor):
            for v in range(evaluate(node.lo, env), evaluate(node.hi, env)):
                env[node.var] = v
                self._run(node.body, env, handles)
            env.pop(node.var, None)
        elif isinstance(node, HostIf):
            if evaluate(node.cond, env):
                self._run(node.then, env, handles)
            elif node.else_ is not None:
                self._run(node.else_, env, handles)
        elif isinstance(node, HostAlloc):
            shape = [evaluate(d, env) for d in node.buffer.shape]
            nbytes = int(np.prod([max(d, 0) for d in shape], dtype=np.int64)) * node.buffer.dtype.bytes
            handles[node.buffer.name] = self.runtime.alloc(nbytes)
            self._run(node.body, env, handles)
        elif isinstance(node, Launch):
            self._launch(self.kernels[node.kernel.name], env, handles)
        else:
            raise NotSupportedError(f"unknown host node {type(node).__name__}")

    def _launch(self, k, env, handles):
        # the launch's shape depends on a few sizes and host variables: computed once per value of those
        key = tuple(env.get(name) for name in _shape_inputs(k))
        shape = k.shapes.get(key) if k.shapes is not None else None
        if shape is None:
            shape = launch_shape(k.spec, env)
            if 0 not in shape[0] and 0 not in shape[1]:
                self.runtime.check_block(k.spec.name, shape[1])
            if k.shapes is None or len(k.shapes) > 256:
                k.shapes = {}
            k.shapes[key] = shape
        grid, block = shape
        if 0 in grid or 0 in block:
            return
        args = [handles[b.name] for b in k.buffers]
        args += [env[name] for name in k.scalars]
        groups = int(np.prod(grid))
        threads = int(np.prod(block))
        for s in k.scratch:
            count = int(np.prod([max(evaluate(d, env), 0) for d in s.buffer.shape], dtype=np.int64))
            per = {"kernel": 1, "block": groups, "thread": groups * threads}[s.per]
            args.append(self.runtime.scratch(s.ident, max(count * per, 1) * s.buffer.dtype.bytes))
        self.runtime.launch(k, grid, block, args)


def _shape_inputs(k):
    """The sizes and host variables a kernel's launch shape reads."""
    if k.shape_inputs is None:
        from mascarpone.middleend.expr import Sym, walk
        inner = {var for var, _, _ in k.spec.ranged}
        names = {n.name for _, lo, hi in k.spec.ranged for e in (lo, hi) for n in walk(e) if isinstance(n, Sym)}
        k.shape_inputs = tuple(sorted(names - inner))
    return k.shape_inputs


def launch_shape(spec, env):
    """(grid, block): the number of blocks and of threads per block along x, y, z for `spec` with the
    sizes and host loop variables in `env`."""
    if spec.single:
        return (1, 1, 1), (1, 1, 1)
    ranges = {name: (v, v) for name, v in env.items()}
    for var, lo, hi in spec.ranged:
        lo_v, hi_v = expr_range(lo, ranges)[0], expr_range(hi, ranges)[1] - 1
        if var in ranges and var not in env:
            old = ranges[var]
            lo_v, hi_v = min(lo_v, old[0]), max(hi_v, old[1])
        ranges[var] = (lo_v, hi_v)
    grid, block = [1, 1, 1], [1, 1, 1]
    for loop in spec.blocks:
        grid[spec.block_dim(loop)] = most_iterations(loop.lo, loop.hi, ranges)
    for loop in spec.thread_loops():
        d = spec.thread_dims[id(loop)]
        block[d] = max(block[d], most_iterations(loop.lo, loop.hi, ranges))
    for what, sizes, loops in (("block", grid, spec.blocks), ("thread", block, spec.thread_loops())):
        if INF in sizes:
            bad = [f.var for f in loops if most_iterations(f.lo, f.hi, ranges) == INF]
            raise NotSupportedError(f"{spec.name}: the trip count of {what} loop {bad[0]} has no bound the host "
                                    f"can compute before the launch")
    return tuple(int(g) for g in grid), tuple(int(b) for b in block)


def check_block_size(name, block, max_threads, max_dims):
    """Refuse a thread block larger than the device takes, naming the limit."""
    total = int(np.prod(block))
    if total > max_threads:
        raise TargetError(f"{name}: a thread block of {' x '.join(map(str, block))} = {total} threads is more than "
                          f"the device's limit of {max_threads} threads per block; use smaller thread tiles")
    for d, (b, m) in enumerate(zip(block, max_dims)):
        if b > m:
            raise TargetError(f"{name}: {b} threads along {'xyz'[d]} is more than the device's limit of {m}")


class DeviceAdapter:
    """What a runtime offers Binder for its device arrays (see Binder.bind); subclasses fill it in."""

    def owns(self, a) -> bool:
        return False

    def check(self, name, a, output):
        flags = getattr(a, "flags", None)
        if flags is not None and not flags.c_contiguous:
            raise ArgumentError(f"{name}: a device array must be C-contiguous")
