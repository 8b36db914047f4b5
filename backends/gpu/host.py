"""The host side of a GPU kernel: binding, copies, the host program between launches, and timings.

A call binds its arguments (numpy arrays, or the target's device arrays),
copies numpy inputs to the device and zeroes outputs that may be left
partly unwritten, runs the host program (host loops and conditions, each
launch with its grid and thread block sized for the current sizes), and
copies numpy outputs back, waiting once, at the end. Given device arrays,
the call copies nothing and the outputs it allocates are device arrays.
`profile()` gives the kernel and transfer times of the last call from the
runtime's events, read when asked for.

The host program reads sizes only, so its run for given sizes (the
temporaries it allocates and each launch's grid, block, scalar arguments and
scratch sizes) is worked out on the first call with those sizes and replayed
by the next ones: a call with the same sizes costs a binding, the copies and
one enqueue per launch. A call given the very device arrays of the last call
skips the binding too and repeats the last call's launches as they were.
"""
from __future__ import annotations

import collections
import itertools
from dataclasses import dataclass

import numpy as np

from mascarpone.backends.common.evaluate import evaluate
from mascarpone.backends.common.kernel import Kernel
from mascarpone.middleend.errors import ArgumentError, NotSupportedError, TargetError

from .bounds import INF, expr_range, most_iterations
from .launches import HostAlloc, HostBlock, HostFor, HostIf, Launch, host_temporaries
from .narrow import indices_fit_int32


class Profile:
    """Times of the last call, in milliseconds: kernels, copies host->device and device->host, and each
    launch and copy by name (`events`: (kind, name, ms), kind 'kernel', 'upload' or 'download').

    `pending`, where given, yields the events when first asked for: a call reads its timings only when
    someone looks at them, so a call that nobody profiles pays nothing for them. `release`, where given,
    is called once a profile whose events were never read is forgotten (the runtime reuses them)."""

    def __init__(self, events=(), pending=None, release=None):
        self._events = list(events)
        self._pending = pending
        self._release = release

    def __del__(self):
        if self._pending is not None and self._release is not None:
            self._release()

    @property
    def events(self) -> list:
        if self._pending is not None:
            pending, self._pending = self._pending, None
            self._events = list(pending())
        return self._events

    def _sum(self, kind):
        return sum(ms for k, _, ms in self.events if k == kind)

    @property
    def kernel_ms(self) -> float:
        return self._sum("kernel")

    @property
    def upload_ms(self) -> float:
        return self._sum("upload")

    @property
    def download_ms(self) -> float:
        return self._sum("download")

    @property
    def launches(self) -> int:
        return sum(1 for k, _, _ in self.events if k == "kernel")

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
    last_args: list = None       # the arguments the runtime last gave the kernel object (runtimes that keep them)
    packed_args: object = None   # last_args in the form the runtime launches with (runtimes that pack them)
    entry: str = None            # the name of its entry point (the spec's name where None)
    narrow: object = None        # its variant with 32-bit index arithmetic (a CompiledKernel; see narrow.py)

    @property
    def entry_point(self) -> str:
        return self.entry or self.spec.name


@dataclass(frozen=True)
class LaunchPlan:
    """What a launch needs besides its buffers, for given sizes and host loop variables: grid and thread
    block, its scalar arguments (int64 on the device) and the bytes of each scratch buffer."""

    grid: tuple
    block: tuple
    scalars: tuple
    scratch: tuple               # (ident, nbytes)

    @property
    def empty(self) -> bool:
        return 0 in self.grid or 0 in self.block


class GPUKernel(Kernel):
    """A kernel of a GPU target: `kernel(**arrays_and_sizes)` as every kernel (see `Kernel`), plus
    device arrays and `profile()`."""

    def __init__(self, lowered, host, kernels, runtime, source):
        super().__init__(lowered)
        self.host = host
        self.kernels = {k.spec.name: k for k in kernels}
        self._device_buffers = list(lowered.arguments) + host_temporaries(host)
        self.runtime = runtime
        self._source = source
        self._profile = Profile()
        self._traces = {}   # sizes -> the host program's steps (see _steps)
        self._replay = None      # the last call, where the next may repeat it (_Replay)

    def source(self, kind=None) -> str:
        raise NotImplementedError

    def profile(self) -> Profile:
        """Kernel and transfer times of the last call (see Profile)."""
        return self._profile

    def __call__(self, **kwargs):
        rt = self.runtime.ready()
        replay = self._replay
        if replay is not None and replay.repeats(kwargs) and self._run_again(rt, replay):
            return replay.result
        arrays, values, outputs = self._binder.bind(kwargs, device=rt)
        self.check(values)
        steps = self._steps(tuple(values))
        rt.begin()
        handles = {}
        launched = []
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
            arguments = list(zip(self.lowered.arguments, arrays))
            rt.prepare(arguments, handles)
            for step in steps:
                if isinstance(step, HostStepAlloc):
                    handles[step.name] = rt.alloc(step.nbytes)
                    continue
                k, plan = step.kernel, step.plan
                args = [handles[b.name] for b in k.buffers]
                args += plan.scalars
                for ident, nbytes in plan.scratch:
                    args.append(rt.scratch(ident, nbytes))
                rt.launch(k, plan.grid, plan.block, args)
                launched.append((k, plan.grid, plan.block, args))
            for buf, a in zip(self.lowered.outputs, arrays[n_in:]):
                if not rt.owns(a):
                    rt.download(a, handles[buf.name], buf.name)
            rt.finish()
            result = outputs[0] if self._single else tuple(outputs)
            self._replay = self._replay_of(kwargs, arrays, result, steps, arguments, handles, launched, rt)
        finally:
            self._profile = rt.end()
        return result

    # a call that repeats the last one ---------------------------------------------------------
    # A call given the very objects of the last call, all of them device arrays (whose shape, dtype, place
    # and context do not change) and sizes, outputs included, does what the last one did: the same
    # launches with the same arguments. The kernel holds those objects until its next call.
    def _replay_of(self, kwargs, arrays, result, steps, arguments, handles, launched, rt):
        """The _Replay of a call that just ran, or None where the next call cannot repeat it."""
        if not isinstance(steps, list) or not all(b.name in kwargs for b in self.lowered.outputs):
            return None   # (a host program too long to keep; outputs allocated at each call)
        if not all(rt.owns(v) or type(v) is int for v in kwargs.values()):
            return None
        n_in = len(self.lowered.inputs)
        zeroed = [a for b, a in zip(self.lowered.outputs, arrays[n_in:]) if b.zero_init]
        # (with device arrays alone, the buffers the call took from the pool are its temporaries and scratch)
        return _Replay(tuple(kwargs.items()), result, zeroed, arguments, handles, list(rt.in_use), launched)

    def _run_again(self, rt, replay) -> bool:
        """Run `replay`'s launches again; False, having run nothing, where the runtime's pool gives other
        temporaries than last time (the call is then bound afresh)."""
        rt.begin()
        try:
            for (nbytes, handle) in replay.allocs:
                if rt.alloc(nbytes) != handle:
                    return False
            for a in replay.zeroed:
                rt.zero(a)    # (as binding does to a given output the kernel may leave partly unwritten)
            rt.prepare(replay.arguments, replay.handles)
            for k, grid, block, args in replay.launches:
                rt.launch(k, grid, block, args)
            rt.finish()
        finally:
            self._profile = rt.end()
        return True

    # the host program ------------------------------------------------------------------------
    #: step lists kept (one per distinct sizes), and the longest kept (a long time loop is traced anew at
    #: each call rather than held)
    KEEP_TRACES, KEEP_STEPS = 64, 1 << 16

    def _steps(self, values):
        """The host program run for sizes `values`: its allocations and launches in order. Host loops and
        conditions read only sizes (never data), so a call with the same sizes repeats the same steps:
        they are worked out once."""
        steps = self._traces.get(values)
        if steps is not None:
            return steps
        env = dict(zip(self.lowered.params, values))
        for name, value in self.lowered.derived:
            env[name] = evaluate(value, env)
        trace = self._trace(self.host, env)
        steps = list(itertools.islice(trace, self.KEEP_STEPS))
        if len(steps) == self.KEEP_STEPS:
            return itertools.chain(steps, trace)
        if len(self._traces) >= self.KEEP_TRACES:
            self._traces.clear()
        self._traces[values] = steps
        return steps

    def _trace(self, node, env):
        """Yield the steps of the host program `node` for the sizes and host variables in `env`."""
        if isinstance(node, HostBlock):
            for c in node.body:
                yield from self._trace(c, env)
        elif isinstance(node, HostFor):
            for v in range(evaluate(node.lo, env), evaluate(node.hi, env)):
                env[node.var] = v
                yield from self._trace(node.body, env)
            env.pop(node.var, None)
        elif isinstance(node, HostIf):
            if evaluate(node.cond, env):
                yield from self._trace(node.then, env)
            elif node.else_ is not None:
                yield from self._trace(node.else_, env)
        elif isinstance(node, HostAlloc):
            yield HostStepAlloc(node.buffer.name, _elements(node.buffer, env) * node.buffer.dtype.bytes)
            yield from self._trace(node.body, env)
        elif isinstance(node, Launch):
            k = self.kernels[node.kernel.name]
            plan = self._plan(k, env)
            if not plan.empty:
                if k.narrow is not None and self.runtime.narrow_indices and \
                        indices_fit_int32(k, self._device_buffers, env, plan.grid, plan.block):
                    k = k.narrow
                yield HostStepLaunch(k, plan)
        else:
            raise NotSupportedError(f"unknown host node {type(node).__name__}")

    def _plan(self, k, env):
        grid, block = launch_shape(k.spec, env)
        plan = LaunchPlan(grid, block, (), ())
        if plan.empty:
            return plan
        self.runtime.check_block(k.spec.name, block)
        groups, threads = int(np.prod(grid)), int(np.prod(block))
        scratch = []
        for s in k.scratch:
            count = _elements(s.buffer, env)
            per = {"kernel": 1, "block": groups, "thread": groups * threads}[s.per]
            scratch.append((s.ident, max(count * per, 1) * s.buffer.dtype.bytes))
        return LaunchPlan(grid, block, tuple(int(env[name]) for name in k.scalars), tuple(scratch))


def _elements(buffer, env) -> int:
    """Elements of `buffer` at the sizes in `env` (an empty dimension counts as 0)."""
    return int(np.prod([max(evaluate(d, env), 0) for d in buffer.shape], dtype=np.int64))


@dataclass(eq=False)
class _Replay:
    """What a call did, for a call with the same objects to do again (see GPUKernel._replay_of)."""

    kwargs: tuple       # (name, object) pairs the call was given
    result: object      # what it returned
    zeroed: list        # outputs zeroed before the launches
    arguments: list     # (buffer, array) pairs, for the runtime's `prepare`
    handles: dict       # buffer name -> device handle
    allocs: list        # (nbytes, handle): the buffers it took from the runtime's pool, in order
    launches: list      # (kernel, grid, block, arguments)

    def repeats(self, kwargs) -> bool:
        """Whether `kwargs` names the very objects the call was given."""
        if len(self.kwargs) != len(kwargs):
            return False
        for name, v in self.kwargs:
            if kwargs.get(name) is not v:
                return False
        return True


@dataclass(frozen=True)
class HostStepAlloc:
    """A step of a traced host program: a temporary of `nbytes` in device memory."""

    name: str
    nbytes: int


@dataclass(frozen=True)
class HostStepLaunch:
    """A step of a traced host program: a launch of `kernel` as `plan` says."""

    kernel: CompiledKernel
    plan: LaunchPlan


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

    #: whether launches take a kernel's 32-bit index variant where the sizes allow (narrow.py): a GPU
    #: computes 64-bit integers in several instructions, a CPU device addresses memory in 64 bits
    narrow_indices = True

    def owns(self, a) -> bool:
        return False

    def check(self, name, a, output):
        flags = getattr(a, "flags", None)
        if flags is not None and not flags.c_contiguous:
            raise ArgumentError(f"{name}: a device array must be C-contiguous")


class BufferPool:
    """Device buffers of a runtime, kept by size between calls for reuse: a new buffer costs an allocation
    on a GPU and page faults on a CPU device. A runtime gives `_new_buffer(nbytes)` and, where dropping a
    buffer takes more than forgetting it, `_drop_buffer(handle)`."""

    #: bytes of device buffers kept between calls
    KEEP_BYTES = 512 << 20

    def _init_pool(self):
        self.free, self.in_use, self.pool = {}, [], {}

    def _new_buffer(self, nbytes):
        raise NotImplementedError

    def _drop_buffer(self, handle):
        pass

    def alloc(self, nbytes):
        """A device buffer of `nbytes` for this call (one a previous call released, where one fits)."""
        nbytes = max(int(nbytes), 1)
        free = self.free.get(nbytes)
        # (first released, first reused: a call like the last one gets the same buffers in the same places,
        # so its kernels' arguments are unchanged)
        handle = free.popleft() if free else self._new_buffer(nbytes)
        self.in_use.append((nbytes, handle))
        return handle

    def scratch(self, ident, nbytes):
        """The call's scratch buffer `ident` of `nbytes` (one per call, shared by its launches)."""
        key = (ident, nbytes)
        if key not in self.pool:
            self.pool[key] = self.alloc(nbytes)
        return self.pool[key]

    def _release(self):
        """Keep the call's buffers for the next calls, up to KEEP_BYTES; drop the rest."""
        self.pool = {}
        if not self.in_use:
            return
        kept = sum(n * len(handles) for n, handles in self.free.items())
        for nbytes, handle in self.in_use:
            if kept + nbytes <= self.KEEP_BYTES:
                self.free.setdefault(nbytes, collections.deque()).append(handle)
                kept += nbytes
            else:
                self._drop_buffer(handle)
        self.in_use = []
