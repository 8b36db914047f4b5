"""What every compiled kernel does on a call: bind the arguments, check the sizes, launch, return.

A target's kernel subclasses `Kernel` and implements `launch` (and `source`);
`NativeKernel` is the kernel of the targets that load a function with the C
calling convention of `cheader` into this process ("cpu", "c").
"""
from __future__ import annotations

import ctypes
import functools

import islpy as isl
import numpy as np

from mascarpone.middleend.errors import ArgumentError
from mascarpone.middleend.loopir import DEFAULT_SIZE_RANGE, in_range

from . import pyentry
from .addresses import data_address
from .arguments import Binder
from .threads import DEFAULT_THREADS_CELL, get_num_threads


class Kernel:
    """A compiled kernel: `kernel(**arrays_and_params)`.

    Inputs are numpy arrays and size parameters ints, by keyword (buffer and
    parameter names). Parameters that a shape determines may be left out.
    Non-contiguous inputs are copied to C order first. Outputs not passed are
    allocated and returned (the array, or a tuple in declaration order when
    there are several); outputs passed are filled in place and returned too
    (see `arguments` for the exact rules). Bad arguments raise
    `ms.ArgumentError`; a failed allocation of a temporary, `MemoryError`.
    """

    #: the target's name, as `Function.compile` takes it
    target = None

    def __init__(self, lowered):
        self.name = lowered.name
        self.lowered = lowered
        self._binder = Binder(lowered.name, lowered.inputs, lowered.outputs, lowered.params, lowered.derived,
                              lowered.param_ranges)
        self._single = len(lowered.outputs) == 1
        self._fixed = [(lowered.params.index(p), p, v) for p, v in lowered.fixed_params.items()]
        self._assumed = None
        if lowered.assumptions:
            # (each apart: the intersection of many piecewise promises could take a piece per combination)
            space = isl.Set(f"[{', '.join(lowered.params)}] -> {{ : }}").get_space()
            self._assumed = [a.align_params(space) for _, a in lowered.assumptions]
            self._assumed_ok = set()
        self._refused_ok = set()     # sizes for which no check left to the call (checked_at_call) applies
        self._direct = {}            # a call's signature -> its Binder.direct plan, or None
        self._native = None          # the keyword entry of the signature last called directly in a row
        self._natives = {}           # a signature -> its keyword entry, once built (None: it has none)
        self._hot = (None, 0)        # (signature, direct calls of it in a row)

    # the steps of a call ---------------------------------------------------------------
    def bind(self, kwargs):
        """`(arrays in buffer order, size values in parameter order, output arrays)` for a call's
        keyword arguments, every shape and dtype checked."""
        return self._binder.bind(kwargs)

    def check(self, values):
        """Refuse sizes the code was not generated for: other values of fixed sizes, sizes that break
        an assumption (`Function.assume`)."""
        for pos, name, expected in self._fixed:
            if values[pos] != expected:
                raise ArgumentError(f"{self.name} was compiled for {name} = {expected} (fixed=...), "
                                    f"called with {name} = {values[pos]}")
        if self._assumed is not None:
            self._check_assumed(values)
        if self.lowered.checked_at_call:
            self._check_undecided(values)

    def _check_assumed(self, values):
        key = tuple(values)
        if key in self._assumed_ok:
            return
        broken = next((text for (text, _), assumed in zip(self.lowered.assumptions, self._assumed)
                       if _at(assumed, values).is_empty()), None)
        if broken is not None:
            outside = [f"{n} = {v}" for n, v in zip(self.lowered.params, values)
                       if not in_range(v, self.lowered.param_ranges.get(n, DEFAULT_SIZE_RANGE))]
            if outside:    # (the assumptions hold within the sizes' ranges: a value outside breaks them all)
                raise ArgumentError(f"{self.name} was compiled for sizes within their ranges (from 1 unless declared "
                                    f"with declare_param); called with {', '.join(outside)}")
            given = ", ".join(f"{n} = {v}" for n, v in zip(self.lowered.params, values))
            raise ArgumentError(f"{self.name} was compiled assuming {broken}; called with {given}")
        self._assumed_ok.add(key)

    def _check_undecided(self, values):
        key = tuple(values)
        if key in self._refused_ok:
            return
        env = dict(zip(self.lowered.params, values))
        for name, value in self._binder.derived:
            env[name] = value(env)
        for what, where in self.lowered.checked_at_call:
            if not _fixed(where, env).is_empty():
                given = ", ".join(f"{n} = {v}" for n, v in zip(self.lowered.params, values))
                raise ArgumentError(f"{self.name} cannot run with {given}: at these sizes {what} (the compiler "
                                    f"could not rule this out for every size, so each call is checked)")
        self._refused_ok.add(key)

    def launch(self, arrays, values) -> int:
        """Run the code on bound arrays and size values; 0, or non-zero when a temporary could not
        be allocated."""
        raise NotImplementedError

    def direct(self, kwargs):
        """For a call with `kwargs` that has run: `run(arrays)` for later calls whose arguments have the
        same signature (types, shapes, dtypes, flags, sizes), the arrays in buffer order; it launches
        when they bind as this call's did (`Binder.direct`) and returns True, else returns False and
        does nothing (the caller then takes the general path). None when this call bound more than its
        arrays as given, or the target does not launch that way."""
        bound = self._direct_plan(kwargs)
        return None if bound is None else functools.partial(self._launch_direct, bound)

    def _direct_plan(self, kwargs):
        """The `Binder.direct` plan of a call with `kwargs` that has run, where this target launches on
        addresses; else None."""
        return self._binder.direct(kwargs) if self.launches_directly else None

    #: whether `_launch_direct` runs the code on the arrays' addresses (a target that launches otherwise
    #: takes the general path at every call)
    launches_directly = False

    def _launch_direct(self, bound, arrays) -> bool:
        """Run the code on `arrays` (buffer order) where they bind as `bound` says; False where not."""
        return False

    def repeat_call(self, **kwargs):
        """A function of no arguments that calls the kernel on `kwargs` again (a call with them has
        run), for timing: one that costs less than a keyword call where the target has one."""
        return functools.partial(self, **kwargs)

    def _keyword_entry(self, kwargs):
        """A native function that takes calls like `kwargs`, or None (this target has none)."""
        return None

    #: direct calls of one signature in a row before its native entry is built (where the target has
    #: them: building one takes milliseconds)
    NATIVE_AFTER = 3

    def __call__(self, **kwargs):
        native = self._native
        if native is not None:
            result = native(**kwargs)
            if result is not pyentry.MISMATCH:
                return result
        key = self._binder.signature(kwargs)
        bound = self._direct.get(key)
        if bound is not None and self._binder.known.issuperset(kwargs):
            given = [kwargs[name] for name in self._binder.buffer_names]
            if self._launch_direct(bound, given):
                self._heat(key, kwargs)
                return given[-1] if self._single else tuple(given[self._binder.n_in:])
        arrays, values, outputs = self._binder.bind(kwargs, signature=key)
        self.check(values)
        if self.launch(arrays, values):
            raise self._allocation_failed()
        if key is not None and key not in self._direct:
            if len(self._direct) >= 64:
                self._direct.clear()
            # (the plan, not a launch bound to this kernel: no reference cycle through the kernel)
            self._direct[key] = self._direct_plan(kwargs)
        return outputs[0] if self._single else tuple(outputs)

    def _heat(self, key, kwargs):
        """After a direct call: make the signature's keyword entry the first path of the next calls, once
        it has been called directly NATIVE_AFTER times in a row (built then, kept for when it comes
        back)."""
        if key in self._natives:
            self._native = self._natives[key] or self._native
            return
        hot, count = self._hot
        self._hot = (key, count + 1 if key == hot else 1)
        if self._hot[1] == self.NATIVE_AFTER:
            if len(self._natives) >= 64:
                self._natives.clear()
            self._natives[key] = entry = self._keyword_entry(kwargs)
            self._native = entry or self._native

    def _allocation_failed(self) -> MemoryError:
        return MemoryError(f"{self.name}: a temporary buffer could not be allocated")

    def source(self, kind: str | None = None) -> str:
        """The generated code (the kinds depend on the target)."""
        raise NotImplementedError

    def __repr__(self):
        args = [f"{b.name}: {b.dtype}[{', '.join(map(str, b.shape))}]" for b in self.lowered.arguments]
        return f"<{type(self).__name__} {self.name}({', '.join(args + list(self.lowered.params))})>"


class NativeKernel(Kernel):
    """A kernel whose code is a function of this process with the C calling convention of `cheader`.

    `num_threads` (None: the default of `ms.set_num_threads`, initially
    `os.cpu_count()`) sets the threads of parallel loops. The call releases
    the GIL.
    """

    ENTRY_MISMATCH = pyentry.MISMATCH     # (what positional_entry's function returns for other arguments)

    def __init__(self, lowered, address: int, threads_address: int, *, num_threads=None, code=None):
        super().__init__(lowered)
        # what keeps the function and its thread count loaded (a JIT engine, a shared library): native
        # entries hold it, not the kernel (an entry the kernel holds would make a cycle, and a cycle's
        # collector may free the code before the kernel's __del__ calls it)
        self._code = code
        self._own_threads = ctypes.c_int32(0)     # (0: the default; native entries read it here)
        self.num_threads = num_threads
        nbuf = len(lowered.inputs) + len(lowered.outputs)
        proto = ctypes.CFUNCTYPE(ctypes.c_int32, *([ctypes.c_void_p] * nbuf + [ctypes.c_int64] * len(lowered.params)))
        self._address = address
        self._fn = proto(address)
        self._threads = ctypes.c_int32.from_address(threads_address)

    @property
    def num_threads(self):
        """Threads of this kernel's parallel loops; None: the default of `ms.set_num_threads`."""
        return self._own_threads.value or None

    @num_threads.setter
    def num_threads(self, n):
        self._own_threads.value = n or 0

    def launch(self, arrays, values) -> int:
        self._threads.value = self.num_threads or get_num_threads()
        return self._fn(*[data_address(a) for a in arrays], *values)

    launches_directly = True

    def _launch_direct(self, bound, arrays) -> bool:
        addresses = bound.addresses(arrays)
        if addresses is None:
            return False
        bound.copy_in(addresses)
        self._threads.value = self.num_threads or get_num_threads()
        if self._fn(*addresses, *bound.values):
            raise self._allocation_failed()
        return True

    def repeat_call(self, **kwargs):
        """A function of no arguments that calls the kernel on `kwargs` again (a call with them has
        run), for timing: the native entry of their arrays in buffer order (`positional_entry`), so
        that a short kernel's time is not mostly its call's, where there is one and they match it;
        else the keyword call."""
        direct = self.direct(kwargs)
        if direct is None:
            self(**kwargs)      # (binds this signature, where no call has: `direct` needs one that ran)
            direct = self.direct(kwargs)
        arrays = [kwargs.get(name) for name in self._binder.buffer_names]
        if direct is None or not self._binder.known.issuperset(kwargs) or \
                any(type(a) is not np.ndarray for a in arrays):
            return super().repeat_call(**kwargs)
        slots = [("array", a.shape, a.dtype, a.flags.num, (b,)) for b, a in enumerate(arrays)]
        entry = self.positional_entry(slots, direct)
        if entry is None or entry(*arrays) is self.ENTRY_MISMATCH:
            return super().repeat_call(**kwargs)
        return functools.partial(entry, *arrays)

    def positional_entry(self, slots, direct, returns=None):
        """For calls whose positional arguments match `slots` and bind as those of `direct` (what
        `direct` returned for such a call): a builtin function of those arguments that runs this
        kernel and returns None, or the argument at position `returns`; ENTRY_MISMATCH (having done
        nothing) where the arguments do not match. It raises MemoryError as a call does where the
        kernel could not allocate. A slot is ("array", shape, dtype, flags, buffer positions),
        ("size", value), ("bool", value) or ("float", dtype, buffer position): a numpy array exactly
        so, a Python int or bool of that value, a Python float passed as a one-element buffer. None
        where this process's objects cannot be read natively (`pyentry.LAYOUT`) or the kernel did not
        say what keeps its code loaded (`code`)."""
        if self._code is None:
            return None
        return pyentry.build(self._entry_call(direct), self._slots(slots), returns, keep=self._kept())

    def _entry_call(self, direct) -> pyentry.KernelCall:
        bound = direct.args[0]      # (the plan `direct` bound to _launch_direct)
        return pyentry.KernelCall(self.name, self._address, len(self.lowered.inputs) + len(self.lowered.outputs),
                                  tuple(bound.values), tuple(bound.apart), tuple(bound.alike),
                                  ctypes.addressof(self._threads), ctypes.addressof(self._own_threads),
                                  ctypes.addressof(DEFAULT_THREADS_CELL), str(self._allocation_failed()))

    @staticmethod
    def _slots(slots):
        kinds = {"array": pyentry.ArraySlot, "size": pyentry.SizeSlot, "bool": pyentry.BoolSlot,
                 "float": pyentry.FloatSlot}
        return [kinds[kind](*rest) for kind, *rest in slots]

    def _keyword_entry(self, kwargs):
        """The native entry of keyword calls like `kwargs` (a call with them has just run directly):
        the same names in the same order, arrays of the same signature, the same sizes; it returns
        what such a call returns. None where there is none."""
        direct = self.direct(kwargs)
        names = tuple(kwargs)
        position = {name: k for k, name in enumerate(names)}
        buffers = self._binder.buffer_names
        if direct is None or self._code is None or any(name not in position for name in buffers):
            return None
        slots = []
        for name in names:
            v = kwargs[name]
            if type(v) is np.ndarray and name in buffers:
                slots.append(("array", v.shape, v.dtype, v.flags.num, (buffers.index(name),)))
            elif type(v) is int and name in self._binder.params:
                slots.append(("size", v))
            else:
                return None
        outputs = [position[name] for name in buffers[self._binder.n_in:]]
        returns = outputs[0] if self._single else tuple(outputs)
        return pyentry.build(self._entry_call(direct), self._slots(slots), returns, keywords=names,
                             keep=self._kept())

    def _kept(self):
        """What an entry must keep alive: the code and the kernel's own thread count."""
        return self._code, self._own_threads


def _at(assumed, values):
    """The set `assumed` of the parameters with each fixed to its value (empty where they break it)."""
    for k, v in enumerate(values):
        assumed = assumed.fix_val(isl.dim_type.param, k, isl.Val(int(v)))
    return assumed


def _fixed(where, env):
    """The set or map `where` with each of its parameters that `env` ({name: value}) names fixed."""
    for k in range(where.dim(isl.dim_type.param)):
        name = where.get_dim_name(isl.dim_type.param, k)
        if name in env:
            where = where.fix_val(isl.dim_type.param, k, isl.Val(int(env[name])))
    return where
