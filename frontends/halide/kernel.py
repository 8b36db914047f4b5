"""The Function a Halide pipeline becomes, and its compiled kernel with Halide's `realize` convention."""
from __future__ import annotations

import warnings

import numpy as np

from mascarpone.middleend.affine import param_names
from mascarpone.middleend.errors import ArgumentError
from mascarpone.middleend.autoschedule import complete_sizes
from mascarpone.middleend.autoschedule.state import restore
from mascarpone.middleend.function import Function

from mascarpone.middleend.expr import Access, Sym, pseudo_c, walk

from .estimates import estimated_sizes
from .requirements import check_output, scalar_key
from .floatrange import cast_end


class HalideFunction(Function):
    """An ms.Function translated from a Halide pipeline; `compile` returns a `HalideKernel`.

    Every scheduling command of ms.Function applies (`f["blur_y"].split(...)`,
    `after`, `skew`, ...); `translation` keeps what the kernel needs to accept
    Halide-style arguments.
    """

    translation = None
    checks_input_reads_at_call = True      # (HalideKernel's regions, as Halide checks them)

    def assume_same_output_sizes(self):
        """Promise that every output is realized with the same sizes (as `realize(sizes)` does), so
        that outputs computed in one loop nest (with `after`) need no guards; realize refuses others."""
        outs = [self.translation.out_params[o.index] for o in self.translation.outputs]
        same = [f"{a.name} = {b.name}" for first, other in zip(outs, outs[1:]) for a, b in zip(first, other)]
        if same:
            self.assume(" and ".join(same))
        return self

    def estimated_sizes(self) -> dict:
        """{size: value} from the pipeline's estimates (`Func.set_estimates` on outputs,
        `ImageParam.set_estimates`), as Halide's autoschedulers read them."""
        return estimated_sizes(self.translation)

    def autoschedule(self, target="cpu", budget_s=20.0, seed=0, sizes=None, measure=True, cache=True):
        """`Function.autoschedule`, timing at the pipeline's estimates where `sizes` does not say
        otherwise (Halide's autoschedulers read the same estimates). Funcs that Halide would inline
        only because nothing schedules them are placed by the autoscheduler (inline, per tile or at
        the root), unless commands were given since translation, or a Func computed at a loop is read
        through them (Halide's schedule then holds only with them inlined in that loop)."""
        tr = self.translation
        given = {**self.estimated_sizes(), **(sizes or {})}
        # a size that names a bound of other sizes (PipelineTranslation._named_bounds) follows from them
        derived = [(name, pa) for name, pa in tr.bound_sizes if name not in given]

        def derive():
            for name, pa in derived:
                sizes[name] = _value_at(pa, sizes)
        sizes = complete_sizes(self, given)
        derive()
        # an input whose extents nothing gives covers what the pipeline reads at the outputs' sizes
        for ip in tr.image_params.values():
            for d, p in enumerate(ip.extent_params):
                if p.name not in given:
                    reach = [_value_at(box[d][1], sizes, None) for box in ip.boxes]
                    sizes[p.name] = max([sizes[p.name]] + [v + 1 for v in reach if v is not None])
        derive()
        beyond = region_beyond_inputs(tr, sizes) if measure else None
        if beyond:
            # the kernels it would time read their inputs as Halide's realize does, which would refuse these sizes
            warnings.warn(f"autoschedule({self.name}): at the sizes it would time ({_shown(sizes)}), {beyond}; "
                          f"the model's choice is applied unmeasured (set estimates on the outputs, "
                          f"Func.set_estimates, or give sizes=)", stacklevel=2)
            measure = False
        if tr.default_inlines and len(self.history()) == tr.commands:
            # the Funcs inlined only because nothing scheduled them are the autoscheduler's to place
            restore(self, tr.before_default_inlines)
            for comp in _inlines_placements_need(tr.default_inlines):
                comp.inline()
        return super().autoschedule(target, budget_s, seed, sizes, measure, cache)

    def compile(self, target="cpu", check=True, fixed=None, **options):
        """Lower, check and compile; the result has `realize(sizes, **inputs)` like `hl.Pipeline`.

        When the translation found a steady regime for its ShiftInwards splits (sizes of at least
        their factors, see PipelineTranslation._note_steady), the code is for those sizes; the kernel
        compiles general code the first time it is called with other sizes. `schedule="auto"`
        autoschedules first (see Function.autoschedule)."""
        self._apply_schedule_option(options.pop("schedule", None), target, fixed)
        steady = self.translation.steady
        variant = self._variant(target, check, options) if fixed is None else None
        if steady is None:
            return HalideKernel(super().compile(target, check=check, fixed=fixed, **options), self.translation,
                                variant=variant)
        with self.assuming(self.translation.symbolic_steady()):
            kernel = super().compile(target, check=check, fixed=fixed, **options)

        def general():
            return Function.compile(self, target, check=check, fixed=fixed, **options)
        return HalideKernel(kernel, self.translation, steady, general, variant)

    def _variant(self, target, check, options):
        """A factory of kernels for other output regions ({output index: mins}): the same pipeline
        translated for that region, compiled alike. Only while the Function keeps the schedule it was
        translated with (commands given since are not replayed)."""
        tr = self.translation
        if len(self.history()) != tr.commands:
            return None

        def make(mins):
            from . import from_halide
            return from_halide(tr.data, self.name, output_mins=mins).compile(target, check=check, **options)
        return make


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

    def __init__(self, kernel, translation, steady=None, general=None, variant=None):
        self.kernel = kernel
        self.tr = translation
        self._variant_factory, self._variants = variant, {}   # kernels for other output regions (see _at)
        self._checked = {}
        self._window_cache = {}
        self._steady, self._general_factory, self._general = steady, general, None
        self._in_steady = {}   # sizes -> whether they are in the steady regime
        self._bounds = {}      # sizes -> the sizes that name bounds of them (tr.bound_sizes)
        self._sizes_needed = self._sizes_read()

    def _sizes_read(self):
        """The names of the sizes that the kernel or the region checks read: the boxes of one image may
        hold the extents of another that nothing reads (bytes whose read of it was redirected)."""
        names = set(self.kernel.lowered.params)
        for info in list(self.tr.image_params.values()) + list(self.tr.const_buffers.values()):
            for box in info.boxes:
                names.update(name for pair in box for pa in pair for name in param_names(pa))
        return names

    def __call__(self, sizes, **inputs):
        return self.realize(sizes, **inputs)

    def realize(self, sizes, **inputs):
        """Compute the outputs over [0, size) per dimension, as `hl.Pipeline.realize(sizes)` does, or
        into given output arrays or buffers (see the class); an `hl.Buffer` whose min is not zero (set_min,
        a crop) gets the region it covers, computed by a kernel for that region (made once per region)."""
        tr = self.tr
        dests = self._destinations(sizes)
        if dests is not None and any(self.asked_mins[o.index] != tr.output_mins.get(o.index, [0] * o.ndim)
                                     for o in tr.outputs):
            return self._at(self.asked_mins).realize(sizes, **inputs)
        per_output = self._sizes(sizes) if dests is None else \
            [list(reversed(dests[o.out_buffers[0]].shape)) for o in tr.outputs]
        # a view the kernel cannot fill in place (a crop of a larger buffer) is filled through a copy
        views = {n: a for n, a in (dests or {}).items() if not (a.flags.c_contiguous and a.flags.aligned)}
        args, values = dict(dests or {}), {}
        args.update({n: np.empty(a.shape, a.dtype) for n, a in views.items()})
        for o, sz in zip(tr.outputs, per_output):
            values.update({p.name: s for p, s in zip(tr.out_params[o.index], sz)})
        unknown = set(inputs) - set(tr.image_params) - set(tr.scalar_params)
        if unknown:
            raise ArgumentError(f"realize got unknown input(s) {sorted(unknown)}; the pipeline takes "
                                f"{sorted(set(tr.image_params) | set(tr.scalar_params))}")
        for name, ip in tr.image_params.items():
            if ip.input is None and not any(p.name in self._sizes_needed for p in ip.extent_params):
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
        required = {n for r in tr.requirements for n in r.params} | runtime_params(tr) | \
            {n for cs in tr.output_constraints.values() for c in cs for n in c[3]}
        for name, sp in tr.scalar_params.items():
            if sp.input is None and sp.size is None and name not in required:
                continue
            if name not in inputs:
                raise ArgumentError(f"realize is missing the Param {name!r}")
            if sp.size is not None:
                values[sp.size.name] = _size_value(inputs[name], sp)
            elif sp.input is not None:
                args[sp.ms_name] = np.array([inputs[name]], dtype=sp.dtype.numpy)
        env = dict(values)
        env.update({scalar_key(n): _scalar_value(inputs[n], tr.scalar_params[n]) for n in required})
        for r in tr.requirements:
            r.check(env)
        for o, sz in zip(tr.outputs, per_output):
            if tr.output_constraints.get(o.index):
                given = dests[o.out_buffers[0]] if dests is not None else None
                strides = [st // given.itemsize for st in reversed(given.strides)] if given is not None else \
                    [int(np.prod(sz[:d])) for d in range(len(sz))]
                check_output(o.name, tr.output_constraints[o.index], env,
                             tr.output_mins.get(o.index, [0] * o.ndim), sz, strides)
        for name, end, dtype, side in tr.runtime_bounds:
            values[name] = _runtime_bound(end, dtype, side, env)
        values.update(self._bound_sizes(values))
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
        for n, view in views.items():
            view[...] = by_name[n]
            by_name[n] = view
        outs = [by_name[n][window] if window else by_name[n] for o, window in zip(tr.outputs, windows)
                for n in o.out_buffers]
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
                mins = self.tr.output_mins.get(o.index, [0] * o.ndim)
                asked = [(m, m + s - 1) for m, s in zip(mins, sz)]
                short = [d for d, ((lo, hi), (a, b)) in enumerate(zip(box, asked)) if lo > a or hi < b]
                if short:
                    d = short[0]
                    raise ArgumentError(f"output {o.name} is computed over [{box[d][0]}, {box[d][1]}] in dimension "
                                        f"{d} (its bound()), which does not cover the requested "
                                        f"[{asked[d][0]}, {asked[d][1]}]; realize a region inside its bounds")
                if into_buffers and [tuple(b) for b in box] != asked:
                    raise ArgumentError(f"output {o.name} is computed and written over {[list(b) for b in box]} "
                                        f"(min, max per dimension, by its splits or updates), beyond the given "
                                        f"buffer's {[list(a) for a in asked]}; give a buffer that covers it, "
                                        f"or realize by sizes")
                windows.append(tuple(slice(a - lo, a - lo + s) for (lo, _), (a, _), s in
                                     zip(reversed(box), reversed(asked), reversed(sz))))
            self._window_cache[key] = windows
        return self._window_cache[key]

    def _destinations(self, sizes):
        """{output buffer name: array to fill} when `sizes` gives the outputs themselves, else None."""
        given = sizes if isinstance(sizes, (list, tuple)) else [sizes]
        if not given or not all(_is_image(g) for g in given):
            if any(_is_image(g) for g in given):
                raise ArgumentError("realize takes either sizes or output arrays/buffers, not a mix")
            return None
        names = [n for o in self.tr.outputs for n in o.out_buffers]
        labels = [o.name if len(o.out_buffers) == 1 else f"{o.name}[{v}]" for o in self.tr.outputs
                  for v in range(len(o.out_buffers))]
        if len(given) != len(names):
            raise ArgumentError(f"realize got {len(given)} output buffer(s) for the pipeline's {len(names)}: "
                                f"{labels}")
        dests = {n: _as_array(g, f"output {label}", allow_min=True) for n, g, label in zip(names, given, labels)}
        mins = {n: _mins(g) for n, g in zip(names, given)}
        for o in self.tr.outputs:
            if len({tuple(mins[n]) for n in o.out_buffers}) > 1:
                raise ArgumentError(f"the Tuple elements of output {o.name} need buffers of one region, got mins "
                                    f"{[mins[n] for n in o.out_buffers]}")
        self.asked_mins = {o.index: mins[o.out_buffers[0]] for o in self.tr.outputs}
        for o in self.tr.outputs:
            wrong = [dests[n].shape for n in o.out_buffers if dests[n].ndim != o.ndim]
            if wrong:
                raise ArgumentError(f"output {o.name} has {o.ndim} dimension(s); got an array of shape {wrong[0]}")
            shapes = {dests[n].shape for n in o.out_buffers}
            if len(shapes) > 1:
                raise ArgumentError(f"the Tuple elements of output {o.name} need buffers of one size, got {shapes}")
        return dests

    def _at(self, mins):
        """The kernel computing each output over a region of these mins ({output index: mins})."""
        key = tuple(tuple(mins[o.index]) for o in self.tr.outputs)
        if key not in self._variants:
            if self._variant_factory is None:
                raise ArgumentError("this kernel computes its outputs from 0; realize into buffers whose min is 0")
            self._variants[key] = self._variant_factory(mins)
        return self._variants[key]

    def _bound_sizes(self, values) -> dict:
        """{name: value} of the sizes that name a bound of the others (PipelineTranslation._named_bounds),
        evaluated once per set of sizes (each is an isl evaluation: 10 us, against a kernel of 100)."""
        key = tuple(sorted(values.items()))
        if key not in self._bounds:
            known = dict(values)
            for name, pa in self.tr.bound_sizes:
                known[name] = _value_at(pa, known)
            self._bounds[key] = {name: known[name] for name, _ in self.tr.bound_sizes}
        return self._bounds[key]

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
        beyond = region_beyond_inputs(self.tr, values)
        if beyond:
            raise ArgumentError(f"{beyond}; pass a larger input or realize a smaller output")
        self._checked[key] = True


def region_beyond_inputs(tr, values):
    """Where the pipeline reads an ImageParam or Buffer beyond what it covers at the sizes `values`, a
    sentence saying so, else None (Halide refuses such a realize)."""
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
                    return (f"{what} {info.name} is accessed over [{lo}, {hi}] in dimension {d} (Halide's order) "
                            f"but covers [{mins[d]}, {mins[d] + exts[d] - 1}]")
    return None


def _shown(sizes):
    return ", ".join(f"{k} = {v}" for k, v in sizes.items())


def _inlines_placements_need(inlined):
    """Those of the computations `inlined` (Funcs Halide inlines because nothing schedules them) that
    read a computation placed at a consumer's loop, themselves or through others that do: at the
    root they would read its tile outside that loop (erode's erode_x, where Adams2019 computes
    input_clamped per strip of erode_y)."""
    keep = []
    while True:
        more = [c for c in inlined if c not in keep and any(
            isinstance(n, Access) and (getattr(n.target, "compute_at_target", None) is not None or n.target in keep)
            for e in [c.expr] + ([c.predicate] if c.predicate is not None else []) for n in walk(e))]
        if not more:
            return keep
        keep += more


def runtime_params(tr):
    """The Params that the runtime ranges of indices (PipelineTranslation.runtime_range) read."""
    return {n.name[len(scalar_key("")):] for _, end, _, _ in tr.runtime_bounds for n in walk(end)
            if isinstance(n, Sym) and n.name.startswith(scalar_key(""))}


def _runtime_bound(end, dtype, side, env):
    """An end of an index's range computed from the Params' values (see floatrange)."""
    value = cast_end(end, env)
    if value is None:
        params = ", ".join(f"{k[len(scalar_key('')):]} = {v}" for k, v in env.items() if k.startswith(scalar_key("")))
        raise ArgumentError(f"an index computed from the Params ({params}) is not finite or does not fit {dtype}: "
                            f"{pseudo_c(end)} converted to {dtype}; the pipeline's reads are unbounded for these values")
    return value


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
    for k in reversed(range(s.dim(isl.dim_type.param))):
        name = s.get_dim_name(isl.dim_type.param, k)
        if name in values:
            s = s.fix_val(isl.dim_type.param, k, isl.Val(values[name]))
        else:   # a size of an input the translated Function no longer reads: any value
            s = s.project_out(isl.dim_type.param, k, 1)
    return s


def _fixed_box(region, values):
    """Per dimension, the (min, max) of `region` with its parameters set to `values`; empty: []."""
    isl = _isl()
    region = _fixed(region, values)
    if region.is_empty():
        return []
    ends = [(region.dim_min_val(d), region.dim_max_val(d)) for d in range(region.dim(isl.dim_type.set))]
    if any(not (v.is_int()) for pair in ends for v in pair):
        raise ArgumentError(f"the region an output covers is not bounded for the sizes {values}")
    return [(lo.to_python(), hi.to_python()) for lo, hi in ends]


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


def _mins(value):
    """The min of each dimension (Halide's order) of an array (0) or hl.Buffer."""
    if isinstance(value, np.ndarray):
        return [0] * value.ndim
    return [value.dim(d).min() for d in range(value.dimensions())]


def _as_array(value, what, allow_min=False):
    """The numpy view of an array or hl.Buffer (an input's min must be 0; an output's is its region's)."""
    if isinstance(value, np.ndarray):
        return value
    try:
        import halide as hl
    except ImportError:  # pragma: no cover - halide is installed with the front-end's extras
        hl = None
    if hl is not None and isinstance(value, hl.Buffer):
        if not allow_min and any(value.dim(d).min() != 0 for d in range(value.dimensions())):
            raise ArgumentError(f"{what}: input buffers with a nonzero min are not supported; crop it to a "
                                f"zero-based buffer")
        return np.asarray(value)
    raise ArgumentError(f"{what}: expected a numpy array or hl.Buffer, got {type(value).__name__}")
