"""Halide schedules to mascarpone scheduling commands.

Per stage: Halide's loop nest (splits with their tail strategies, renames, fuses,
then the loop order of the serialized `dims`; see splits.py) becomes the
computation's schedule through `set_schedule`, then the loop types become tags.
Splits are anchored at their loop's min, as in Halide (an RDom from 1, a Func
computed from -1): a pure variable's bounds are parameters of the schedule, set
to the region the stage computes at the root and to each tile's box when the Func
is computed at a consumer's loop.

ShiftInwards sends the points of the shifted last tile to two times. The map is
not single-valued but stays injective, which is all set_schedule asks: the
middle-end runs an instance at each of its times; the dependences of the original
program are checked against every time of each instance, and a recomputed pure
value reads and writes the same as the first time, so a producer is still before
its consumers. A statement whose instances run twice and inside whose loops tiles
are computed gets one instance per time (middleend.statements.per_time), since
the tile it reads depends on the time. Code generation writes the shifted point
as `min(f*o, e - f) + i` (middleend.codegen._min_max_expr): contiguous in the
vector lane, so every vector is full when the loop has at least `f` points.

Bounds inference (builder.infer_bounds) grows a root stage's region up to what
RoundUp computes; what that stage reads there is accessed but not required, as in
Halide: inputs must cover it, producers computed at the root are computed over the
required region only (their buffers cover the rest), producers computed per tile
over all of it. An output is realized over its grown region (`realize` returns
the requested part, as Halide's does). A ShiftInwards split of fewer points than
its factor computes only its tile's points inside the region (Halide's tile starts
before it; same values, see builder._grown); the code for sizes where every root
ShiftInwards loop has at least its factor of points is generated apart
(builder._note_steady, HalideKernel). A Func computed at a consumer's loop runs,
per tile, the points of its region its loops reach (Halide's could reach outside
it at the image's edge: same values, fewer evaluations). In such a Func and in
the consumer whose loops hold its tiles, ShiftInwards guards the last tile instead
(see apply_loop_schedules). Piecewise bounds of a Func become derived sizes
(builder.symbolic_bounds), so its loops stay in one piece.

Per Func: inline / root / compute_at, storage folding and compute_with.
"""
from __future__ import annotations

import warnings

from mascarpone.middleend.affine import affine_text
from mascarpone.middleend.errors import NotSupportedError, ScheduleError

from .names import NameTable
from .schema import FOR_TYPES
from .splits import Variable, constant_value, loop_nest

_TAGS = {"Parallel": "parallel", "Vectorized": "vector", "Unrolled": "unroll", "GPUBlock": "gpu_block",
         "GPUThread": "gpu_thread", "GPULane": "gpu_thread"}


def _int_value(node, what):
    if node is not None and node.kind in ("IntImm", "UIntImm"):
        return node.value
    raise NotSupportedError(f"{what} must be an integer constant")


def _loop_range(comp, loop, context):
    """(min, max) of a loop of `comp` over its domain as Python ints, or None when they depend on sizes."""
    rng = comp.loop_map.intersect_domain(comp.domain).range().intersect_params(context)
    k = comp.loops.index(loop)
    out = []
    for pa in (rng.dim_min(k), rng.dim_max(k)):
        pa = pa.gist(context)
        pieces = pa.get_pieces()
        if len(pieces) != 1 or not pieces[0][1].is_cst():
            return None
        out.append(pieces[0][1].get_constant_val().to_python())
    return tuple(out)


def placement(tr, info):
    """Where the Func is computed: "root" (its loops run once over its whole region: an output,
    compute_root, an unscheduled Func with updates, or a compute_at Func whose updates scan along
    reduction variables), "tile" (inside a consumer's loop) or "inline"."""
    level = info.schedule.compute_level if info.schedule is not None else None
    if info in tr.outputs:
        return "root"
    if level is None or (not level.func_name and level.var_name in ("", "__inlined")):
        return "root" if len(info.stages) > 1 else "inline"
    if level.var_name in ("__root", "__outermost") or _scans(tr, info):
        return "root"
    return "tile"


def _scans(tr, info):
    """The updates that write at reduction variables (fewer pure variables than dimensions)."""
    return [info.stage_name(j) for j in range(1, len(info.stages)) if len(tr.stage_vars(info, j)[0]) < info.ndim]


def _constant_extent(lo, hi):
    """hi - lo + 1 when it is one constant (PwAffs of the sizes), else None."""
    pieces = hi.sub(lo).get_pieces()
    if len(pieces) == 1 and pieces[0][1].is_cst():
        return pieces[0][1].get_constant_val().to_python() + 1
    return None


class StageScheduler:
    """Applies one stage's loop schedule to one computation (each Tuple element gets the same)."""

    def __init__(self, tr, info, k, comp, context, pure, per_tile, guarded=False):
        self.tr, self.info, self.k, self.comp = tr, info, k, comp
        self.where = info.stage_name(k)
        self.context = context
        self.params = sorted(tr.params)
        self.pure = pure                  # Halide dimension of each pure variable, by Halide name
        self.per_tile = per_tile
        self.guarded = guarded            # ShiftInwards splits guarded instead (see apply_loop_schedules)
        self.names = NameTable(set(tr.params) | set(tr.derived_params) | set(comp.loops))

    def _variables(self):
        """The computation's variables for loop_nest, and {variable: (lo, hi) parameter names}."""
        halide_of = {v.name: h for h, v in self.info.stage_vars[self.k].items()}
        out, bounds = [], {}
        for v in self.comp.vars:
            h = halide_of[v.name]
            if h in self.pure:
                lo, hi = self.names.fresh(f"{v.name}_min"), self.names.fresh(f"{v.name}_max")
                extent = None if self.per_tile else _constant_extent(*self.info.stage_anchor[self.k][self.pure[h]])
                out.append(Variable(h, v.name, False, lo, hi, extent))
                bounds[v.name] = (lo, hi)
            else:
                lo, hi = (affine_of(b, self.where) for b in (v.lo, v.hi))
                out.append(Variable(h, v.name, True, lo, f"({hi}) - 1", constant_value(f"({hi}) - ({lo})",
                                                                                       self.params)))
        return out, bounds

    def apply(self):
        """Schedule the computation; returns {Halide loop name: mascarpone loop name}."""
        sched = self.info.stages[self.k].stage_schedule
        if sched is None or not (sched.splits or sched.dims):
            return {h: v.name for h, v in self.info.stage_vars[self.k].items()}
        variables, bounds = self._variables()
        box_params = [p for pair in bounds.values() for p in pair]
        nest = loop_nest(self.comp.name, variables, sched, self.params + box_params, self.where,
                         self.k == 0, self.names.fresh, self.guarded)
        halide_of = {v.name: h for h, v in self.info.stage_vars[self.k].items()}
        anchor = self.tr.symbolic_bounds(self.info, self.info.stage_anchor[self.k])
        root = {name: anchor[self.pure[halide_of[name]]] for name in bounds}
        try:
            self.comp.set_schedule(nest.relation, names=[lp.ident for lp in nest.loops], bounds=bounds,
                                   root_bounds=root)
        except ScheduleError as err:
            raise NotSupportedError(f"{self.where}: its loop nest {[lp.halide for lp in nest.loops]} "
                                    f"({err})") from None
        self.loops = {lp.halide: lp for lp in nest.loops}
        self._tags([d for d in sched.dims if d.var != "__outermost"])
        return {h: lp.ident for h, lp in self.loops.items()}

    def _tags(self, dims):
        blocks, threads = [], []
        for d in dims:
            kind = FOR_TYPES[d.for_type] if 0 <= d.for_type < len(FOR_TYPES) else str(d.for_type)
            if kind == "Serial" or d.var not in self.loops:   # (gpu_single_thread's one-iteration loops)
                continue
            loop = self.loops[d.var].ident
            if kind == "Parallel":
                self.comp.parallelize(loop)
            elif kind in ("Vectorized", "Unrolled"):
                width = self.loops[d.var].extent
                if width is None:
                    rng = _loop_range(self.comp, loop, self.context)
                    if rng is None:
                        raise NotSupportedError(f"{self.where}: {kind.lower()} loop {d.var} needs a constant "
                                                f"extent (split it by a constant first)")
                    width = rng[1] - rng[0] + 1
                # tag in place: the loop already has its final extent, so no further split is wanted
                self.comp.tags[loop] = ("vector" if kind == "Vectorized" else "unroll", width)
                self.comp._record(f"{'vectorize' if kind == 'Vectorized' else 'unroll'}({loop}, {width})")
            elif kind == "GPUBlock":
                blocks.append(loop)
            elif kind in ("GPUThread", "GPULane"):
                threads.append(loop)
            else:
                raise NotSupportedError(f"{self.where}: the loop type {kind} of {d.var}")
        if blocks or threads:
            self.comp.gpu(list(reversed(blocks)), list(reversed(threads)))


def affine_of(e, where):
    """isl text of an RDom bound (an affine expression of the sizes)."""
    text = affine_text(e)
    if text is None:
        raise NotSupportedError(f"{where}: the bounds of its reduction variables must be affine in the sizes "
                                f"(constants, ImageParam extents or integer Params)")
    return text


def apply_loop_schedules(tr, context):
    """Splits, fuses, reorders and loop types of every stage of every translated Func."""
    hosts = {f.schedule.compute_level.func_name for f in tr.order
             if f.region is not None and placement(tr, f) == "tile"}
    for info in tr.order:
        if info.region is None:
            continue
        info.loop_names = []
        per_tile = placement(tr, info) == "tile"
        # a tile computed inside a loop that ShiftInwards shifts back is bounded by a min of the loop
        # counter, and a producer's loop shifted back within a tile by a min of the tile's bounds:
        # a case per piece, through every producer. Both guard their last tile instead
        # (GuardWithIf's iterations, the same values)
        guarded = per_tile or info.name in hosts
        for k, comps in enumerate(info.comps):
            pure = {h: dim for h, dim in tr.stage_vars(info, k)[0]}
            names = None
            for comp in comps:
                names = StageScheduler(tr, info, k, comp, context, pure, per_tile, guarded).apply()
            info.loop_names.append(names)


def _consumer_stage(tr, info, level):
    consumer = next((f for f in tr.funcs if f.name == level.func_name), None)
    if consumer is None or consumer.region is None:
        raise NotSupportedError(f"Func {info.name} is computed at {level.func_name}.{level.var_name}, a Func the "
                                f"pipeline does not compute")
    if level.stage_index >= 0:
        return consumer, level.stage_index
    readers = [k for k, comps in enumerate(consumer.comps)
               if any(_reads(c, info) for c in comps)]
    if len(readers) != 1:
        raise NotSupportedError(f"Func {info.name} is computed at {level.func_name}.{level.var_name}, and "
                                f"{'several stages' if readers else 'no stage'} of {consumer.name} read it; "
                                f"name the stage")
    return consumer, readers[0]


def _reads(comp, info):
    from mascarpone.middleend.expr import Access, walk
    targets = set(info.comps[0]) if info.comps else set()
    exprs = [comp.expr] + ([comp.predicate] if comp.predicate is not None else [])
    return any(isinstance(n, Access) and n.target in targets for e in exprs for n in walk(e))


def _match_loop(names, var, where):
    hits = [h for h in names if h == var or h.endswith("." + var)]
    if not hits:
        raise NotSupportedError(f"{where}: no loop named {var} (loops: {sorted(names)})")
    return names[hits[0]]


def apply_placements(tr, context):
    """compute_root / compute_at / inline, storage folds and compute_with, Func by Func."""
    for info in reversed(tr.order):
        if info.region is None:
            continue
        sched = info.schedule
        if info not in tr.outputs:
            _place(tr, info, sched.compute_level if sched is not None else None)
        for sd in (sched.storage_dims if sched is not None else []):
            if sd.fold_factor is not None and sd.fold_factor.kind != "UndefinedExpr":
                factor = _int_value(sd.fold_factor, f"Func {info.name}: fold_storage({sd.var})")
                var = info.stage_vars[0].get(sd.var)
                for comp in info.comps[0]:
                    if comp.user_buffer is not None:
                        raise NotSupportedError(f"Func {info.name}: fold_storage({sd.var}) of a Func whose consumer "
                                                f"computes beyond the region it requires (a RoundUp split)")
                    comp.storage_fold(var.name, factor)
        if len(info.dtypes) > 1:
            _fuse_tuple_elements(info)
        for k, comps in enumerate(info.comps):
            fl = info.stages[k].stage_schedule.fuse_level if info.stages[k].stage_schedule else None
            level = fl.fuse_level if fl is not None else None
            if level is not None and level.func_name:
                _compute_with(tr, info, k, level)


def _fuse_tuple_elements(info):
    """Halide computes the elements of a Tuple in one loop nest; so does each stage here (sharing
    every loop), unless compute_at already placed the elements in a consumer's tile."""
    for comps in info.comps:
        for prev, comp in zip(comps, comps[1:]):
            if comp.compute_at_target is None and prev.compute_at_target is None:
                comp.after(prev, prev.loops[-1])


def _place(tr, info, level):
    where = f"Func {info.name}"
    if level is None or (not level.func_name and level.var_name in ("", "__inlined")):
        if len(info.stages) > 1:
            return  # Halide computes an unscheduled Func with updates where it is used; root gives the same values
        for comp in info.comps[0]:
            comp.inline()
        return
    if level.var_name == "__root" or level.var_name == "__outermost":
        return
    consumer, k = _consumer_stage(tr, info, level)
    scans = _scans(tr, info)
    if scans:
        # Halide grows each tile by the whole range such an update writes (a scan runs over all of its
        # reduction domain in every tile); mascarpone's tiles hold what the consumer reads
        warnings.warn(f"{where}: compute_at of a Func whose update {scans[0]} writes at reduction variables "
                      f"is computed at root instead (same values, no locality)", stacklevel=3)
        return
    var = _match_loop(consumer.loop_names[k], level.var_name, f"{where}.compute_at({consumer.name})")
    targets = [c for c in consumer.comps[k] if _reads(c, info)]
    if len(targets) != 1:
        raise NotSupportedError(f"{where}.compute_at({consumer.name}, {level.var_name}): {len(targets)} Tuple "
                                f"elements of {consumer.name} read it; only one reader is supported")
    for comp in info.comps[0]:
        try:
            comp.compute_at(targets[0], var)
        except ScheduleError as err:
            raise NotSupportedError(f"{where}.compute_at({consumer.name}, {level.var_name}): {err}") from None
    store = info.schedule.store_level if info.schedule is not None else None
    if store is None or len(info.stages) > 1 or store.var_name in ("", "__inlined", "__outermost"):
        return
    if store.var_name == "__root":
        if _serial_between(targets[0], None, var):
            for comp in info.comps[0]:
                comp.store_root()   # Halide's sliding window: each value computed once, reused by later rows
        return
    if store.func_name != consumer.name:
        raise NotSupportedError(f"{where}.store_at({store.func_name}, {store.var_name}): storage at a loop of "
                                f"another Func than the one it is computed at ({consumer.name})")
    outer = _match_loop(consumer.loop_names[k], store.var_name, f"{where}.store_at({consumer.name})")
    if outer != var and _serial_between(targets[0], outer, var):
        for comp in info.comps[0]:
            comp.store_at(outer)   # slides within each iteration of `outer`, as Halide's does


def _serial_between(consumer, outer, loop):
    """Whether the consumer's loops inside `outer` (None: the root) down to `loop` all run in order (a
    sliding window needs that; Halide does not slide across a parallel loop either, and neither
    loses values)."""
    first = 0 if outer is None else consumer.loops.index(outer) + 1
    loops = consumer.loops[first:consumer.loops.index(loop) + 1]
    return all(consumer.tags.get(name, ("serial", 1))[0] in ("serial", "unroll") for name in loops)


def _compute_with(tr, info, k, level):
    other = next((f for f in tr.funcs if f.name == level.func_name), None)
    if other is None or other.region is None:
        raise NotSupportedError(f"{info.stage_name(k)}: compute_with a Func the pipeline does not compute")
    sk = level.stage_index if level.stage_index >= 0 else 0
    var = _match_loop(other.loop_names[sk], level.var_name, f"{info.stage_name(k)}.compute_with({other.name})")
    for comp in info.comps[k]:
        comp.after(other.comps[sk][-1], var)
