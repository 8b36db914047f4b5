"""Timing a schedule: compile through the target registry (by name, no back-end imported) for the
sizes scheduled for, run on random inputs of those sizes, keep the median of several runs."""
from __future__ import annotations

import functools
import os
import signal
import statistics
import time
import warnings
import weakref

import islpy as isl
import numpy as np

from ..affine import affine_text
from ..errors import DomainError
from ..loopir import For, LoopKind, walk_stmts
from ..targets import get_target
from . import machine

#: runs per measurement: at least MIN_RUNS, more (up to MAX_RUNS) while under ENOUGH_S seconds, so
#: that the median of a short kernel rests on many calls (the machine may be shared)
MIN_RUNS, MAX_RUNS, ENOUGH_S = 5, 51, 0.3
#: placements of the arguments the rounds of a measurement take in turn, where the arrays fit the
#: cores' L2 caches: a short kernel's time moves with where its arrays lie modulo 4 KB (jacobi-1d at
#: 400 points and 50 steps, one schedule, 12 placements: 2.55 to 3.67 us a call), and a search that
#: timed one placement kept schedules that were slower at most others
PLACEMENTS = 3


def input_values(function, sizes, seed) -> dict:
    """{input name: random numpy array} of the shapes the inputs have at `sizes` (scalars as 0-d
    arrays), values in [0, 1) for floats and small non-negative integers otherwise."""
    rng = np.random.default_rng(seed)
    context = function.context(sizes)
    params = sorted(function.param_names)
    out = {}
    for inp in function.inputs:
        shape = tuple(_value(d, params, context, inp.name) for d in inp.shape)
        dtype = inp.dtype.numpy
        if inp.dtype.is_float:
            out[inp.name] = rng.random(shape).astype(dtype)
        elif inp.dtype.is_bool:
            out[inp.name] = rng.random(shape) < 0.5
        else:
            out[inp.name] = rng.integers(0, 16, shape).astype(dtype)
    return out


def _value(expr, params, context, name) -> int:
    text = affine_text(expr)
    if text is None:
        raise DomainError(f"the shape of input {name} is not an affine expression of the sizes")
    values = isl.Set(f"[{', '.join(params)}] -> {{ [v] : v = {text} }}").intersect_params(context)
    lo, hi = values.dim_min_val(0), values.dim_max_val(0)
    if not (lo.is_int() and lo.eq(hi)):
        raise DomainError(f"the sizes given do not fix the shape of input {name}; give every size (sizes=...)")
    return lo.to_python()


class Timer:
    """Compiles and times the function's current schedule; `count` says how many it measured."""

    def __init__(self, function, target, sizes, seed):
        self.function = function
        self.target = get_target(target)
        self.target.require()
        self.sizes = dict(sizes)
        self.arguments = {**input_values(function, sizes, seed), **self.sizes}
        self.count = 0
        self._calls = weakref.WeakKeyDictionary()     # a kernel -> {placement: its call there} (`_call`)
        self._seed = seed
        self._placed = {}    # placement k > 0 -> the arguments copied there (`_arguments`)

    def kernel(self):
        """The function as scheduled now, compiled as `Function.compile` compiles it for this target."""
        lowered = self.function.lower(fixed=self.sizes, caller_copies_in=self.target.binds_in_place)
        return self.target.compile(lowered)

    def time_kernel(self, limit_s=None) -> tuple:
        """(median seconds of one call, the kernel) of the function as scheduled now, compiled here (see
        `medians` for `limit_s`)."""
        self.count += 1
        kernel = self.kernel()
        return self.medians([kernel], limit_s)[0], kernel

    def time_each(self, kernel, extras, limit_s) -> list:
        """Median seconds of `kernel`'s call with each of `extras` ({argument: value}, tile sizes of a
        parametric tile) added to the arguments, MIN_RUNS calls each (every one the second of two in a
        row); None for those not reached within `limit_s` seconds."""
        start = time.perf_counter()
        out = []
        for extra in extras:
            if time.perf_counter() - start >= limit_s:
                out.append(None)
                continue
            self._keep_outputs(kernel, kernel(**{**self.arguments, **extra}))
            call = functools.partial(kernel, **{**self.arguments, **extra})   # (with the outputs kept)
            out.append(statistics.median(_second_of_two(call) for _ in range(MIN_RUNS)))
        return out

    def first_calls(self, kernels) -> list:
        """Seconds of each kernel's first call (page faults and lazy set-up included: an upper bound).
        The outputs of the first call ever are passed to every later call, filled in place: a call that
        allocated its outputs would time the allocator's fresh pages more than the schedule."""
        out = []
        for kernel in kernels:
            t0 = time.perf_counter()
            result = kernel(**self.arguments)
            out.append(time.perf_counter() - t0)
            self._keep_outputs(kernel, result)
        return out

    def first_call_within(self, kernel, limit_s):
        """Seconds of `kernel`'s first call (as `first_calls`), or None where a call runs past `limit_s`
        (the naive loops of a large problem can take minutes a call, beyond any budget): the call is
        made here only once one in a child process has ended in time (`_ends_within`)."""
        return self.first_calls([kernel])[0] if self._ends_within(kernel, limit_s) else None

    def _ends_within(self, kernel, limit_s) -> bool:
        """Whether a call of `kernel` in a forked child process ends within `limit_s` (the child is
        stopped then). True, without a child, where processes cannot be forked or the kernel starts
        threads (a child forked from a process with a thread pool may wait on it for ever): the call
        here is then made whole."""
        if not hasattr(os, "fork") or _starts_threads(kernel):
            return True
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)    # (forking a process that has threads)
                pid = os.fork()
        except OSError:     # (no memory or processes left for a child)
            return True
        if pid == 0:     # the child: one call, and out without any clean-up
            try:
                kernel(**self.arguments)
            finally:
                os._exit(0)
        deadline = time.perf_counter() + limit_s
        while not os.waitpid(pid, os.WNOHANG)[0]:
            if time.perf_counter() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return False
            time.sleep(0.001)
        return True     # (a call that raised in the child raises here too)

    def _keep_outputs(self, kernel, result):
        outputs = getattr(getattr(kernel, "lowered", None), "outputs", None)
        if outputs is None or any(b.name in self.arguments for b in outputs):
            return
        values = result if isinstance(result, tuple) else (result,)
        if len(values) == len(outputs) and all(isinstance(v, np.ndarray) for v in values):
            self.arguments.update((b.name, v) for b, v in zip(outputs, values))

    def medians(self, kernels, limit_s=None, firsts=None) -> list:
        """Median seconds of one call of each kernel, their calls interleaved round by round (so that a
        change of the machine's load moves them all alike), each timed call the second of two in a row
        (as a program calling it in a loop sees it). Rounds stop at MIN_RUNS, or earlier once
        `limit_s` seconds are spent (with one round at least; where the first calls alone spent it, their
        times, `firsts` where given, are the result)."""
        return [statistics.median(ts) for ts in self._rounds(kernels, limit_s, firsts)]

    def fastest(self, kernels) -> list:
        """Seconds of the fastest call of each kernel, timed as `medians` times them: what each can do
        when the machine lets it, which a spell of other work that slows most of one kernel's calls
        does not change."""
        return [min(ts) for ts in self._rounds(kernels)]

    def _rounds(self, kernels, limit_s=None, firsts=None) -> list:
        """Per kernel, the seconds of its timed calls (see `medians`)."""
        start = time.perf_counter()
        firsts = firsts or self.first_calls(kernels)
        if limit_s is not None and time.perf_counter() - start >= limit_s:
            return [[t] for t in firsts]
        times = [[] for _ in kernels]
        places = self._placements()
        calls = [[self._call(kernel, k) for k in range(places)] for kernel in kernels]
        while len(times[0]) < MIN_RUNS or (len(times[0]) < MAX_RUNS and
                                           time.perf_counter() - start < ENOUGH_S * len(kernels)):
            for at, ts in zip(calls, times):
                call = at[len(ts) % places]
                # (the call after another kernel's, or on other arrays, finds the data elsewhere)
                ts.append(_second_of_two(call) if len(kernels) > 1 or places > 1 else _seconds(call))
            if limit_s is not None and time.perf_counter() - start >= limit_s:
                break
        return times

    def _placements(self) -> int:
        """How many placements of the arguments the rounds take in turn: PLACEMENTS where the arrays fit
        the cores' L2 caches together, else one (a large kernel's time moves little with placement,
        and its copies would cost memory and leave the caches cold)."""
        nbytes = sum(a.nbytes for a in self.arguments.values() if isinstance(a, np.ndarray))
        return PLACEMENTS if nbytes <= machine.cache_bytes(2) * machine.cores() else 1

    def _arguments(self, k) -> dict:
        """The arguments at placement `k`: 0 the first call's own, others a copy of each array starting
        at a random multiple of 16 bytes (numpy's alignment) past a 4 KB boundary, the same each time
        for a seed (made again where outputs were kept since)."""
        if k == 0:
            return self.arguments
        placed = self._placed.get(k)
        if placed is None or placed.keys() != self.arguments.keys():
            rng = np.random.default_rng([self._seed, k])
            placed = {name: placed_copy(v, random_offset(rng))
                      if isinstance(v, np.ndarray) else v for name, v in self.arguments.items()}
            self._placed[k] = placed
        return placed

    def _call(self, kernel, k=0):
        """A call of `kernel` on the arguments at placement `k` (0: those of the first call ever, its
        outputs kept), through the target's cheapest call (`repeat_call`, made once, before any call is
        timed): a keyword call's microseconds would be much of a short kernel's time and blur the
        ranking."""
        arguments = self._arguments(k)
        if not hasattr(kernel, "repeat_call"):
            return functools.partial(kernel, **arguments)
        calls = self._calls.setdefault(kernel, {})
        if k not in calls:
            calls[k] = kernel.repeat_call(**arguments)
        return calls[k]


#: the span where an array's placement moves a kernel's time (loads and stores alias modulo 4 KB), and
#: the step of the offsets tried in it (numpy's own alignment)
PAGE_BYTES, ALIGN_BYTES = 4096, 16


def random_offset(rng) -> int:
    """A random offset from a 4 KB boundary, a multiple of numpy's alignment, for `placed_copy`."""
    return ALIGN_BYTES * int(rng.integers(0, PAGE_BYTES // ALIGN_BYTES))


def placed_copy(array, offset):
    """A copy of `array` (its order kept) whose first element lies `offset` bytes past a 4 KB boundary."""
    buf = np.empty(array.nbytes + 2 * PAGE_BYTES, dtype=np.uint8)
    start = -buf.ctypes.data % PAGE_BYTES + offset
    order = "F" if array.flags.f_contiguous and not array.flags.c_contiguous else "C"
    copy = buf[start:start + array.nbytes].view(array.dtype).reshape(array.shape, order=order)
    copy[...] = array
    return copy


def _starts_threads(kernel) -> bool:
    """Whether the kernel's loops include a parallel one (or its loops are not known)."""
    lowered = getattr(kernel, "lowered", None)
    if lowered is None:
        return True
    return any(isinstance(s, For) and s.kind == LoopKind.PARALLEL for s in walk_stmts(lowered.body))


def _seconds(call) -> float:
    """Seconds of one call."""
    t0 = time.perf_counter()
    call()
    return time.perf_counter() - t0


def _second_of_two(call) -> float:
    """Seconds of the second of two calls in a row (as a program calling it in a loop sees it)."""
    call()
    return _seconds(call)
