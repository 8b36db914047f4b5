"""Scheduled statements: each computation's executed instances, its loops and its place in the time-space.

A statement's instances are its computation's domain, except for a producer
computed at a consumer's loop: its instances are pairs (consumer loop values,
producer point), so a point needed by several consumer iterations runs once
per iteration (Halide's and Tiramisu's redundant tiles), or, stored at the
root, once in the first iteration that needs it (a sliding window). A schedule
that runs a point at several times (a shifted last tile) gives one instance per
time: the point and its loop values, so whatever depends on the time (the tile a
consumer reads) is a function of the instance.
"""
from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass, field

import islpy as isl

from . import ordering
from .affine import affine_text, context_on, pwaff_to_expr, without_size_constraints
from .buffer import Buffer, as_index_expr
from .errors import DomainError, ScheduleError
from .schedule import bind_to_tiles, fresh_name
from .expr import Access, Const, simplify, walk
from .isl_budget import OutOfOperations, operations_at_most
from .layout import inline_reads
from .types import int64


@dataclass(eq=False)
class LocalBuffer:
    """A compute_at producer's tile-sized buffer: its lower corner as a function of the consumer's loops."""

    buffer: Buffer
    lower: list            # PwAff per dimension, on the prefix loops space
    prefix: isl.Map        # consumer exec domain -> prefix loop values
    time_dim: int          # time dimension of the loop it is allocated in
    depth: int = 0         # the prefix loops the corner depends on (store_at: fewer than the producer's)
    folds: dict = field(default_factory=dict)   # dimension -> depth of a ring (storage_fold)
    corners: dict = field(default_factory=dict, repr=False, compare=False)   # (statement, dim) -> corner


@dataclass(eq=False)
class Statement:
    comp: object
    domain: isl.Set            # executed instances (tuple named after the computation)
    loops: list                # loop names, outermost first
    loop_map: isl.Map          # domain -> loop values
    to_original: isl.Map       # domain -> the computation's own domain
    tags: dict = field(default_factory=dict)
    local: LocalBuffer | None = None
    betas: list = field(default_factory=list)
    time: isl.Map | None = None
    #: the instances without the loop values a point run at several times carries (see per_time)
    points: isl.Set | None = None

    def __post_init__(self):
        if self.points is None:
            self.points = self.domain

    @property
    def name(self):
        return self.comp.name

    @property
    def params(self):
        return sorted(self.comp.function.param_names)

    @property
    def prefix_depth(self):
        """How many of the consumer's loops a compute_at statement runs inside (0 otherwise)."""
        return len(self.loops) - len(self.comp.loops)

    def recomputed_with(self, other):
        """Whether both statements belong to one recomputed producer (a base and its updates)."""
        return self.local is not None and self.local is other.local


def _identity(comp):
    dims = ", ".join(v.name for v in comp.vars)
    return isl.Map(f"{{ {comp.name}[{dims}] -> {comp.name}[{dims}] }}").intersect_domain(comp.domain)


def reads_of(comp, target, context):
    """Relation from comp's instances to the instances of `target` it reads (over-approximated when non-affine)."""
    return read_relation(comp, target, context)[0]


def read_relation(comp, target, context):
    """(reads_of's relation or None, whether every index of those reads is affine, so that the
    relation is exact)."""
    # (an inlined target's reads are looked for through the other inlined computations, not replaced)
    nodes = list(walk(inline_reads(comp.expr, keep=target)))
    if comp.predicate is not None:
        nodes += list(walk(inline_reads(comp.predicate, keep=target)))
    params = sorted(comp.function.param_names)
    rel, affine = None, True
    for n in nodes:
        if not isinstance(n, Access) or n.target is not target:
            continue
        outs = [affine_text(as_index_expr(i)) for i in n.indices]
        affine = affine and None not in outs
        outs = [o if o is not None else f"any{d}" for d, o in enumerate(outs)]
        text = (f"[{', '.join(params)}] -> {{ {comp.name}[{', '.join(v.name for v in comp.vars)}] -> "
                f"{target.name}[{', '.join(outs)}] }}")
        m = isl.Map(text).intersect_domain(comp.domain).intersect_range(target.domain)
        rel = m if rel is None else rel.union(m)
    return (rel.intersect_params(context) if rel is not None else None), affine


#: isl operations that expanding a computation computed at a loop may take between the steps that have
#: budgets of their own (about 1.6 s per million here); beyond it the computation is computed at the root
EXPANSION_OPERATIONS = 20_000_000


def build_statements(function, context):
    """Statements for the function's current schedule (compute_at expanded, betas and time maps set). An
    update that runs for no size (an RDom of no points) has none: it changes nothing."""
    comps = [c for c in function.computations
             if not c.inlined and not (c.updated is not None and c.domain.intersect_params(context).is_empty())]
    stmts = {}

    def build(comp, visiting=()):
        if comp in stmts:
            return stmts[comp]
        if comp in visiting:
            raise ScheduleError(f"compute_at cycle through {[c.name for c in visiting]}")
        if comp.compute_at_target is None:
            domain, to_original = comp.domain, _identity(comp)
            if comp.at_root_instead and not comp.updates:     # what its readers read
                domain = _needed_at_root(comp, function, context, lambda c: build(c, visiting + (comp,)))
                to_original = to_original.intersect_domain(domain)
            s = Statement(comp, domain, list(comp.loops), comp.loop_map.intersect_domain(domain),
                          to_original, dict(comp.tags))
        else:
            consumer, level = comp.compute_at_target
            if consumer.inlined:
                raise ScheduleError(f"{comp.name}.compute_at({consumer.name}, {level}): {consumer.name} is inlined")
            if comp.domain.intersect_params(context).is_empty():   # (no tile to take bounds of)
                raise DomainError(f"{comp.name} is computed at {consumer.name}'s loop {level} but runs no iteration "
                                  f"for any size (its domain is empty); compute it at the root or inline it")
            if comp.updated is not None:
                s = _expand_update(comp, build(comp.updated, visiting + (comp,)), context)
            else:
                consumer_stmt = build(consumer, visiting + (comp,))
                try:
                    with operations_at_most(context.get_ctx(), EXPANSION_OPERATIONS):
                        s = _expand(comp, consumer_stmt, level, function, context,
                                    lambda c: build(c, visiting + (comp,)))
                except (OutOfOperations, _ReaderAtRoot) as why:
                    reason = (f"the points each iteration of {consumer.name}'s loop {level} needs are too "
                              f"intricate for isl within {EXPANSION_OPERATIONS:,} operations between its steps"
                              if isinstance(why, OutOfOperations) else
                              f"{why.args[0]}, which reads it, no longer runs inside {consumer.name}'s loop {level} "
                              f"(it or the Func it is computed at is computed at the root instead)")
                    warnings.warn(f"{comp.name}: {reason}; {comp.name} is computed at the root instead (the "
                                  f"same values, computed once and kept whole)", stacklevel=2)
                    comp.compute_at_root_instead(_readers(comp, function, context))
                    return build(comp, visiting)
        if any(c.compute_at_target is not None and c.compute_at_target[0] is comp for c in comps):
            s = per_time(s)   # tiles are computed inside its loops
        stmts[comp] = s
        return s

    for c in comps:
        build(c)
    order = [stmts[c] for c in comps]
    betas = ordering.resolve(comps, function._ordering, lambda c: stmts[c].loops)
    depth = max(len(s.loops) for s in order)
    for s in order:
        s.betas = betas[s.comp]
        s.time = s.loop_map.apply_range(_interleave(s.loops, s.betas, depth))
    return order


def per_time(s):
    """`s`, or when its loop map sends an instance to several times, `s` with one instance per time:
    the point followed by its loop values. A consumer of tiles needs it: which tile it reads, at
    which offset, depends on the time."""
    # the computation's own map tells (cheaper than the statement's, which holds the tiles)
    schedule = s.comp.tile_map if s.comp.tile_map is not None else s.comp.loop_map.intersect_domain(s.comp.domain)
    if schedule.is_single_valued():
        return s
    runs = s.loop_map.intersect_domain(s.domain)
    own = [s.domain.get_dim_name(isl.dim_type.set, i) for i in range(s.domain.dim(isl.dim_type.set))]
    at = [fresh_name(f"{loop}_at", set(own)) for loop in s.loops]
    domain, to_point, loop_map = _pairs(runs, s.name, own, at)
    for i, nm in enumerate(s.loops):
        loop_map = loop_map.set_dim_name(isl.dim_type.out, i, nm)
    return Statement(s.comp, domain, list(s.loops), loop_map, to_point.apply_range(s.to_original), dict(s.tags),
                     s.local, points=s.domain)


def _pairs(relation, name, first, second):
    """The pairs of `relation` as statement instances `name[first..., second...]` (dimensions named
    so), and the maps from them to their first part (tuple `name`) and to their second part."""
    domain = relation.wrap().flatten().set_tuple_name(name)
    for i, nm in enumerate(first + second):
        domain = domain.set_dim_name(isl.dim_type.set, i, nm)
    dims = ", ".join(first + second)
    to_first = isl.Map(f"{{ {name}[{dims}] -> {name}[{', '.join(first)}] }}").intersect_domain(domain)
    to_second = isl.Map(f"{{ {name}[{dims}] -> [{', '.join(second)}] }}").intersect_domain(domain)
    return domain, to_first, to_second


def _interleave(loops, betas, depth):
    """`[loops] -> [b0, l0, b1, l1, ..., bn, 0...]` padded to 2*depth+1 dimensions."""
    return _interleaved(len(loops), tuple(betas), depth)


@functools.lru_cache(maxsize=4096)
def _interleaved(n_loops, betas, depth):
    # (parsed once per shape: every check of a schedule builds every statement's time map)
    ins = [f"l{i}" for i in range(n_loops)]
    out = []
    for i, b in enumerate(betas):
        out.append(str(b))
        if i < len(ins):
            out.append(ins[i])
    out += ["0"] * (2 * depth + 1 - len(out))
    return isl.Map(f"{{ [{', '.join(ins)}] -> [{', '.join(out)}] }}")


def _nested_loops(prefix, prefix_tags, own, own_tags):
    """(loop names, tags) of a computation run inside the loops `prefix`: its own loops keep their names
    unless a tagged prefix loop has the name (then they get a fresh one), so each loop's tag stays its
    own (a producer's loop y is not the consumer's block loop y)."""
    names, renamed = list(prefix), {}
    for loop in own:
        renamed[loop] = fresh_name(loop, set(names) | set(own)) if loop in prefix_tags and loop in prefix else loop
        names.append(renamed[loop])
    tags = {nm: prefix_tags[nm] for nm in prefix if nm in prefix_tags}
    tags.update({renamed[nm]: tag for nm, tag in own_tags.items() if nm in renamed})
    return names, tags


def _expand(comp, consumer_stmt, level, function, context, statement_of):
    """The statement of `comp` computed inside `consumer_stmt`'s loop `level`: per iteration of the
    loops down to `level`, the instances that the consumer and the computations run inside those
    loops (computed at `level` or deeper, directly or through each other) read.
    `statement_of(c)` gives the statement of such a computation."""
    cmd = f"{comp.name}.compute_at({consumer_stmt.name}, {level})"
    if level not in consumer_stmt.loops:
        raise ScheduleError(f"{cmd}: {consumer_stmt.name} has no loop {level!r}; its loops are {consumer_stmt.loops}")
    if comp.is_output:
        raise ScheduleError(f"{cmd}: {comp.name} is an output; outputs are computed at the root")
    lvl = consumer_stmt.loops.index(level)
    readers = [c for c in _readers(comp, function, context) if c is not consumer_stmt.comp]
    inside = [c for c in readers if runs_inside(c, consumer_stmt, lvl)]
    others = [c for c in readers if c not in inside]
    if others and all(_moved_to_root(c) for c in others):
        raise _ReaderAtRoot(others[0].name)
    if others:
        raise ScheduleError(f"{cmd}: {comp.name} is also read by {[c.name for c in others]}; "
                            f"compute it at root or inline it")
    n_loops = len(consumer_stmt.loops)
    prefix = consumer_stmt.loop_map.project_out(isl.dim_type.out, lvl + 1, n_loops - lvl - 1)
    reader_stmts = [consumer_stmt] + [statement_of(c) for c in inside]
    left = [c for c in inside if not runs_inside(c, consumer_stmt, lvl)]
    if left:    # (its statement could not be built inside these loops)
        raise _ReaderAtRoot(left[0].name)
    need = None
    for reader in reader_stmts:
        reads = reads_of(reader.comp, comp, context)
        if reads is None:
            continue
        at = reader.loop_map.project_out(isl.dim_type.out, lvl + 1, len(reader.loops) - lvl - 1)
        part = reader.to_original.apply_range(reads).apply_domain(at.reset_tuple_id(isl.dim_type.out))
        need = part if need is None else need.union(part)
    if need is None:
        raise ScheduleError(f"{cmd}: {consumer_stmt.name} does not read {comp.name}")
    read = need   # the readers' footprints piece by piece (see schedule.bind_to_tiles)
    need = without_needless_divs(need.coalesce())
    scattered = scattered_dims(comp)
    if scattered:
        # an update writes these dimensions at indices computed from data: each tile spans them whole
        free = _free_along(comp, scattered)
        need, read = need.apply_range(free).coalesce(), read.apply_range(free)
    store = lvl   # the loop the tile buffer lives in
    if comp.store_level is not None:
        if comp.store_level not in consumer_stmt.loops[:lvl + 1]:
            raise ScheduleError(f"{comp.name}.store_at({comp.store_level}): the storage loop must be "
                                f"{level} or a loop around it (loops: {consumer_stmt.loops[:lvl + 1]})")
        store = consumer_stmt.loops.index(comp.store_level)
    sliding = comp.stored_at_root or store < lvl
    depth = 0 if comp.stored_at_root else store + 1
    if sliding:
        need = without_needless_divs(first_needed(need, depth))

    def pieces():
        """`need` from the readers' pieces, coalesced with the constraints among the sizes set aside."""
        plain = without_size_constraints(read)[0]
        return first_needed(plain, depth) if sliding else plain
    prefix_names = [fresh_name(level_name, {v.name for v in comp.vars})
                    for level_name in consumer_stmt.loops[:lvl + 1]]
    # (a sliding window runs only the points not computed before, whatever its splits' tails reach)
    run, domain, to_original, loop_map = _tile_instances(comp, need, prefix_names, only_needed=sliding, pieces=pieces)
    loops, tags = _nested_loops(consumer_stmt.loops[:lvl + 1], consumer_stmt.tags, comp.loops, comp.tags)
    local = None
    if not comp.stored_at_root and comp.user_buffer is not None:
        raise ScheduleError(f"{comp.name}.store_in({comp.user_buffer.name}): {cmd} keeps its values in a tile buffer "
                            f"of each iteration, not in {comp.user_buffer.name}; store it at the root "
                            f"({comp.name}.store_root()) to use {comp.user_buffer.name}, or drop store_in")
    if not comp.stored_at_root:
        # one buffer per iteration of the storage loop, over what all its inner iterations compute
        outer = lvl - store
        local = _local_buffer(comp, run.project_out(isl.dim_type.in_, store + 1, outer).coalesce(),
                              prefix.project_out(isl.dim_type.out, store + 1, outer), context,
                              time_dim=2 * store + 1, depth=store + 1)
    return Statement(comp, domain, loops, loop_map, to_original,
                     tags, local)


def _needed_at_root(comp, function, context, statement_of):
    """The part of `comp`'s domain that its readers' statements read, within a convex hull of their
    reads (a computation computed at the root instead of at a loop computes what was needed there,
    as Halide's compute_root computes a box: its domain can hold points whose own reads fall outside
    what its producers store). Its whole domain where isl needs more than EXPANSION_OPERATIONS."""
    try:
        with operations_at_most(context.get_ctx(), EXPANSION_OPERATIONS):
            read = None
            for reader in _readers(comp, function, context):
                part = statement_of(reader).to_original.apply_range(reads_of(reader, comp, context)).range()
                read = part if read is None else read.union(part)
            if read is None:
                return comp.domain
            return comp.domain.intersect(isl.Set.from_basic_set(read.coalesce().simple_hull())).coalesce()
    except OutOfOperations:
        return comp.domain


class _ReaderAtRoot(Exception):
    """A reader (named in args[0]) left the loop a computation is computed at (it, or what it is
    computed at, is computed at the root instead): the computation must leave that loop too."""


def _readers(comp, function, context):
    """The computations (not inlined, not comp's updates) that read `comp`."""
    return [c for c in function.computations
            if not c.inlined and c is not comp and c not in comp.updates and reads_of(c, comp, context)]


def _moved_to_root(comp):
    """Whether `comp`, or a computation it is computed at, was computed at the root instead of at a loop."""
    return any(c.at_root_instead for c in (comp, *comp.hosts()))


def runs_inside(comp, consumer_stmt, lvl):
    """Whether `comp` runs inside loop `lvl` of `consumer_stmt` (and the loops around it): computed at
    that loop or one inside it, directly or at a computation that does."""
    seen = set()
    c = comp
    while c.compute_at_target is not None and c not in seen:
        seen.add(c)
        target, loop = c.compute_at_target
        if target is consumer_stmt.comp:
            return loop in consumer_stmt.loops and consumer_stmt.loops.index(loop) >= lvl
        c = target
    return False


def _tile_instances(comp, tiles, prefix_names, only_needed=False, pieces=None):
    """(points run per prefix, the statement's domain, its to_original map, its loop map) for `comp`
    computed per tile: `tiles` maps a prefix to the points needed (`pieces()`, if given, makes the same
    map another way: see bind_to_tiles). A schedule relative to its bounds (set_schedule's `bounds`) is
    anchored at each tile's box and runs the points of the domain its loops reach (or of those, only the
    needed ones); any other runs exactly the points needed."""
    own = [v.name for v in comp.vars]
    if comp.tile_map is not None:
        run, loops = bind_to_tiles(comp, tiles, pieces)
        if only_needed:     # (bind_to_tiles's points, and the part _needed_part takes, come coalesced)
            run, loops = _needed_part(comp, run, loops, tiles)
    else:
        run, loops = tiles, None
    domain, _, to_original = _pairs(run, comp.name, prefix_names, own)
    to_original = to_original.set_tuple_name(isl.dim_type.out, comp.name)
    if loops is None:
        own_loops = to_original.apply_range(comp.loop_map)
    else:
        # (its domain is already `run`: intersecting it again with a domain of n pieces makes more)
        own_loops = loops.flatten_domain().set_tuple_name(isl.dim_type.in_, comp.name)
    # (the prefix is taken by a projection of the whole space: two maps restricted to a domain of n
    # pieces would make n * n pieces in their product)
    prefix = isl.Map.from_multi_aff(isl.MultiAff.project_out_map(domain.get_space(), isl.dim_type.set,
                                                                 len(prefix_names), len(own)))
    return run, domain, to_original, prefix.reset_tuple_id(isl.dim_type.out).flat_range_product(own_loops)


#: isl operations that restricting a sliding window's tiles to the points not computed before may take
#: (about 1.6 s per million here; no window of the apps in the tests needs 2 million)
SLIDING_OPERATIONS = 10_000_000


def _needed_part(comp, run, loops, needed):
    """(run, loops) of a Func computed per tile in a sliding window, restricted to the points `needed`
    (those no earlier iteration computed). Where that takes isl more than SLIDING_OPERATIONS, each
    iteration computes its whole tile instead, with a warning: the points again with the same values
    (a Func is pure), so slower but not wrong; a buffer folded into a ring is checked as always (each
    read finds the value last written: layout_check). (Halide's interpolate under Adams2019 at a
    768x1280 estimate: 658 pieces of points needed, 5635 pieces of loops restricted to them, minutes.)"""
    try:
        with operations_at_most(run.get_ctx(), SLIDING_OPERATIONS):
            part = run.intersect(needed).coalesce()
            return part, loops.intersect_domain(part.wrap()).coalesce()
    except OutOfOperations:
        warnings.warn(f"{comp.name}: the points each iteration of its sliding window adds are too intricate to "
                      f"separate within {SLIDING_OPERATIONS:,} isl operations; it computes its whole tile at each "
                      "iteration (the same values, more work)", stacklevel=2)
        return run, loops


def first_needed(need, depth=0):
    """Each point of `need` (consumer loop values -> producer points) only at the first loop values,
    in execution order, that need it, among those that share the first `depth` loop values."""
    earlier = isl.Map.lex_gt(need.get_space().domain())   # p -> p' with p' before p
    for d in range(depth):
        earlier = earlier.equate(isl.dim_type.in_, d, isl.dim_type.out, d)
    seen = earlier.intersect_domain(need.domain()).apply_range(need)
    return need.subtract(seen).coalesce()


def without_needless_divs(m):
    """`m` written without existential variables where dropping them adds no point.

    A subtraction or a union of strided reads (`2x - 1`, `2x`, `2x + 1`) can come out of isl as pieces
    with parity conditions whose union is a plain interval; scanned as they are, they make loops of
    stride 2, which the code generator refuses. Which form isl picks depends on the
    order the pieces were built in, so the exact plain form is taken whenever there is one."""
    if all(b.dim(isl.dim_type.div) == 0 for b in m.get_basic_maps()):
        return m
    # (divisions of the sizes alone, implied by the context, stay)
    plain = m
    for kind in (isl.dim_type.in_, isl.dim_type.out):
        plain = plain.remove_divs_involving_dims(kind, 0, m.dim(kind))
    plain = plain.coalesce()
    return plain if plain.is_subset(m) else m


def scattered_dims(comp):
    """The dimensions of `comp` that one of its updates writes at an index that is not affine (a
    histogram's bin, computed from data)."""
    return sorted({d for u in comp.updates for d, a in enumerate(u.update_at)
                   if affine_text(as_index_expr(a)) is None})


def _free_along(comp, dims):
    """`comp`'s points -> its points equal to them except in `dims` (any value of its domain there)."""
    own = [v.name for v in comp.vars]
    other = [f"{name}_any" if d in dims else name for d, name in enumerate(own)]
    params = ", ".join(sorted(comp.function.param_names))
    free = isl.Map(f"[{params}] -> {{ {comp.name}[{', '.join(own)}] -> {comp.name}[{', '.join(other)}] }}")
    return free.intersect_domain(comp.domain).intersect_range(comp.domain)


def _expand_update(update, base, context):
    """The statement of an update of `base`'s computation, computed with it: for each consumer prefix,
    the update instances that write a point of the base's tile."""
    comp = base.comp
    # an index computed from data may be any point of the tile, which spans that dimension whole (see
    # scattered_dims; the layout check proves the index stays inside): the instances that write the
    # tile are those whose other indices are in it
    at = [affine_text(as_index_expr(a)) for a in update.update_at]
    n_prefix = base.prefix_depth
    points = base.points
    for d in reversed([d for d, a in enumerate(at) if a is None]):
        points = points.project_out(isl.dim_type.set, n_prefix + d, 1).set_tuple_name(comp.name)
    at = [a for a in at if a is not None]
    own = [v.name for v in update.vars]
    prefix = [fresh_name(f"{name}_", set(own)) for name in base.loops[:n_prefix]]
    dims = ", ".join(prefix + own)
    params = ", ".join(base.params)
    to_original = isl.Map(f"[{params}] -> {{ {update.name}[{dims}] -> {update.name}[{', '.join(own)}] }}")
    to_original = to_original.intersect_range(update.domain)
    writes = isl.Map(f"[{params}] -> {{ {update.name}[{dims}] -> {comp.name}[{', '.join(prefix + at)}] }}")
    domain = writes.intersect_domain(to_original.domain()).intersect_range(points.coalesce()).domain()
    domain = domain.intersect_params(context).coalesce()
    to_original = to_original.intersect_domain(domain)
    pref = isl.Map(f"{{ {update.name}[{dims}] -> [{', '.join(prefix)}] }}").intersect_domain(domain)
    if update.tile_map is not None:
        # anchored at the box of the update's instances in each tile; it may not write outside the tile
        tiles = pref.reverse().apply_range(to_original)
        _, domain, to_original, loop_map = _tile_instances(update, tiles, prefix, only_needed=True)
    else:
        loop_map = pref.flat_range_product(to_original.apply_range(update.loop_map))
    loops, tags = _nested_loops(base.loops[:n_prefix], base.tags, update.loops, update.tags)
    return Statement(update, domain, loops, loop_map, to_original,
                     tags, base.local)


#: a tile buffer of at most this many elements takes the largest size any tile has (constant); a larger
#: bound (a clamp at a huge constant) would allocate far more than the tiles of the actual sizes need
MAX_CONSTANT_TILE = 1 << 16
#: in a larger buffer, a dimension whose tiles are never longer than this still takes a constant extent
MAX_CONSTANT_EXTENT = 1 << 10


def _tile_extents(spans, context):
    """The extents of a tile buffer whose tiles span `spans` (per dimension, the set of a tile's last
    index minus its first, over all tiles and sizes): the largest when those are finite and make a
    small tile (`min(64, W)` -> 64), so the buffer has a constant size and can live on the stack;
    else the largest span as a function of the sizes, in the dimensions where it is not small."""
    bounds = [span.dim_max_val(0) for span in spans]
    finite = [bound.to_python() + 1 if bound.is_int() else None for bound in bounds]
    if None not in finite and math.prod(finite) <= MAX_CONSTANT_TILE:
        return [Const(extent, int64) for extent in finite]
    # (a maximum as a function of the sizes is solved only where needed: with many sizes, it can
    # take minutes)
    return [Const(extent, int64) if extent is not None and extent <= MAX_CONSTANT_EXTENT
            else simplify(pwaff_to_expr(span.dim_max(0), context) + 1) for extent, span in zip(finite, spans)]


#: a tile of more pieces than this gets a box that may be larger than its exact one (see _tile_box)
MAX_EXACT_BOX_PIECES = 8


def _tile_box(need, domain):
    """Per dimension, the least and the greatest index of the tiles `need` (prefix -> points of
    `domain`), as functions of the prefix: a box that holds each tile.

    The exact box of a tile of many pieces (the union of several consumers' reads under loops split
    with shifted tails) can take isl minutes; such a tile gets the box of its simple hull, and a
    dimension that hull leaves unbounded spans the whole domain. Only the tile buffer grows: the
    points computed stay the exact ones."""
    dims = range(need.dim(isl.dim_type.out))
    if need.n_basic_map() <= MAX_EXACT_BOX_PIECES:
        return [(need.dim_min(d).coalesce(), need.dim_max(d).coalesce()) for d in dims]
    hull = isl.Map.from_basic_map(need.simple_hull())
    box = []
    for d in dims:
        try:
            box.append((hull.dim_min(d).coalesce(), hull.dim_max(d).coalesce()))
        except isl.Error:   # unbounded: the hull dropped the bounds that only the pieces' divisions give
            whole = isl.Map.from_domain_and_range(isl.Set.universe(need.get_space().domain()), domain)
            box.append((whole.dim_min(d).coalesce(), whole.dim_max(d).coalesce()))
    return box


def _local_buffer(comp, need, prefix, context, time_dim, depth=None):
    """The tile buffer of `comp` over the points `need` (prefix -> points) of each tile. A dimension
    folded by `storage_fold` becomes a ring of that depth, unless no tile is longer than the depth."""
    lower, shape, folds, spans = [], [], {}, {}
    plain, sizes = without_size_constraints(need)
    prefixes = plain.domain().coalesce()
    for d, (v, (lo, hi)) in enumerate(zip(comp.vars, _tile_box(plain, comp.domain))):
        # (over the prefixes that have a tile: a hull's box may be defined beyond them, where the span grows
        # without bound)
        span = isl.Map.from_pw_aff(hi.sub(lo).intersect_domain(prefixes)).range().intersect_params(sizes)
        span = span.intersect_params(context_on(span, context))
        lower.append(lo.intersect_params(sizes).coalesce())
        ring = comp.folds.get(v.name)
        if ring is not None and span.dim_max_val(0).gt(isl.Val(ring - 1)):
            folds[d] = ring
            shape.append(Const(ring, int64))
        else:
            shape.append(None)
            spans[d] = span
    for d, extent in zip(spans, _tile_extents(list(spans.values()), context)):
        shape[d] = extent
    buf = Buffer(f"{comp.name}_tile", shape, comp.dtype, "temporary")
    buf.partitions = list(comp.partitions)
    buf.memory = getattr(comp, "memory", "global")
    buf.folds = {d: (comp.vars[d].name, ring, None) for d, ring in folds.items()}
    return LocalBuffer(buf, lower, prefix, time_dim, need.dim(isl.dim_type.in_) if depth is None else depth, folds)
