"""The Function a Halide pipeline becomes, and its compiled kernel with Halide's `realize` convention."""
from __future__ import annotations

import numpy as np

from mascarpone.middleend.errors import ArgumentError
from mascarpone.middleend.function import Function

from .requirements import scalar_key


class HalideFunction(Function):
    """An ms.Function translated from a Halide pipeline; `compile` returns a `HalideKernel`.

    Every scheduling command of ms.Function applies (`f["blur_y"].split(...)`,
    `after`, `skew`, ...); `translation` keeps what the kernel needs to accept
    Halide-style arguments.
    """

    translation = None

    def assume_same_output_sizes(self):
        """Promise that every output is realized with the same sizes (as `realize(sizes)` does), so
        that outputs computed in one loop nest (with `after`) need no guards; realize refuses others."""
        outs = [self.translation.out_params[o.index] for o in self.translation.outputs]
        same = [f"{a.name} = {b.name}" for first, other in zip(outs, outs[1:]) for a, b in zip(first, other)]
        if same:
            self.assume(" and ".join(same))
        return self

    def compile(self, target="cpu", check=True, fixed=None, **options):
        """Lower, check and compile; the result has `realize(sizes, **inputs)` like `hl.Pipeline`.

        When the translation found a steady regime for its ShiftInwards splits (sizes of at least
        their factors, see PipelineTranslation._note_steady), the code is for those sizes; the kernel
        compiles general code the first time it is called with other sizes."""
        steady = self.translation.steady
        if steady is None:
            return HalideKernel(super().compile(target, check=check, fixed=fixed, **options), self.translation)
        with self.assuming(self.translation.symbolic_steady()):
            kernel = super().compile(target, check=check, fixed=fixed, **options)

        def general():
            return Function.compile(self, target, check=check, fixed=fixed, **options)
        return HalideKernel(kernel, self.translation, steady, general)


class HalideKernel:
    """A compiled Halide pipeline.

    `realize(sizes, **inputs)`: sizes in Halide's order ([width, height, ...]),
    shared by all outputs, or one such list per output (as realizing into
    buffers of different sizes does in Halide);
    ImageParams by name as numpy arrays or `hl.Buffer`s, scalar Params by name
    (an integer Param that bounds an RDom is a size: zero or negative values
    give empty reductions, as in Halide).
    numpy arrays use `hl.Buffer`'s default convention: the last numpy axis is
    Halide's dimension 0, so an image of width W and height H has shape (H, W)
    (and (C, H, W) with channels as Halide's dimension 2). One output gives an
    array, several a list in the pipeline's output order (Tuple elements in
    order). Instead of sizes, `realize` takes the output(s) to fill in place, as
    `Pipeline.realize(buffers)` does: a numpy array or `hl.Buffer` for one output,
    else a list of them (one per output and Tuple element, in that order).
    """

    def __init__(self, kernel, translation, steady=None, general=None):
        self.kernel = kernel
        self.tr = translation
        self._checked = {}
        self._window_cache = {}
        self._steady, self._general_factory, self._general = steady, general, None
        self._in_steady = {}   # sizes -> whether they are in the steady regime

    def __call__(self, sizes, **inputs):
        return self.realize(sizes, **inputs)

    def realize(self, sizes, **inputs):
        """Compute the outputs over [0, size) per dimension, as `hl.Pipeline.realize(sizes)` does, or
        into given output arrays or buffers (see the class)."""
        tr = self.tr
        dests = self._destinations(sizes)
        per_output = self._sizes(sizes) if dests is None else \
            [list(reversed(dests[o.ms_names[0]].shape)) for o in tr.outputs]
        args, values = dict(dests or {}), {}
        for o, sz in zip(tr.outputs, per_output):
            values.update({p.name: s for p, s in zip(tr.out_params[o.index], sz)})
        unknown = set(inputs) - set(tr.image_params) - set(tr.scalar_params)
        if unknown:
            raise ArgumentError(f"realize got unknown input(s) {sorted(unknown)}; the pipeline takes "
                                f"{sorted(set(tr.image_params) | set(tr.scalar_params))}")
        for name, ip in tr.image_params.items():
            if ip.input is None and not any(p.name in self.kernel.lowered.params for p in ip.extent_params):
                continue
            if name not in inputs:
                raise ArgumentError(f"realize is missing the ImageParam {name!r}")
            a = _as_array(inputs[name], f"ImageParam {name}")
            if a.ndim != ip.ndim or a.dtype != ip.dtype.numpy:
                raise ArgumentError(f"ImageParam {name}: expected {ip.ndim} dimension(s) of {ip.dtype}, got shape "
                                    f"{a.shape} and dtype {a.dtype}")
            for d, p in enumerate(ip.extent_params):
                values[p.name] = a.shape[ip.ndim - 1 - d]
            if ip.input is not None:
                args[ip.ms_name] = a
        required = {n for r in tr.requirements for n in r.params}
        for name, sp in tr.scalar_params.items():
            if sp.input is None and sp.size is None and name not in required:
                continue
            if name not in inputs:
                raise ArgumentError(f"realize is missing the Param {name!r}")
            if sp.size is not None:
                values[sp.size.name] = _size_value(inputs[name], sp)
            elif sp.input is not None:
                args[sp.ms_name] = np.array([inputs[name]], dtype=sp.dtype.numpy)
        for name, pa in tr.bound_sizes:
            values[name] = _value_at(pa, values)
        if tr.requirements:
            env = dict(values)
            env.update({scalar_key(n): _scalar_value(inputs[n], tr.scalar_params[n]) for n in required})
            for r in tr.requirements:
                r.check(env)
        for cb in tr.const_buffers.values():
            if cb.input is not None:
                args[cb.ms_name] = cb.array
        self._check_regions(values, per_output)
        windows = self._windows(values, per_output, dests is not None)
        lowered_params = set(self.kernel.lowered.params)
        args.update({k: v for k, v in values.items() if k in lowered_params})
        result = self._kernel_for(values)(**args)
        result = result if isinstance(result, tuple) else (result,)
        by_name = dict(zip((b.name for b in self.kernel.lowered.outputs), result))
        # (a zero-dimensional output stays a 0-d array, as Halide's realize gives)
        outs = [by_name[n][window] if window else by_name[n] for o, window in zip(tr.outputs, windows)
                for n in o.ms_names]
        return outs[0] if len(outs) == 1 else outs

    def _windows(self, values, per_output, into_buffers):
        """Per output, the numpy slice of its buffer that holds [0, size): the buffer covers the
        output's region, which its splits (RoundUp) and updates may grow beyond the requested box, as
        Halide's bounds query does. Buffers given to fill must cover that region, as Halide requires."""
        key = (tuple(sorted(values.items())), into_buffers)
        if key not in self._window_cache:
            windows = []
            for o, sz in zip(self.tr.outputs, per_output):
                box = _fixed_box(o.region, values)
                short = [d for d, ((lo, hi), s) in enumerate(zip(box, sz)) if lo > 0 or hi < s - 1]
                if short:
                    d = short[0]
                    raise ArgumentError(f"output {o.name} is computed over [{box[d][0]}, {box[d][1]}] in dimension "
                                        f"{d} (its bound()), which does not cover the requested [0, {sz[d] - 1}]; "
                                        f"realize a region inside its bounds")
                grown = [(lo, hi) for (lo, hi), s in zip(box, sz) if (lo, hi) != (0, s - 1)]
                if into_buffers and grown:
                    raise ArgumentError(f"output {o.name} is computed and written over {[list(b) for b in box]} "
                                        f"(min, max per dimension, by its splits or updates), beyond the given "
                                        f"buffer's {[[0, s - 1] for s in sz]}; give a buffer that covers it, "
                                        f"or realize by sizes")
                windows.append(tuple(slice(-lo, -lo + s) for (lo, _), s in zip(reversed(box), reversed(sz))))
            self._window_cache[key] = windows
        return self._window_cache[key]

    def _destinations(self, sizes):
        """{output buffer name: array to fill} when `sizes` gives the outputs themselves, else None."""
        given = sizes if isinstance(sizes, (list, tuple)) else [sizes]
        if not given or not all(_is_image(g) for g in given):
            if any(_is_image(g) for g in given):
                raise ArgumentError("realize takes either sizes or output arrays/buffers, not a mix")
            return None
        names = [n for o in self.tr.outputs for n in o.ms_names]
        labels = [o.name if len(o.ms_names) == 1 else f"{o.name}[{v}]" for o in self.tr.outputs
                  for v in range(len(o.ms_names))]
        if len(given) != len(names):
            raise ArgumentError(f"realize got {len(given)} output buffer(s) for the pipeline's {len(names)}: "
                                f"{labels}")
        dests = {n: _as_array(g, f"output {label}") for n, g, label in zip(names, given, labels)}
        for o in self.tr.outputs:
            wrong = [dests[n].shape for n in o.ms_names if dests[n].ndim != o.ndim]
            if wrong:
                raise ArgumentError(f"output {o.name} has {o.ndim} dimension(s); got an array of shape {wrong[0]}")
            shapes = {dests[n].shape for n in o.ms_names}
            if len(shapes) > 1:
                raise ArgumentError(f"the Tuple elements of output {o.name} need buffers of one size, got {shapes}")
        return dests

    def _kernel_for(self, values):
        """The kernel for these sizes: the steady regime's, or the general one (compiled once)."""
        if self._steady is None:
            return self.kernel
        key = tuple(sorted(values.items()))
        if key not in self._in_steady:   # (calls repeat the same sizes; isl is slow next to a small kernel)
            self._in_steady[key] = not _fixed(self._steady, values).is_empty()
        if self._in_steady[key]:
            return self.kernel
        if self._general is None:
            self._general = self._general_factory()
        return self._general

    def _sizes(self, sizes):
        """One list of sizes per output, checked."""
        outs = self.tr.outputs
        sizes = [sizes] if isinstance(sizes, (int, np.integer)) else list(sizes)
        nested = bool(sizes) and all(isinstance(s, (list, tuple)) for s in sizes)
        per_output = [list(s) for s in sizes] if nested else [sizes] * len(outs)
        if len(per_output) != len(outs):
            raise ArgumentError(f"realize got {len(per_output)} size lists for {len(outs)} outputs")
        for o, sz in zip(outs, per_output):
            if len(sz) != o.ndim or any(isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 1
                                        for s in sz):
                raise ArgumentError(f"output {o.name} needs {o.ndim} positive integer size(s) "
                                    f"[width, height, ...], got {sz}")
        return [[int(s) for s in sz] for sz in per_output]

    def _check_regions(self, values, per_output):
        """Every ImageParam and Buffer must cover the region the pipeline reads, as Halide checks."""
        key = tuple(sorted(values.items()))
        if key in self._checked:
            return
        tr = self.tr
        for what, info in [("ImageParam", ip) for ip in tr.image_params.values()] + \
                          [("Buffer", cb) for cb in tr.const_buffers.values()]:
            if not info.boxes:
                continue
            mins = getattr(info, "mins", None) or [0] * len(info.boxes[0])
            exts = getattr(info, "extents", None) or [values[p.name] for p in info.extent_params]
            for box in info.boxes:
                fixed = [(_value_at(lo, values, None), _value_at(hi, values, None)) for lo, hi in box]
                if any(v is None for pair in fixed for v in pair):
                    continue   # no instance reads it for these sizes
                for d, (lo, hi) in enumerate(fixed):
                    if lo <= hi and (lo < mins[d] or hi >= mins[d] + exts[d]):
                        raise ArgumentError(
                            f"{what} {info.name} is accessed over [{lo}, {hi}] in dimension {d} (Halide's order) "
                            f"but covers [{mins[d]}, {mins[d] + exts[d] - 1}]; pass a larger input or realize a "
                            f"smaller output")
        self._checked[key] = True


def _scalar_value(value, sp):
    """A Param's value as its type holds it (as realize converts it to the Param's type)."""
    try:
        return np.array([value], dtype=sp.dtype.numpy)[0].item()
    except (TypeError, ValueError, OverflowError):
        raise ArgumentError(f"Param {sp.name}: expected a value of type {sp.dtype}, got {value!r}") from None


def _size_value(value, sp):
    """The value of a Param that is a size (see PipelineTranslation._declare_sizes), checked against its type."""
    lo, hi = sp.dtype.min_value(), sp.dtype.max_value()
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or not lo <= value <= hi:
        raise ArgumentError(f"Param {sp.name}: expected an integer of type {sp.dtype} (in [{lo}, {hi}]), "
                            f"got {value!r}")
    return int(value)


def _value_at(pa, values, undefined=ArgumentError):
    """The value of the PwAff `pa` of the sizes at `values` ({size: int}); where it is not defined,
    `undefined` (None) or an ArgumentError."""
    isl = _isl()
    point = isl.Point.zero(pa.get_domain_space())
    for k in range(pa.dim(isl.dim_type.param)):
        point = point.set_coordinate_val(isl.dim_type.param, k, isl.Val(values[pa.get_dim_name(isl.dim_type.param, k)]))
    value = pa.eval(point)
    if not value.is_int():
        if undefined is not ArgumentError:
            return undefined
        raise ArgumentError(f"a bound of the pipeline is not defined for the sizes {values}")
    return value.to_python()


def _fixed(s, values):
    """The isl set `s` with its parameters set to `values`."""
    isl = _isl()
    for k in range(s.dim(isl.dim_type.param)):
        s = s.fix_val(isl.dim_type.param, k, isl.Val(values[s.get_dim_name(isl.dim_type.param, k)]))
    return s


def _fixed_box(region, values):
    """Per dimension, the (min, max) of `region` with its parameters set to `values`; empty: []."""
    isl = _isl()
    region = _fixed(region, values)
    if region.is_empty():
        return []
    return [(region.dim_min_val(d).to_python(), region.dim_max_val(d).to_python())
            for d in range(region.dim(isl.dim_type.set))]


def _isl():
    import islpy
    return islpy


def _is_image(value):
    if isinstance(value, np.ndarray):
        return True
    try:
        import halide as hl
    except ImportError:  # pragma: no cover - halide is installed with the front-end's extras
        return False
    return isinstance(value, hl.Buffer)


def _as_array(value, what):
    if isinstance(value, np.ndarray):
        return value
    try:
        import halide as hl
    except ImportError:  # pragma: no cover - halide is installed with the front-end's extras
        hl = None
    if hl is not None and isinstance(value, hl.Buffer):
        if any(value.dim(d).min() != 0 for d in range(value.dimensions())):
            raise ArgumentError(f"{what}: buffers with a nonzero min are not supported; crop it to a "
                                f"zero-based buffer")
        return np.asarray(value)
    raise ArgumentError(f"{what}: expected a numpy array or hl.Buffer, got {type(value).__name__}")
