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

import middleend.expr as E
from middleend.affine import affine_text, constraint_text
from middleend.algorithm import Computation, Input, Param, Var
from middleend.buffer import as_index_expr
from middleend.errors import DomainError, NotSupportedError
from middleend.types import int32

from . import bounds
from .errors import HalideFormatError
from .exprs import Translator, dtype_of
from .names import NameTable
from .pipeline import FuncInfo, build_call_graph, check_supported, consumers_first


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
        self.region = None


class ScalarParamInfo:
    """A scalar Param, passed to the kernel as a one-element array."""

    def __init__(self, name, ms_name, dtype):
        self.name, self.ms_name, self.dtype = name, ms_name, dtype
        self.input = None


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
        needed = 1 + sum((e - 1) * s for e, s in zip(extents, strides) if e > 0)
        if any(s < 0 for s in strides) or raw.size < needed:
            raise HalideFormatError(f"Buffer {node.name}: its data ({raw.size} elements) does not cover its "
                                    f"extents {extents} with strides {strides}")
        view = np.lib.stride_tricks.as_strided(raw, shape=extents[::-1], strides=[s * item for s in strides[::-1]])
        self.array = np.ascontiguousarray(view).astype(self.dtype.numpy)
        self.extents = extents
        self.input = None
        self.region = None


class PipelineTranslation:
    """Everything the translation learned: Funcs, inputs, output parameters, the ms.Function."""

    def __init__(self, pipe):
        self.pipe = pipe
        self.funcs = [FuncInfo(i, f) for i, f in enumerate(pipe.funcs)]
        by_name = {f.name: f for f in self.funcs}
        missing = [n for n in pipe.output_names if n not in by_name]
        if missing or not pipe.output_names:
            raise HalideFormatError(f"the pipeline's outputs {pipe.output_names} are not among its Funcs")
        self.outputs = [by_name[n] for n in pipe.output_names]
        self.names = NameTable()
        self.image_params, self.scalar_params, self.const_buffers = {}, {}, {}
        self.used_inputs = set()
        build_call_graph(self.funcs)
        self.order = consumers_first(self.funcs, self.outputs)
        for info in self.order:
            check_supported(info)
        self._declare_params()

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

    def context(self):
        names = sorted(self.params)
        cons = " and ".join(f"{n} >= 1" for n in names) or "true"
        return isl.Set(f"[{', '.join(names)}] -> {{ : {cons} }}")

    # the pieces of expressions both passes share ----------------------------------------
    def param_value(self, node, dtype, final):
        """A Variable that names a parameter: a scalar Param, or an ImageParam's min/extent/stride."""
        if node.name in self.scalar_params and node.param_name == node.name:
            sp = self.scalar_params[node.name]
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
        """
        context = self.context()
        params = sorted(self.params)
        self.regions = {}
        for o in self.outputs:
            out_box = " and ".join(f"0 <= d{d} < {p.name}" for d, p in enumerate(self.out_params[o.index]))
            reg = isl.Set(f"[{', '.join(params)}] -> {{ F{o.index}[{', '.join(f'd{d}' for d in range(o.ndim))}] : "
                          f"{out_box} }}")
            self._add_region(("func", o.index), reg, context, f"Func {o.name}")
        for info in self.order:
            bnds = self.regions.get(("func", info.index))
            if bnds is None:
                continue
            space = isl.Set(f"[{', '.join(params)}] -> {{ F{info.index}[{', '.join(f'd{d}' for d in range(info.ndim))}] }}").get_space()
            region = bounds.box_set(bnds, space)
            region = self._apply_bound_directives(info, region, params).intersect_params(context).coalesce()
            info.region = region
            info.stage_boxes = [None] * len(info.stages)
            info.stage_exact = [None] * len(info.stages)
            info.update_writes = []
            stage_bnds = bounds.box_bounds(region, context, f"Func {info.name}")
            for k in reversed(range(len(info.stages))):
                what = info.stage_name(k)
                stage_set = bounds.box_set(stage_bnds, space).intersect_params(context)
                bounds.check_extent(stage_set, what)
                info.stage_boxes[k] = bounds.box(stage_bnds, context, self.params, what)
                info.stage_exact[k] = stage_set
                reads, writes = self._stage_accesses(info, k, params)
                for key, reg in reads:
                    if key == ("func", info.index):
                        writes.append(reg)
                    else:
                        self._add_region(key, reg, context, what)
                for reg in writes:
                    if info in self.outputs:
                        # an output is realized over the requested box only (its buffer is the caller's);
                        # an update that writes outside it is refused at realize time (see HalideKernel),
                        # where Halide 21 would grow the realized region and return the requested part
                        info.update_writes.append((reg, what))
                    else:
                        stage_bnds = bounds.merge_bounds(stage_bnds, bounds.box_bounds(reg, context, what))
        for name, ip in list(self.image_params.items()) + list(self.const_buffers.items()):
            kind = "image" if name in self.image_params else "buffer"
            bnds = self.regions.get((kind, name))
            if bnds is None:
                continue
            tup = f"I_{ip.ms_name}" if kind == "image" else f"B_{ip.ms_name}"
            ndim = len(bnds)
            space = isl.Set(f"[{', '.join(params)}] -> {{ {tup}[{', '.join(f'd{d}' for d in range(ndim))}] }}").get_space()
            ip.region = bounds.box_set(bnds, space).intersect_params(context)
            bounds.check_extent(ip.region, f"{'ImageParam' if kind == 'image' else 'Buffer'} {name}")

    def _add_region(self, key, reg, context, what):
        self.regions[key] = bounds.merge_bounds(self.regions.get(key), bounds.box_bounds(reg, context, what))

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

    def _stage_accesses(self, info, k, params):
        """Regions read (keyed by Func or input) and written by stage k over its box."""
        pure, rvars = self.stage_vars(info, k)
        names = NameTable(self.params)
        var_names = {h: names.fresh(h) for h, _ in pure}
        var_names.update({r.var: names.fresh(r.var) for r in rvars})
        scope = _BoundScope(self, var_names, info, k)
        t = Translator(scope, info.stage_name(k))
        cons = []
        box = info.stage_boxes[k]
        for h, dim in pure:
            lo, hi = box[dim]
            cons.append(f"{affine_text(lo)} <= {var_names[h]} < {affine_text(hi)}")
        for r in rvars:
            lo, ext = affine_text(t(r.min)), affine_text(t(r.extent))
            if lo is None or ext is None:
                raise NotSupportedError(f"{info.stage_name(k)}: the bounds of reduction variable {r.var} must be "
                                        f"affine in the image sizes (constants or ImageParam extents)")
            cons.append(f"{lo} <= {var_names[r.var]} < ({lo}) + ({ext})")
        d = info.stages[k]
        exprs = [t(v) for v in d.values]
        pred = _predicate(d)
        if pred is not None:
            p = t(pred)
            exprs.append(p)
            cons += [c for c in (constraint_text(c) for c in _conjuncts(p)) if c is not None]
        args = [t(a) for a in d.args] if k else []
        dims = [var_names[h] for h, _ in pure] + [var_names[r.var] for r in rvars]
        stage = f"S{info.index}_{k}"
        dom = isl.Set(f"[{', '.join(params)}] -> {{ {stage}[{', '.join(dims)}]"
                      + (f" : {' and '.join(f'({c})' for c in cons)}" if cons else "") + " }")
        dom = bounds.restrict_to_box(dom, info.stage_exact[k], {i: dim for i, (_, dim) in enumerate(pure)})
        reads = []
        for e in exprs + args:
            for n in E.walk(e):
                if isinstance(n, E.Access) and isinstance(n.target, _Ref) and n.target.key[0] != "scalar":
                    kind, key = n.target.key
                    tup = {"func": lambda: f"F{key}", "image": lambda: f"I_{self.image_params[key].ms_name}",
                           "buffer": lambda: f"B_{self.const_buffers[key].ms_name}"}[kind]()
                    reads.append(((kind, key), bounds.access_region(dom, params, stage, dims, n.indices, tup)))
        writes = [bounds.access_region(dom, params, stage, dims, args, f"F{info.index}")] if k else []
        return reads, writes

    # pass 2: the ms.Function -------------------------------------------------------------------
    def declare_inputs(self):
        """Declare the used ImageParams, scalar Params and constant Buffers as ms.Inputs."""
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
            info.comps = []
            info.stage_vars = []
            for k in range(len(info.stages)):
                info.comps.append(self._declare_stage(info, k))

    def _declare_stage(self, info, k):
        pure, rvars = self.stage_vars(info, k)
        names = NameTable(set(self.params) | set(self.names.taken))
        ms_vars = {}
        box = info.stage_boxes[k]
        for h, dim in pure:
            lo, hi = box[dim]
            ms_vars[h] = Var(names.fresh(h), lo, hi)
        scope = _FinalScope(self, ms_vars, info, k)
        t = Translator(scope, info.stage_name(k))
        for r in rvars:
            lo, ext = t(r.min), t(r.extent)
            ms_vars[r.var] = Var(names.fresh(r.var), lo, lo + ext)
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
                self._check_tuple_update(info, k, v, value)
                # Funcs read by the indices an update writes at are substituted there (the middle-end
                # lowers reads in values, not in store indices)
                inline_t = Translator(_InlineScope(self, ms_vars, info, k), info.stage_name(k))
                at = list(reversed([inline_t(a) for a in d.args]))
                owner = info.comps[0][v]
                comps.append(owner.update(var_list, value, at, where=where,
                                          name=self.names.fresh(f"{info.ms_names[v]}_s{k}")))
        # the variables' bounds above may be loose (max of pieces); the box isl computed is exact
        positions = {next(i for i, v in enumerate(var_list) if v is ms_vars[h]): dim for h, dim in pure}
        for comp in comps:
            comp.domain = bounds.restrict_to_box(comp.domain, info.stage_exact[k], positions).coalesce()
            if k and is_output:
                comp.domain = self._writes_in_output(info, comp)
        return comps

    def _writes_in_output(self, info, update):
        """The update's instances that write inside the output's box. realize refuses sizes for which
        others exist; restricting the domain too keeps the output buffer the requested size."""
        texts = [affine_text(as_index_expr(a)) for a in update.update_at]
        if any(t is None for t in texts):
            return update.domain   # a data-dependent scatter: only realize's check applies
        extents = list(reversed(self.out_params[info.index]))
        idx = [f"i{d}" for d in range(len(texts))]
        params = sorted(self.params)
        inside = isl.Map(f"[{', '.join(params)}] -> {{ {update.name}[{', '.join(v.name for v in update.vars)}] -> "
                         f"W[{', '.join(idx)}] : {' and '.join(f'{t} = {i}' for t, i in zip(texts, idx))} and "
                         f"{' and '.join(f'0 <= {i} < {p.name}' for i, p in zip(idx, extents))} }}").domain()
        return update.domain.intersect(inside).coalesce()

    def _check_tuple_update(self, info, k, v, value):
        if len(info.dtypes) == 1:
            return
        for n in E.walk(value):
            if isinstance(n, E.Access) and n.target in info.comps[0] and n.target is not info.comps[0][v]:
                raise NotSupportedError(f"{info.stage_name(k)}: element {v} of its Tuple update reads another "
                                        f"element of the same Tuple; such updates are not supported")


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
        return target.comps[0][node.value_index][tuple(reversed(args))]

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

