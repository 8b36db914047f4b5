"""Binding a kernel call's keyword arguments to buffers and size parameters.

Size parameters may be given as ints or are inferred from the shape of an
array whose buffer has a dimension `c*p + k` (typically exactly `p` or
`p +/- k`). Every buffer's shape is then evaluated and each array is checked
for its exact shape and dtype. Inputs that are not C-contiguous or not
aligned are copied, as is an input that overlaps an output (the kernel
assumes its buffers do not alias); outputs not given are allocated (zeroed
when the buffer's `zero_init` says the kernel may leave elements unwritten,
else `np.empty`), and given ones must be C-contiguous, aligned and writeable
because they are filled in place (zeroed first in the `zero_init` case).
An output whose buffer names an `initial_input` (an array the function updates in
place, lowered without its copy-in: middleend/copy_in.py) starts with that input's
values: nothing is done when the caller passes the input's own memory as the
output (the input is then not read by the kernel, so it needs no copy), else
they are copied in (into a new array when the output is not given).
"""
from __future__ import annotations

import ctypes
import numbers

import numpy as np

from mascarpone.middleend.errors import ArgumentError, NotSupportedError
from mascarpone.middleend.loopir import in_range, range_text

from .addresses import data_address
from .affine import linearize
from .evaluate import compile_int


def _shape_str(shape):
    return "(" + ", ".join(str(d) for d in shape) + (",)" if len(shape) == 1 else ")")


class _Shaped:
    """Stands for an array of which only the shape matters."""

    __slots__ = ("shape",)

    def __init__(self, shape):
        self.shape = shape


class _Spec:
    __slots__ = ("name", "ndim", "dtype", "dtype_name", "shape", "output", "zero_init", "initial")

    def __init__(self, buf, output):
        self.name = buf.name
        self.ndim = buf.ndim
        self.dtype = buf.dtype.numpy
        self.dtype_name = str(buf.dtype)
        self.shape = [compile_int(d) for d in buf.shape]
        self.output = output
        self.zero_init = output and getattr(buf, "zero_init", False)
        self.initial = getattr(buf, "initial_input", None) if output else None   # a name, then a position


class Binder:
    """Checks and converts the arguments of one kernel."""

    def __init__(self, name, inputs, outputs, params, derived=(), ranges=None):
        self.name = name
        self.params = list(params)
        # {param: (lo, hi)}: values the code was generated for (None: unbounded); zero and negative
        # values are fine where the range allows them
        self.ranges = dict(ranges or {})
        # sizes the kernel computes from the others on entry; shapes may use them
        self.derived = [(n, compile_int(e)) for n, e in derived]
        self.specs = [_Spec(b, False) for b in inputs] + [_Spec(b, True) for b in outputs]
        self.buffer_names = [s.name for s in self.specs]
        self.n_in = len(inputs)
        positions = {b.name: k for k, b in enumerate(inputs)}
        for s in self.specs:
            if s.initial is not None:
                s.initial = positions[s.initial]
        self._shapes = {}  # parameter values -> every buffer's shape (calls repeat the same sizes)
        self._plans = {}   # a host call's signature (see signature) -> its _Plan: calls repeat their arrays' kinds
        buffers = [s.name for s in self.specs]
        self.known = frozenset(buffers) | frozenset(self.params)
        clash = set(buffers) & set(self.params)
        if clash:
            raise NotSupportedError(f"kernel {name}: {sorted(clash)} name both a buffer and a parameter")
        # (param, buffer position, dim, coefficient, offset) for dimensions written c*p + k
        self.rules = []
        for pos, b in enumerate(list(inputs) + list(outputs)):
            for d, ext in enumerate(b.shape):
                a = linearize(ext)
                if len(a.terms) == 1:
                    (kind, *rest), c = next(iter(a.terms.items()))
                    if kind == "sym" and rest[0] in self.params:
                        self.rules.append((rest[0], pos, d, c, a.const))

    def bind(self, kwargs, device=None, signature=None):
        """`(arrays in buffer order, param values in order, outputs)` for a call.

        `device` lets a back-end take arrays in its own memory (a GPU's): an object with `owns(a)`
        (whether `a` is one of them), `check(name, a, output)` (raise ArgumentError where it cannot use
        `a`), `empty(shape, dtype, zero)` (a new one) and `zero(a)`. Their shapes and dtypes are checked
        as numpy arrays' are; when any is given, the outputs not given are allocated by `device`."""
        if not self.known.issuperset(kwargs):
            unknown = [k for k in kwargs if k not in self.known]
            raise ArgumentError(f"{self.name}() got unexpected argument(s) {', '.join(map(repr, unknown))}; "
                                f"it takes {', '.join(sorted(self.known))}")
        key = (signature or self.signature(kwargs)) if device is None else None
        plan = self._plans.get(key) if key is not None else None
        if plan is not None:
            return self._run(plan, [kwargs.get(s.name) for s in self.specs])
        given = []
        for pos, s in enumerate(self.specs):
            a = kwargs.get(s.name)
            if a is None:
                if pos < self.n_in:
                    raise ArgumentError(f"{self.name}() is missing the input {s.name!r}")
            elif type(a) is not np.ndarray and not isinstance(a, np.ndarray) and not (device and device.owns(a)):
                raise ArgumentError(f"{s.name}: expected a numpy array, got {type(a).__name__}")
            elif a.ndim != s.ndim:
                raise ArgumentError(f"{s.name}: expected {s.ndim} dimension(s) of {s.dtype_name}, "
                                    f"got an array of shape {_shape_str(a.shape)}")
            given.append(a)
        values = self._params(kwargs, given)
        plan = self._plan(given, values, device)
        if key is not None:
            if len(self._plans) >= 64:
                self._plans.clear()
            self._plans[key] = plan
        return self._run(plan, given, device)

    def direct(self, kwargs) -> "_Direct | None":
        """For a host call with these arguments that has been bound: its `_Direct` when it bound every
        array as given (no new array, no zeroing; an output that starts as an input has that input's
        shape and dtype: bound in place at its memory, or copied byte for byte), else None. Every check
        depends on the arguments' signature only, so a later call of the same signature can skip
        `bind`."""
        plan = self._plans.get(self.signature(kwargs))
        if plan is None or plan.to_zero or any(step[0] is not _USE for step in plan.steps) or \
                not set(plan.to_copy) <= plan.alike:
            return None
        return _Direct(self, plan)

    def signature(self, kwargs):
        """What the checks of a host call depend on: each array's type, shape, dtype and flags and each
        size's type and value (hashable; None when some argument is not what a call takes, which the
        checks then name)."""
        try:
            key = tuple(None if a is None else (type(a), a.shape, a.dtype, a.flags.num)
                        for a in map(kwargs.get, self.buffer_names))
            key += tuple(None if v is None else (type(v), v) for v in map(kwargs.get, self.params))
            hash(key)
        except (AttributeError, TypeError):
            return None
        return key

    def sizes(self, kwargs, shapes) -> dict:
        """{parameter: value} from the integers among `kwargs` and the buffer shapes `shapes` (in buffer
        order, None for a buffer not given), as a call infers them; ArgumentError when they disagree or
        do not tell. (For callers that check arrays themselves: the blocks of a distributed call.)"""
        return self._params(kwargs, [None if sh is None else _Shaped(tuple(sh)) for sh in shapes])

    def shapes(self, values: dict) -> list:
        """Every buffer's shape for the parameter values `values`, in buffer order."""
        return self._buffer_shapes(values)

    def _params(self, kwargs, given):
        values, source = {}, {}
        for p in self.params:
            if p in kwargs:
                v = kwargs[p]
                if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral):
                    raise ArgumentError(f"parameter {p}: expected an integer, got {v!r}")
                values[p] = int(v)
                source[p] = "the argument"
        for p, pos, d, c, k in self.rules:
            a = given[pos]
            if a is None or p in source and source[p] == "the argument":
                continue
            actual = a.shape[d]
            v, r = divmod(actual - k, c)
            bname = self.specs[pos].name
            if r:
                raise ArgumentError(f"{bname}: dimension {d} has size {actual}, which is not "
                                    f"{c}*{p} + {k} for an integer {p}")
            old = values.get(p)
            if old is None:
                values[p] = v
                source[p] = f"{bname} (dimension {d}, size {actual})"
            elif old != v:
                raise ArgumentError(f"parameter {p}: {source[p]} gives {old} but {bname} "
                                    f"(dimension {d}, size {actual}) gives {v}")
        if len(values) != len(self.params):
            missing = [p for p in self.params if p not in values]
            raise ArgumentError(f"{self.name}() cannot tell the value of parameter(s) {', '.join(missing)}; "
                                f"pass them as keyword arguments")
        for p, bounds in self.ranges.items():
            if not in_range(values[p], bounds):
                raise ArgumentError(f"parameter {p}: {values[p]} is outside its range {range_text(bounds)}")
        return values

    def _buffer_shapes(self, values):
        key = tuple(values[p] for p in self.params)
        shapes = self._shapes.get(key)
        if shapes is None:
            env = dict(values)
            for n, f in self.derived:
                env[n] = f(env)
            shapes = [tuple(f(env) for f in s.shape) for s in self.specs]
            if len(self._shapes) >= 64:
                self._shapes.clear()
            self._shapes[key] = shapes
        return shapes

    def _plan(self, given, values, device) -> "_Plan":
        """What a call with these arrays (their shapes, dtypes and flags) and sizes does to each buffer,
        every check that does not depend on where the arrays are made (ArgumentError otherwise)."""
        plan = _Plan([values[p] for p in self.params])
        shapes = self._buffer_shapes(values)
        foreign = [a is not None and device is not None and device.owns(a) for a in given]
        on_device = any(foreign)
        for pos, s in enumerate(self.specs):
            shape = shapes[pos]
            a = given[pos]
            step = (_USE,)
            if a is None:
                if any(d < 0 for d in shape):
                    raise ArgumentError(f"{s.name}: the parameters {values} give it a negative shape {shape}")
                if on_device:
                    step = (_DEVICE_EMPTY, shape, s.dtype, s.zero_init)
                else:
                    step = (_EMPTY, shape, s.dtype, s.zero_init and s.initial is None)
                    if s.initial is not None:
                        plan.to_copy.append((s.initial, pos))
            elif foreign[pos]:
                if tuple(a.shape) != shape or a.dtype != s.dtype:
                    raise ArgumentError(f"{s.name}: expected shape {_shape_str(shape)} and dtype {s.dtype}, "
                                        f"got shape {_shape_str(tuple(a.shape))} and dtype {a.dtype}")
                step = (_DEVICE, s.name, s.output, s.zero_init)
            else:
                if a.shape != shape or a.dtype != s.dtype:
                    if any(d < 0 for d in shape):
                        raise ArgumentError(f"{s.name}: the parameters {values} give it a negative shape {shape}")
                    where = f" (with {', '.join(f'{p}={v}' for p, v in values.items())})" if values else ""
                    raise ArgumentError(f"{s.name}: expected shape {_shape_str(shape)} and dtype {s.dtype}, "
                                        f"got shape {_shape_str(a.shape)} and dtype {a.dtype}{where}")
                flags = a.flags
                if s.output:
                    if not (flags.c_contiguous and flags.aligned and flags.writeable):
                        raise ArgumentError(f"{s.name}: an output array must be C-contiguous, aligned and "
                                            f"writeable (it is filled in place)")
                    plan.separate = True
                    if s.initial is not None:
                        plan.to_copy.append((s.initial, pos))
                        if shapes[s.initial] == shape and self.specs[s.initial].dtype == s.dtype:
                            plan.alike.add((s.initial, pos))
                    elif s.zero_init:  # the same result as with an output the wrapper allocates
                        plan.to_zero.append(pos)
                elif not (flags.c_contiguous and flags.aligned):
                    step = (_CONTIGUOUS, flags.aligned)
            plan.steps.append(step)
            if step == (_USE,) and not foreign[pos] and a.size:
                plan.spans.append((pos, a.nbytes))
            if s.output:
                plan.outputs.append(pos)
        return plan

    def _run(self, plan, given, device=None):
        """Carry out `plan` on a call's arrays: `(arrays in buffer order, param values, outputs)`."""
        arrays = []
        for a, step in zip(given, plan.steps):
            kind = step[0]
            if kind is _USE:
                pass
            elif kind is _EMPTY:
                a = (np.zeros if step[3] else np.empty)(step[1], step[2])
            elif kind is _CONTIGUOUS:
                a = np.ascontiguousarray(a) if step[1] else np.array(a, order="C", copy=True)
            elif kind is _DEVICE:
                device.check(step[1], a, step[2])
                if step[3]:
                    device.zero(a)
            elif kind is _DEVICE_EMPTY:
                a = device.empty(step[1], step[2], step[3])
            arrays.append(a)
        starts = {pos: data_address(arrays[pos]) for pos, _ in plan.spans}
        if plan.separate:
            self._separate(arrays, plan, starts)  # before zeroing: an input may be an output's memory
        for source, out in plan.to_copy:   # after _separate: a source another output overlaps is a copy by now
            if not ((source, out) in plan.alike and source in starts and starts[source] == starts.get(out)):
                _copy_in(arrays[source], arrays[out])
        for pos in plan.to_zero:
            arrays[pos].fill(0)
        return arrays, plan.values, [arrays[p] for p in plan.outputs]

    def _separate(self, arrays, plan, starts):
        """Apply `overlapping_inputs` to a call's arrays (before zeroing: an input may be an output's
        memory). `starts` is the first byte of each array of `plan.spans`, all of them C-contiguous;
        an input that is copied leaves it."""
        ranges = [(pos, starts[pos], starts[pos] + n) for pos, n in plan.spans]
        for pos in overlapping_inputs(ranges, self.n_in, self.specs, plan.alike):
            arrays[pos] = arrays[pos].copy()
            del starts[pos]

    def separate_given(self, arrays) -> None:
        """`overlapping_inputs` for arrays in buffer order that are all C-contiguous (a distributed
        call's blocks), nothing bound in place: the inputs that overlap an output are replaced by
        copies."""
        ranges = [(pos, data_address(a), data_address(a) + a.nbytes) for pos, a in enumerate(arrays) if a.size]
        for pos in overlapping_inputs(ranges, self.n_in, self.specs):
            arrays[pos] = np.array(arrays[pos], order="C", copy=True)


def overlapping_inputs(ranges, n_in, specs, in_place=frozenset()) -> list:
    """The rule for arrays a caller gives that share memory, for every target: outputs must not overlap
    each other (ArgumentError); an input that overlaps an output is read from a copy (the positions to
    copy are returned), except an input an output starts as (`(input, output)` in `in_place`) at the
    very same place, which is bound in place. `ranges`: (buffer position, first byte, end byte); the
    first `n_in` positions are the inputs."""
    outs = [r for r in ranges if r[0] >= n_in]
    for k, (i, lo, hi) in enumerate(outs):
        for j, lo2, hi2 in outs[:k]:
            if lo < hi2 and lo2 < hi:
                raise ArgumentError(f"outputs {specs[j].name} and {specs[i].name} share memory")
    return [i for i, lo, hi in ranges if i < n_in and
            any(lo < hi2 and lo2 < hi and not ((i, k) in in_place and lo == lo2) for k, lo2, hi2 in outs)]


class _Direct:
    """A call bound as given (`Binder.direct`): for arrays of the same signature, their addresses when
    they bind as that call's did, no other array overlapping an output; None where they do not (the
    general `bind` then copies or refuses). An output that starts as an input of its shape and dtype
    (`alike`: (input, output, bytes)) is bound in place at that input's memory, or lies apart from it
    and gets its bytes (`copy_in`)."""

    __slots__ = ("values", "apart", "alike")

    def __init__(self, binder, plan):
        self.values = plan.values
        outputs = {pos for pos, _ in plan.spans if pos >= binder.n_in}
        # (position, bytes, position, bytes) of the arrays that must not overlap: each output and every
        # other array, but an input that starts it (in place, or apart as `addresses` checks)
        self.apart = [(out, n, pos, m) for k, (out, n) in enumerate(plan.spans) if out in outputs
                      for pos, m in plan.spans[:k] + plan.spans[k + 1:]
                      if (pos, out) not in plan.alike and not (pos in outputs and pos < out)]
        nbytes = dict(plan.spans)
        self.alike = [(source, out, nbytes.get(out, 0)) for source, out in sorted(plan.alike)]

    def addresses(self, arrays) -> list | None:
        """The arrays' addresses (in buffer order), or None."""
        starts = [data_address(a) for a in arrays]
        for source, out, n in self.alike:
            s, o = starts[source], starts[out]
            if s != o and s < o + n and o < s + n:
                return None     # (partly in place: the general path copies the input first)
        for a, n, b, m in self.apart:
            if starts[a] < starts[b] + m and starts[b] < starts[a] + n:
                return None
        return starts

    def copy_in(self, starts):
        """Give each output that starts as an input apart from it that input's bytes (`starts`: what
        `addresses` returned)."""
        for source, out, n in self.alike:
            if starts[source] != starts[out]:
                ctypes.memmove(starts[out], starts[source], n)


def _same_memory(a, b) -> bool:
    """Whether two arrays are the same elements in the same places (an array bound in place)."""
    if a is b:
        return True
    return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.shape == b.shape and a.dtype == b.dtype
            and a.strides == b.strides and data_address(a) == data_address(b))


_USE, _EMPTY, _CONTIGUOUS, _DEVICE, _DEVICE_EMPTY = "use", "empty", "contiguous", "device", "device empty"


class _Plan:
    """What `Binder._run` does on a call: per buffer a step ((_USE,) the array given; (_EMPTY, shape, dtype,
    zeroed) a new one; (_CONTIGUOUS, aligned) a C-ordered copy of an input; (_DEVICE, name, output,
    zero) check a device's array; (_DEVICE_EMPTY, shape, dtype, zero) a new one there), then the overlap
    check of the outputs given (`spans`: the position and bytes of each array used as given), the copies
    of initial values (source, output position) and the zeroing."""

    __slots__ = ("values", "steps", "outputs", "separate", "spans", "to_copy", "alike", "to_zero")

    def __init__(self, values):
        self.values = values
        self.steps, self.outputs, self.spans, self.to_copy, self.to_zero = [], [], [], [], []
        self.alike = set()   # (input, output) of to_copy of one shape and dtype: at one address, bound in place
        self.separate = False


def _copy_in(source, out) -> None:
    """Start `out` with the values of `source` (nothing to do when they are one array); where the output
    is larger (sizes for which the kernel writes beyond the input's box), the rest is zeroed."""
    if _same_memory(source, out):
        return
    if source.shape == out.shape:
        np.copyto(out, source)
        return
    out.fill(0)
    out[tuple(slice(0, n) for n in source.shape)] = source
