"""A decoded Halide pipeline to an ms.Function: inputs, bounds by isl, one computation per stage and value.

Two passes. The first walks the Funcs from the outputs to the inputs and
computes, with isl, the box every stage must cover for an output region of
`[0, extent)` per dimension (the `realize` sizes are parameters); the second
declares inputs and computations, producers first, with those boxes as the
ranges of their variables. Halide's dimension 0 is innermost, so variables,
buffers and accesses list dimensions in reverse.
"""
from __future__ import annotations

import islpy as isl
import numpy as np

import mascarpone.middleend.expr as E
from mascarpone.middleend.affine import affine_text, constraint_text
from mascarpone.middleend.algorithm import Computation, Input, Param, Var
from mascarpone.middleend.buffer import Buffer
from mascarpone.middleend.errors import DomainError, NotSupportedError
from mascarpone.middleend.schedule import bind_params
from mascarpone.middleend.types import int8, int16, int32, int64, uint8, uint16

from . import bounds
from .errors import HalideFormatError
from .exprs import Translator, dtype_of
from .floatrange import cast_end, float_range, has_float_cast, needs_params
from .names import NameTable, sanitize
from .pipeline import FuncInfo, build_call_graph, check_supported, compute_in_each_reading_stage, \
    compute_reductions_in_their_consumer, consumers_first, redirect_to_wrappers, resolve_calls_by_name, walk_nodes
from .requirements import read_output_constraints, read_requirements
from .schedule import placement
from .schema import CALL_TYPES
from .splits import Variable, constant_value, loop_nest
from .tiles import TileReaders
from .validate import check_pipeline

#: types of the Params that may become sizes: every value is an int32, so a bound cast to it stays exact
SIZE_TYPES = (int8, int16, int32, uint8, uint16)


class _Ref:
    """What an access reads during bounds inference: a Func or an input, by its region key."""

    def __init__(self, key, dtype):
        self.key = key
        self.name = key
        self.dtype = dtype


class ImageParamInfo:
    """An ImageParam: its mascarpone input and the parameters that hold its extents (dimension 0 first)."""

    def __init__(self, name, ms_name, dtype, ndim, extent_params):
        self.name, self.ms_name, self.dtype, self.ndim = name, ms_name, dtype, ndim
        self.extent_params = extent_params
        self.input = None
        self.boxes = []   # the boxes of it the pipeline reads, as (min, max) PwAffs per dimension


class ScalarParamInfo:
    """A scalar Param: a size of the Function (an isl parameter, `size`) when an RDom bound or an
    index uses it (see PipelineTranslation._declare_sizes), else passed to the kernel as a
    one-element array (`input`)."""

    def __init__(self, name, ms_name, dtype):
        self.name, self.ms_name, self.dtype = name, ms_name, dtype
        self.input = None
        self.size = None


class ConstBufferInfo:
    """A constant hl.Buffer inside the pipeline: its data in mascarpone's (reversed) layout."""

    def __init__(self, node, ms_name):
        self.name, self.ms_name = node.name, ms_name
        self.dtype = dtype_of(node.type, f"Buffer {node.name}")
        self.mins = [d.min for d in node.dims]
        extents = [d.extent for d in node.dims]
        strides = [d.stride for d in node.dims]
        item = self.dtype.numpy.itemsize
        raw = np.frombuffer(node.data, dtype=self.dtype.numpy if not self.dtype.is_bool else np.uint8)
        # Halide writes a compact copy of the buffer (Buffer::copy: dense, dimensions nested in the order
        # of their signed strides); the strides written are the original ones (a crop's, a view's)
        dense, step = [0] * len(extents), 1
        for d in sorted(range(len(extents)), key=lambda d: (strides[d], d)):
            dense[d], step = step, step * extents[d]
        if raw.size != step:
            raise HalideFormatError(f"Buffer {node.name}: its data ({raw.size} elements) is not the "
                                    f"{step} elements of its extents {extents}")
        view = np.lib.stride_tricks.as_strided(raw, shape=extents[::-1], strides=[s * item for s in dense[::-1]])
        self.array = np.ascontiguousarray(view).astype(self.dtype.numpy)
        self.extents = extents
        self.input = None
        self.boxes = []


class PipelineTranslation:
    """Everything the translation learned: Funcs, inputs, output parameters, the ms.Function."""

    def __init__(self, pipe, output_mins=None):
        resolve_calls_by_name(pipe)
        check_pipeline(pipe)
        # {Func: (argument, width)} of the inline reductions computed per vector of their consumer
        self.vector_reductions = compute_reductions_in_their_consumer(pipe)
        compute_in_each_reading_stage(pipe)
        self.pipe = pipe
        self.funcs = [FuncInfo(i, f) for i, f in enumerate(pipe.funcs)]
        by_name = {f.name: f for f in self.funcs}
        missing = [n for n in pipe.output_names if n not in by_name]
        if missing or not pipe.output_names:
            raise HalideFormatError(f"the pipeline's outputs {pipe.output_names} are not among its Funcs")
        self.outputs = [by_name[n] for n in pipe.output_names]
        # the min of each output's region ({Func index: [min per dimension]}); 0 unless given
        self.output_mins = {o.index: list(output_mins[o.index]) for o in self.outputs
                            if output_mins and o.index in output_mins and any(output_mins[o.index])}
        self.names = NameTable()
        self.image_params, self.scalar_params, self.const_buffers = {}, {}, {}
        self.used_inputs = set()
        redirect_to_wrappers(self.funcs)
        build_call_graph(self.funcs)
        self.order = consumers_first(self.funcs, self.outputs)
        for info in self.order:
            check_supported(info)
        self._declare_params()
        self.requirements = read_requirements(self, pipe.requirements)
        self.output_constraints = read_output_constraints(self)

    # names and parameters ---------------------------------------------------------
    def _declare_params(self):
        for p in self.pipe.external_parameters:
            dtype = dtype_of(p.type, f"parameter {p.name}")
            if p.is_buffer:
                ms_name = self.names.fresh(p.name)
                ext = [Param(self.names.fresh(f"{p.name}_extent_{d}")) for d in range(p.dimensions)]
                self.image_params[p.name] = ImageParamInfo(p.name, ms_name, dtype, p.dimensions, ext)
            else:
                self.scalar_params[p.name] = ScalarParamInfo(p.name, self.names.fresh(p.name), dtype)
        for b in self.pipe.buffers:
            self.const_buffers[b.name] = ConstBufferInfo(b, self.names.fresh(b.name))
        # each output has its own extents: realize may give every output buffer its own size
        single = len(self.outputs) == 1
        self.out_params = {o.index: [Param(self.names.fresh(f"out_extent_{d}" if single else f"{o.name}_extent_{d}"))
                                     for d in range(o.ndim)] for o in self.outputs}
        self.params = {p.name: p for ps in self.out_params.values() for p in ps}
        for ip in self.image_params.values():
            self.params.update({p.name: p for p in ip.extent_params})
        self.ranges = {}   # {name: (lo, hi)} of the sizes that are Params or bound sizes (None: unbounded); others >= 1
        self._context, self._context_of = None, None   # context() of the ranges it was made for
        self.bound_sizes = []   # (name, PwAff of the sizes before it) in order, see _named_bounds
        self._bound_probes = {}   # name -> bounds.probe_values of its PwAff
        # (name, float expression of Params, integer type, "min" or "max"): an index's range computed on
        # each call, see runtime_range
        self.runtime_bounds, self._runtime_names = [], {}
        self._declare_sizes()
        # sizes for which every ShiftInwards loop at the root has at least its factor of points (the
        # steady regime, see _note_steady); None: all sizes
        self.steady = None
        self.steady_loops = []   # (FuncInfo, loop min, loop max, factor) of each ShiftInwards split
        # derived sizes (see symbolic_bounds): {text of a piecewise bound: (it, PwAff of its name)}, {name: Param}
        self.derived, self.derived_params = {}, {}
        self.function = None   # the HalideFunction being declared
        self._nests = {}       # (Func index, stage) -> (box, its loop nest), see _stage_nest
        self.pending_widths = []   # vector and unrolled loops whose extent one tile gives (schedule.resolve_widths)
        self.tile_readers = TileReaders(self, placement)
        # Funcs Halide inlines because nothing schedules them (its default, not a choice), and the
        # schedule before they are inlined: an autoscheduler places them itself (HalideFunction.autoschedule)
        self.default_inlines, self.before_default_inlines = [], None

    def _declare_sizes(self):
        """Make sizes of the integer Params that bound an RDom, and of those an index, an RDom
        predicate or a bound() uses: bounds inference is then exact in them (an RDom over [0, n)
        reads n elements). Params used only in values stay one-element inputs."""
        for info in self.order:
            for k, d in enumerate(info.stages):
                for r in (d.stage_schedule.rvars if d.stage_schedule is not None else []):
                    for sp in self._scalar_params_in([r.min, r.extent]):
                        if sp.dtype not in SIZE_TYPES:
                            raise NotSupportedError(
                                f"{info.stage_name(k)}: the bounds of reduction variable {r.var} use the Param "
                                f"{sp.name} of type {sp.dtype}; only Params of type int8, int16, int32, uint8 or "
                                f"uint16 can bound an RDom")
                        self._make_size(sp)
                calls = [n for n in walk_nodes([d.values, d.args, d.predicate]) if n.kind == "Call"
                         and n.call_type < len(CALL_TYPES) and CALL_TYPES[n.call_type] in ("Halide", "Image")]
                indices = [a for c in calls for a in c.args] + ([d.predicate] + list(d.args) if k else [])
                for sp in self._scalar_params_in(indices):
                    if sp.dtype in SIZE_TYPES:
                        self._make_size(sp)
            for b in (info.schedule.bounds if info.schedule is not None else []):
                for sp in self._scalar_params_in([b.min, b.extent]):
                    if sp.dtype in SIZE_TYPES:
                        self._make_size(sp)

    def _scalar_params_in(self, exprs):
        # (walk_nodes also visits the copies of RDoms that variables carry, which validation does not
        # read: a name there may be anything)
        names = {n.name for n in walk_nodes(exprs)
                 if n.kind == "Variable" and n.param_name == n.name and isinstance(n.name, str)}
        return [self.scalar_params[n] for n in sorted(names) if n in self.scalar_params]

    def _make_size(self, sp):
        if sp.size is None:
            sp.size = Param(sp.ms_name)
            self.params[sp.ms_name] = sp.size
            # a Param may be zero or negative (an RDom of extent <= 0 is empty): its type's range
            self.ranges[sp.ms_name] = (sp.dtype.min_value(), sp.dtype.max_value())

    def context(self):
        """The sizes' ranges: at least 1, or a Param's type's range, or a bound size's (see _named_bounds)."""
        ranges = tuple((n, self.ranges.get(n, (1, None))) for n in sorted(self.params))
        # (parsing a set over a hundred sizes costs milliseconds, and bounds inference asks often)
        if self._context_of != ranges:
            cons = []
            for n, (lo, hi) in ranges:
                cons += ([f"{lo} <= {n}"] if lo is not None else []) + ([f"{n} <= {hi}"] if hi is not None else [])
            names = ", ".join(n for n, _ in ranges)
            self._context = isl.Set(f"[{names}] -> {{ : {' and '.join(cons) or 'true'} }}")
            self._context_of = ranges
        return self._context

    def runtime_range(self, index):
        """isl text of the (min, max) of `index`, an integer expression converting floats whose range
        is known (see floatrange.py), or None. An end computed from Params becomes a size the kernel
        computes on each call (`runtime_bounds`); one without Params is a constant."""
        ends = self._range_ends(index)
        return None if ends is None else tuple(text for text, _ in ends)

    def within_range(self, index):
        """`index` clamped to the range `runtime_range` finds for it: the same values (every value lies
        in that range), and the layout check sees the bound the translation knows."""
        by_input = {sp.input: sp for sp in self.scalar_params.values() if getattr(sp, "input", None) is not None}

        def as_in_bounds(n):     # a scalar Param read as bounds inference reads it, for its ends' names
            sp = by_input.get(getattr(n, "target", None)) if isinstance(n, E.Access) else None
            return None if sp is None else E.Access(_Ref(("scalar", sp.name), sp.dtype), n.indices)

        ends = self._range_ends(E.transform(index, as_in_bounds))
        if ends is None:
            return index
        (_, lo), (_, hi) = ends
        if hi is not None:
            index = E.binop("min", index, hi)
        return index if lo is None else E.binop("max", index, lo)

    def _range_ends(self, index):
        """[(isl text, expression or None where it is the type's limit)] of the min and max of `index`
        (see runtime_range), or None."""
        if not has_float_cast(index):
            return None
        lo, hi = float_range(index)
        if lo is None and hi is None:
            return None
        dtype = index.dtype
        out = []
        for side, end, limit in (("min", lo, dtype.min_value()), ("max", hi, dtype.max_value())):
            if end is None:
                out.append((str(limit), None))
            elif not needs_params(end):
                value = cast_end(end, {})
                if value is None:
                    return None   # not finite, or beyond the type: any value of the type
                out.append((str(value), E.Const(value, dtype)))
            elif not has_float_cast(end) and affine_text(end) is not None and all(
                    n.name in self.params for n in E.walk(end) if type(n) is E.Sym):
                # (an end a clamp gives in the sizes: exact in isl; one reading a scalar Param is computed
                # by the kernel, below)
                out.append((affine_text(end), end if end.dtype == dtype else E.cast(dtype, end)))
            else:
                key = (side, E.pseudo_c(end), dtype.name)
                if key not in self._runtime_names:
                    name = self.names.fresh(f"index_{side}")
                    self.params[name] = Param(name)
                    self.ranges[name] = (dtype.min_value(), dtype.max_value())
                    self.runtime_bounds.append((name, end, dtype, side))
                    self._runtime_names[key] = name
                size = self.params[self._runtime_names[key]]
                out.append((self._runtime_names[key], size if size.dtype == dtype else E.cast(dtype, size)))
        return out

    def _named_bounds(self, info, bnds, context):
        """`bnds` with each piecewise bound replaced by a size of its own (a bound size), computed
        by the kernel from the sizes before the call, as Halide names a Func's bounds (`f.min.0`).
        The bounds of the Funcs it reads are then affine in that size: the max of two consumers'
        needs, each a floor division of the one before through a pyramid, no longer splits every set
        built on it into a case per piece, and per combination of pieces further down."""
        out = []
        for d, pair in enumerate(bnds):
            named = []
            for side, pa in zip(("min", "max"), pair):
                pa = pa.intersect_params(context).coalesce()
                if pa.n_piece() > 1:
                    # (one name for one function: a Func's required and accessed boxes, its consumers')
                    probe = bounds.probe_values(pa, self.ranges)
                    name = next((n for n, value in self.bound_sizes
                                 if self._bound_probes[n] == probe and value.is_equal(pa)), None)
                    if name is None:
                        name = self.names.fresh(f"{info.name}_{side}_{d}")
                        lo, hi = (_finite(v) for v in (pa.min_val(), pa.max_val()))
                        self.params[name] = Param(name)
                        self.ranges[name] = (lo, hi)
                        self.bound_sizes.append((name, pa))
                        self._bound_probes[name] = probe
                    pa = isl.PwAff(f"[{name}] -> {{ [({name})] }}")
                named.append(pa)
            out.append(tuple(named))
        return out

    # the pieces of expressions both passes share ----------------------------------------
    def param_value(self, node, dtype, final):
        """A Variable that names a parameter: a scalar Param, or an ImageParam's min/extent/stride."""
        if node.name in self.scalar_params and node.param_name == node.name:
            sp = self.scalar_params[node.name]
            if sp.size is not None:
                return sp.size if dtype == int32 else E.cast(dtype, sp.size)
            self.used_inputs.add(("scalar", node.name))
            target = sp.input if final else _Ref(("scalar", node.name), sp.dtype)
            return E.Access(target, (E.Const(0, int32),))
        base, _, rest = node.name.rpartition(".")
        owner, _, attr = base.rpartition(".")
        ip = self.image_params.get(owner) or self.image_params.get(node.param_name)
        if ip is not None and rest.isdigit() and int(rest) < ip.ndim:
            d = int(rest)
            if attr == "min":
                return E.Const(0, dtype)
            if attr == "extent":
                return E.cast(dtype, ip.extent_params[d])
            raise NotSupportedError(f"the {attr} of ImageParam {ip.name} in an expression is not supported")
        raise NotSupportedError(f"the parameter {node.name!r} is not supported by the Halide front-end")

    # pass 1: bounds -------------------------------------------------------------------------
    def infer_bounds(self):
        """Fill `region` and `stage_boxes` of every Func, and the region each ImageParam must cover.

        As in Halide, what a Func must provide is a box: each access's exact region is reduced to its
        per-dimension (piecewise) min and max, and boxes combine by min/max, which keeps isl's sets small.

        Two boxes per Func, as in Halide: the region its consumers require (their definitions over
        the regions required of them), which is what a Func computed at the root computes, and the
        region they access, larger where a consumer's split computes more than required (RoundUp):
        Halide allocates that but computes only the required region there (the extra points read
        values nobody wrote, and are never used). A Func computed per tile or inlined is evaluated
        wherever it is accessed; inputs must cover every access.
        """
        context = self.context()
        params = sorted(self.params)
        self.regions, self.accessed, self.input_boxes = {}, {}, {}
        for o in self.outputs:
            mins = self.output_mins.get(o.index, [0] * o.ndim)
            out_box = " and ".join(f"{m} <= d{d} < {m} + {p.name}" for d, (m, p) in
                                   enumerate(zip(mins, self.out_params[o.index])))
            reg = isl.Set(f"[{', '.join(params)}] -> {{ F{o.index}[{', '.join(f'd{d}' for d in range(o.ndim))}] : "
                          f"{out_box} }}")
            self._add_region(("func", o.index), bounds.box_bounds(reg, context, f"Func {o.name}"))
        for info in self.order:
            required = self.regions.get(("func", info.index))
            accessed = bounds.merge_bounds(self.accessed.get(("func", info.index)), required)
            if accessed is None:
                continue
            context = self.context()
            if info not in self.outputs:
                required = self._named_bounds(info, required, context) if required is not None else None
                accessed = self._named_bounds(info, accessed, context)
            context, params = self.context(), sorted(self.params)   # (with the bound sizes made so far)
            space = isl.Set(f"[{', '.join(params)}] -> {{ F{info.index}[{', '.join(f'd{d}' for d in range(info.ndim))}] }}").get_space()
            where = placement(self, info)
            at_root, inlined = where == "root", where == "inline"
            # the box its loops run over: what is required of a Func computed at the root; what is
            # accessed of one computed per tile or inlined (evaluated wherever it is accessed)
            bnds = required if at_root and required is not None else accessed
            region = bounds.box_set(bnds, space)
            region = self._apply_bound_directives(info, region, params).intersect_params(context).coalesce()
            if at_root and info in self.outputs:
                region = self._grown_output(info, region, space, context)
            info.region = region
            info.stage_boxes = [None] * len(info.stages)
            info.stage_exact = [None] * len(info.stages)
            info.stage_anchor = [None] * len(info.stages)
            info.storage = None   # at the root, the box its buffer covers: what is accessed, computed, written
            if at_root and info not in self.outputs:
                info.storage = bounds.merge_bounds(bounds.box_bounds(region, context, info.name), accessed)
            stage_bnds = bounds.box_bounds(region, context, f"Func {info.name}")
            for k in reversed(range(len(info.stages))):
                stage_bnds = self._stage_bounds(info, k, stage_bnds, space, context, params, at_root,
                                                required if inlined else None)
            if info in self.outputs:
                info.region = info.stage_exact[0]   # the requested box and what its updates write
        for name, ip in list(self.image_params.items()) + list(self.const_buffers.items()):
            kind = "image" if name in self.image_params else "buffer"
            ip.boxes = self.input_boxes.get((kind, name), [])
            what = f"{'ImageParam' if kind == 'image' else 'Buffer'} {name}"
            for box in ip.boxes:
                space = isl.Set(f"[{', '.join(sorted(self.params))}] -> {{ I[{', '.join(f'd{d}' for d in range(len(box)))}] }}").get_space()
                bounds.check_extent(bounds.box_set(box, space, self.context()), what, self.ranges)

    def _stage_bounds(self, info, k, stage_bnds, space, context, params, at_root, required=None):
        """Set the boxes of stage k and record its accesses, given `stage_bnds`, the box its loops run
        over (the box required of it at the root). Returns the box required of the stage before.

        Where the stage computes more than required (its splits' tails at the root), or an inlined
        Func is evaluated beyond the box `required` of it, what it reads there is accessed, not
        required: its producers are not computed there (as in Halide)."""
        what = info.stage_name(k)
        info.stage_anchor[k] = stage_bnds
        computed, beyond = stage_bnds, None
        if at_root:
            self._note_steady(info, k, stage_bnds, context)
        if at_root and info not in self.outputs:
            computed = _grown(stage_bnds, self._computed(info, k, stage_bnds, space, context), context, what)
            beyond = stage_bnds
        elif required is not None:
            beyond = required
        stage_set = bounds.box_set(computed, space, context)
        bounds.check_extent(stage_set, what, self.ranges)
        info.stage_boxes[k] = bounds.box(bounds.box_bounds(stage_set, context, what), context, self.params, what)
        info.stage_exact[k] = stage_set
        if info.storage is not None:
            info.storage = bounds.merge_bounds(info.storage, bounds.box_bounds(stage_set, context, what))
        runs = [(None, None, False)]   # (box, exact set, only accessed): over the stage's box
        if beyond is not None:
            within = bounds.box_set(beyond, space, context)
            if not within.is_equal(stage_set):
                runs = [(None, None, True), (bounds.box(beyond, context, self.params, what), within, False)]
        for box, exact, only_accessed in runs:
            reads, writes = self._stage_accesses(info, k, params, box, exact)
            for key, reg in reads:
                if key == ("func", info.index):
                    writes.append(reg)
                else:
                    self._add_region(key, reg, only_accessed and key[0] == "func")
            for written in writes:
                # what an update writes, the stages before compute too (for an output, Halide's bounds
                # query grows the realized region likewise, and realize returns the requested part)
                if not only_accessed:
                    stage_bnds = bounds.merge_bounds(stage_bnds, written)
                if info.storage is not None:
                    info.storage = bounds.merge_bounds(info.storage, written)
        return stage_bnds

    def _stage_nest(self, info, k, bnds):
        """Halide's loop nest of stage k (see splits.py) over `S[pure dims..., RVars...]`, with the
        loops of its pure variables over the box `bnds` (per dimension (min, max) PwAffs): the
        relation to its loops with those bounds set, the nest, and the pure variables. (The last
        one built per stage is kept: the steady regime and the points computed ask for the same.)"""
        last = self._nests.get((info.index, k))
        if last is None or last[0] is not bnds:
            self._nests[(info.index, k)] = (bnds, self._build_stage_nest(info, k, bnds))
        return self._nests[(info.index, k)][1]

    def _build_stage_nest(self, info, k, bnds):
        pure, rvars = self.stage_vars(info, k)
        names = NameTable(set(self.params) | {f"d{dim}" for dim in range(info.ndim)})
        variables, values = [], []
        for h, dim in sorted(pure, key=lambda p: p[1]):
            lo, hi = names.fresh(f"d{dim}_min"), names.fresh(f"d{dim}_max")
            variables.append(Variable(h, f"d{dim}", False, lo, hi, None))
            values += [(lo, bnds[dim][0]), (hi, bnds[dim][1])]
        t = Translator(_BoundScope(self, {}, info, k), info.stage_name(k))
        for r in rvars:
            lo, ext = affine_text(t(r.min)), affine_text(t(r.extent))
            if lo is None or ext is None:
                raise NotSupportedError(f"{info.stage_name(k)}: the bounds of reduction variable {r.var} must be "
                                        f"affine in the sizes (constants, ImageParam extents or integer Params)")
            variables.append(Variable(r.var, names.fresh(r.var), True, lo, f"({lo}) + ({ext}) - 1",
                                      constant_value(ext, sorted(self.params))))
        nest = loop_nest(f"S{info.index}_{k}", variables, info.stages[k].stage_schedule,
                         sorted(self.params) + [v for v, _ in values], info.stage_name(k), k == 0, names.fresh)
        return bind_params(nest.relation, values), nest, sorted(pure, key=lambda p: p[1])

    def _computed(self, info, k, bnds, space, context):
        """The points stage k computes when its pure variables' loops run over the box `bnds` (per
        dimension (min, max) PwAffs): its splits' tails may reach outside the box (see splits.py).
        Dimensions an update writes at other indices than its pure variables keep the box."""
        box = bounds.box_set(bnds, space, context)
        d = info.stages[k]
        if d.stage_schedule is None or not d.stage_schedule.splits:
            return box
        relation, _, pure = self._stage_nest(info, k, bnds)
        reached = relation.domain()
        # back to the Func's dimensions: the pure ones as reached, the others over the box
        dims = [f"d{dim}" for dim in range(info.ndim)]
        stage_dims = [reached.get_dim_name(isl.dim_type.set, i) for i in range(reached.dim(isl.dim_type.set))]
        to_stage = isl.Map(f"{{ F{info.index}[{', '.join(dims)}] -> {reached.get_tuple_name()}[{', '.join(stage_dims)}] }}")
        out = to_stage.intersect_range(reached).domain()
        for _, dim in pure:
            box = box.project_out(isl.dim_type.set, dim, 1).insert_dims(isl.dim_type.set, dim, 1)
        return out.intersect(box.set_tuple_name(f"F{info.index}")).intersect_params(context).coalesce()

    def _note_steady(self, info, k, bnds, context):
        """Restrict the steady regime to sizes where each ShiftInwards split of a pure variable of
        stage k (its loops running over the box `bnds`) has at least its factor of points.

        Below that, the tile the split shifts back starts before the box (see _grown): a case of
        its own for every such split, which multiplies the cases isl generates code for, everywhere
        the region reaches. Code for the steady regime alone is simpler and faster to generate; the
        kernel uses general code for the other sizes (see HalideKernel)."""
        d = info.stages[k]
        if d.stage_schedule is None or not d.stage_schedule.splits:
            return
        _, nest, pure = self._stage_nest(info, k, bnds)
        dims = dict(pure)
        for old, factor, strategy in nest.tails:
            if strategy == "ShiftInwards" and old in dims:
                lo, hi = bnds[dims[old]]
                steady = _at_least(hi.sub(lo), factor - 1).intersect_params(context).coalesce()
                self.steady = steady if self.steady is None else self.steady.intersect(steady).coalesce()
                self.steady_loops.append((info, lo, hi, factor))

    def symbolic_steady(self):
        """The steady regime (see _note_steady) over the derived sizes where a loop's bounds have
        them: a convex set where the regime over the sizes is a union of cases (an output grown to a
        multiple of a split's factor only when its reduction domain is not empty)."""
        out = None
        for info, lo, hi, factor in self.steady_loops:
            (lo, hi), = self.symbolic_bounds(info, [(lo, hi)])
            steady = _at_least(hi.sub(lo), factor - 1)
            out = steady if out is None else out.intersect(steady)
        return out

    def _grown_output(self, info, region, space, context):
        """An output's region grown until its stages' splits compute nothing outside it.

        Halide's realize asks the pipeline for the region it will compute (a bounds query) and
        allocates that, so every stage's loops run over it; RoundUp may still reach outside the
        requested box."""
        what = f"Func {info.name}"
        for _ in range(8):
            bnds = bounds.box_bounds(region, context, what)
            reached = None
            for k in range(len(info.stages)):
                part = self._computed(info, k, bnds, space, context)
                reached = part if reached is None else reached.union(part)
            grown = bounds.box_set(_grown(bnds, reached, context, what), space, context)
            if grown.is_subset(region):
                return region
            region = grown
        raise NotSupportedError(f"{what}: the tails of its splits keep growing the region it computes")

    def _add_region(self, key, box, accessed_only=False):
        """Record that the box `box` of a Func or input is accessed (and, unless `accessed_only`, required).

        An input's boxes are kept apart: only the kernel needs their union, for the sizes of a call
        (HalideKernel checks each), and their union as PwAffs of the sizes is costly (each clamp of a
        boundary condition is two pieces, and a pipeline reads its input in many places)."""
        if key[0] in ("image", "buffer"):
            self.regions.setdefault(key, True)
            boxes = self.input_boxes.setdefault(key, [])
            if not any(_same_box(box, b) for b in boxes):
                boxes.append(box)
            return
        self.accessed[key] = bounds.merge_bounds(self.accessed.get(key), box)
        if not accessed_only:
            self.regions[key] = bounds.merge_bounds(self.regions.get(key), box)

    def _apply_bound_directives(self, info, region, params):
        """Func.bound(x, min, extent) fixes the realized region along x, as in Halide."""
        for b in info.schedule.bounds if info.schedule is not None else []:
            if b.var not in info.args:
                continue
            d = info.args.index(b.var)
            t = Translator(_BoundScope(self), f"Func {info.name} bound({b.var})")
            lo = affine_text(t(b.min)) if b.min is not None and b.min.kind != "UndefinedExpr" else None
            ext = affine_text(t(b.extent)) if b.extent is not None and b.extent.kind != "UndefinedExpr" else None
            if lo is None or ext is None:
                raise NotSupportedError(f"Func {info.name}: bound({b.var}) needs a min and an extent affine in "
                                        f"the sizes")
            dims = [f"d{i}" for i in range(info.ndim)]
            fixed = isl.Set(f"[{', '.join(params)}] -> {{ F{info.index}[{', '.join(dims)}] : "
                            f"{lo} <= d{d} < ({lo}) + ({ext}) }}")
            region = region.project_out(isl.dim_type.set, d, 1).insert_dims(isl.dim_type.set, d, 1) \
                .set_tuple_name(f"F{info.index}").intersect(fixed)
            if region.is_empty():
                raise DomainError(f"Func {info.name}: bound({b.var}) leaves nothing to compute")
        return region

    def stage_vars(self, info, k):
        """(pure vars as (Halide name, dimension), reduction vars as ReductionVariable nodes) of stage k."""
        d = info.stages[k]
        if k == 0:
            return [(a, i) for i, a in enumerate(info.args)], []
        pure = []
        for i, a in enumerate(d.args):
            if a.kind == "Variable" and a.name == info.args[i] and not (a.reduction_domain and
                                                                          a.reduction_domain.defined):
                pure.append((a.name, i))
        rvars = list(d.stage_schedule.rvars) if d.stage_schedule is not None else []
        return pure, rvars

    def _stage_accesses(self, info, k, params, box=None, exact=None):
        """The boxes (per dimension (min, max) PwAffs) read, keyed by Func or input, and written by
        stage k over its box (or over `box`, expressions, and `exact`, a set). Each index is bounded by
        interval arithmetic where that is exact (bounds.Intervals), else from its isl access relation."""
        context = self.context()
        pure, rvars = self.stage_vars(info, k)
        names = NameTable(self.params)
        var_names = {h: names.fresh(h) for h, _ in pure}
        var_names.update({r.var: names.fresh(r.var) for r in rvars})
        scope = _BoundScope(self, var_names, info, k)
        t = Translator(scope, info.stage_name(k))
        cons = []
        box = info.stage_boxes[k] if box is None else box
        exact = info.stage_exact[k] if exact is None else exact
        ranges = {}
        exact_box = bounds.box_bounds(exact, context, info.stage_name(k))
        for h, dim in pure:
            lo, hi = box[dim]
            cons.append(f"{affine_text(lo)} <= {var_names[h]} < {affine_text(hi)}")
            ranges[var_names[h]] = exact_box[dim]
        for r in rvars:
            lo, ext = affine_text(t(r.min)), affine_text(t(r.extent))
            if lo is None or ext is None:
                raise NotSupportedError(f"{info.stage_name(k)}: the bounds of reduction variable {r.var} must be "
                                        f"affine in the sizes (constants, ImageParam extents or integer Params)")
            cons.append(f"{lo} <= {var_names[r.var]} < ({lo}) + ({ext})")
            ranges[var_names[r.var]] = tuple(isl.PwAff(f"[{', '.join(params)}] -> {{ [({v})] }}")
                                             for v in (lo, f"({lo}) + ({ext}) - 1"))
        d = info.stages[k]
        exprs = [t(v) for v in d.values]
        pred = _predicate(d)
        constrained = False
        if pred is not None:
            p = t(pred)
            exprs.append(p)
            pred_cons = [c for c in (constraint_text(c) for c in _conjuncts(p)) if c is not None]
            cons += pred_cons
            constrained = bool(pred_cons)
        args = [t(a) for a in d.args] if k else []
        dims = [var_names[h] for h, _ in pure] + [var_names[r.var] for r in rvars]
        stage = f"S{info.index}_{k}"
        intervals = None if constrained else bounds.Intervals(params, ranges, self.runtime_range)
        domain = []

        def region(indices, tup):
            found = [intervals.bounds(i) for i in indices] if intervals is not None else [None]
            if None not in found:
                return found
            if not domain:   # the stage's instances, built once for the accesses that need isl
                dom = isl.Set(f"[{', '.join(params)}] -> {{ {stage}[{', '.join(dims)}]"
                              + (f" : {' and '.join(f'({c})' for c in cons)}" if cons else "") + " }")
                domain.append(bounds.restrict_to_box(dom, exact, {i: dim for i, (_, dim) in enumerate(pure)}))
            reg = bounds.access_region(domain[0], params, stage, dims, indices, tup, self.runtime_range)
            return bounds.box_bounds(reg, context, info.stage_name(k))

        reads = []
        for e in exprs + args:
            for n in E.walk(e):
                if isinstance(n, E.Access) and isinstance(n.target, _Ref) and n.target.key[0] != "scalar":
                    kind, key = n.target.key
                    tup = {"func": lambda: f"F{key}", "image": lambda: f"I_{self.image_params[key].ms_name}",
                           "buffer": lambda: f"B_{self.const_buffers[key].ms_name}"}[kind]()
                    reads.append(((kind, key), region(n.indices, tup)))
        writes = [region(args, f"F{info.index}")] if k else []
        return reads, writes

    # pass 2: the ms.Function -------------------------------------------------------------------
    def declare_inputs(self):
        """Declare the used ImageParams, scalar Params and constant Buffers as ms.Inputs, and the
        Params that are sizes with their types' ranges."""
        for sp in self.scalar_params.values():
            if sp.size is not None:
                self.function.declare_param(sp.size, *self.ranges[sp.ms_name])
        for name in [n for n, _ in self.bound_sizes] + [b[0] for b in self.runtime_bounds]:
            self.function.declare_param(self.params[name], *self.ranges[name])
        for name, value in self.bound_sizes:     # (the kernel computes each from the sizes before it)
            self.function.known_size(name, value)
        for name, ip in self.image_params.items():
            if ("image", name) in self.regions or ("image", name) in self.used_inputs:
                ip.input = Input(ip.ms_name, list(reversed(ip.extent_params)), ip.dtype)
        for name, sp in self.scalar_params.items():
            if ("scalar", name) in self.used_inputs:
                sp.input = Input(sp.ms_name, [1], sp.dtype)
        for name, cb in self.const_buffers.items():
            if ("buffer", name) in self.regions or ("buffer", name) in self.used_inputs:
                cb.input = Input(cb.ms_name, list(cb.array.shape), cb.dtype)

    def declare_computations(self):
        """One computation per stage and Tuple element, producers first."""
        for info in reversed(self.order):
            if info.region is None:
                continue
            info.ms_names = [self.names.fresh(info.name if len(info.dtypes) == 1 else f"{info.name}_{v}")
                             for v in range(len(info.dtypes))]
            info.out_buffers = list(info.ms_names)   # (an output's buffers, as the kernel names them)
            info.comps = []
            info.stage_vars = []
            for k in range(len(info.stages)):
                info.comps.append(self._declare_stage(info, k))
            self._declare_storage(info)
            if self.output_mins.get(info.index):
                self._declare_offset_output(info)
        # the program's own order runs together, iteration by iteration, the elements of a Tuple update
        # that read one another
        fused = [("after", info.comps[k][b], info.comps[k][a], len(info.comps[k][a].vars))
                 for info in self.order if info.region is not None
                 for k, order in info.element_orders.items() for a, b in zip(order, order[1:])]
        if fused:
            self.function.original_ordering = fused

    def _declare_offset_output(self, info):
        """An output realized over a region that does not start at 0 (output_mins): its buffer holds
        that region from its min (the middle-end indexes an output from 0 otherwise)."""
        context = self.context()
        box = bounds.box(bounds.box_bounds(info.region, context, f"Func {info.name}"), context, self.params,
                         f"Func {info.name}")
        var_of = {dim: info.stage_vars[0][h] for h, dim in self.stage_vars(info, 0)[0]}
        shape = [E.simplify(box[d][1] - box[d][0]) for d in reversed(range(info.ndim))]
        index = [E.cast(int64, var_of[d]) - box[d][0] for d in reversed(range(info.ndim))]
        info.out_buffers = []
        for owner in info.comps[0]:
            info.out_buffers.append(self.names.fresh(f"{owner.name}_region"))
            owner.store_in(Buffer(info.out_buffers[-1], shape, owner.dtype, "output"), index)

    def _declare_storage(self, info):
        """A buffer over the Func's storage box when it exceeds what its stages write: a consumer that
        computes more than required (RoundUp) reads there values nobody computes, as in Halide."""
        if info.storage is None:
            return
        context = self.context()
        space = info.stage_exact[0].get_space()
        written = None
        for exact in info.stage_exact:
            written = exact if written is None else written.union(exact)
        storage = bounds.box_set(info.storage, space, context)
        if storage.is_subset(written):
            return
        box = bounds.box(info.storage, context, self.params, f"Func {info.name}")
        var_of = {dim: info.stage_vars[0][h] for h, dim in self.stage_vars(info, 0)[0]}
        # mascarpone's order: Halide's dimension 0 last
        shape = [box[d][1] - box[d][0] for d in reversed(range(info.ndim))]
        index = [E.cast(int64, var_of[d]) - box[d][0] for d in reversed(range(info.ndim))]
        for owner in info.comps[0]:
            owner.store_in(Buffer(self.names.fresh(f"{owner.name}_storage"), shape, owner.dtype, "temporary"), index)

    def symbolic_bounds(self, info, bnds):
        """`bnds` (per dimension (min, max) PwAffs of the sizes) with each piecewise bound replaced by
        a derived size of the Function, computed on entry (Function.derived_size), as Halide names a
        Func's bounds. A Func at the root whose box is the max of two consumers' needs, has a
        boundary condition's cases or a division (a downsampled image), then gets domains and
        schedules in one piece: a split of its loop shifted back from the derived max is
        `min(8*o, max - min - 7)`, not a case per piece."""
        if placement(self, info) == "inline":
            return bnds
        context = self.context()
        out = []
        for d, pair in enumerate(bnds):
            sides = []
            for side, pa in zip(("min", "max"), pair):
                pa = pa.gist(context).coalesce()
                if pa.n_piece() > 1 or any(aff.dim(isl.dim_type.div) for _, aff in pa.get_pieces()):
                    pa = self._derived_size(pa, f"{info.ms_names[0]}_{side}_{d}", context)
                sides.append(pa)
            out.append(tuple(sides))
        return out

    def _derived_size(self, pa, name, context):
        """The PwAff of the derived size equal to `pa` on the context, made on first use (bounds
        written apart may be the same function in pieces of other shapes)."""
        key = str(pa)
        if key not in self.derived:
            on = pa.intersect_params(context)
            probe = bounds.probe_values(pa, self.ranges)
            same = next((sym for value, sym, value_probe in self.derived.values()
                         if value_probe == probe and value.intersect_params(context).is_equal(on)), None)
            if same is None:
                name = self.names.fresh(name)
                self.derived_params[name] = self.function.derived_size(name, pa)
                same = isl.PwAff(f"[{name}] -> {{ [({name})] }}")
            self.derived[key] = (pa, same, probe)
        return self.derived[key][1]

    def loop_namer(self, info, taken=()):
        """The function naming the loops and variables of `info`'s stages. A Func computed per tile
        runs inside its consumer's loops, and the middle-end names a tile's loops after the
        consumer's: its own are named after it (`blur_x_y`), unique in the translation; the others keep
        Halide's names (unique within the computation)."""
        if placement(self, info) == "tile":
            base = sanitize(info.name)
            return lambda name: self.names.fresh(f"{base}_{name}")
        return NameTable(set(taken) | set(self.params) | set(self.names.taken)).fresh

    def _declare_stage(self, info, k):
        pure, rvars = self.stage_vars(info, k)
        fresh = self.loop_namer(info)
        ms_vars = {}
        box, exact = info.stage_boxes[k], info.stage_exact[k]
        context = self.context()
        symbolic = self.symbolic_bounds(info, bounds.box_bounds(exact, context, info.stage_name(k)))
        if self.derived_params:
            exact = bounds.box_set(symbolic, exact.get_space())
            box = bounds.box(symbolic, context, {**self.params, **self.derived_params}, info.stage_name(k))
        for h, dim in pure:
            lo, hi = box[dim]
            ms_vars[h] = Var(fresh(h), lo, hi)
        scope = _FinalScope(self, ms_vars, info, k)
        t = Translator(scope, info.stage_name(k))
        for r in rvars:
            lo, ext = t(r.min), t(r.extent)
            ms_vars[r.var] = Var(fresh(r.var), lo, lo + ext)
        d = info.stages[k]
        values = [t(v) for v in d.values]
        pred = _predicate(d)
        where = t(pred) if pred is not None else None
        # default Halide loop order, innermost first: reduction variables, then pure ones
        inner_first = [ms_vars[r.var] for r in rvars] + [ms_vars[h] for h, _ in pure]
        var_list = list(reversed(inner_first))
        info.stage_vars.append(ms_vars)
        comps = []
        is_output = info in self.outputs
        for v, value in enumerate(values):
            if value.dtype != info.dtypes[v]:
                value = E.cast(info.dtypes[v], value)
            if k == 0:
                comps.append(Computation(info.ms_names[v], var_list, value, info.dtypes[v],
                                         output=True if is_output else None))
            else:
                # Funcs read by the indices an update writes at are substituted there (the middle-end
                # lowers reads in values, not in store indices)
                inline_t = Translator(_InlineScope(self, ms_vars, info, k), info.stage_name(k))
                at = list(reversed([self.within_range(inline_t(a)) for a in d.args]))
                owner = info.comps[0][v]
                comps.append(owner.update(var_list, value, at, where=where,
                                          name=self.names.fresh(f"{info.ms_names[v]}_s{k}")))
        if k > 0 and len(comps) > 1 and any(_element_reads(info, values)):
            info.element_orders[k] = _readers_first(info, k, values, at)
        # the variables' bounds above may be loose (max of pieces); the box isl computed is exact
        positions = {next(i for i, v in enumerate(var_list) if v is ms_vars[h]): dim for h, dim in pure}
        for comp in comps:
            comp.domain = bounds.restrict_to_box(comp.domain, exact, positions).gist_params(context).coalesce()
        return comps


def _element_reads(info, values, at=None) -> list:
    """Per element of a Tuple update, the other elements its value reads: anywhere, or with `at` (the
    indices the update writes) only those read where some index may be the written one."""
    def counted(n):
        return at is None or not any(_nonzero_constant(i - w) for i, w in zip(n.indices, at))
    owners = info.comps[0]
    return [{w for n in E.walk(value) if isinstance(n, E.Access) and counted(n)
             for w, owner in enumerate(owners) if n.target is owner and w != v} for v, value in enumerate(values)]


def _nonzero_constant(e) -> bool:
    """Whether the affine integer expression `e` is the same nonzero number for every value of its symbols."""
    text = affine_text(e)
    if text is None:
        return False
    names = sorted({n.name for n in E.walk(e) if isinstance(n, E.Sym)})
    pa = isl.PwAff(f"[{', '.join(names)}] -> {{ [({text})] }}")
    return pa.is_cst() and not pa.get_pieces()[0][1].get_constant_val().is_zero()


def _readers_first(info, k, values, at):
    """The order in which the elements of a Tuple update run in each iteration. Halide loads everything
    before it stores any element, so an element that reads another at the point the iteration writes
    (argmax's index reads the maximum) runs before that one; reads elsewhere (at r - 1) see the same
    value either way. Elements that read each other at that point would need copies: refused."""
    reads = _element_reads(info, values, at)
    order = []
    while len(order) < len(values):
        # next, an element that no element still to run reads
        ready = [v for v in range(len(values)) if v not in order
                 and not any(v in reads[u] for u in range(len(values)) if u not in order)]
        if not ready:
            left = [v for v in range(len(values)) if v not in order]
            raise NotSupportedError(f"{info.stage_name(k)}: elements {left} of its Tuple update read each other at "
                                    f"the point it writes (each must see the others' values from before it): not "
                                    f"supported")
        order.append(ready[0])
    return order


def _grown(box, reached, context, what):
    """Per dimension, the (min, max) PwAffs of the box `box` grown upward to cover `reached` (what a
    stage computes when its loops run over `box`: RoundUp runs to a multiple of its factor).

    Not downward: a ShiftInwards split of fewer points than its factor shifts its one tile below
    the box in Halide, which grows the region down by max(0, f - e). Exactly, that is a union of
    boxes for each case of the sizes, and such unions multiply through a pipeline until isl can no
    longer handle the sets (a two-level pyramid no longer lowers). The tile's points below the box
    are not computed here: the same values, with a partial vector in that case only."""
    out = []
    for (lo, hi), (_, rhi) in zip(box, bounds.box_bounds(reached, context, what)):
        out.append((lo, _larger(hi, rhi, context)))
    return out


def _same_box(a, b):
    return all(x.is_equal(y) for pa, pb in zip(a, b) for x, y in zip(pa, pb))


def _finite(val):
    """An isl Val as a Python int, or None when it is infinite."""
    return val.to_python() if val.is_int() else None


def _at_least(pa, value):
    """The sizes where the PwAff `pa` is at least the integer `value`."""
    return pa.ge_set(isl.PwAff.from_aff(isl.Aff.zero_on_domain(isl.LocalSpace.from_space(pa.get_domain_space()))
                                        .set_constant_val(isl.Val(value))))


def _larger(a, b, context):
    """The max of two PwAffs of the sizes, as one of them when it is always the larger (isl's max
    of equal functions is piecewise, and pieces multiply in the sets built on it)."""
    a, b = a.intersect_params(context).coalesce(), b.intersect_params(context).coalesce()
    if b.le_set(a).is_equal(a.domain()):
        return a
    if a.le_set(b).is_equal(b.domain()):
        return b
    return a.max(b).coalesce()


def _predicate(definition):
    p = definition.predicate
    if p is None or p.kind == "UndefinedExpr":
        return None
    if p.kind in ("UIntImm", "IntImm") and p.value == 1:
        return None
    return p


def _conjuncts(e):
    if isinstance(e, E.BinOp) and e.op == "and":
        return _conjuncts(e.a) + _conjuncts(e.b)
    return [e]


class _BoundScope:
    """Names during bounds inference: variables are plain symbols, accesses point at region keys."""

    def __init__(self, tr, var_names=None, info=None, k=0):
        self.tr, self.var_names, self.info, self.k = tr, ({} if var_names is None else var_names), info, k

    def var(self, name, dtype):
        if name not in self.var_names:
            raise NotSupportedError(f"{self.info.stage_name(self.k) if self.info else 'a bound'} uses the variable "
                                    f"{name}, which is not one of its arguments or reduction variables")
        return E.Sym(self.var_names[name], dtype)

    def param(self, node, dtype):
        return self.tr.param_value(node, dtype, final=False)

    def func_call(self, node, args):
        target = self.tr.funcs[node.func_index]
        return E.Access(_Ref(("func", target.index), target.dtypes[node.value_index]), args)

    def image_call(self, node, args):
        if node.param_name in self.tr.image_params:
            ip = self.tr.image_params[node.param_name]
            return E.Access(_Ref(("image", ip.name), ip.dtype), args)
        if node.image_name in self.tr.const_buffers:
            cb = self.tr.const_buffers[node.image_name]
            self.tr.used_inputs.add(("buffer", cb.name))
            return E.Access(_Ref(("buffer", cb.name), cb.dtype), args)
        raise HalideFormatError(f"an image access names {node.name!r}, which is neither an ImageParam nor a "
                                f"Buffer of the pipeline")


class _FinalScope(_BoundScope):
    """Names when declaring computations: Vars of the stage, accesses to computations and inputs."""

    def var(self, name, dtype):
        if name not in self.var_names:
            raise NotSupportedError(f"{self.info.stage_name(self.k)} uses the variable {name}, which is not one "
                                    f"of its arguments or reduction variables")
        v = self.var_names[name]
        return v if v.dtype == dtype else E.cast(dtype, v)

    def param(self, node, dtype):
        return self.tr.param_value(node, dtype, final=True)

    def func_call(self, node, args):
        target = self.tr.funcs[node.func_index]
        return target.comps[0][node.value_index][tuple(reversed([self.tr.within_range(a) for a in args]))]

    def image_call(self, node, args):
        if node.param_name in self.tr.image_params:
            return self.tr.image_params[node.param_name].input[tuple(reversed(args))]
        cb = self.tr.const_buffers[node.image_name]
        idx = [a - E.lift(m, a.dtype) if m else a for a, m in zip(args, cb.mins)]
        return cb.input[tuple(reversed(idx))]


class _InlineScope(_FinalScope):
    """Like _FinalScope, but calls to Funcs are replaced by the Funcs' definitions (with bound arguments)."""

    def func_call(self, node, args):
        target = self.tr.funcs[node.func_index]
        if len(target.stages) != 1:
            raise NotSupportedError(f"{self.info.stage_name(self.k)} writes at an index computed from Func "
                                    f"{target.name}, which has update definitions; this is not supported")
        bound = {a: (v if v.dtype == int32 else E.cast(int32, v)) for a, v in zip(target.args, args)}
        inner = _InlineScope(self.tr, bound, target, 0)
        return Translator(inner, target.stage_name(0))(target.stages[0].values[node.value_index])

