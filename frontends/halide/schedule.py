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
from mascarpone.middleend.schedule import root

from .names import NameTable
from .pipeline import ROOT_LEVELS, func_calls, is_default_level, walk_nodes
from .schema import CALL_TYPES, FOR_TYPES
from .splits import Variable, constant_value, loop_nest

#: the widest vector loop and the longest unrolled loop a schedule may ask for: every lane and copy
#: becomes code, so a hostile factor (2**31) would exhaust memory rather than fail
MAX_LANES = 256
MAX_UNROLL = 256

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
    if is_default_level(level):
        return "root" if len(info.stages) > 1 else "inline"
    if level.var_name in ROOT_LEVELS or _scans(tr, info):
        return "root"
    return "tile"


def _scans(tr, info):
    """The updates that write at reduction variables (fewer pure variables than dimensions), except
    those whose other indices are all read from data (a histogram's bin): a tile of those spans the
    dimensions they scatter into (the middle-end's compute_at), as Halide's grows to the written range."""
    out = []
    for j in range(1, len(info.stages)):
        pure = {d for _, d in tr.stage_vars(info, j)[0]}
        others = [a for d, a in enumerate(info.stages[j].args) if d not in pure]
        if others and not all(_reads_data(a) for a in others):
            out.append(info.stage_name(j))
    return out


def _reads_data(index):
    """Whether an index expression loads from a Func or an image (its value depends on data)."""
    return any(n.kind == "Call" and n.call_type < len(CALL_TYPES) and CALL_TYPES[n.call_type] in ("Halide", "Image")
               for n in walk_nodes(index))


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
        self.names = NameTable(set(tr.params) | set(tr.derived_params) | set(comp.loops) | set(tr.names.taken))
        # (loops of a Func computed per tile are named after it: see PipelineTranslation.loop_namer)
        self.loop_fresh = tr.loop_namer(info, self.names.taken) if per_tile else self.names.fresh

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
                         self.k == 0, self.loop_fresh, self.guarded)
        halide_of = {v.name: h for h, v in self.info.stage_vars[self.k].items()}
        anchor = self.tr.symbolic_bounds(self.info, self.info.stage_anchor[self.k])
        root = {name: anchor[self.pure[halide_of[name]]] for name in bounds}
        try:
            self.comp.set_schedule(nest.relation, names=[lp.ident for lp in nest.loops], bounds=bounds,
                                   root_bounds=root)
        except ScheduleError as err:
            raise NotSupportedError(f"{self.where}: its loop nest {[lp.halide for lp in nest.loops]} "
                                    f"({err})") from None
        self.loops = nest.named
        self._tags([d for d in sched.dims if d.var != "__outermost"])
        # (a fused group's loop, for compute_at, is its innermost member)
        return {h: lp.ident for h, lp in self.loops.items()}

    def _parallel_member(self, group):
        """The loop of a fused group that runs in parallel: its outermost one that may have more than
        one iteration (the same iterations run in parallel as in Halide's fused loop, split among
        fewer tasks)."""
        for m in group:
            rng = _loop_range(self.comp, m.ident, self.context)
            if rng is None or rng[1] > rng[0]:
                return m.ident
        return group[0].ident

    def _tags(self, dims):
        blocks, threads = [], []
        for d in dims:
            kind = FOR_TYPES[d.for_type] if 0 <= d.for_type < len(FOR_TYPES) else str(d.for_type)
            if kind == "Serial" or d.var not in self.loops:   # (gpu_single_thread's one-iteration loops)
                continue
            group = self.loops[d.var].members
            loop = self.loops[d.var].ident
            if group is not None and kind != "Parallel":
                raise NotSupportedError(f"{self.where}: {kind.lower()} loop {d.var} fuses loops whose extents are not "
                                        f"constants; only a parallel tag is supported on such a loop")
            if kind == "Parallel":
                self.comp.parallelize(self._parallel_member(group) if group is not None else loop)
            elif kind in ("Vectorized", "Unrolled"):
                width = self.loops[d.var].extent
                if width is None:
                    rng = _loop_range(self.comp, loop, self.context)
                    if rng is None and kind == "Unrolled":
                        # Halide finds its extent in the bounds it infers (per tile, or where a Func's
                        # region is constant): so does lowering, once the tiles are expanded
                        self.comp.unroll(loop)
                        continue
                    if rng is None:
                        # a vector loop of unknown width runs as a plain loop, with a warning (resolve_widths)
                        self.tr.pending_widths.append((self.comp, loop, kind, d.var, self.where))
                        continue
                    width = rng[1] - rng[0] + 1
                tag_width(self.comp, loop, kind, width, f"{self.where}: {kind.lower()} loop {d.var}")
            elif kind == "GPUBlock":
                blocks.append(loop)
            elif kind in ("GPUThread", "GPULane"):
                threads.append(loop)
            else:
                raise NotSupportedError(f"{self.where}: the loop type {kind} of {d.var}")
        if blocks or threads:
            self.comp.gpu(list(reversed(blocks)), list(reversed(threads)))


def tag_width(comp, loop, kind, width, what):
    """Tag `loop` of `comp` as a vector or unrolled loop of `width` iterations (its final extent: no
    further split), within the limits."""
    limit = MAX_LANES if kind == "Vectorized" else MAX_UNROLL
    if width > limit:
        raise NotSupportedError(f"{what} of {width} iterations; the Halide front-end takes at most {limit} "
                                f"(split it first)")
    comp.tags[loop] = ("vector" if kind == "Vectorized" else "unroll", width)
    comp._record(f"{'vectorize' if kind == 'Vectorized' else 'unroll'}({loop}, {width})")


def resolve_widths(tr):
    """The vector loops whose extent is not one constant over the whole domain run as plain loops (the
    same values), with a warning naming them. For a Func computed per tile the extent in one tile is
    known only once the tiles are expanded, at lowering (Halide finds a constant per tile in its
    bounds); an unrolled loop takes it there (`unroll` without a factor), a vector width cannot."""
    if tr.pending_widths:
        loops = ", ".join(f"{where}: {kind.lower()} {halide_loop}" for _, _, kind, halide_loop, where in tr.pending_widths)
        warnings.warn(f"vector loops whose extent is not a constant run unvectorized ({loops})", stacklevel=3)
    tr.pending_widths = []


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


def _match_loop(names, var, where):
    hits = [h for h in names if h == var or h.endswith("." + var)]
    if not hits:
        raise NotSupportedError(f"{where}: no loop named {var} (loops: {sorted(names)})")
    return names[hits[0]]


def apply_placements(tr, context):
    """compute_root / compute_at / inline, storage folds and compute_with, Func by Func; then the
    vector and unrolled loops whose extent depends on the tile (resolve_widths).

    Producers come first, so Funcs computed at one loop run in the order they read each other; a Func
    computed at another's loop comes after that one is placed (placing the consumer moves the loops
    that hold the producer's tile)."""
    def depth(info):
        hops, level = 0, info.schedule.compute_level if info.schedule is not None else None
        while level is not None and placement(tr, info) == "tile" and hops <= len(tr.funcs):
            info = next((f for f in tr.funcs if f.name == level.func_name), None)
            if info is None:
                break
            hops, level = hops + 1, info.schedule.compute_level if info.schedule is not None else None
        return hops
    for info in sorted(reversed(tr.order), key=depth):
        if info.region is None:
            continue
        sched = info.schedule
        if info not in tr.outputs:
            _place(tr, info, sched.compute_level if sched is not None else None)
        for sd in (sched.storage_dims if sched is not None else []):
            # a tile computed per iteration of a consumer's loop keeps its whole tile: the fold only
            # saves memory there (the middle-end folds buffers at the root), the values are the same
            if placement(tr, info) == "tile":
                continue
            if sd.fold_factor is not None and sd.fold_factor.kind != "UndefinedExpr":
                factor = _int_value(sd.fold_factor, f"Func {info.name}: fold_storage({sd.var})")
                var = info.stage_vars[0].get(sd.var)
                for comp in info.comps[0]:
                    if comp.user_buffer is not None:
                        raise NotSupportedError(f"Func {info.name}: fold_storage({sd.var}) of a Func whose consumer "
                                                f"computes beyond the region it requires (a RoundUp split)")
                    comp.storage_fold(var.name, factor)
        inlined = any(c is d for c in info.comps[0] for d in tr.default_inlines)
        if len(info.dtypes) > 1 and not inlined:    # (inlined elements have no loops to share)
            _fuse_tuple_elements(info)
        for k, comps in enumerate(info.comps):
            fl = info.stages[k].stage_schedule.fuse_level if info.stages[k].stage_schedule else None
            level = fl.fuse_level if fl is not None else None
            if level is not None and level.func_name:
                _compute_with(tr, info, k, level)
    resolve_widths(tr)


def vectorize_reductions(tr):
    """The inline reductions computed per vector of their consumer (see
    pipeline.compute_reductions_in_their_consumer) run their loop along the vector's variable innermost,
    in vectors of its width, as Halide runs them in the consumer's vector lanes."""
    for info in tr.order:
        if info.name not in tr.vector_reductions or info.region is None:
            continue
        arg, width = tr.vector_reductions[info.name]
        for k, comps in enumerate(info.comps):
            loop = info.loop_names[k].get(arg)
            for comp in comps:
                if loop not in comp.loops:
                    continue
                try:
                    comp.reorder(*[l for l in comp.loops if l != loop], loop)
                    comp.vectorize(loop, width)
                except ScheduleError as err:
                    warnings.warn(f"Func {info.name}: computed one lane at a time ({err})", stacklevel=3)


def _fuse_tuple_elements(info):
    """Halide computes the elements of a Tuple in one loop nest; so does each stage here (sharing
    every loop, an update's elements in the order `info.element_orders` gives), at the root or in the
    tile of a consumer's loop alike."""
    for k, comps in enumerate(info.comps):
        comps = [comps[v] for v in info.element_orders.get(k, range(len(comps)))]
        for prev, comp in zip(comps, comps[1:]):
            if comp.compute_at_target is None and prev.compute_at_target is None or comp.computed_at_same_loop(prev):
                # (a zero-dimensional Func has no loop to share: one after the other)
                comp.after(prev, prev.loops[-1] if prev.loops else root)


def _place(tr, info, level):
    where = f"Func {info.name}"
    if is_default_level(level):
        if len(info.stages) > 1:
            return  # Halide computes an unscheduled Func with updates where it is used; root gives the same values
        tr.default_inlines.extend(info.comps[0])   # inlined last, see from_halide
        return
    if level.var_name in ROOT_LEVELS:
        return
    consumer = next((f for f in tr.funcs if f.name == level.func_name), None)
    if consumer is None or consumer.region is None:
        raise NotSupportedError(f"Func {info.name} is computed at {level.func_name}.{level.var_name}, a Func the "
                                f"pipeline does not compute")
    k, element = tr.tile_readers.where(info)
    unread = _unread_elements(tr, info)
    if unread:
        raise NotSupportedError(
            f"{where} is computed at {consumer.name}.{level.var_name}, and nothing reads element(s) {unread} of its "
            f"Tuple but their own updates (a 2-D argmax's second index, say): a tile holds what is read in "
            f"it; read every element, or compute at the root the Funcs it reads that are computed in loops")
    scans = _scans(tr, info)
    if scans:
        # Halide grows each tile by the whole range such an update writes (a scan runs over all of its
        # reduction domain in every tile); mascarpone's tiles hold what the consumer reads
        warnings.warn(f"{where}: compute_at of a Func whose update {scans[0]} writes at reduction variables "
                      f"is computed at root instead (same values, no locality)", stacklevel=3)
        return
    var = _match_loop(consumer.loop_names[k], level.var_name, f"{where}.compute_at({consumer.name})")
    targets = [consumer.comps[k][element]]
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
        # storage at a loop of a Func further out (the consumer's consumer): the middle-end slides a
        # window only within the consumer's own loops, so each tile is computed whole (same values,
        # computed again where tiles overlap, as without store_at)
        return
    outer = _match_loop(consumer.loop_names[k], store.var_name, f"{where}.store_at({consumer.name})")
    if outer != var and _serial_between(targets[0], outer, var):
        for comp in info.comps[0]:
            comp.store_at(outer)   # slides within each iteration of `outer`, as Halide's does


def _unread_elements(tr, info):
    """The elements of a Tuple Func that no other Func reads and no other element's definitions read."""
    read = {n.value_index for f in tr.funcs if f is not info for n in func_calls(f.stages, info.index)}
    for d in info.stages:
        read |= {n.value_index for n in func_calls([d.args, d.predicate], info.index)}
        read |= {n.value_index for w, value in enumerate(d.values) for n in func_calls(value, info.index)
                 if n.value_index != w}
    return [v for v in range(len(info.dtypes)) if v not in read] if len(info.dtypes) > 1 else []


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
