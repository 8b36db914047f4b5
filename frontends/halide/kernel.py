"""The Function a Halide pipeline becomes, and its compiled kernel with Halide's `realize` convention."""
from __future__ import annotations

import contextlib

import numpy as np

from middleend.errors import ArgumentError
from middleend.function import Function


class HalideFunction(Function):
    """An ms.Function translated from a Halide pipeline; `compile` returns a `HalideKernel`.

    Every scheduling command of ms.Function applies (`f["blur_y"].split(...)`,
    `after`, `skew`, ...); `translation` keeps what the kernel needs to accept
    Halide-style arguments.
    """

    translation = None

    def compile(self, target="cpu", check=True, fixed=None, **options):
        """Lower, check and compile; the result has `realize(sizes, **inputs)` like `hl.Pipeline`.

        When the translation assumed the steady regime of its ShiftInwards splits (sizes of at least
        their factors, see PipelineTranslation._note_steady), the code is for those sizes; the kernel
        compiles general code the first time it is called with other sizes."""
        kernel = super().compile(target, check=check, fixed=fixed, **options)
        if not self.assumptions:
            return HalideKernel(kernel, self.translation)

        def general():
            with self._general():
                return Function.compile(self, target, check=check, fixed=fixed, **options)
        return HalideKernel(kernel, self.translation, self.translation.steady, general)

    def compile_to_object(self, path, check=True):
        """An object file and header; its callers may pass any size, so it gets the general code."""
        with self._general():
            return super().compile_to_object(path, check=check)

    @contextlib.contextmanager
    def _general(self):
        """Without the steady regime's assumption, for the time of a `with` block."""
        assumed, self.assumptions = self.assumptions, []
        try:
            yield
        finally:
            self.assumptions = assumed


class HalideKernel:
    """A compiled Halide pipeline.

    `realize(sizes, **inputs)`: sizes in Halide's order ([width, height, ...]),
    shared by all outputs, or one such list per output (as realizing into
    buffers of different sizes does in Halide);
    ImageParams by name as numpy arrays or `hl.Buffer`s, scalar Params by name.
    numpy arrays use `hl.Buffer`'s default convention: the last numpy axis is
    Halide's dimension 0, so an image of width W and height H has shape (H, W)
    (and (C, H, W) with channels as Halide's dimension 2). One output gives an
    array, several a list in the pipeline's output order (Tuple elements in
    order).
    """

    def __init__(self, kernel, translation, steady=None, general=None):
        self.kernel = kernel
        self.tr = translation
        self._checked = {}
        self._steady, self._general_factory, self._general = steady, general, None

    def __call__(self, sizes, **inputs):
        return self.realize(sizes, **inputs)

    def realize(self, sizes, **inputs):
        """Compute the outputs over [0, size) per dimension, as `hl.Pipeline.realize(sizes)` does."""
        tr = self.tr
        per_output = self._sizes(sizes)
        args, values = {}, {}
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
            a = _as_array(inputs[name], name)
            if a.ndim != ip.ndim or a.dtype != ip.dtype.numpy:
                raise ArgumentError(f"ImageParam {name}: expected {ip.ndim} dimension(s) of {ip.dtype}, got shape "
                                    f"{a.shape} and dtype {a.dtype}")
            for d, p in enumerate(ip.extent_params):
                values[p.name] = a.shape[ip.ndim - 1 - d]
            if ip.input is not None:
                args[ip.ms_name] = a
        for name, sp in tr.scalar_params.items():
            if sp.input is None:
                continue
            if name not in inputs:
                raise ArgumentError(f"realize is missing the Param {name!r}")
            args[sp.ms_name] = np.array([inputs[name]], dtype=sp.dtype.numpy)
        for cb in tr.const_buffers.values():
            if cb.input is not None:
                args[cb.ms_name] = cb.array
        self._check_regions(values, per_output)
        lowered_params = set(self.kernel.lowered.params)
        args.update({k: v for k, v in values.items() if k in lowered_params})
        result = self._kernel_for(values)(**args)
        result = result if isinstance(result, tuple) else (result,)
        by_name = dict(zip((b.name for b in self.kernel.lowered.outputs), result))
        outs = []
        for o, sz in zip(tr.outputs, per_output):
            # the output's buffer covers its region, which its splits may grow beyond [0, size)
            starts = [-lo for lo, _ in _fixed_box(o.region, values)]
            window = tuple(slice(a, a + s) for a, s in zip(reversed(starts), reversed(sz)))
            outs += [by_name[n][window] for n in o.ms_names]
        return outs[0] if len(outs) == 1 else outs

    def _kernel_for(self, values):
        """The kernel for these sizes: the steady regime's, or the general one (compiled once)."""
        if self._steady is None or not _fixed(self._steady, values).is_empty():
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
        """Every ImageParam and Buffer must cover the region the pipeline reads, and every output the region
        its updates write, as Halide checks."""
        key = tuple(sorted(values.items()))
        if key in self._checked:
            return
        tr = self.tr
        for what, info in [("ImageParam", ip) for ip in tr.image_params.values()] + \
                          [("Buffer", cb) for cb in tr.const_buffers.values()]:
            if info.region is None:
                continue
            box = _fixed_box(info.region, values)
            mins = getattr(info, "mins", [0] * len(box))
            exts = getattr(info, "extents", None) or [values[p.name] for p in info.extent_params]
            for d, (lo, hi) in enumerate(box):
                if lo < mins[d] or hi >= mins[d] + exts[d]:
                    raise ArgumentError(
                        f"{what} {info.name} is accessed over [{lo}, {hi}] in dimension {d} (Halide's order) but "
                        f"covers [{mins[d]}, {mins[d] + exts[d] - 1}]; pass a larger input or realize a smaller "
                        f"output")
        for o in tr.outputs:
            realized = _fixed_box(o.region, values)
            for reg, what in o.update_writes:
                for d, (lo, hi) in enumerate(_fixed_box(reg, values)):
                    if lo < realized[d][0] or hi > realized[d][1]:
                        raise ArgumentError(
                            f"{what} writes {o.name} over [{lo}, {hi}] in dimension {d} (Halide's order), outside "
                            f"the output's [{realized[d][0]}, {realized[d][1]}]; realize a larger output")
        self._checked[key] = True


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


def _as_array(value, name):
    if isinstance(value, np.ndarray):
        return value
    try:
        import halide as hl
    except ImportError:  # pragma: no cover - halide is installed with the front-end's extras
        hl = None
    if hl is not None and isinstance(value, hl.Buffer):
        if any(value.dim(d).min() != 0 for d in range(value.dimensions())):
            raise ArgumentError(f"ImageParam {name}: buffers with a nonzero min are not supported; crop it to a "
                                f"zero-based buffer")
        return np.asarray(value)
    raise ArgumentError(f"ImageParam {name}: expected a numpy array or hl.Buffer, got {type(value).__name__}")
