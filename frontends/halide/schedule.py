"""Halide schedules to mascarpone scheduling commands.

Per stage: the splits in the order they were written (tail strategies all
become mascarpone's exact split, which runs each point once; Halide's
ShiftInwards and RoundUp recompute or over-compute points of pure stages, so
the values are the same), renames, fuses (when the inner extent is a constant),
then the loop order of the serialized `dims` and their loop types. Per Func:
inline / root / compute_at, storage folding and compute_with.
"""
from __future__ import annotations

import warnings

import islpy as isl

from middleend.errors import NotSupportedError, ScheduleError

from .names import NameTable
from .schema import FOR_TYPES, SPLIT_TYPES

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


class StageScheduler:
    """Applies one stage's loop schedule to one computation (each Tuple element gets the same)."""

    def __init__(self, info, k, comp, context, params):
        self.info, self.k, self.comp = info, k, comp
        self.where = info.stage_name(k)
        self.context = context
        self.names = NameTable(set(params) | set(comp.loops))
        self.loop_of = {h: v.name for h, v in info.stage_vars[k].items()}
        self.split_factor = {}   # inner loops of splits: their extent (the factor)

    def _ms(self, halide_name):
        if halide_name not in self.loop_of:
            raise NotSupportedError(f"{self.where}: its schedule names the loop {halide_name}, which it does not have")
        return self.loop_of[halide_name]

    def apply(self):
        sched = self.info.stages[self.k].stage_schedule
        if sched is None:
            return dict(self.loop_of)
        for s in sched.splits:
            kind = SPLIT_TYPES[s.split_type] if s.split_type < len(SPLIT_TYPES) else str(s.split_type)
            if kind == "SplitVar":
                self._split(s)
            elif kind == "RenameVar":
                self.loop_of[s.outer] = self._ms(s.old_var)
            elif kind == "FuseVars":
                self._fuse(s)
            else:
                raise NotSupportedError(f"{self.where}: the split kind {kind}")
        dims = [d for d in sched.dims if d.var != "__outermost"]
        order = [self._ms(d.var) for d in reversed(dims)]
        if sorted(order) != sorted(self.comp.loops):
            raise NotSupportedError(f"{self.where}: its loops {self.comp.loops} do not match the schedule's "
                                    f"{[d.var for d in dims]}")
        if order != self.comp.loops:
            self.comp.reorder(*order)
        self._tags(dims)
        return {d.var: self._ms(d.var) for d in dims}

    def _split(self, s):
        factor = _int_value(s.factor, f"{self.where}: the factor of split({s.old_var})")
        old = self._ms(s.old_var)
        outer, inner = self.names.fresh(s.outer), self.names.fresh(s.inner)
        self.comp.split(old, factor, names=(outer, inner))
        self.loop_of[s.outer], self.loop_of[s.inner] = outer, inner
        self.split_factor[inner] = factor

    def _fuse(self, s):
        comp = self.comp
        outer, inner = self._ms(s.outer), self._ms(s.inner)
        inner_range = _loop_range(comp, inner, self.context)
        if inner in self.split_factor:
            inner_range = (0, self.split_factor[inner] - 1)
        outer_range = _loop_range(comp, outer, self.context)
        if inner_range is None:
            raise NotSupportedError(f"{self.where}: fuse({s.inner}, {s.outer}) needs the inner loop {s.inner} to "
                                    f"have a constant extent (use bound() or fuse loops of constant size)")
        lo, hi = inner_range
        omin = outer_range[0] if outer_range else 0
        fused = self.names.fresh(s.old_var)
        new_names = [fused if n == inner else n for n in comp.loops if n != outer]
        exprs = [f"({outer} - {omin}) * {hi - lo + 1} + ({inner} - {lo})" if n == inner else n
                 for n in comp.loops if n != outer]
        m = isl.Map(f"{{ [{', '.join(comp.loops)}] -> [{', '.join(exprs)}] }}")
        tags = {n: t for n, t in comp.tags.items() if n not in (inner, outer)}
        comp.set_schedule(comp.loop_map.apply_range(m), names=new_names)
        comp.tags.update(tags)
        self.loop_of[s.old_var] = fused

    def _tags(self, dims):
        blocks, threads = [], []
        for d in dims:
            kind = FOR_TYPES[d.for_type] if 0 <= d.for_type < len(FOR_TYPES) else str(d.for_type)
            if kind == "Serial":
                continue
            loop = self._ms(d.var)
            if kind == "Parallel":
                self.comp.parallelize(loop)
            elif kind in ("Vectorized", "Unrolled"):
                width = self.split_factor.get(loop)
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


def apply_loop_schedules(tr, context):
    """Splits, fuses, reorders and loop types of every stage of every translated Func."""
    for info in tr.order:
        if info.region is None:
            continue
        info.loop_names = []
        for k, comps in enumerate(info.comps):
            names = None
            for comp in comps:
                names = StageScheduler(info, k, comp, context, tr.params).apply()
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
    from middleend.expr import Access, walk
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
    scans = [info.stage_name(j) for j in range(1, len(info.stages))
             if len(tr.stage_vars(info, j)[0]) < info.ndim]
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
    if store is not None and store.var_name == "__root" and _serial_down_to(targets[0], var) \
            and len(info.stages) == 1:
        for comp in info.comps[0]:
            comp.store_root()   # Halide's sliding window: each value computed once, reused by later rows


def _serial_down_to(consumer, loop):
    """Whether the consumer's loops down to `loop` all run in order (a sliding window needs that;
    Halide does not slide across a parallel loop either, and neither loses values)."""
    loops = consumer.loops[:consumer.loops.index(loop) + 1]
    return all(consumer.tags.get(name, ("serial", 1))[0] in ("serial", "unroll") for name in loops)


def _compute_with(tr, info, k, level):
    other = next((f for f in tr.funcs if f.name == level.func_name), None)
    if other is None or other.region is None:
        raise NotSupportedError(f"{info.stage_name(k)}: compute_with a Func the pipeline does not compute")
    sk = level.stage_index if level.stage_index >= 0 else 0
    var = _match_loop(other.loop_names[sk], level.var_name, f"{info.stage_name(k)}.compute_with({other.name})")
    for comp in info.comps[k]:
        comp.after(other.comps[sk][-1], var)
