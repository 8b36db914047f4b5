"""A choice applied as ordinary scheduling commands, each kept only if the schedule stays legal.

The choice holds what the search settles (tile sizes, unroll factors, compute_at or root per
producer); the rest follows from the model: distribution of statements a front-end nested
together, inlining of producers read once, loop order, tiling of the innermost band, the vector
loop, the parallel loop and the unrolling of small constant loops.
"""
from __future__ import annotations

import copy

from .. import recipes
from ..algorithm import Param
from .. import schedule as sched
from ..buffer import Buffer
from ..errors import MascarponeError
from ..expr import floormod
from ..loopir import LoopKind
from . import machine, model, timetile
from .analysis import (Stage, constant_lower_bound, constant_offsets, elements, from_source, is_copy, readers,
                       reads_each_element_once, recomputed_cheaply, references, untouched)
from .state import restore, save

#: a parallel loop must run at least this many iterations of its nest each time it starts, else it runs
#: serially: starting and joining the threads would cost more (jacobi-2d at 100^2, 10^4 points a sweep:
#: 0.36 ns a point on one thread, 0.89 on two)
MIN_PARALLEL_WORK = 1 << 14
#: the least iterations a thread runs in one phase of the model's split tiles (two phases a block): jacobi-1d
#: at 400 points and 50 steps (20000 a phase) ran 14 us in split tiles on 2 threads, 5.3 us serially
SPLIT_WORK = 4 * MIN_PARALLEL_WORK
#: the longest sweep the model runs in split tiles rather than a parallel loop per statement and step: 20
#: sweeps of jacobi-2d at 260x260 (66564 points each) ran 0.258 ms, in split tiles of 5 steps 0.231 ms
SPLIT_SWEEP = 16 * MIN_PARALLEL_WORK
#: a read array is copied transposed only where the nest runs this many iterations per element copied
TRANSPOSE_WORK = 16
#: vectors per iteration of a vector loop's outer loop moved outside a recurrence to run in parallel (a
#: strip of columns per thread iteration): their chains along the recurrence overlap their latency, and
#: each row of the strip is a longer run of memory. iir's column scan at 1536x2560 float32 on 2 cores,
#: two runs: 2.68 and 2.77 ms by strips of 4 vectors, 2.91 and 3.39 by 8, 3.33 and 4.15 by 1.
STRIP_VECTORS = 4


class Applier:
    """Applies choices to one function; `decisions` records, per stage, what the model decided
    (the band it tiled, the producers' placement) for the search to vary."""

    def __init__(self, function, stages, checker, leave=(), proposal=None, optimistic=True):
        self.function = function
        self.stages = stages
        self.checker = checker
        self.leave = set(leave)   # computations to leave unscheduled (copies the target's call makes)
        self.proposal = proposal  # isl's scheduler's fusion and loop orders (islschedule.Proposal), if any
        self.following = None     # the proposal, while a choice follows it ("isl")
        self.differs = False      # whether following the proposal would give other commands than the model
        self.bands = {}       # stage name -> the variables of the band it may tile (it has reuse)
        self.tiled = set()    # stages whose band is tiled
        self.registers = {}   # stage name -> the (values of a, vectors of v) of its register tile
        self.streamed = {}    # stage name -> reads of its reduction streamed at once (model.STREAMS)
        self.packed = {}      # stage name -> the model's blocks of a packed contraction (see _pack)
        self.placements = {}  # producer name -> "inline" | "compute_at" | "root"
        self.unrollable = set()  # stages with a loop around their vector lanes (carrying no window): unroll factors
        self.vectorized = set()  # stages whose innermost loop the model vectorized (the search may leave
        #                          it to the compiler's own vectorizer, which can reuse loads across lanes)
        self.interleaved = {}  # stage name -> (the loops around its interleaved chains, the variables they
        #                        run over; see _interleave)
        self.parallel = set()  # stages with a parallel loop
        self.scattered = set()  # stages whose scatter into data-chosen elements is vectorized (_vectorize_scatter)
        self.jammable = {}    # stencil stage name -> the factor its loop around the vector loop was jammed by
        #                       (0: none; see _jam)
        self.transposed = set()   # stages reading transposed copies (see _transposed_copies)
        self.time_groups = {}  # first stage's name -> (the statements of a time step, the model's tile sizes)
        self.time_tiled = set()  # names of the groups time-tiled
        self.split_groups = {}  # first stage's name -> the model's split tiles of its group (see timetile)
        self.split_tiled = {}   # first stage's name -> the split tiles its group runs in
        self.tile_params = {}  # stage name -> the size parameters of its band's parametric tile
        self.wavefronts = set()  # names of the time-tiled groups whose tiles run in parallel wavefronts
        self.space_waves = {}  # interleaved stage name -> the tiles its sweep runs in wavefronts by (None: none)
        self.distributed = []  # (later, earlier) statements of one source nest put in loops of their own
        self.fused = []        # statements fused back at a parallel loop they share (_fuse_parallel_nests)
        self.unchecked = False  # attempts keep their commands unchecked (checked together afterwards)
        # whether steps of many commands are first given unchecked (see _unchecked_then_checked); a
        # caller that saw such a step fail on this function passes False, as it will fail again
        self.optimistic = optimistic
        self.fell_back = False
        # where a buffer may hold several values (a fold, a layout of the user's), a concurrent loop
        # may race on one element: the layout check must see each tag
        self.shared_storage = any(c.folds or c.user_buffer is not None for c in function.computations)

    def attempt(self, action, layout=False) -> bool:
        """Run `action` (commands); keep it if the schedule stays legal (the layout checked too with
        `layout`; not checked while `unchecked`, whose caller checks the whole), else undo it."""
        saved = save(self.function)
        try:
            action()
            if self.unchecked or self.checker.legal(layout):
                return True
        except MascarponeError:
            pass
        restore(self.function, saved)
        return False

    def _unchecked_then_checked(self, step):
        """Run `step`, a part of the model that gives many commands, with its attempts kept unchecked,
        then check the whole once; where that fails, undo it and run `step` again with each attempt
        checked. A check costs far more than a command (a pipeline of many stages took minutes to
        schedule), and a step whose attempts all hold gives the commands a checked run gives."""
        if not self.optimistic:
            return step()
        saved = save(self.function)
        decisions = {k: copy.copy(v) for k, v in vars(self).items() if isinstance(v, (set, dict, list, bool))}
        self.unchecked = True
        try:
            result = step()
        finally:
            self.unchecked = False
        if len(self.function._history) == saved.history_length or self.checker.legal(layout=True):
            return result
        restore(self.function, saved)
        for k, v in decisions.items():
            setattr(self, k, v)
        self.fell_back, self.optimistic = True, False    # (later steps of this function would fail too)
        return step()

    def apply(self, choice) -> None:
        """Give the commands of `choice` ({"tiles": {stage: sizes}, "unroll": {stage: factor},
        "place": {producer: "compute_at" | "root"}}, any part missing: the model's)."""
        f = self.function
        free = [c for c in f.computations if untouched(c) and c not in self.leave]
        self.following = self.proposal if choice.get("isl") else None
        self._distribute(free)
        deferred = self._place_producers(free, choice.get("place", {}))
        stepped = self._time_tile_groups(free, choice.get("timetile", {}), choice.get("wavefront", {}),
                                         choice.get("split", {}), choice.get("jam", {}))
        self._unchecked_then_checked(lambda: self._schedule_stages(free, choice, deferred, stepped))
        if choice.get("fuse", True):
            self._fuse_parallel_nests()

    def _schedule_stages(self, free, choice, deferred, stepped) -> None:
        """Each stage's loops, then the producers computed per tile of their consumer (or at the root)."""
        tile_level = {}
        for comp in free:
            if comp.inlined or comp in deferred or comp in stepped or comp.name not in self.stages:
                continue
            # a consumer of a producer to compute per tile is tiled whatever its own reuse
            tile_level[comp.name] = self._schedule_stage(comp, choice, for_producer=comp in deferred.values())
        for producer, consumer in deferred.items():
            level = tile_level.get(consumer.name)
            if level is not None and self.attempt(lambda: producer.compute_at(consumer, level), layout=True):
                self.placements[producer.name] = "compute_at"
                self._vectorize_innermost(producer, self.stages[producer.name])
            else:
                self.placements[producer.name] = "root"
                self._schedule_stage(producer, choice)

    # placement ----------------------------------------------------------------------
    def _distribute(self, free):
        """Run each statement a front-end nested in another's loops in loops of its own, where the
        dependences allow: that frees its loop order (Julia's statements come nested)."""
        names = {c.name for c in free}
        tried = set(self._fused_by_isl(free))
        progress = True
        while progress:     # one statement can leave only once those placed after it have left
            progress = False
            for how, comp, other, level in list(self.function._ordering):
                if level is not None and comp.name in names and other.name in names and (comp, other) not in tried \
                        and from_source((how, comp, other, level), self.function):
                    if self.attempt(lambda: comp.after(other, sched.root) if how == "after"
                                    else comp.before(other, sched.root)):
                        tried.add((comp, other))
                        if level:   # (0: the source ran them in nests of their own already)
                            self.distributed.append((comp, other) if how == "after" else (other, comp))
                        progress = True

    def _fuse_parallel_nests(self):
        """Fuse back, at their outermost loop, two statements of one source nest that the distribution put
        in loops of their own, where both run that loop (the same name) in parallel: one parallel region
        instead of two, and what the first writes in an iteration is still in cache when the second reads
        it (doitgen's zeroing, product and copy per q, at 150x140x160: 41 ms apart, 34 fused), where the
        dependences allow. In program order, each fused after the one before it."""
        position = {c: k for k, c in enumerate(self.function.computations)}
        for later, earlier in sorted(self.distributed, key=lambda pair: position[pair[0]]):
            loop = later.loops[0] if later.loops else None
            parallel = [(c.tags.get(loop) or (None,))[0] == LoopKind.PARALLEL for c in (later, earlier)]
            if loop is None or earlier.loops[:1] != [loop] or not all(parallel):
                continue
            if self.attempt(lambda: later.after(earlier, loop), layout=True):
                self.fused.append(later.name)

    def _fused_by_isl(self, free):
        """The pairs of the source's nesting that isl's scheduler keeps in one outermost loop: left
        nested while the choice follows its proposal (else only noted: the proposal differs)."""
        fused = [(comp, other) for _, comp, other, level in self.function._ordering
                 if level is not None and self.proposal is not None and comp in free and other in free
                 and self.proposal.fused(comp.name, other.name)]
        self.differs |= bool(fused)
        return fused if self.following is not None else []

    def _place_producers(self, free, wanted) -> dict:
        """Inline the producers read once and the copies of other arrays; {producer: consumer} of those
        to compute at their consumer's tile (a stencil read by one consumer), unless the choice says root.

        The inlinings are checked together (`_unchecked_then_checked`): each check after an inlining
        computes the dependences again, since what is read changed."""
        return self._unchecked_then_checked(lambda: self._place_each_producer(free, wanted))

    def _place_each_producer(self, free, wanted) -> dict:
        deferred = {}
        for comp in free:
            if comp.is_output or comp.updated is not None or comp.updates:
                continue
            reads = readers(self.function, comp)
            if not reads:
                continue
            consumer, nodes = reads[0]
            read_once = len(reads) == 1 and (len(nodes) == 1 or reads_each_element_once(nodes, consumer))
            inline = read_once or is_copy(comp) or recomputed_cheaply(comp, reads)
            if inline and self.attempt(comp.inline, layout=True):
                self.placements[comp.name] = "inline"
                continue
            if (len(reads) == 1 and consumer in free and consumer.updated is None and not consumer.updates
                    and constant_offsets(nodes, consumer) and wanted.get(comp.name, "compute_at") == "compute_at"):
                deferred[comp] = consumer
            else:
                self.placements[comp.name] = "root"
        return deferred

    # time-stepped stencils -----------------------------------------------------------
    def _time_tile_groups(self, free, wanted, waves, splits, jams) -> set:
        """Time-tile each time-stepped stencil (timetile.groups) at the sizes `wanted` gives its first
        statement ([]: not at all), else the model's where the arrays outgrow L2, its tiles run in
        wavefronts over the threads unless `waves` says False for it. One not time-tiled runs in split
        tiles of the sizes `splits` gives it (False: none), else the model's where one step's sweep is
        short. The statements time-tiled get their innermost loop vectorized.
        Returns the computations time-tiled."""
        done = set()
        for members in timetile.groups(self.function, self.stages, [c for c in free if not c.inlined]):
            key = members[0].name
            model_sizes = timetile.tile_sizes(self.stages, members)
            self.time_groups[key] = (members, model_sizes)
            sizes = wanted.get(key)
            if sizes is None:
                sizes = model_sizes if timetile.needs_time_tiling(self.stages, members) else []
            if not sizes:
                if self._split_tile_group(members, splits.get(key), jams):
                    done.update(members)
                continue
            if not self._time_tile(members, sizes, waves.get(key, True)):
                continue
            self.time_tiled.add(key)
            for comp in members:
                t, space = self.stages[comp.name].vars[:2]
                origin = {v: v for v in comp.loops}
                if key not in self.tile_params:     # (parametric tiles keep the band's loops)
                    origin.update(zip(comp.loops[:4], (t, space, t, space)))
                self._vectorize_innermost(comp, self.stages[comp.name], origin)
                self._unroll_small_loops(comp)
                done.add(comp)
        return done

    def _time_tile(self, members, sizes, wavefront=True) -> bool:
        """Shift each later statement of the step along the first space loop (by the least multiple
        of its position that is legal), skew that loop by the time loop (least factor), tile the
        (time, space) band by `sizes` and run the statements fused in each tile. With `wavefront`, the
        tiles run in wavefronts where the dependences allow: the loop over space tiles skewed by the
        loop over time tiles and moved outside it, which then runs the tiles of one wavefront in
        parallel (on 2 threads, jacobi-2d at 1300x1300 and 100 steps in 8x64 tiles: 87 ms serial, 43
        ms in wavefronts, 48 ms for parallel sweeps). True if applied."""
        t = members[0].loops[0]
        parametric = sizes == model.PARAMETRIC
        params = _tile_size_params(members[0], members[0].loops[:2])
        for waves in ((True, False) if wavefront and not parametric else (False,)):
            for shift in range(timetile.MAX_SHIFT + 1):
                for skew in range(1, model.MAX_SKEW + 1):
                    def commands():
                        for k, comp in enumerate(members):
                            space = comp.loops[1]
                            if shift * k:
                                comp.shift(space, shift * k)
                            comp.skew(t, space, skew)
                            if not parametric:
                                comp.tile(t, space, *sizes)
                            if waves:
                                over_time, over_space = comp.loops[:2]
                                comp.skew(over_time, over_space, 1)
                                comp.interchange(over_time, over_space)
                                comp.parallelize(over_time)
                        for prev, comp in zip(members, members[1:]):
                            comp.after(prev, prev.loops[1 if parametric else 3])
                        if parametric:   # the statements share the (time, space) loops: one band tiles them all
                            members[0].tile(t, members[0].loops[1], *params)
                    if self.attempt(commands, waves and self.shared_storage):
                        if waves:
                            self.wavefronts.add(members[0].name)
                        if parametric:
                            self.tile_params[members[0].name] = [p.name for p in params]
                        return True
        return False

    def _split_tile_group(self, members, wanted, jams) -> bool:
        """Run a time-stepped stencil in split tiles (see timetile): of the sizes `wanted` ([steps per
        block, width]; False: none), else the model's where one step's sweep is short (SPLIT_SWEEP), at
        the least reach (1, then 2) that is legal; the tiles run in parallel and each row, the innermost
        loop, in whole vectors from its first element, with rows jammed by `jams`' factor (`_jam`; the
        model's: `model.jam_factor`). True if applied."""
        key = members[0].name
        model_sizes = timetile.split_sizes(self.stages, members, machine.cores())
        if model_sizes is not None:
            self.split_groups[key] = model_sizes
        stage = self.stages[key]
        row = 1     # iterations of the loops inside the first space loop
        for v in stage.vars[2:]:
            row *= stage.trip(v)
        sweep = stage.trip(stage.vars[1]) * row
        # the model's where a sweep is too short for the threads' start to vanish in it and a block's
        # trapezoids are long enough: each phase starts them once
        worth = model_sizes is not None and sweep < SPLIT_SWEEP and \
            model_sizes[0] * len(members) * model_sizes[1] * row >= SPLIT_WORK
        sizes = wanted if wanted is not None else (model_sizes if worth else None)
        if not sizes or any(len(c.loops) != len(members[0].loops) or c.loops != [v.name for v in c.vars]
                            for c in members):
            return False
        steps, width = sizes
        x = stage.vars[1]
        origin = constant_lower_bound(members[0], x) or 0
        taken = {v for c in members for v in c.loops}
        names = [sched.fresh_name(n, taken) for n in (f"{stage.vars[0]}_block", f"{x}_phase", f"{x}_tile",
                                                     f"{x}_piece", f"{stage.vars[0]}_step")]
        levels = len(members)
        tiles = -(-stage.trip(x) // width)     # narrowing tiles at these sizes: the widening ones wrap there
        for reach in range(1, timetile.MAX_REACH + 1):
            if width < 2 * reach * (levels * steps - 1) + 1:
                break       # the trapezoids of a block would overlap

            def commands():
                for k, comp in enumerate(members):
                    comp.set_schedule(timetile.split_tile_map(comp, k, levels, sizes, reach, origin, names,
                                                              wrap=tiles),
                                      names=names + [v.name for v in comp.vars[1:]])
                    comp.parallelize(names[2])
                for prev, comp in zip(members, members[1:]):
                    comp.after(prev, names[4])
            if self.attempt(commands, self.shared_storage):
                self.split_tiled[key] = list(sizes)
                for comp in members:     # (a trapezoid's rows start anywhere: whole vectors from each one's first)
                    if self._vectorize_innermost(comp, self.stages[comp.name], split=False) is None and \
                            comp.tags.get(comp.loops[-1]) is not None:
                        stage = self.stages[comp.name]
                        self._jam(comp, stage, {}, comp.loops[-1],
                                  jams.get(comp.name, model.jam_factor(stage, comp.loops[-1], resident=True)))
                return True
        return False

    # one loop nest ------------------------------------------------------------------
    def _schedule_stage(self, comp, choice, for_producer=False):
        """Order, tile, vectorize, parallelize and unroll one computation's loops; returns the loop
        at which a producer's tile would be computed (the innermost loop over tiles), or None."""
        stage = self.stages[comp.name]
        if not comp.loops:
            return None
        if not for_producer and choice.get("transpose", {}).get(comp.name, True):
            stage = self._transposed_copies(comp, stage)
        proposed = self.proposal.orders.get(comp.name) if self.proposal is not None else None
        orders = model.loop_orders(stage)
        if self.following is not None and proposed is not None and sorted(proposed) == sorted(comp.loops):
            orders = [tuple(proposed)] + orders
        for order in orders:
            if list(order) == comp.loops or self.attempt(lambda: comp.reorder(*order)):
                break
        self.differs |= proposed is not None and sorted(proposed) == sorted(comp.loops) and proposed != comp.loops
        origin = {v: v for v in comp.loops}     # loop name -> the variable it runs over
        level = None
        shape = choice.get("registers", {}).get(comp.name, model.register_tile())
        wants_registers = bool(shape) and not for_producer
        packed = wants_registers and self._pack(comp, stage, choice.get("pack", {}).get(comp.name))
        streams = choice.get("streams", {}).get(comp.name, model.STREAMS)
        transpose = choice.get("transpose", {}).get(comp.name, True)
        if not packed and not (wants_registers and self._register_tile(comp, stage, shape, streams, transpose)):
            level = self._tile(comp, stage, choice.get("tiles", {}).get(comp.name), origin, for_producer)
        vector_outer = None
        vector_var = origin.get(comp.loops[-1], comp.loops[-1])
        if choice.get("vectorize", {}).get(comp.name, True):
            vector_outer = self._vectorize_innermost(stage.comp, stage, origin)
            if vector_outer is None and comp.tags.get(comp.loops[-1]) is None and \
                    self._vectorize_scatter(comp, stage, origin):
                self.scattered.add(comp.name)
            if comp.tags.get(comp.loops[-1]) is not None:
                self.vectorized.add(comp.name)
        if vector_outer is not None:
            self._jam(comp, stage, origin, vector_outer,
                      choice.get("jam", {}).get(comp.name, model.jam_factor(stage, vector_var)))
        if vector_outer is None and comp.tags.get(comp.loops[-1]) is None and comp.name not in self.tile_params:
            factor = choice.get("interleave", {}).get(comp.name, model.CHAINS)
            if self._interleave(comp, stage, origin, factor) and choice.get("parallel", {}).get(comp.name, True):
                self._space_wavefront(comp, stage, origin, factor, choice.get("spacewave", {}).get(comp.name))
        vectors = stage.trip(vector_var) // machine.vector_lanes(comp.dtype) if vector_outer is not None else 0
        if choice.get("parallel", {}).get(comp.name, True) and self._parallelize(comp, stage, (vector_outer, vectors)):
            self.parallel.add(comp.name)
        factor = choice.get("unroll", {}).get(comp.name, 1)
        if vector_outer is not None and not model.reuses_along(stage, vector_var):
            # (a loop of chunks that carries a window is unrolled by LLVM itself, the window passed from
            # copy to copy; copies made here would each load their own: jacobi-1d at 400 points, 50 steps,
            # 12 placements of its arrays: 2.73 us a call against 3.41-4.05 unrolled by 2, 4 or 8)
            self.unrollable.add(comp.name)
        if vector_outer is not None and factor > 1:
            self.attempt(lambda: comp.unroll(vector_outer, factor))
        if comp.name not in self.scattered:
            # (copies of a scatter would each wait on the one before: its cells may be the next one's)
            self._unroll_small_loops(comp)
        return level

    def _parallelize(self, comp, stage, vector_outer=(None, 0)) -> bool:
        """Parallelize the first of the two outermost loops that carries no dependence. When that is the
        second, it is moved outermost where the dependences allow: inside a serial loop, it would start a
        parallel region at every iteration of that loop (a recurrence along rows, vectorized across them);
        where it runs the vectors of the vector loop (`vector_outer`: that loop and its trip count), in
        strips of STRIP_VECTORS. Only where each start of the parallel loop runs MIN_PARALLEL_WORK
        iterations. True if applied."""
        if stage.work() < MIN_PARALLEL_WORK:
            return False
        for k, loop in enumerate(comp.loops[:2]):
            if comp._loop_extent_bound(k, stage.context) == 1 or comp.tags.get(loop) is not None:
                continue      # one iteration at these sizes (nothing to share out), or tagged already
            outer = comp.loops[:k]

            def strips():
                strip, _ = comp.split(loop, STRIP_VECTORS)
                comp.reorder(strip, *outer)
                comp.parallelize(strip)
            in_strips = outer and loop == vector_outer[0] and vector_outer[1] >= 2 * STRIP_VECTORS
            if in_strips and self.attempt(strips, self.shared_storage):
                return True
            if outer and self.attempt(lambda: (comp.reorder(loop, *outer), comp.parallelize(loop)),
                                      self.shared_storage):
                return True
            if _work_per_start(stage, outer) >= MIN_PARALLEL_WORK and \
                    self.attempt(lambda: comp.parallelize(loop), self.shared_storage):
                return True
        return False

    def _pack(self, comp, stage, blocks) -> bool:
        """For a contraction nest (a, r, v) reading one array at (a, r) and another at (r, v), as a gemm
        does, where its arrays outgrow L2: BLIS's loop nest, with copies of the blocks it reads
        (cache_read, the packing), v cut into panels, r into kc blocks, a into mc blocks, each swept by
        mr x nr register tiles (mr values of a unrolled, nr of v as vectors). `blocks`: the search's
        (model.pack_blocks's keys), False for none, None for the model's. True if applied."""
        if blocks is False or len(comp.loops) < 3 or any(comp.tags.get(lp) is not None for lp in comp.loops):
            return False
        a, r, v = comp.loops[-3:]
        write, reads = stage.refs[0], [ref for ref in stage.refs[1:] if not ref.is_write]
        if write.touches(r) or not write.touches(a) or not write.consecutive_in(v):
            return False
        left = [ref for ref in reads if ref.touches(a) and ref.touches(r) and not ref.touches(v)]
        right = [ref for ref in reads if ref.touches(r) and ref.consecutive_in(v) and not ref.touches(a)]
        if len(left) != 1 or len(right) != 1 or left[0].array == right[0].array:
            return False
        arrays = {x.name: x for x in list(self.function.inputs) + list(self.function.computations)}
        lhs, rhs = arrays.get(left[0].array), arrays.get(right[0].array)
        if lhs is None or rhs is None:
            return False
        lanes = machine.vector_lanes(comp.dtype)
        model_blocks = model.pack_blocks(stage, a, r, v, lanes, comp.dtype.bytes)
        if blocks is None:
            if not model.needs_tiling(stage, [a, r, v]) or stage.trip(r) < 2 * model_blocks["kc"]:
                return False
            blocks = model_blocks
        b = blocks
        if stage.trip(v) < 2 * b["nr"] or stage.trip(a) < 2 * b["mr"]:
            return False
        def commands():
            self._start_at_zero(comp, (a, r, v))
            _, r0, a0 = recipes.blis_nest(comp, a, r, v, b["mc"], b["kc"], b["nc"], b["mr"], b["nr"])
            right_copy = comp.cache_read(rhs, at=r0)
            comp.cache_read(lhs, at=a0)
            right_copy.vectorize(right_copy.loops[-1], lanes)   # (its rows are runs of v)
        if self.attempt(commands, layout=True):
            self.packed[comp.name] = model_blocks
            return True
        return False

    def _transposed_broadcasts(self, comp, stage, v, a, reductions):
        """For a reduction nest whose reductions run outside the loop `a` over the written columns
        (model.streams_through_l1: mttkrp's A[i, j] += B[i, k, l] * C[k, j] * D[l, j], k and l outside
        j): copy each array read the same in every lane of v but stepping along `a` by whole rows, being
        stride-one along a reduction (C[k, j], D[l, j] in column-major order), transposed
        (`_copy_reads_transposed`), so that the loop over `a` reads consecutive elements instead of one
        cache line (and often one page) each."""
        self._copy_reads_transposed(comp, stage, reductions, lambda ref: not ref.touches(v) and ref.touches(a)
                                    and not ref.consecutive_in(a))

    def _transposed_copies(self, comp, stage) -> Stage:
        """For a reduction nest whose written element is stride-one along a loop v but whose reads of an
        array step along v by whole rows, being stride-one only along a loop the write does not move
        with (covariance's cov[i, j] += data[k, i] * data[k, j], a matrix's transpose times itself):
        copy that array transposed (`_copy_reads_transposed`), as BLAS packs a transposed operand, so
        that vectors along v load contiguous elements; laid out as the register tile reads it where the
        reduction is blocked. Returns the stage as it reads now."""
        write = stage.refs[0]
        v = next((x for x in stage.vars if write.consecutive_in(x)), None)
        reductions = [x for x in stage.vars if not write.touches(x)]
        reads = [ref for ref in stage.refs[1:] if ref.array != write.array]
        if v is None or not reductions or any(ref.consecutive_in(v) for ref in reads):
            return stage
        if self._copy_reads_transposed(comp, stage, reductions, lambda ref: ref.touches(v),
                                       panels=model.blocks_reduction(stage, reductions)):
            stage = Stage(comp, stage.extents, references(comp, stored=True), stage.context)
        return stage

    def _copy_reads_transposed(self, comp, stage, reductions, wanted, panels=False) -> bool:
        """Copy each 2-D array that `comp` reads where `wanted(ref)`, stride-one along one of
        `reductions`, once, before the nest, with its two dimensions swapped (`_copy_transposed`); only
        where the nest runs TRANSPOSE_WORK iterations per element copied. True if any was copied."""
        arrays = {x.name: x for x in list(self.function.inputs) + list(self.function.computations)}
        copied = set()      # (a copy replaces every read of its array)
        for ref in stage.refs[1:]:
            producer = arrays.get(ref.array)
            if producer is None or ref.array in copied or ref.array == stage.refs[0].array or len(ref.dims) != 2 \
                    or not wanted(ref) or not any(ref.consecutive_in(r) for r in reductions) \
                    or stage.work() < TRANSPOSE_WORK * elements(stage, ref):
                continue
            count = elements(stage, ref)
            if self.attempt(lambda: self._copy_transposed(comp, producer, arrays, panels, count), layout=True):
                copied.add(ref.array)
                self.transposed.add(comp.name)
        return bool(copied)

    def _copy_transposed(self, comp, producer, arrays, panels=False, count=0):
        """Commands: `comp` reads `producer` from a copy made at the root with its two dimensions
        swapped (in panels of REDUCTION_BLOCK rows by one vector where `panels`, as a register tile reads
        them); the copy of `count` elements transposed in blocks (`_transpose_in_blocks`)."""
        copy = comp.cache_read(producer, at=sched.root)
        rows, columns = copy.vars
        taken = {b.name for b in self.function.buffers} | set(arrays)
        row, column = rows - rows.lo, columns - columns.lo
        shape, index = [columns.hi - columns.lo, rows.hi - rows.lo], [column, row]
        if panels:
            depth, lanes = model.REDUCTION_BLOCK, machine.vector_lanes(producer.dtype)
            shape = [(shape[0] + depth - 1) // depth, (shape[1] + lanes - 1) // lanes, depth, lanes]
            index = [column // depth, row // lanes, floormod(column, depth), floormod(row, lanes)]
        copy.store_in(Buffer(sched.fresh_name(f"{producer.name}_T", taken), shape, producer.dtype), index)
        self.attempt(lambda: self._transpose_in_blocks(copy, producer.dtype, count >= MIN_PARALLEL_WORK),
                     layout=True)

    @classmethod
    def _transpose_in_blocks(cls, copy, dtype, parallel):
        """Commands: the transposing `copy` (its loops over the source's rows, then columns) runs in square
        blocks of one vector a side, lanes along the rows and the columns unrolled inside them, so that the
        back-end loads each block's rows whole and transposes them in registers; its rows of blocks in
        parallel where the copy is long enough to share out. (Covariance's copy at 280x240, element by
        element on one thread, was an eighth of the kernel's time.)"""
        lanes = machine.vector_lanes(dtype)
        rows, columns = copy.loops
        cls._start_at_zero(copy, (rows, columns))
        row_blocks, row = copy.split(rows, lanes)
        column_blocks, column = copy.split(columns, lanes)
        copy.reorder(row_blocks, column_blocks, row, column)
        copy.vectorize(row, lanes)
        copy.unroll(column, lanes)
        if parallel:
            copy.parallelize(row_blocks)

    def _register_tile(self, comp, stage, shape, streams=0, transpose=True) -> bool:
        """For a reduction nest (a, r..., v): v stride-one, the r loops ones the written element does not
        move with (one, as in a gemm, or several, as mttkrp's k and l), a one it does: keep a block of
        `shape` = (values of a, vectors of v) in registers across all of the r loops (unroll-and-jam), as
        BLIS's micro-kernel does. Where the write moves with v alone (doitgen's acc[p] over s), the block
        is as many vectors of v (at most the loop's), across the reduction loop just outside v. A v that is
        not innermost yet (a read stride-one along s put s there) moves inside the reduction loops after
        it. Where the reads that do not move with a outgrow the caches over the tile
        (model.streams_through_l1), the reduction loops go outside a's blocks instead, and the tile's sums
        stream through L1. Where the write moves with v alone and `streams` > 0, v is cut into one block
        per core and, around each vector of a block, `streams` iterations of the reduction are unrolled
        (`_stream_reduction`); and, where `transpose`, arrays read along `a` by whole rows are copied
        transposed (`_transposed_broadcasts`). True if applied."""
        write = stage.refs[0]
        v = next((x for x in comp.loops if write.consecutive_in(x)), None)
        # v goes innermost, past loops the write does not move with (reductions kept in their order)
        if v is None or any(write.touches(x) for x in comp.loops[comp.loops.index(v) + 1:]):
            return False
        inside = [x for x in comp.loops if x != v]
        if not inside:
            return False
        a = next((x for x in reversed(inside) if write.touches(x)), None)
        if a is None:
            reductions = inside[-1:]
        else:
            k = inside.index(a)
            reductions = inside[k + 1:]     # (a is the innermost loop the write moves with)
            if not reductions:              # (r, a, v): the run of loops just outside a it does not move with
                start = k
                while start > 0 and not write.touches(inside[start - 1]):
                    start -= 1
                reductions = inside[start:k]
        if not reductions:
            return False
        outer = [x for x in inside if x != a and x not in reductions]
        columns, vectors = shape
        width = machine.vector_lanes(comp.dtype)
        counts = [vectors]
        across = False      # (see below)
        if a is None:
            # no value of another loop to hold: the tile's registers hold vectors of v, each its own chain
            # of additions (one vector alone waits on the add's latency at every step: gesummv at 260^2,
            # 0.038 ms by one vector, 0.020 by 4 or 8). Not where a read along v is a gather, whose
            # throughput bounds the nest anyway (doitgen's C4[s, p]: 0.165 ms by one, 0.193 by 4). One
            # vector where more are refused (a computation fused with this one at v's vectors).
            gathered = [r for r in stage.refs[1:] if r.touches(v) and not r.consecutive_in(v)]
            if not gathered and streams and self._stream_reduction(comp, stage, v, reductions, outer, streams):
                return True
            # reads a row apart per lane but stride-one along the one reduction (bicg's A[i, j] for s[j]):
            # `width` iterations of it unrolled inside each vector, whose reads the CPU back-end loads
            # as a block of rows and transposes in registers (backends/cpu/transposed.py)
            across = transpose and bool(gathered) and len(reductions) == 1 and \
                all(r.consecutive_in(reductions[0]) for r in gathered) and stage.trip(reductions[0]) >= 2 * width
            widest = 1 if gathered else max(1, min(columns * vectors, stage.trip(v) // width))
            counts = [widest, 1] if widest > 1 else [1]
            if stage.trip(v) < 2 * width:
                return False
        elif stage.trip(v) < 2 * vectors * width or stage.trip(a) < 2 * columns:
            return False
        streams = a is not None and model.streams_through_l1(stage, a, v, reductions, vectors * width)
        if streams:
            columns = model.STREAM_COLUMNS
            if transpose:
                self._transposed_broadcasts(comp, stage, v, a, reductions)
        blocked = a is not None and not streams and model.blocks_reduction(stage, reductions)
        block = [] if a is None else [a]

        def commands(count):
            if comp.loops[:-1] != [*outer, *block, *reductions]:
                comp.reorder(*outer, *block, *reductions, v)
            self._start_at_zero(comp, (*block, *reductions, v))
            v0, v1 = comp.split(v, count * width)
            if a is None:
                if across:
                    r0, r1 = comp.split(reductions[0], width)
                    comp.reorder(v0, r0, v1, r1)
                    comp.unroll(r1, width)
                    comp.vectorize(v1, width)
                    return
                comp.reorder(v0, *reductions, v1)
                if count > 1:
                    comp.unroll(comp.vectorize(v1, width)[0], count)
                    return
            else:
                a0, a1 = comp.split(a, columns)
                if streams:
                    # the innermost reduction's iterations unrolled inside the columns: each accumulator
                    # in a register over them (the sums still add in the source's order)
                    jam = model.STREAM_JAM if stage.trip(reductions[-1]) >= 2 * model.STREAM_JAM else 1
                    if jam > 1:
                        r0, r1 = comp.split(reductions[-1], jam)
                        comp.reorder(v0, *reductions[:-1], r0, a0, a1, r1, v1)
                        comp.unroll(r1, jam)
                    else:
                        comp.reorder(v0, *reductions, a0, a1, v1)
                elif blocked:
                    r0, r1 = comp.split(reductions[0], model.REDUCTION_BLOCK)
                    comp.reorder(a0, r0, v0, r1, a1, v1)
                else:
                    comp.reorder(a0, v0, *reductions, a1, v1)
                comp.unroll(a1, columns)
            comp.vectorize(v1, count * width)
        for count in counts:
            if self.attempt(lambda: commands(count)):
                self.registers[comp.name] = tuple(shape)
                if across:
                    self.transposed.add(comp.name)     # (the search's "transpose" off reads lane by lane)
                return True
        return False

    def _stream_reduction(self, comp, stage, v, reductions, outer, streams) -> bool:
        """For a reduction (outer..., r, v) whose write moves with v alone: v in one block per core
        (vectors of the machine's width), then r in steps of `streams`, each vector of the block, and the
        `streams` iterations of r unrolled around its vector loop: as many reads along r stream from
        memory at once (the columns of a matrix-vector product), the sums of a block stay in L1. True if
        applied (recorded for the search's other choices)."""
        width = machine.vector_lanes(comp.dtype)
        if len(reductions) != 1 or stage.trip(v) < 2 * machine.cores() * width or \
                stage.trip(reductions[0]) < 2 * streams:
            return False
        block = -(-stage.trip(v) // (machine.cores() * width)) * width

        def commands():
            if comp.loops[:-1] != [*outer, *reductions]:
                comp.reorder(*outer, *reductions, v)
            self._start_at_zero(comp, (*reductions, v))
            v0, v1 = comp.split(v, block)
            r0, r1 = comp.split(reductions[0], streams)
            v10, v11 = comp.split(v1, width)
            comp.reorder(*outer, v0, r0, v10, r1, v11)
            comp.unroll(r1, streams)
            comp.vectorize(v11, width)
        if self.attempt(commands):
            self.streamed[comp.name] = streams
            return True
        return False

    @staticmethod
    def _start_at_zero(comp, loops):
        """Shift each of `loops` whose first value is a constant other than 0 to start at 0, so that the
        tiles a split cuts start on the array's first element, as its vectors do (a Julia loop from 1 would
        otherwise make every vector straddle two of the array's aligned vectors)."""
        for loop in loops:
            first = constant_lower_bound(comp, loop)
            if first:
                comp.shift(loop, -first)

    def _tile(self, comp, stage, sizes, origin, for_producer=False):
        """Tile the innermost band of 3 (else 2) loops where it has reuse and all its edges but one
        are shorter than their loops (tiles over the whole of a loop still bound the working set)."""
        lanes = machine.vector_lanes(comp.dtype)
        if sizes == []:
            return None       # the search's "no tiling"
        for n in (3, 2):
            if len(comp.loops) < n or not (for_producer or model.has_reuse(stage, comp.loops[-n:])):
                continue
            band = comp.loops[-n:]
            if any(stage.trip(v) <= 1 for v in band):
                continue
            self.bands.setdefault(comp.name, list(band))    # the band the search may tile
            if sizes == model.PARAMETRIC:
                params = _tile_size_params(comp, band)
                if self.attempt(lambda: comp.tile(*band, *params)):
                    self.tile_params[comp.name] = [p.name for p in params]
                    return None     # (no loop over tiles in the schedule for a producer to be computed at)
                continue
            if sizes is not None and len(sizes) == n:
                edges = sizes
            elif for_producer or model.needs_tiling(stage, band):
                edges = model.tile_sizes(stage, band, lanes, machine.cache_bytes(2) // 2)
            else:
                continue
            cut = sum(e < stage.trip(v) for v, e in zip(band, edges))
            if cut < max(1, n - 1):
                continue
            if self.attempt(lambda: comp.tile(*band, *edges)):
                self.tiled.add(comp.name)
                loops = comp.loops[-2 * n:]
                for k, v in enumerate(band):
                    origin[loops[k]], origin[loops[n + k]] = v, v
                return loops[n - 1]
        return None

    def _vectorize_innermost(self, comp, stage, origin=None, split=True):
        """Vectorize the innermost loop where it walks memory with stride one (with `split=False` left
        whole: vectors from each run's first iteration, see Computation.vectorize); returns the loop
        outside the vector lanes when vectorize split it, else None."""
        if not comp.loops:
            return None
        inner = comp.loops[-1]
        var = (origin or {}).get(inner, inner)
        lanes = machine.vector_lanes(comp.dtype)
        if var not in stage.extents or stage.trip(var) < lanes or comp.tags.get(inner) is not None:
            return None
        if not any(r.consecutive_in(var) for r in stage.refs):
            return None
        first = constant_lower_bound(comp, inner) if var == inner and split else None
        before = list(comp.loops)

        def commands():
            if first:   # whole vectors from the loop's first value on: no partial vector at its start
                comp.shift(inner, -first)
            comp.vectorize(inner, lanes, split=split)
        if not self.attempt(commands, self.shared_storage):
            return None
        return comp.loops[-2] if len(comp.loops) > len(before) else None

    def _vectorize_scatter(self, comp, stage, origin) -> bool:
        """For a reduction into an element chosen by the data (a histogram's bin): successive iterations
        of a reduction loop may add to one element, a chain through memory, while the values of a loop
        the write moves with write distinct elements. The innermost such loop that carries no dependence
        goes innermost, vectorized by model.SCATTER_VECTORS vectors: its lanes gather their reads and
        scatter their sums, as Halide's vectorized histograms do, and each element still adds its terms
        in the source's order. True if applied."""
        write = stage.refs[0]
        if all(coeffs is not None for coeffs in write.dims):
            return False
        lanes = model.SCATTER_VECTORS * machine.vector_lanes(comp.dtype)
        for loop in reversed(comp.loops):
            var = origin.get(loop, loop)
            if comp.tags.get(loop) is not None or stage.trip(var) < 2 * lanes:
                continue
            if not any(coeffs and coeffs.get(var) for coeffs in write.dims) or not self._carries_nothing(comp, loop):
                continue

            def commands():
                comp.reorder(*(x for x in comp.loops if x != loop), loop)
                comp.vectorize(loop, lanes)
            if self.attempt(commands):
                return True
        return False

    def _interleave(self, comp, stage, origin, factor) -> bool:
        """Where the innermost loop carries a dependence (a recurrence along it, as a Gauss-Seidel sweep):
        skew it by the loop around it, by the least factor that leaves `factor` consecutive values of
        that loop independent at one value of the inner one, and unroll those values there, so the CPU
        runs `factor` independent chains of operations instead of one. True if applied."""
        if factor <= 1 or len(comp.loops) < 2:
            return False
        outer, inner = comp.loops[-2:]
        if any(comp.tags.get(l) is not None for l in (outer, inner)):
            return False
        if stage.trip(origin.get(outer, outer)) < 2 * factor or stage.trip(origin.get(inner, inner)) < 2:
            return False
        if self._carries_nothing(comp, inner):
            return False     # no chain along the inner loop: its iterations overlap already
        for skew in range(model.MAX_SKEW + 1):
            saved = save(self.function)
            loops = {}

            def commands():
                if skew:
                    comp.skew(outer, inner, skew)
                loops["blocks"], loops["chains"] = comp.split(outer, factor)
                comp.reorder(loops["blocks"], inner, loops["chains"])
            if self.attempt(commands) and self._carries_nothing(comp, loops["chains"]) and \
                    self.attempt(lambda: comp.unroll(loops["chains"], factor)):
                self.interleaved[comp.name] = (loops["blocks"], inner, origin.get(outer, outer),
                                               origin.get(inner, inner))
                return True
            restore(self.function, saved)
        return False

    def _space_wavefront(self, comp, stage, origin, factor, tiles) -> bool:
        """For an interleaved sweep (loops chains' outer loop a, inner loop b, the chains) that no loop can
        run in parallel: tile (a, b) by `tiles` (rows of a's values times `factor`, values of b), skew
        the loop over b's tiles by the one over a's, and run each wavefront's tiles in parallel, where
        the dependences allow. `tiles`: the search's, False for none, None for the model's
        (model.space_wave). True if applied."""
        a, b, rows, columns = self.interleaved[comp.name]
        k = comp.loops.index(b)
        rest = comp.loops[k + 1:]
        if any(comp.tags.get(x) is not None for x in comp.loops[:k + 1]):
            return False
        self.space_waves[comp.name] = None
        if tiles is None:
            tiles = model.SPACE_WAVE if model.space_wave(stage, rows, columns) else False
        if not tiles:
            return False
        tile_rows, tile_columns = tiles

        def commands():
            a0, a1 = comp.split(a, max(1, tile_rows // factor))
            b0, b1 = comp.split(b, tile_columns)
            comp.reorder(a0, b0, a1, b1, *rest)
            comp.skew(a0, b0, 1)
            comp.interchange(a0, b0)
            comp.parallelize(a0)
        if self.attempt(commands):
            self.space_waves[comp.name] = tuple(tiles)
            self.parallel.add(comp.name)
            return True
        return False

    def _jam(self, comp, stage, origin, vector_outer, factor) -> bool:
        """For a stencil along the loop around `vector_outer` (model.reuses_along; `vector_outer` the loop
        around the vector lanes, or the vector loop itself where it is left whole): compute `factor`
        consecutive values of that loop inside the vector loop, unrolled (unroll-and-jam), so that the
        compiler loads each vector they share once. True if applied."""
        k = comp.loops.index(vector_outer)
        loop = comp.loops[k - 1] if k else None
        if loop is None or comp.tags.get(loop) is not None or not model.reuses_along(stage, origin.get(loop, loop)):
            return False
        self.jammable[comp.name] = 0
        if not factor or stage.trip(origin.get(loop, loop)) < 2 * factor:
            return False

        def commands():
            inner = comp.split(loop, factor)[1]
            comp.reorder(vector_outer, inner)
            comp.unroll(inner, factor)
        if self.attempt(commands):
            self.jammable[comp.name] = factor
            return True
        return False

    def _carries_nothing(self, comp, loop) -> bool:
        """Whether no dependence is carried by `loop` (its iterations could run in any order), asked as
        the parallel tag's check asks it; the schedule is left as it was."""
        saved = save(self.function)
        try:
            comp.parallelize(loop)
            return self.checker.legal(layout=False)
        except MascarponeError:
            return False
        finally:
            restore(self.function, saved)

    def _unroll_small_loops(self, comp):
        """Unroll whole the untagged loops among the innermost three with a small constant trip count."""
        for loop in comp.loops[-3:]:
            if comp.tags.get(loop) is not None:
                continue
            extent = comp._loop_extent(comp.loops.index(loop))
            if extent is not None and 1 < extent <= model.SMALL_LOOP:
                self.attempt(lambda: comp.unroll(loop, extent))


def _tile_size_params(comp, loops) -> list:
    """The size parameters of a parametric tile of `loops` of `comp` (a screening's)."""
    return [Param(f"T_{comp.name}_{v}") for v in loops]


def _work_per_start(stage, outer) -> int:
    """Iterations of the nest each run of a loop inside the loops `outer` covers (a loop that is not one of
    the stage's variables counts as one iteration)."""
    runs = 1
    for loop in outer:
        runs *= max(1, stage.trip(loop, default=1)) if loop in stage.extents else 1
    return stage.work() // runs
