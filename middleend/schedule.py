"""Layer II: scheduling commands on a computation.

Each computation keeps a map from its domain to its own loops (named), the tags
of those loops, and where it is placed relative to other computations. Every
command is a small affine rewrite of that map, checks its arguments, records
itself in the function's history (so a later legality error can name it) and
returns the loops it creates.
"""
from __future__ import annotations

from dataclasses import replace

import islpy as isl

from .affine import coalesced, without_empty_pieces, without_size_constraints
from .dependences import source_nests
from .errors import ScheduleError
from .expr import Access, walk
from .isl_budget import OutOfOperations, operations_at_most
from .loopir import LoopKind
from .parametric_tiles import ParametricBand, positions, size_name

#: block (and thread) dimensions a GPU launch has at most
GPU_DIMS = 3


class Root:
    """The level outside every loop: `c.after(b, ms.root)` runs c after all of b."""

    name = "root"

    def __repr__(self):
        return "ms.root"


root = Root()


class LoopVar:
    """A loop created by a command (`io, ii = c.split(i, 8)`); pass it to later commands."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return self.name

    __str__ = __repr__


def loop_name(level) -> str:
    """The loop name of a Var, a LoopVar or a string."""
    if isinstance(level, str):
        return level
    name = getattr(level, "name", None)
    if not isinstance(name, str):
        raise ScheduleError(f"expected a loop (a Var, a loop returned by a command, or its name), got {level!r}")
    return name


def fresh_name(base, taken):
    """`base`, or `base_1`, `base_2`... : the first not in `taken`."""
    name, k = base, 1
    while name in taken:
        name, k = f"{base}_{k}", k + 1
    return name


def _positive_int(value, what, command):
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ScheduleError(f"{command}: {what} must be a positive integer, got {value!r}")
    return value


class Schedulable:
    """The scheduling state and commands of a computation (mixed into Computation)."""

    def __init__(self):
        self.loops = [v.name for v in self.vars]
        dims = ", ".join(self.loops)
        self.loop_map = isl.Map(f"{{ {self.name}[{dims}] -> [{dims}] }}")
        # a schedule relative to the bounds of what is computed at once (see set_schedule): the map with
        # those bounds as free parameters, and {variable: (lo parameter, hi parameter)}
        self.tile_map = None
        self.bound_params = {}
        self.at_root_instead = False    # computed at the root though computed at a loop (see below)
        self.tags = {}
        self.compute_at_target = None   # (consumer, loop name)
        self.stored_at_root = False     # with compute_at: a sliding window, each instance computed once
        self.store_level = None          # with compute_at: the consumer's loop its tile buffer lives in
        self.inlined = False
        self.user_buffer = None          # set by store_in
        self.user_store_index = None
        self.buffer = None               # chosen at lowering
        self.store_index = None
        self.folds = {}
        self.partitions = []             # (dim, factor, kind) of the storage, copied onto its buffer
        self.storage_distribution = None  # distribute(dim=...): the dimension held in blocks per MPI rank
        self.parametric_bands = ()       # ParametricBands: tiles whose sizes the call gives
        self.initial_state = self.snapshot()

    # helpers ----------------------------------------------------------------
    def _loop_index(self, level, command) -> int:
        name = loop_name(level)
        if name not in self.loops:
            band = self._band_with_tile_loop(name)
            if band is not None:
                raise ScheduleError(f"{command}: {name} is a tile loop of {band.command}, made when the code is "
                                    f"generated; of the scheduling commands only parallelize takes it")
            raise ScheduleError(f"{command}: {self.name} has no loop named {name!r}; its loops are {self.loops}")
        return self.loops.index(name)

    def _band_with_tile_loop(self, name):
        return next((b for b in self.parametric_bands if name in b.tile_loops), None)

    def _fresh(self, base):
        return fresh_name(base, self.loops)

    def _rewrite(self, new_loops, exprs, constraints=""):
        """Compose the loop map with `{ [loops] -> [exprs] : constraints }`."""
        for band in self.parametric_bands:
            positions(self.name, new_loops, band)
        text = f"{{ [{', '.join(self.loops)}] -> [{', '.join(exprs)}]"
        text += f" : {constraints} }}" if constraints else " }"
        step = isl.Map(text)
        self.loop_map = _named_loops(self.loop_map.apply_range(step), new_loops)
        if self.tile_map is not None:
            self.tile_map = _named_loops(self.tile_map.apply_range(step), new_loops)
        self.loops = list(new_loops)

    def _record(self, text):
        self.function._record(f"{self.name}.{text}")

    def _no_longer_inlined(self, command):
        if self.inlined:
            raise ScheduleError(f"{command}: {self.name} is inlined and has no loops of its own")

    # loop transformations -------------------------------------------------------
    def split(self, level, factor, names=None):
        """Split loop `level` into an outer loop and an inner loop of `factor` iterations.

        With an `ms.Param` as the factor the split is parametric (see `tile`): returns (the tile loop,
        `level` itself, which then runs over one tile)."""
        if _is_param(factor):
            return self._parametric_tile([level], [factor], f"split({loop_name(level)}, {factor.name})")
        cmd = f"split({loop_name(level)}, {factor})"
        self._no_longer_inlined(cmd)
        k = self._loop_index(level, cmd)
        factor = _positive_int(factor, "the factor", cmd)
        name = self.loops[k]
        outer, inner = names or (self._fresh(f"{name}0"), self._fresh(f"{name}1"))
        if outer in self.loops or inner in self.loops or outer == inner:
            raise ScheduleError(f"{cmd}: loop names {outer!r}, {inner!r} clash with {self.loops}")
        new = self.loops[:k] + [outer, inner] + self.loops[k + 1:]
        exprs = self.loops[:k] + [f"floor({name}/{factor})", f"{name} mod {factor}"] + self.loops[k + 1:]
        tag = self.tags.pop(name, None)
        self._rewrite(new, exprs)
        if tag:
            self.tags[outer] = tag
        self._record(cmd)
        return LoopVar(outer), LoopVar(inner)

    def _adjacent_loops(self, levels, cmd) -> list:
        """The positions of the loops `levels`, which a tile takes adjacent and in nesting order."""
        idx = [self._loop_index(l, cmd) for l in levels]
        if idx != list(range(idx[0], idx[0] + len(idx))):
            raise ScheduleError(f"{cmd}: tiled loops must be adjacent and in nesting order; loops are {self.loops}")
        return idx

    def _parametric_tile(self, levels, sizes, cmd):
        self._no_longer_inlined(cmd)
        idx = self._adjacent_loops(levels, cmd)
        names = tuple(size_name(size, cmd) for size in sizes)
        sizes_of_function = set(self.function.param_names)
        loops = {n for c in self.function.computations for n in list(c.loops) + [v.name for v in c.vars]}
        for n in names:
            if n in sizes_of_function:
                raise ScheduleError(f"{cmd}: {n} is a size of {self.function.name}; a tile size needs a "
                                    f"parameter of its own")
            if n in loops:
                raise ScheduleError(f"{cmd}: {n} names a loop of {self.function.name}; give the tile size "
                                    f"a name of its own")
        band_loops = tuple(self.loops[k] for k in idx)
        for band in self.parametric_bands:
            if set(band.loops) & set(band_loops):
                raise ScheduleError(f"{cmd}: loop(s) {sorted(set(band.loops) & set(band_loops))} are tiled "
                                    f"already by {band.command}")
        taken = set(self.loops) | {t for b in self.parametric_bands for t in b.tile_loops}
        tile_loops = []
        for loop in band_loops:
            tile_loops.append(fresh_name(f"{loop}0", taken))
            taken.add(tile_loops[-1])
        if any(self.tags.get(loop, (LoopKind.PARALLEL,))[0] != LoopKind.PARALLEL for loop in band_loops):
            raise ScheduleError(f"{cmd}: tag the loops of a parametric tile after tiling them (parallelize a "
                                f"tile loop, vectorize the innermost loop)")
        band = ParametricBand(band_loops, names, tuple(tile_loops), f"{self.name}.{cmd}")
        self.parametric_bands += (band,)
        self._record(cmd)
        return tuple(LoopVar(x) for x in tile_loops + list(band_loops))

    def _set_band(self, old, new):
        self.parametric_bands = tuple(new if b is old else b for b in self.parametric_bands)

    def interchange(self, a, b):
        """Swap loops `a` and `b`."""
        cmd = f"interchange({loop_name(a)}, {loop_name(b)})"
        i, j = self._loop_index(a, cmd), self._loop_index(b, cmd)
        order = list(self.loops)
        order[i], order[j] = order[j], order[i]
        self._rewrite(order, order)
        self._record(cmd)
        return LoopVar(order[i]), LoopVar(order[j])

    def reorder(self, *levels):
        """Put the named loops in the given order (outermost first), keeping the others in place."""
        cmd = f"reorder({', '.join(loop_name(l) for l in levels)})"
        idx = [self._loop_index(l, cmd) for l in levels]
        if len(set(idx)) != len(idx):
            raise ScheduleError(f"{cmd}: a loop is named twice")
        order = list(self.loops)
        for pos, name in zip(sorted(idx), (self.loops[i] for i in idx)):
            order[pos] = name
        self._rewrite(order, order)
        self._record(cmd)
        return tuple(LoopVar(self.loops[i]) for i in sorted(idx))

    def tile(self, *args):
        """Tile 2 or 3 adjacent loops: tile(y, x, ty, tx) -> (y0, x0, y1, x1); 3-D likewise.

        With `ms.Param` sizes the tiles are parametric: their sizes are arguments of the compiled kernel
        (one kernel runs every size), the band must be permutable and nest perfectly, and the result is
        (y0, x0, y, x): the tile loops, made when the code is generated (only `parallelize` takes
        them), and the band's own loops, each running over one tile. Vectorizing the innermost of those
        runs it in chunks of that many lanes without splitting it."""
        if len(args) not in (4, 6):
            raise ScheduleError(f"{self.name}.tile takes 2 or 3 loops and as many sizes, got {args}")
        n = len(args) // 2
        levels, sizes = args[:n], args[n:]
        if any(map(_is_param, sizes)):
            names = ", ".join(getattr(s, "name", repr(s)) for s in sizes)
            cmd = f"tile({', '.join(loop_name(l) for l in levels)}, {names})"
            return self._parametric_tile(levels, sizes, cmd)
        cmd = f"tile({', '.join(loop_name(l) for l in levels)}, {', '.join(map(str, sizes))})"
        idx = self._adjacent_loops(levels, cmd)
        for s in sizes:
            _positive_int(s, "a tile size", cmd)
        outers, inners = [], []
        for level, size in zip(levels, sizes):
            o, i = self.split(level, size)
            self.function._history.pop()
            outers.append(o.name)
            inners.append(i.name)
        start = idx[0]
        order = self.loops[:start] + outers + inners + self.loops[start + 2 * n:]
        self._rewrite(order, order)
        self._record(cmd)
        return tuple(LoopVar(x) for x in outers + inners)

    def shift(self, level, amount):
        """Shift loop `level` by a constant: it runs over [lo + amount, hi + amount)."""
        cmd = f"shift({loop_name(level)}, {amount})"
        k = self._loop_index(level, cmd)
        if isinstance(amount, bool) or not isinstance(amount, int):
            raise ScheduleError(f"{cmd}: the amount must be an integer")
        exprs = list(self.loops)
        exprs[k] = f"{self.loops[k]} + {amount}"
        self._rewrite(self.loops, exprs)
        self._record(cmd)
        return (LoopVar(self.loops[k]),)

    def skew(self, outer, inner, factor=1):
        """Skew `inner` by `factor` times `outer` (inner' = inner + factor * outer), for wavefronts."""
        cmd = f"skew({loop_name(outer)}, {loop_name(inner)}, {factor})"
        i, j = self._loop_index(outer, cmd), self._loop_index(inner, cmd)
        if i >= j:
            raise ScheduleError(f"{cmd}: {self.loops[i]} must be outside {self.loops[j]}")
        _positive_int(factor, "the factor", cmd)
        exprs = list(self.loops)
        exprs[j] = f"{self.loops[j]} + {factor}*{self.loops[i]}"
        self._rewrite(self.loops, exprs)
        self._record(cmd)
        return LoopVar(self.loops[i]), LoopVar(self.loops[j])

    def reverse(self, level):
        """Run loop `level` backwards."""
        cmd = f"reverse({loop_name(level)})"
        k = self._loop_index(level, cmd)
        exprs = list(self.loops)
        exprs[k] = f"-{self.loops[k]}"
        self._rewrite(self.loops, exprs)
        self._record(cmd)
        return (LoopVar(self.loops[k]),)

    def set_schedule(self, schedule, names=None, bounds=None, root_bounds=None):
        """Replace the loop map by an isl map from this computation's domain to its new loops.

        The map may send an instance to several times (it then runs at each, e.g. a tile shifted
        back over its neighbour recomputes a few points); distinct instances need distinct times.

        `bounds` ({variable: (lo, hi)}, names of parameters of the map) makes the schedule relative
        to the bounds of that variable over what is computed at once, as Halide anchors a split at
        its loop's min: at the root they take `root_bounds` ({variable: (lo, hi)}, isl PwAffs of the
        sizes or isl text; by default the bounding box of the domain), computed at a consumer's loop
        the bounding box of each tile. The instances run are those of the domain the loops reach.
        """
        m = isl.Map(schedule) if isinstance(schedule, str) else schedule
        cmd = f"set_schedule({m})"
        if m.get_tuple_name(isl.dim_type.in_) != self.name:
            raise ScheduleError(f"{cmd}: the map's domain must be {self.name}[...]")
        dom = self.domain
        if m.dim(isl.dim_type.in_) != dom.dim(isl.dim_type.set):
            raise ScheduleError(f"{cmd}: {self.name} has {dom.dim(isl.dim_type.set)} variables")
        m = m.reset_tuple_id(isl.dim_type.out)
        bounds = dict(bounds or {})
        var_names = [v.name for v in self.vars]
        for var, pair in bounds.items():
            if var not in var_names:
                raise ScheduleError(f"{cmd}: bounds name {var!r}, which is not a variable of {self.name}")
            for p in pair:
                if m.find_dim_by_name(isl.dim_type.param, p) < 0:
                    raise ScheduleError(f"{cmd}: the bound parameter {p!r} of {var} does not occur in the map")
                if p in self.function.param_names:
                    raise ScheduleError(f"{cmd}: the bound parameter {p!r} of {var} is a size of the function; "
                                        f"name it apart")
        tile_map = m if bounds else None
        if bounds:
            m = _bind_at_root(m, bounds, self._root_bounds(root_bounds or {}, bounds, cmd))
        if not m.intersect_domain(dom).is_injective():
            raise ScheduleError(f"{cmd}: the schedule must give distinct times to distinct instances")
        n = m.dim(isl.dim_type.out)
        names = list(names) if names else [m.get_dim_name(isl.dim_type.out, i) or f"t{i}" for i in range(n)]
        if len(names) != n or len(set(names)) != n:
            raise ScheduleError(f"{cmd}: need {n} distinct loop names, got {names}")
        self.loop_map = _named_loops(m, names)
        self.tile_map = _named_loops(tile_map, names) if tile_map is not None else None
        self.bound_params = bounds
        self.loops = names
        self.tags = {}
        self._record(f"{cmd[:-1]}{_schedule_options(m if tile_map is None else tile_map, names, bounds)})")
        return tuple(LoopVar(x) for x in names)

    def _root_bounds(self, given, bounds, cmd):
        """{variable: (lo, hi) PwAffs of the sizes}: those given, else the bounding box of the domain."""
        names = [v.name for v in self.vars]
        params = sorted(self.function.param_names)
        out = {}
        for var in bounds:
            if var in given:
                out[var] = tuple(_param_pwaff(b, params, cmd) for b in given[var])
            else:
                d = names.index(var)
                out[var] = (self.domain.dim_min(d), self.domain.dim_max(d))
        return out

    # tags ---------------------------------------------------------------------
    def _tag(self, level, kind, factor, cmd):
        k = self._loop_index(level, cmd)
        self.tags[self.loops[k]] = (kind, factor)

    def _split_for_tag(self, level, width, kind):
        cmd = f"{kind if kind != LoopKind.VECTOR else 'vectorize'}({loop_name(level)}, {width})"
        k = self._loop_index(level, cmd)
        _positive_int(width, "the width" if kind == LoopKind.VECTOR else "the factor", cmd)
        if self._loop_extent(k) == width:
            self.tags[self.loops[k]] = (kind, width)
            self._record(cmd)
            return ()
        outer, inner = self.split(level, width)
        self.function._history.pop()
        self.tags[inner.name] = (kind, width)
        self._record(cmd)
        return outer, inner

    def _loop_extent(self, k):
        """The number of iterations of loop k when it is a constant, else None."""
        rng = self.loop_map.intersect_domain(self.domain).range()
        lo, hi = rng.dim_min(k), rng.dim_max(k)
        if lo.is_cst() and hi.is_cst():
            vals = []
            for pa in (lo, hi):
                pieces = pa.get_pieces()
                if len(pieces) != 1:
                    return None
                vals.append(pieces[0][1].get_constant_val().to_python())
            return vals[1] - vals[0] + 1
        return None

    def _loop_extent_bound(self, k, context=None):
        """The most iterations loop k runs for any sizes (for those of the isl parameter set `context`,
        where given), when that is a constant, else None."""
        domain = self.domain if context is None else self.domain.intersect_params(context)
        rng = self.loop_map.intersect_domain(domain).range()
        if rng.is_empty():
            return None
        most = rng.dim_max(k).sub(rng.dim_min(k)).max_val()   # over every value of the sizes
        return most.to_python() + 1 if most.is_int() else None

    def vectorize(self, level, width, split=True):
        """Run `level` as SIMD of `width` lanes; splits it by `width` first unless it has exactly that extent.

        Returns the (outer, inner) loops when it split, else (). With `split=False` the loop is not
        split, whatever its bounds: it runs in chunks of `width` lanes from its first iteration, the last
        chunk, where partial, under a lane mask (one iteration at a time where the CPU has no masked
        loads and stores, or where the loop adds to what it reads). A loop whose first iteration moves
        with the loops around it (a row of a skewed or trapezoidal tile) then starts a whole vector at its
        first element, rather than a partial one up to the next multiple of `width`. The innermost loop
        of a parametric tile is not split either: it runs in chunks of `width` lanes, the last ones of a
        partial tile one by one.
        """
        if not isinstance(split, bool):
            raise ScheduleError(f"vectorize({loop_name(level)}, {width}, split={split!r}): split must be True "
                                f"or False")
        band = next((b for b in self.parametric_bands if b.loops[-1] == loop_name(level)), None)
        if band is not None:
            cmd = f"vectorize({loop_name(level)}, {width})"
            self._set_band(band, replace(band, vector=_positive_int(width, "the width", cmd)))
            self._record(cmd)
            return ()
        if not split:
            cmd = f"vectorize({loop_name(level)}, {width}, split=False)"
            self._tag(level, LoopKind.VECTOR, _positive_int(width, "the width", cmd), cmd)
            self._record(cmd)
            return ()
        return self._split_for_tag(level, width, LoopKind.VECTOR)

    def unroll(self, level, factor=None):
        """Unroll `level` by `factor` (splitting it first unless it has exactly `factor` iterations).

        Without a factor, every iteration of `level` is unrolled: as many as it runs in one iteration
        of the loops around it, which for a loop of a computation placed by compute_at is known once
        its tiles are expanded (Halide's unroll of a loop whose extent bounds inference finds). Where
        that count has no constant bound (at most codegen.MAX_FULL_UNROLL), it runs as a plain loop,
        with a warning."""
        if factor is None:
            cmd = f"unroll({loop_name(level)})"
            self._tag(level, LoopKind.UNROLL, None, cmd)
            self._record(cmd)
            return ()
        return self._split_for_tag(level, factor, LoopKind.UNROLL)

    def parallelize(self, level):
        """Run the iterations of `level` on the thread pool."""
        cmd = f"parallelize({loop_name(level)})"
        band = self._band_with_tile_loop(loop_name(level))
        if band is not None:
            # a tile loop of a parametric tile: its band loop tagged, which the cut moves onto the tile
            # loop (the dependence and layout checks of the tag hold for the tiles a fortiori)
            level = band.loops[band.tile_loops.index(loop_name(level))]
        self._tag(level, LoopKind.PARALLEL, 1, cmd)
        self._record(cmd)

    def gpu(self, blocks, threads=()):
        """Run loops as GPU block and thread dimensions: each iteration of a block loop is a thread block,
        each iteration of a thread loop a thread of its block (outermost first; at most 3 of each, thread
        loops inside block loops). The GPU targets ("opencl", "cuda") launch the outermost band of
        block and thread loops as one kernel; CPU targets run these loops serially."""
        blocks = blocks if isinstance(blocks, (list, tuple)) else [blocks]
        threads = threads if isinstance(threads, (list, tuple)) else [threads]
        cmd = f"gpu([{', '.join(map(loop_name, blocks))}], [{', '.join(map(loop_name, threads))}])"
        for what, levels in (("block", blocks), ("thread", threads)):
            if len(levels) > GPU_DIMS:
                raise ScheduleError(f"{self.name}.{cmd}: at most {GPU_DIMS} {what} dimensions, got {len(levels)}")
        for b in blocks:
            self._tag(b, LoopKind.GPU_BLOCK, 1, cmd)
        for t in threads:
            self._tag(t, LoopKind.GPU_THREAD, 1, cmd)
        self._record(cmd)

    def gpu_tile(self, *args):
        """Tile 1 to 3 adjacent loops and run the tiles as GPU thread blocks: `gpu_tile(y, x, ty, tx)`
        returns `(y0, x0, y1, x1)` with y0, x0 block loops and y1, x1 thread loops of ty x tx threads
        (Tiramisu's tile_gpu, Halide's gpu_tile)."""
        if len(args) not in (2, 4, 6):
            raise ScheduleError(f"{self.name}.gpu_tile takes 1 to 3 loops and as many sizes, got {args}")
        n = len(args) // 2
        cmd = f"gpu_tile({', '.join(loop_name(l) for l in args[:n])}, {', '.join(map(str, args[n:]))})"
        if n == 1:
            loops = self.split(args[0], args[1])
        else:
            loops = self.tile(*args)
        self.function._history.pop()
        for b in loops[:n]:
            self.tags[b.name] = (LoopKind.GPU_BLOCK, 1)
        for t in loops[n:]:
            self.tags[t.name] = (LoopKind.GPU_THREAD, 1)
        self._record(cmd)
        return loops

    def distribute(self, level=None, *, dim=None):
        """Distribute over MPI ranks (the MPI back-end; other targets run the code as it is).

        `distribute(level)` gives each rank one block of consecutive iterations of loop `level`;
        `distribute(dim=d)` keeps this computation's storage (an output) in blocks of its dimension
        d, rank r holding the r-th (by default an output is split along the dimension its
        distributed loop moves along)."""
        if (level is None) == (dim is None):
            raise ScheduleError(f"{self.name}.distribute: give a loop, or dim= for the storage, not both")
        if dim is not None:
            from .distribution import check_dim
            owner = self.storage_owner
            cmd = f"distribute(dim={dim})"
            owner.storage_distribution = check_dim(owner.name, len(owner.vars), dim, f"{self.name}.{cmd}")
            self._record(cmd)
            return
        cmd = f"distribute({loop_name(level)})"
        self._tag(level, LoopKind.DISTRIBUTE, 1, cmd)
        self._record(cmd)

    def send_receive(self, consumer, at):
        """Move the values of this computation that `consumer` reads on other ranks right before
        `consumer`'s loop `at` (in each iteration of the loops around it), instead of where the MPI
        back-end would put them; refused if a value is written after that point."""
        from .distribution import record_transfer
        record_transfer(self.function, self, consumer, at,
                        f"{self.name}.send_receive({getattr(consumer, 'name', consumer)}, {loop_name(at)})")

    def pipeline(self, level, ii=1):
        """Mark `level` as an FPGA pipeline with initiation interval `ii` (kept for the HLS back-end)."""
        cmd = f"pipeline({loop_name(level)}, {ii})"
        self._tag(level, LoopKind.PIPELINE, _positive_int(ii, "the initiation interval", cmd), cmd)
        self._record(cmd)

    # placement ----------------------------------------------------------------
    def after(self, other, level=root):
        """Run this computation after `other`, sharing `other`'s loops down to `level` (ms.root: none). Two
        computations computed at one loop of one consumer are placed so within its tile nest."""
        self._place("after", other, level)
        return self

    def before(self, other, level=root):
        """Run this computation before `other`, sharing loops down to `level`."""
        self._place("before", other, level)
        return self

    def then(self, other, level=root):
        """`a.then(b, l)` runs b after a sharing loops down to l; returns b for chaining."""
        other._place("after", self, level)
        return other

    def _place(self, how, other, level, by_compute_at=False):
        cmd = f"{how}({getattr(other, 'name', other)}, {loop_name(level)})"
        if not isinstance(other, Schedulable) or other.function is not self.function:
            raise ScheduleError(f"{self.name}.{cmd}: {other!r} is not a computation of the same function")
        if other is self:
            raise ScheduleError(f"{self.name}.{cmd}: a computation cannot be placed relative to itself")
        if not by_compute_at and not self.computed_at_same_loop(other):
            for c in (self, other):
                if c.compute_at_target is not None:
                    raise ScheduleError(f"{self.name}.{cmd}: {c.name} is computed at "
                                        f"{c.compute_at_target[0].name}'s loop {c.compute_at_target[1]}, "
                                        f"which fixes its place; place {c.compute_at_target[0].name} instead")
        name = None if level is root else loop_name(level)
        self.function._ordering.append((how, self, other, name))
        self._record(cmd)

    def computed_at_same_loop(self, other) -> bool:
        """Whether both are computed at one loop of one consumer: in the same tile nest, where after/before
        place one next to the other (sharing their own loops: the elements of a Halide Tuple)."""
        return self.compute_at_target is not None and getattr(other, "compute_at_target", None) is not None \
            and self.compute_at_target[0] is other.compute_at_target[0] \
            and self.compute_at_target[1] == other.compute_at_target[1]

    def compute_at(self, consumer, level):
        """Compute the instances `consumer` needs inside its loop `level`, into a tile-sized buffer.

        Work is recomputed across consumer iterations where footprints overlap. A computation's
        updates come along: each runs, in order, over the part of the tile it writes.
        """
        cmd = f"compute_at({getattr(consumer, 'name', consumer)}, {loop_name(level)})"
        if not isinstance(consumer, Schedulable) or consumer.function is not self.function:
            raise ScheduleError(f"{self.name}.{cmd}: the consumer must be a computation of the same function")
        if consumer is self or consumer in self.updates:
            raise ScheduleError(f"{self.name}.{cmd}: a computation cannot be computed at itself or its updates")
        if self.updated is not None:
            raise ScheduleError(f"{self.name}.{cmd}: {self.name} updates {self.updated.name}; "
                                f"call {self.updated.name}.compute_at(...) and its updates follow")
        consumer._loop_index(level, f"{self.name}.{cmd}")
        self.compute_at_target = (consumer, loop_name(level))
        self._place("before", consumer, level, by_compute_at=True)
        self.function._history.pop()
        for u in self.updates:     # each placed just before the consumer: base, updates in order, consumer
            u.compute_at_target = self.compute_at_target
            u._place("before", consumer, level, by_compute_at=True)
            self.function._history.pop()
        self._record(cmd)

    def hosts(self):
        """The computations this one is computed at, innermost first: its consumer, the one that
        consumer is computed at, and so on (a cycle ends the walk)."""
        seen, c = {id(self)}, self
        while c.compute_at_target is not None and id(c.compute_at_target[0]) not in seen:
            c = c.compute_at_target[0]
            seen.add(id(c))
            yield c

    def compute_at_root_instead(self, readers):
        """Undo compute_at (and its storage): compute at the root, just before the first loop nest
        that holds one of `readers` (the computations that read it), with what is computed inside its
        own loops. Readers get the same values (computed at a loop, it computes part of the same domain
        there), at another cost. For a tile too intricate for isl (see statements.EXPANSION_OPERATIONS,
        which also restricts it to what its readers read); not a user command."""
        consumer, level = self.compute_at_target
        anchors = tuple(dict.fromkeys([consumer] + list(readers)))
        ordering = self.function._ordering
        for c in [self] + self.updates:
            c.compute_at_target = None
            # the placement compute_at made becomes one ahead of the readers (applied after every other
            # placement, out of the consumer's nest); in place, so the history's lengths stay right
            made = max(k for k, (how, who, other, at) in enumerate(ordering)
                       if how == "before" and who is c and other is consumer and at == level)
            ordering[made] = ("ahead", c, anchors, None)
        self.stored_at_root, self.store_level = False, None
        self.at_root_instead = True

    def store_root(self):
        """With compute_at: keep the whole buffer at the root, so each instance is computed once, in
        the first consumer iteration that needs it, and later iterations reuse it (Halide's
        `store_root().compute_at(...)` sliding window). The consumer's loops down to the compute_at
        level must then run in order: a parallel one raises IllegalScheduleError."""
        cmd = "store_root()"
        if self.updated is not None or self.updates:
            raise ScheduleError(f"{self.name}.{cmd}: a sliding window of a computation with updates is not "
                                f"supported; compute it at the root")
        self.stored_at_root = True
        self._record(cmd)
        return self

    def store_at(self, loop):
        """With compute_at: keep the tile buffer in the consumer's outer loop `loop`, so within each of
        its iterations every instance is computed once, in the first inner iteration that needs it,
        and later ones reuse it (Halide's `store_at(f, y).compute_at(f, x)` sliding window; the next
        iteration of `loop` starts again). The consumer's loops inside `loop`, down to the compute_at
        level, must run in order."""
        cmd = f"store_at({loop_name(loop)})"
        if self.compute_at_target is None:
            raise ScheduleError(f"{self.name}.{cmd}: store_at needs compute_at first")
        if self.updated is not None or self.updates:
            raise ScheduleError(f"{self.name}.{cmd}: a sliding window of a computation with updates is not "
                                f"supported; compute it at the root")
        consumer = self.compute_at_target[0]
        if loop_name(loop) not in consumer.loops:
            raise ScheduleError(f"{self.name}.{cmd}: {consumer.name} has no loop {loop_name(loop)!r}; its loops "
                                f"are {consumer.loops}")
        self.store_level = loop_name(loop)
        self._record(cmd)
        return self

    def inline(self):
        """Substitute this computation's expression into every reader; it gets no loops or storage."""
        cmd = "inline()"
        if self.updated is not None or self.updates:
            raise ScheduleError(f"{self.name}.{cmd}: a computation with updates cannot be inlined")
        if self.is_output:
            raise ScheduleError(f"{self.name}.{cmd}: an output cannot be inlined")
        self.inlined = True
        self._record(cmd)

    # Layer III ----------------------------------------------------------------
    def cache_shared(self, producer, at):
        """Stage in GPU shared memory, per iteration of this computation's loop `at` (a block loop, or a
        serial loop inside the block loops such as a loop over tiles of a reduction), the part of
        `producer` (an Input or a Computation) that this computation reads there; its reads of
        `producer` then read the copy. The part is computed by isl as for compute_at (a bounding
        box, allocated at `at`); the copy loops are spread over the thread loops inside `at`, which
        must be tagged first (gpu_tile, gpu). Returns the copy, a computation named
        `<producer>_shared`."""
        cmd = f"cache_shared({getattr(producer, 'name', producer)}, at={loop_name(at)})"
        k = self._loop_index(at, f"{self.name}.{cmd}")
        owner, bounds = self._staged_owner(producer, cmd)
        threads = [lp for lp in self.loops[k + 1:] if self.tags.get(lp, ("serial",))[0] == "gpu_thread"]
        if not threads:
            raise ScheduleError(f"{self.name}.{cmd}: {self.name} has no gpu_thread loops inside {self.loops[k]} to "
                                f"spread the copy over; tag them first (gpu_tile or gpu)")
        extents = [self._loop_extent_bound(self.loops.index(lp)) for lp in threads]
        if None in extents:
            bad = threads[extents.index(None)]
            raise ScheduleError(f"{self.name}.{cmd}: the thread loop {bad} needs a constant extent")
        copy, names = self._stage_copy(owner, bounds, "shared")
        copy.memory = "shared"
        # copy loops relative to the staged box: the innermost dimensions over the innermost threads
        spread = list(zip(names[::-1], extents[::-1]))[:len(names)][::-1]
        serial = names[:len(names) - len(spread)]
        lows = {v: f"{v}_lo" for v, _ in spread}
        outer = [f"floor(({v} - {lows[v]})/{t})" for v, t in spread]
        inner = [f"({v} - {lows[v]}) mod {t}" for v, t in spread]
        cons = " and ".join(f"{lows[v]} <= {v} <= {v}_hi" for v, _ in spread)
        params = ", ".join(p for v, _ in spread for p in (lows[v], f"{v}_hi"))
        loops = serial + [f"{v}_o" for v, _ in spread] + [f"{v}_t" for v, _ in spread]
        copy.set_schedule(f"[{params}] -> {{ {copy.name}[{', '.join(names)}] -> [{', '.join(serial + outer + inner)}] : "
                          f"{cons} }}", names=loops, bounds={v: (lows[v], f"{v}_hi") for v, _ in spread})
        for v, _ in spread:
            copy.tags[f"{v}_t"] = (LoopKind.GPU_THREAD, 1)
        copy.compute_at(self, self.loops[k])
        del self.function._history[-2:]
        self._record(cmd)
        return copy

    def cache_read(self, producer, at):
        """Copy, per iteration of this computation's loop `at`, the part of `producer` (an Input or a
        Computation) that this computation reads there into a buffer of its own, and read the copy
        instead: BLIS's packing of a gemm's blocks, where the copy's rows lie close together (the
        part is isl's bounding box, as for compute_at, allocated at `at`) instead of a whole row of
        the producer apart. With `at=ms.root`, the whole of `producer` is copied once, just before the
        outermost loop nest that holds this computation; `copy.store_in` then gives the copy a layout of
        its own (transposed, so that a loop that strides across the producer's rows walks the copy's).
        Returns the copy, a computation named `<producer>_copy` whose loops (`<copy>_d0`, `_d1`, ...)
        follow the producer's dimensions and can be scheduled."""
        cmd = f"cache_read({getattr(producer, 'name', producer)}, at={loop_name(at)})"
        k = None if at is root else self._loop_index(at, f"{self.name}.{cmd}")
        owner, bounds = self._staged_owner(producer, cmd)
        copy, _ = self._stage_copy(owner, bounds, "copy")
        if k is None:
            self.function._ordering.append(("ahead", copy, self, None))
            from .algorithm import Input
            if isinstance(owner, Input):
                copy.copies_input = owner   # all of it: a read outside the copy is one outside the input
        else:
            copy.compute_at(self, self.loops[k])
            del self.function._history[-1:]
        self._record(cmd)
        return copy

    def _staged_owner(self, producer, cmd):
        """(the storage a staging command copies from, its dimensions' bounds), checked."""
        from .algorithm import Input
        if isinstance(producer, Input):
            owner, bounds = producer, [(0, d) for d in producer.shape]
        elif isinstance(producer, Schedulable) and producer.function is self.function:
            owner = producer.storage_owner
            bounds = [(v.lo, v.hi) for v in owner.vars]
        else:
            raise ScheduleError(f"{self.name}.{cmd}: expected an Input or a Computation of the same function")
        if owner is self.storage_owner:
            raise ScheduleError(f"{self.name}.{cmd}: a computation cannot cache its own storage")
        exprs = [self.expr] + ([self.predicate] if self.predicate is not None else [])
        if not any(isinstance(n, Access) and n.target is owner for e in exprs for n in walk(e)):
            raise ScheduleError(f"{self.name}.{cmd}: {self.name} does not read {owner.name}")
        nests = source_nests(self.function)
        for writer in self.function.computations:
            if writer.storage_owner is owner and nests.get(writer) == nests.get(self, -1):
                raise ScheduleError(f"{self.name}.{cmd}: {writer.name} writes {owner.name} in the loop nest of the "
                                    f"source program that holds {self.name}, so no copy of the whole of {owner.name} "
                                    f"can run between them; stage a producer computed in an earlier loop nest")
        return owner, bounds

    def _stage_copy(self, owner, bounds, suffix):
        """(copy, names of its variables): a computation `<owner>_<suffix>` copying the storage `owner`
        (over `bounds`, see _staged_owner) element for element, run before this one, whose reads of it
        this computation now reads from the copy (the staging commands then schedule it)."""
        from .algorithm import Computation, Var
        from .expr import transform

        name = fresh_name(f"{owner.name}_{suffix}", {c.name for c in self.function.computations}
                          | {i.name for i in self.function.inputs} | {b.name for b in self.function.buffers})
        names = [f"{name}_d{d}" for d in range(len(bounds))]
        with self.function:
            copy_vars = [Var(v, lo, hi) for v, (lo, hi) in zip(names, bounds)]
            copy = Computation(name, copy_vars, owner[tuple(copy_vars)])
        copy.staged_for = self   # where a front-end's nesting is the source order, the copy runs before this
        # the original program copies before the consumer runs (declaration order is program order)
        comps = self.function.computations
        comps.remove(copy)
        comps.insert(comps.index(self), copy)

        def repl(n):
            if isinstance(n, Access) and n.target is owner:
                return Access(copy, [transform(i, repl) for i in n.indices])
            return None
        self.expr = transform(self.expr, repl)
        if self.predicate is not None:
            self.predicate = transform(self.predicate, repl)
        return copy, names

    def store_in(self, buffer, index=None):
        """Store this computation's values in `buffer` at `index` (expressions of its variables).

        The layout is checked when the function is lowered: every element written or read must lie
        inside the buffer for all sizes, and where the index is not one-to-one (or the buffer is shared),
        no value may be overwritten before a read that needs it (`ms.LayoutError`). A ring is written
        in the index (`[ms.floormod(t, 2), x]`)."""
        from .buffer import Buffer
        from .expr import lift, simplify
        owner = self.storage_owner
        cmd = f"store_in({getattr(buffer, 'name', buffer)})"
        if not isinstance(buffer, Buffer):
            raise ScheduleError(f"{self.name}.{cmd}: expected an ms.Buffer")
        if owner.folds:
            raise ScheduleError(f"{self.name}.{cmd}: {owner.name} is folded (storage_fold); write the ring in the "
                                f"index of store_in instead (ms.floormod(v, depth))")
        index = list(owner.vars) if index is None else [lift(i) for i in index]
        if len(index) != buffer.ndim:
            raise ScheduleError(f"{self.name}.{cmd}: {buffer.name} has {buffer.ndim} dimensions, index has {len(index)}")
        buffers = self.function.buffers
        saved = list(buffers)
        previous = owner.user_buffer
        if previous is not None and previous is not buffer and not any(
                c.user_buffer is previous for c in self.function.computations if c is not owner):
            buffers.remove(previous)     # replaced: nothing else stores in it
        try:
            self.function._add_buffer(buffer)
        except Exception:
            buffers[:] = saved
            raise
        owner.user_buffer, owner.user_store_index = buffer, index
        # the line declares an array new to the function, and gives an index other than the owner's own
        declared = (f"Buffer({buffer.name}, [{', '.join(str(simplify(lift(d))) for d in buffer.shape)}], "
                    f"{buffer.dtype})" if buffer not in saved else buffer.name)
        shown = [str(simplify(i)) for i in index]
        given = "" if shown == [v.name for v in owner.vars] else f", index=[{', '.join(shown)}]"
        self._record(f"store_in({declared}{given})")

    def partition(self, dim, factor=None, kind="cyclic"):
        """Partition dimension `dim` (an index, or a variable of the storage) of this computation's
        storage into banks that an FPGA reads in the same cycle: 'cyclic' by `factor` (element k in bank
        k mod factor), 'block' by `factor`, or 'complete' (registers). A tile or line buffer of a
        computation computed at another's loop is partitioned the same way. Other targets ignore it."""
        owner = self.storage_owner
        names = [v.name for v in owner.vars]
        from .buffer import partition_spec
        spec = partition_spec(owner.name, names, dim, factor, kind)
        owner.partitions = [p for p in owner.partitions if p[0] != spec[0]] + [spec]
        self._record(f"partition({names[spec[0]]}, {spec[1]}, {spec[2]!r})")
        return self

    def storage_fold(self, level, depth):
        """Keep only `depth` values along variable `level` of the storage (a ring buffer): the value of
        coordinate v lies at (v - the first coordinate) mod depth.

        The fold applies to the storage the values live in: the computation's buffer, or, computed at a
        consumer's loop, its tile buffer there (unless no tile is longer than `depth`). Lowering checks
        that no value is overwritten before a read that needs it (`ms.LayoutError`). An output may be
        folded along a time dimension only (its updates read it at earlier coordinates: `u[t]` from
        `u[t - 1]`); the caller then receives the ring, holding the last `depth` steps."""
        owner = self.storage_owner
        cmd = f"storage_fold({loop_name(level)}, {depth})"
        names = [v.name for v in owner.vars]
        if loop_name(level) not in names:
            raise ScheduleError(f"{self.name}.{cmd}: {owner.name} has no variable {loop_name(level)!r}; its variables are {names}")
        if owner.user_buffer is not None:
            raise ScheduleError(f"{self.name}.{cmd}: {owner.name} is stored with store_in({owner.user_buffer.name}); "
                                f"write the ring in its index instead (ms.floormod({loop_name(level)}, {depth}))")
        owner.folds[loop_name(level)] = _positive_int(depth, "the depth", cmd)
        self._record(cmd)

    def snapshot(self):
        """The scheduling state, for replay when an error must name the command that caused it."""
        return (list(self.loops), self.loop_map, dict(self.tags), self.compute_at_target, self.inlined,
                self.stored_at_root, self.store_level, self.tile_map, dict(self.bound_params),
                self.parametric_bands, self.at_root_instead)

    def restore(self, state):
        (self.loops, self.loop_map, self.tags, self.compute_at_target, self.inlined, self.stored_at_root,
         self.store_level, self.tile_map, self.bound_params, self.parametric_bands, self.at_root_instead) = (
            list(state[0]), state[1], dict(state[2]), state[3], state[4], state[5], state[6], state[7],
            dict(state[8]), state[9], state[10])


def _is_param(value) -> bool:
    from .algorithm import Param
    return isinstance(value, Param)


def _schedule_options(m, names, bounds):
    """The options of a set_schedule command as its history line shows them after the map: the loop
    names the map does not give, and the bounds (root bounds, which a front-end derives, are left out)."""
    shown = [m.get_dim_name(isl.dim_type.out, i) for i in range(len(names))]
    text = f", names=[{', '.join(names)}]" if shown != names else ""
    if bounds:
        text += ", bounds={" + ", ".join(f"{v}: ({lo}, {hi})" for v, (lo, hi) in bounds.items()) + "}"
    return text


def _named_loops(m, names):
    """`m` with its output dimensions named after the loops."""
    for i, n in enumerate(names):
        m = m.set_dim_name(isl.dim_type.out, i, n)
    return m


def _param_pwaff(value, params, cmd):
    """An isl PwAff of the sizes from a PwAff or isl text of an affine expression of them."""
    if isinstance(value, isl.PwAff):
        return value
    try:
        return isl.PwAff(f"[{', '.join(params)}] -> {{ [({value})] }}")
    except isl.Error:
        raise ScheduleError(f"{cmd}: the bound {value!r} is not an affine expression of the sizes") from None


def _bind_at_root(m, bounds, values):
    """`m` with the parameters of `bounds` ({var: (lo, hi) parameter names}) set to `values`
    ({var: (lo, hi) PwAffs of the sizes}) and projected out."""
    return bind_params(m, [(p, value) for var, pair in bounds.items() for p, value in zip(pair, values[var])])


def bind_params(m, assignments):
    """`m` (an isl map) with each parameter of `assignments` ([(name, PwAff of the other parameters)])
    set to its value and projected out; parameters `m` does not have are skipped."""
    for name, value in assignments:
        k = m.find_dim_by_name(isl.dim_type.param, name)
        if k < 0:
            continue
        me = isl.PwAff.var_on_domain(isl.LocalSpace.from_space(m.get_space().params()), isl.dim_type.param, k)
        m = m.intersect_params(me.eq_set(value))
        m = m.project_out(isl.dim_type.param, m.find_dim_by_name(isl.dim_type.param, name), 1)
    return m


#: the isl operations a tile's box may take from the coalesced tiles before it is taken from their pieces
#: (the boxes of Halide's apps under their hand and autoscheduled schedules take under 100,000)
TILE_BOUNDS_OPERATIONS = 1_000_000


def _tile_bounds(tiles, pieces, dims):
    """[(least, greatest) value of dimension d in each tile of `tiles`] for d in `dims` (`tiles` coalesced,
    the constraints among the sizes set aside); from a dimension that takes isl too long on, from
    `pieces()`: the same map made from the readers' pieces. Coalesced under the sizes' constraints, the
    pieces can merge into ones coupling the dimensions, whose bounds took isl minutes (Halide's
    interpolate under Adams2019: 3 minutes for one bound of one Func, a second from the pieces coalesced
    without those constraints)."""
    bounds = []
    for d in dims:
        if pieces is not None:
            try:
                with operations_at_most(tiles.get_ctx(), TILE_BOUNDS_OPERATIONS):
                    bounds.append((tiles.dim_min(d).coalesce(), tiles.dim_max(d).coalesce()))
                continue
            except OutOfOperations:
                tiles, pieces = pieces(), None
        bounds.append((tiles.dim_min(d).coalesce(), tiles.dim_max(d).coalesce()))
    return bounds


def bind_to_tiles(comp, tiles, pieces=None):
    """Run a tile-relative schedule (set_schedule's `bounds`) over tiles.

    `tiles` maps a consumer's loop values (a prefix) to the points of `comp` it needs; each tile's
    bounding box gives the bound parameters (see _tile_bounds for `pieces`). Returns (the points of comp's
    domain each tile's loops reach, as a map prefix -> point; the map from [prefix -> point] pairs to
    comp's loops)."""
    names = [v.name for v in comp.vars]
    relative = comp.tile_map
    # (the constraints among the sizes alone are put back at the end: see affine.without_size_constraints)
    tiles, sizes = without_size_constraints(tiles)
    per_tile = []
    bounds = _tile_bounds(tiles, pieces, [names.index(var) for var in comp.bound_params])
    for (var, pair), box in zip(comp.bound_params.items(), bounds):
        for p, pa in zip(pair, box):
            k = relative.find_dim_by_name(isl.dim_type.param, p)
            if not relative.involves_dims(isl.dim_type.param, k, 1):
                relative = relative.project_out(isl.dim_type.param, k, 1)
            elif not any(aff.involves_dims(isl.dim_type.in_, 0, aff.dim(isl.dim_type.in_))
                         for _, aff in pa.get_pieces()):
                # the same for every tile (a tile spans the whole domain along this variable); its cases
                # simplified under the sizes set aside above, which projecting the tiles out leaves tangled
                # (Halide's interpolate under Adams2019: one bound of a Func became 16 cases, then 984 pieces)
                value = pa.project_domain_on_params().gist_params(sizes).coalesce()
                relative = _bind_at_root(relative, {var: (p,)}, {var: (value,)})
            else:
                per_tile.append((p, pa))
    # the loops of a pair [prefix -> point] are the relative schedule at (point, the prefix's box):
    # one pullback by a piecewise function, where a product of maps multiplied their cases
    prefixes = tiles.domain().coalesce()
    pairs = isl.Map.from_domain_and_range(prefixes, comp.domain)
    arguments = isl.PwMultiAff.from_multi_aff(isl.MultiAff.range_map(pairs.get_space()))
    to_prefix = isl.MultiAff.domain_map(pairs.get_space())
    for p, pa in per_tile:
        arguments = arguments.flat_range_product(isl.PwMultiAff.from_pw_aff(pa.pullback_multi_aff(to_prefix)))
        k = relative.find_dim_by_name(isl.dim_type.param, p)
        relative = relative.move_dims(isl.dim_type.in_, relative.dim(isl.dim_type.in_), isl.dim_type.param, k, 1)
    if not per_tile:   # (the flat product above drops the point's tuple name, which the schedule lacks too)
        arguments = arguments.reset_tuple_id(isl.dim_type.out)
    loops = relative.reset_tuple_id(isl.dim_type.in_).preimage_domain_pw_multi_aff(arguments)
    if per_tile:
        # the bounds are defined on the prefixes only: intersecting with them again splits pieces
        pairs = isl.Map.from_domain_and_range(isl.Set.universe(prefixes.get_space()), pairs.range())
    loops = without_empty_pieces(loops.intersect_domain(pairs.wrap()), sizes)
    loops = coalesced(coalesced(loops).intersect_params(sizes))
    return loops.domain().unwrap().coalesce(), loops
