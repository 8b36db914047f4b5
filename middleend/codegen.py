"""Code generation: scheduled statements -> isl AST -> loop IR.

Index expressions that are affine are kept as isl functions of the statement
instance until each AST leaf, where isl rewrites them in terms of the loop
iterators (so `y = 32*y0 + y1` and tile offsets come out simplified). Other
expressions get the leaf's instance coordinates substituted.
"""
from __future__ import annotations

import os
import warnings

import islpy as isl

from . import loopir as L
from .accesses import statement_body
from .affine import IslAff, context_on, from_ast_expr, linear_expr, min_max_pieces, on_sizes
from .algorithm import Var
from .errors import ScheduleError
from .expr import Access, Cast, Sym, binop, simplify, transform, walk
from .schedule import fresh_name
from .index_split import edges, piecewise_indices, steady_state
from .isl_budget import OutOfOperations, operations_at_most
from .separation import full_piece
from .types import int64


# the AST ------------------------------------------------------------------------

class _LoopVars:
    """The loop IR of each time dimension at a leaf (its loop's iterator, or the value isl fixed it
    to), made on first use."""

    def __init__(self, build, space):
        self.build, self.space, self.made = build, space, {}

    def __getitem__(self, i):
        if i not in self.made:
            var = isl.Aff.var_on_domain(isl.LocalSpace.from_space(self.space), isl.dim_type.set, i)
            self.made[i] = from_ast_expr(self.build.expr_from_pw_aff(isl.PwAff.from_aff(var)))
        return self.made[i]


class _Leaves:
    """Loop IR statements built at each AST leaf, found again by the leaf's annotation."""

    def __init__(self, stmts, bodies, pieces, times, context):
        self.by_name = {s.name: s for s in stmts}
        self.context = context   # (the sizes no loop bound involves are not in the build: see _loop_bounds_problem)
        self.by_name.update({piece: self.by_name[name] for piece, name in pieces.items()})
        self.pieces = pieces
        self.times = times
        self.bodies = bodies
        self.made = []
        self.error = None

    def __call__(self, node, build):
        try:
            return node.set_annotation(isl.Id(f"leaf{self._make(node, build)}"))
        except Exception as exc:  # an exception must not cross isl's C callback
            self.error = self.error or exc
            return node

    def _make(self, node, build):
        call = node.user_get_expr()
        name = call.get_op_arg(0).get_id().name
        stmt = self.by_name[name]
        args = [from_ast_expr(call.get_op_arg(i + 1)) for i in range(call.get_op_n_arg() - 1)]
        dims = [stmt.domain.get_dim_name(isl.dim_type.set, i) for i in range(len(args))]
        schedule = isl.Map.from_union_map(build.get_schedule()).set_tuple_name(isl.dim_type.in_, stmt.name)
        iterators = isl.PwMultiAff.from_map(schedule.reverse())
        # the leaf's iterator ranges let isl drop divisions it can decide (e.g. (6*a + b) mod 6 = b)
        leaf_range = schedule.range()
        shifted = False
        for i, arg in enumerate(args):
            if iterators.get_pw_aff(i).n_piece() > 1:   # the instance of a shifted tile: min, not select
                better = _min_max_expr(iterators.get_pw_aff(i).gist(leaf_range), build)
                args[i] = arg if better is None else better
                shifted = shifted or better is not None
        coords = dict(zip(dims, args))
        # pulled back through the iterators' formulas, a function no longer carries the leaf's domain (every
        # constraint of the sizes): the leaf's ranges are brought in only where they can simplify it
        free_iterators = iterators.gist(leaf_range)
        loop_vars = _LoopVars(build, leaf_range.get_space())

        done = {}   # id(IslAff) -> its loop IR at this leaf

        def concretize(e):
            def repl(n):
                if isinstance(n, IslAff):
                    if id(n) not in done:
                        # (the leaf runs only instances of the statement: the unrestricted function will do)
                        pa = n.unrestricted.pullback_pw_multi_aff(free_iterators)
                        e = linear_expr(pa.get_pieces()[0][1], loop_vars) if pa.n_piece() == 1 else None
                        if e is None:
                            # (a fixed size no loop bound involves still decides the pieces: a clamp at W - 1)
                            pa = pa.gist(context_on(pa, leaf_range.intersect_params(self.context)))
                            e = _min_max_expr(pa, build)
                        if e is None and shifted and pa.n_piece() > 1 and n.source is not None:
                            # an index of a shifted tile's point that isl can only write as a select
                            # (a division of the min): the index itself, at the point's coordinates
                            e = transform(n.source, repl)
                        done[id(n)] = (n, e if e is not None else from_ast_expr(build.expr_from_pw_aff(pa)))
                    return done[id(n)][1]
                if isinstance(n, Var) and n.name in coords:
                    return Cast(n.dtype, coords[n.name])
                if type(n) is Sym and n.dtype == int64 and n.name in coords:
                    return coords[n.name]
                return None
            return transform(e, repl)

        buf, index, value, predicate = self.bodies[stmt.name]
        out = L.Store(buf, tuple(concretize(i) for i in index), concretize(value))
        if predicate is not None:
            out = L.If(concretize(predicate), out)
        self.made.append((stmt, out, name))
        return len(self.made) - 1


def _min_max_expr(pa, build):
    """`pa` (a function of the loop iterators) as the terms all its pieces share plus a min or max
    of the rest, when it is the min or max of its pieces; else None (isl writes a select).

    A tile shifted back at the end of its loop (Halide's ShiftInwards) reads `x = min(8*o, N - 8) + i`:
    written so, the index moves by one with the vector lane `i` (a contiguous vector), where isl's
    select between `8*o + i` and `N - 8 + i` reads as a gather."""
    combined = min_max_pieces(pa)
    if combined is None:
        return None
    op, affs = combined
    common = _shared_terms(affs)
    out = None
    for a in affs:
        e = from_ast_expr(build.expr_from_pw_aff(isl.PwAff.from_aff(a.sub(common))))
        out = e if out is None else binop(op, out, e)
    return simplify(binop("add", from_ast_expr(build.expr_from_pw_aff(isl.PwAff.from_aff(common))), out))


def _shared_terms(affs):
    """The affine function made of the terms (iterator or size times a coefficient) all `affs` have."""
    common = isl.Aff.zero_on_domain(isl.LocalSpace.from_space(affs[0].get_domain_space()))
    for kind in (isl.dim_type.in_, isl.dim_type.param):
        for d in range(affs[0].dim(kind)):
            coefficients = {str(a.get_coefficient_val(kind, d)) for a in affs}   # (rational: 1/2)
            if len(coefficients) == 1 and not any(a.involves_dims(isl.dim_type.div, 0, a.dim(isl.dim_type.div))
                                                  for a in affs):
                common = common.set_coefficient_val(kind, d, affs[0].get_coefficient_val(kind, d))
    return common


def _separated_dims(stmt):
    """{time dim: trip count of a full tile} for the statement's vector and unroll loops: those pay
    for partial trip counts. (A vector loop left whole by `vectorize(split=False)` runs in chunks of its
    own and has no such tiles.)"""
    out = {}
    for k, loop in enumerate(stmt.loops):
        kind, factor = stmt.tags.get(loop, (L.LoopKind.SERIAL, 1))
        if kind in (L.LoopKind.VECTOR, L.LoopKind.UNROLL) and factor is not None:
            own = k - stmt.prefix_depth     # (a compute_at statement runs inside its consumer's loops)
            most = stmt.comp._loop_extent_bound(own) if kind == L.LoopKind.VECTOR and own >= 0 else factor
            if most is not None and most <= factor:
                out[2 * k + 1] = factor
    return out


def _phase_dims(time) -> list:
    """The loop (odd) dimensions of a statement's time map `time` that each of its pieces fixes to one
    value, not the same in all (a phase: split tiles' narrowing and widening trapezoids): each value's
    instances then get loops of their own, as for a static dimension, rather than one loop nest over
    their hull with a guard per iteration."""
    pieces = time.get_basic_maps()
    if len(pieces) < 2:
        return []
    out = []
    for d in range(1, time.dim(isl.dim_type.out), 2):
        values = set()
        for piece in pieces:
            image = isl.Set.from_basic_set(piece.range())
            lo, hi = image.dim_min_val(d), image.dim_max_val(d)
            if not (lo.is_int() and lo.eq(hi)):
                break
            values.add(lo.to_python())
        else:
            if len(values) > 1:
                out.append(d)
    return out


def _static_pieces(suffix, part, phases=()):
    """[(suffix, part)], or one piece per value where a static (even) time dimension of `part`, or one of
    the loop dimensions `phases` (see `_phase_dims`), takes several: isl would scan such a dimension as a
    loop. (A statement whose instances are placed apart at one level, as the MPI back-end runs a
    distributed loop's interior and boundary.)"""
    pieces = [(suffix, part)]
    n = part.dim(isl.dim_type.out)
    for d in sorted(set(range(0, n, 2)) | set(phases)):
        out = []
        for sfx, p in pieces:
            image = p.range()
            lo, hi = image.dim_min_val(d), image.dim_max_val(d)
            if not (lo.is_int() and hi.is_int()) or lo.eq(hi):
                out.append((sfx, p))
                continue
            for v in range(lo.to_python(), hi.to_python() + 1):
                piece = p.intersect_range(image.fix_val(isl.dim_type.set, d, isl.Val(v)))
                if not piece.is_empty():
                    out.append((f"{sfx}_at{d}v{v}", piece))
        pieces = out
    return pieces


def _atomic_options(stmts):
    n = max(s.time.dim(isl.dim_type.out) for s in stmts)
    dims = ", ".join(f"c{i}" for i in range(n))
    return isl.UnionMap(f"{{ [{dims}] -> atomic[x] : 0 <= x < {n} }}")


#: partial-tile pieces of a statement generated as loops of their own (more: one guarded loop over their hull)
MAX_PARTIAL_PIECES = 4

#: parts of a sliding window generated as loops of their own: the first iteration and the later ones, cut
#: again by split tails; a window of more parts (an autoscheduler's tiles with many shifted tails gave 35,
#: and 269 statements with their full and partial tiles) is one guarded loop nest over their hull
MAX_SLIDE_PIECES = 8


def _split_by_range(time, image):
    """`time` cut along the disjoint basic sets of `image` (its range, or a rewriting of it): one piece per
    convex part, which isl then scans with loops of its own rather than one guarded loop over the hull."""
    return [time.intersect_range(isl.Set.from_basic_set(b)) for b in image.make_disjoint().get_basic_sets()]


#: isl operations the separation of one statement's full tiles may take (a few seconds); a time map of many
#: pieces that needs more keeps its partial tiles guarded in one loop nest, which computes the same values
MAX_SEPARATION_OPERATIONS = 1_000_000


def _full_and_partial(time, dims):
    """(full tiles, partial tiles, the partial tiles cut by convex part) of a statement's time map, or None
    when there is nothing to separate or when separating needs more than MAX_SEPARATION_OPERATIONS."""
    try:
        with operations_at_most(time.get_ctx(), MAX_SEPARATION_OPERATIONS):
            full = full_piece(time.range(), dims)
            if full is None:
                return None
            partial = time.subtract_range(full)
            # the partial tiles before and after the full ones get loops of their own: as one
            # piece, isl scans their hull, which spans the full tiles, with a guard in each iteration
            return time.intersect_range(full), partial, _split_by_range(partial, partial.range().coalesce())
    except OutOfOperations:
        return None


def build_ast(stmts, bodies, context, untiled=frozenset(), uncut=frozenset(), unseparated=frozenset()):
    """The isl ASTs of the union of the statements' time maps (one per root nest, see `_root_groups`),
    with leaves already lowered.

    Full tiles are generated apart from partial ones (see separation.py), except for the
    statements named in `untiled`; the steady state of clamped indices apart from its edges, which
    are cut loop by loop (see index_split.py) except for the statements in `uncut` (one piece for
    all edges); those named in `unseparated` get no split at all."""
    schedule = isl.UnionMap.empty(isl.Space.params_alloc(isl.DEFAULT_CONTEXT, 0))
    taken = {s.name for s in stmts}
    pieces = {}

    times = {}   # piece name -> its instances in time space

    def add_piece(base, time):
        name = fresh_name(base, taken)
        taken.add(name)
        pieces[name] = s.name
        times[name] = time.range()
        return schedule.union(isl.UnionMap.from_map(time.set_tuple_name(isl.dim_type.in_, name)))

    for s in stmts:
        time = s.time.intersect_domain(s.domain).intersect_params(context)
        separate = s.name not in unseparated
        _, index, value, predicate = bodies[s.name]
        steady = steady_state(s.domain.intersect_params(context), s.time,
                              piecewise_indices([value, predicate], index), _gather_loops(s)) if separate else None
        parts = [("", time)]
        if s.comp.stored_at_root or s.comp.store_level is not None:
            # a sliding window is a union (the first iteration's points, then each later one's new
            # points); each part gets its own loops instead of one guarded loop over their hull
            disjoint = _split_by_range(time, time.range())
            if 1 < len(disjoint) <= MAX_SLIDE_PIECES:
                parts = [(f"_slide{i}", piece) for i, piece in enumerate(disjoint)]
        if steady is not None:
            # clamped indices become affine in the steady part, and its vector loops contiguous loads;
            # the edges get loops of their own around it (in each part of a sliding window)
            parts = [piece for suffix, part in parts
                     for piece in _steady_and_edges(suffix, part, steady, cut=s.name not in uncut)]
        phases = _phase_dims(time)
        parts = [piece for suffix, part in parts for piece in _static_pieces(suffix, part, phases)]
        for suffix, part in parts:
            # edges are a thin slice of the instances: not worth more pieces
            split = _full_and_partial(part, _separated_dims(s)) \
                if separate and s.name not in untiled and "_edge" not in suffix else None
            if split is not None:
                # the full tiles become a statement of their own, so isl generates them with constant bounds
                full, part, partials = split
                schedule = add_piece(s.name + suffix + "_full", full)
                if 1 < len(partials) <= MAX_PARTIAL_PIECES:
                    for i, piece in enumerate(partials):
                        schedule = add_piece(f"{s.name}{suffix}_partial{i}", piece)
                    continue
            if not suffix:
                times[s.name] = part.range()
                schedule = schedule.union(isl.UnionMap.from_map(part))
            elif not part.is_empty():
                schedule = add_piece(s.name + suffix, part)
    leaves = _Leaves(stmts, bodies, pieces, times, context)
    asts = []
    for group in _root_groups(schedule):
        group, group_context = _loop_bounds_problem(group, context)
        # atomic: each statement (piece) gets one loop per dimension, rather than isl splitting its domain
        # into a copy per case of the sizes; the full/partial pieces already give the useful split
        build = isl.AstBuild.from_context(group_context).set_options(_atomic_options(stmts))
        build, _ = build.set_at_each_domain(leaves)
        asts.append(_node_from_schedule(build, group, stmts))
        if leaves.error is not None:
            raise leaves.error
    return asts, leaves


def _gather_loops(stmt) -> list:
    """The positions of the loops along which a clamped index makes a gather: the innermost and the
    vector loops (a vector loop with loops inside it, such as `vectorize(x)` outside an unrolled `c`,
    loads each lane of its own)."""
    if not stmt.loops:
        return []
    inner = len(stmt.loops) - 1
    return sorted({inner} | {k for k, loop in enumerate(stmt.loops)
                             if stmt.tags.get(loop, (L.LoopKind.SERIAL,))[0] == L.LoopKind.VECTOR})


def _steady_and_edges(suffix, time, steady, cut=True):
    """[(name suffix, time map)]: the part of `time` in the steady set of times, then its edges (cut
    loop by loop, or else one piece)."""
    steady_time = time.intersect_range(steady)
    if steady_time.is_empty():
        return [(suffix, time)]
    if not cut:
        return [(suffix + "_steady", steady_time), (suffix + "_edge", time.subtract_range(steady))]
    return [(suffix + "_steady", steady_time)] + [(suffix + edge, time.intersect_range(piece))
                                                 for edge, piece in edges(time.range(), steady_time.range())]


def _root_groups(schedule):
    """The time maps split by their first time dimension (the order of the root loop nests), in that
    order, when each map fixes it; else the whole union as one group.

    isl generates the nests one after another either way, but a nest generated alone works with the
    sizes its own loops involve: in one union every set carries every size and the context relating
    them. Halide's interpolate app with 7 pyramid levels (14 sizes; the output's nest involves 12, the
    others 2 to 6) took 25 s of isl AST generation as one union, 9 s as nests."""
    groups = {}
    maps = []
    schedule.foreach_map(maps.append)
    for m in maps:
        first = m.plain_get_val_if_fixed(isl.dim_type.out, 0)
        if first.is_nan():
            return [schedule]
        key = first.to_python()
        groups[key] = isl.UnionMap.from_map(m) if key not in groups else groups[key].union(isl.UnionMap.from_map(m))
    return [groups[k] for k in sorted(groups)] or [schedule]


def _loop_bounds_problem(schedule, context):
    """The time maps and the context that isl's AST generation gets: the maps simplified by the context
    (which the build knows), and both without the sizes no loop bound involves then. Under an
    autoscheduler's tiles, 22 of the bilateral grid's 30 sizes (bounds of Funcs, ranges of indices) only
    multiplied the cases isl weighs: each of its time maps took 3 to 8 times longer with them."""
    schedule = schedule.intersect_params(context).gist_params(context).drop_unused_params()
    used = {schedule.get_space().get_dim_name(isl.dim_type.param, i)
            for i in range(schedule.dim(isl.dim_type.param))}
    return schedule, on_sizes(context, used)


#: isl operations one code generation may take (several minutes here; Halide's local Laplacian app with
#: its hand schedule needs most of them): a schedule whose loop bounds need more is refused, not left
#: running. MASCARPONE_ISL_MAX_OPERATIONS overrides it; 0 sets no limit.
MAX_OPERATIONS = int(os.environ.get("MASCARPONE_ISL_MAX_OPERATIONS", 300_000_000))


def _node_from_schedule(build, schedule, stmts):
    try:
        with operations_at_most(schedule.get_ctx(), MAX_OPERATIONS):
            return build.node_from_schedule_map(schedule)
    except OutOfOperations:
        names = ", ".join(sorted({s.comp.name for s in stmts}))
        raise ScheduleError(f"code generation for {names} did not finish within {MAX_OPERATIONS:,} isl operations: "
                            f"the schedule's loop bounds split into too many cases. Simplify the schedule (fewer "
                            f"splits or compute_at levels, constant split factors), or raise the limit with "
                            f"MASCARPONE_ISL_MAX_OPERATIONS (0: none)") from None


class _Converter:
    """isl AST -> loop IR, naming loops after the computations' loops and applying tags."""

    def __init__(self, leaves, params):
        self.leaves = leaves
        self.params = set(params)
        self.allocations = []      # (tile, names of the statement pieces generated inside it)
        self.warned = set()        # loops unrolled without a factor that run as plain loops

    def convert(self, node, scope):
        """(loop IR, statements under the node, tile buffers not yet allocated)."""
        t = node.get_type()
        if t == isl.ast_node_type.block:
            children = node.block_get_children()
            parts = [self.convert(children.get_at(i), scope) for i in range(children.n_ast_node())]
            return (L.Block([p[0] for p in parts]), [s for p in parts for s in p[1]],
                    set().union(*(p[2] for p in parts)))
        if t == isl.ast_node_type.user:
            stmt, out, _ = self.leaves.made[int(node.get_annotation().name[4:])]
            return _rename(out, scope), [stmt], {stmt.local} if stmt.local is not None else set()
        if t == isl.ast_node_type.if_:
            cond = _rename_expr(from_ast_expr(node.if_get_cond()), scope)
            then, s1, p1 = self.convert(node.if_get_then_node(), scope)
            other, s2, p2 = (self.convert(node.if_get_else_node(), scope)
                             if node.if_has_else_node() else (None, [], set()))
            return L.If(cond, then, other), s1 + s2, p1 | p2
        if t == isl.ast_node_type.for_:
            return self._for(node, scope)
        raise TypeError(f"unexpected isl AST node {node.to_C_str()}")

    def _for(self, node, scope):
        iterator = node.for_get_iterator().get_id().name
        dim = int(iterator[1:])
        lo = _rename_expr(from_ast_expr(node.for_get_init()), scope)
        stmts_inside = _statements_under(node, self.leaves)
        name = self._name(stmts_inside[0].loops[(dim - 1) // 2], scope)
        inner_scope = dict(scope, **{iterator: name})
        body, stmts, pending = self.convert(node.for_get_body(), inner_scope)
        if node.for_is_degenerate():
            hi = simplify(binop("add", lo, 1))
        else:
            hi = simplify(self._upper(node, iterator, scope))
            step = from_ast_expr(node.for_get_inc()).value
            if step != 1:
                names = sorted(_pieces_under(node, self.leaves))
                raise ScheduleError(f"the schedule produced a loop with stride {step} (time dimension {dim}) over "
                                    f"{names}; use a unimodular schedule")
        kind, factor = self._kind(stmts, dim)
        k = (dim - 1) // 2
        origin = tuple(dict.fromkeys((s.name, s.loops[k]) for s in stmts if k < len(s.loops)))
        # a tile buffer lives in the innermost generated loop at or above the consumer's level
        for local in sorted((p for p in pending if p.time_dim >= dim), key=lambda p: p.buffer.name):
            body = L.Allocate(local.buffer, body)
            pending = pending - {local}
            self.allocations.append((local, _pieces_under(node, self.leaves)))
        return L.For(name, lo, hi, body, kind, factor, origin), stmts, pending

    def _upper(self, node, iterator, scope):
        cond = node.for_get_cond()
        op = cond.get_op_type()
        lhs, rhs = cond.get_op_arg(0), cond.get_op_arg(1)
        if lhs.get_type() != isl.ast_expr_type.id or lhs.get_id().name != iterator:
            raise TypeError(f"unexpected loop condition {cond.to_C_str()}")
        bound = _rename_expr(from_ast_expr(rhs), scope)
        if op == isl.ast_expr_op_type.le:
            return binop("add", bound, 1)
        if op == isl.ast_expr_op_type.lt:
            return bound
        raise TypeError(f"unexpected loop condition {cond.to_C_str()}")

    def _name(self, base, scope):
        return fresh_name(base, set(scope.values()) | self.params)

    def _kind(self, stmts, dim):
        k = (dim - 1) // 2
        found = {}
        for s in stmts:
            if k < len(s.loops) and s.loops[k] in s.tags:
                found.setdefault(s.tags[s.loops[k]], s.name)
        if not found:
            return L.LoopKind.SERIAL, 1
        if len(found) > 1:
            desc = ", ".join(f"{tag[0]} by {who}" for tag, who in found.items())
            raise ScheduleError(f"one loop is tagged differently by the computations that share it: {desc}")
        (kind, factor), = found
        if kind == L.LoopKind.UNROLL and factor is None:
            factor = self._full_unroll_factor(stmts, dim)
            if factor is None:
                return L.LoopKind.SERIAL, 1
        return L.LoopKind(kind), factor

    def _full_unroll_factor(self, stmts, dim):
        """The trip count to unroll a loop tagged `unroll` without a factor by: the most iterations it
        runs in one iteration of the loops around it (a tile's extent, once compute_at is expanded),
        or None, with a warning, where isl finds no such constant up to MAX_FULL_UNROLL."""
        most = _most_iterations(stmts, dim)
        if most is not None and most <= MAX_FULL_UNROLL:
            return max(most, 1)
        k = (dim - 1) // 2
        loops = ", ".join(dict.fromkeys(f"{s.name}'s loop {s.loops[k]}" for s in stmts))
        if loops not in self.warned:
            self.warned.add(loops)
            why = "have no constant bound" if most is None else f"number up to {most}"
            warnings.warn(f"{loops}: unrolled without a factor, but its iterations in one iteration of the loops "
                          f"around it {why}; it runs as a plain loop (unroll takes at most {MAX_FULL_UNROLL} "
                          f"iterations without a factor)", stacklevel=2)
        return None


#: the most iterations a loop unrolled without a factor may have (Halide's unroll of a loop whose
#: extent is known per tile); isl operations allowed to find that count
MAX_FULL_UNROLL = 64
MAX_UNROLL_BOUND_OPERATIONS = 2_000_000


def _most_iterations(stmts, dim):
    """The most values time dimension `dim` takes, over the instances of `stmts`, for fixed values of
    the dimensions before it and of the sizes; None when that has no constant bound (or isl cannot
    find one within MAX_UNROLL_BOUND_OPERATIONS)."""
    times = None
    for s in stmts:
        t = s.time.intersect_domain(s.domain).range().reset_tuple_id()
        t = t.project_out(isl.dim_type.set, dim + 1, t.dim(isl.dim_type.set) - dim - 1)
        times = t if times is None else times.union(t)
    try:
        with operations_at_most(times.get_ctx(), MAX_UNROLL_BOUND_OPERATIONS):
            per_outer = isl.Map.from_range(times.coalesce()).move_dims(isl.dim_type.in_, 0, isl.dim_type.out, 0, dim)
            most = per_outer.dim_max(0).sub(per_outer.dim_min(0)).max_val()
    except OutOfOperations:
        return None
    return most.to_python() + 1 if most.is_int() else None


def _leaves_under(node, leaves):
    found = []

    def visit(n):
        if n.get_type() == isl.ast_node_type.user:
            found.append(leaves.made[int(n.get_annotation().name[4:])])
        return True
    node.foreach_descendant_top_down(visit)
    return found


def _statements_under(node, leaves):
    return [stmt for stmt, _, _ in _leaves_under(node, leaves)]


def _pieces_under(node, leaves):
    return {piece for _, _, piece in _leaves_under(node, leaves)}


def _rename_expr(e, scope):
    def repl(n):
        if type(n) is Sym and n.name in scope:
            return Sym(scope[n.name], n.dtype)
        return None
    return transform(e, repl)


def _rename(s, scope):
    if isinstance(s, L.Store):
        return L.Store(s.buffer, tuple(_rename_expr(i, scope) for i in s.indices), _rename_expr(s.value, scope))
    if isinstance(s, L.If):
        return L.If(_rename_expr(s.cond, scope), _rename(s.then, scope),
                    None if s.else_ is None else _rename(s.else_, scope))
    raise TypeError(type(s).__name__)


def broken_tiles(allocations, stmts, bodies, leaves):
    """Tile buffers whose producer and consumers did not land in the same allocating loop.

    A statement's pieces (full and partial tiles, steady state and edges) are separate statements
    for isl, which may generate them in different loop nests (the edge tiles in a loop of their
    own). A tile may be allocated in several loops, but the pieces that use one tile instance (the
    same values of the loops around the allocation) must share its loop; statements that break
    this are generated again whole."""
    broken = set()
    made = {piece for _, _, piece in leaves.made}
    for local in {s.local for s in stmts if s.local is not None}:
        users = statements_using(stmts, bodies, {local.buffer.name})
        expected = {piece for piece in made if leaves.pieces.get(piece, piece) in users}
        scopes = [pieces & expected for tile, pieces in allocations if tile is local]
        if not expected <= set().union(*scopes) or not _apart(scopes, leaves.times, local.time_dim + 1):
            broken.add(local.buffer.name)
    return broken


def _apart(scopes, times, depth):
    """Whether pieces in different scopes never share the values of the outer `depth` loops."""
    def prefixes(piece):
        t = times[piece]
        return t.project_out(isl.dim_type.set, depth, t.dim(isl.dim_type.set) - depth)
    spans = []
    for sc in scopes:
        span = None
        for piece in sc:
            p = prefixes(piece)
            span = p if span is None else span.union(p)
        spans.append(span)
    for i, a in enumerate(spans):
        for b in spans[i + 1:]:
            if a is not None and b is not None and not a.intersect(b).is_empty():
                return False
    return True


def statements_using(stmts, bodies, buffer_names):
    """Names of the statements that write or read any of the named buffers."""
    out = set()
    for s in stmts:
        buf, index, value, predicate = bodies[s.name]
        names = {buf.name} | {n.target.name for e in (value, predicate, *index) if e is not None
                              for n in walk(e) if isinstance(n, Access)}
        if names & buffer_names:
            out.add(s.name)
    return out


def to_loop_ir(asts, leaves, params):
    """Convert the ASTs (the root nests in order); tile buffers whose loop was not generated are
    allocated at the root.

    Returns the loop IR and the allocations of tiles (see `broken_tiles`)."""
    converter = _Converter(leaves, params)
    parts = [converter.convert(ast, {}) for ast in asts]
    body = parts[0][0] if len(parts) == 1 else L.Block([p[0] for p in parts])
    pending = set().union(*(p[2] for p in parts))
    for local in sorted(pending, key=lambda p: p.buffer.name):
        body = L.Allocate(local.buffer, body)
        converter.allocations.append((local, {piece for _, _, piece in leaves.made}))
    return body, converter.allocations


def generate(stmts, context, params, bodies=None):
    """The loop IR of the scheduled statements (one isl AST for all of them); `bodies` ({name:
    (buffer, index, value, predicate)}) gives statements their bodies, by default `statement_body`.

    Full tiles are generated apart from partial ones, and steady states apart from their edges.
    Where the pieces put a tile buffer's producer and consumers in different loop nests (see
    `broken_tiles`), the statements using it are generated again with less of the split, until no
    tile is broken: without the full/partial split (isl moves a partial tile that is one iteration of
    the tile's loop out of that loop), then with their edges in one piece (an edge that is all of a
    statement at small sizes leaves the loop the same way), then without any split."""
    if not stmts:   # (every statement runs no iteration at any size: nothing to generate)
        return L.Block([])
    if bodies is None:
        locals_by_comp = {s.comp: s.local for s in stmts if s.local is not None}
        bodies = {s.name: statement_body(s, locals_by_comp) for s in stmts}
    asts, leaves = build_ast(stmts, bodies, context)
    body, allocations = to_loop_ir(asts, leaves, params)
    # what the statements using a broken tile give up, in turn: each retry gives up one more of these
    kept_whole = dict.fromkeys(("untiled", "uncut", "unseparated"), frozenset())
    for given_up in range(1, len(kept_whole) + 1):
        broken = broken_tiles(allocations, stmts, bodies, leaves)
        if not broken:
            break
        users = statements_using(stmts, bodies, broken)
        kept_whole = {option: names | users if k < given_up else names
                      for k, (option, names) in enumerate(kept_whole.items())}
        asts, leaves = build_ast(stmts, bodies, context, **kept_whole)
        body, allocations = to_loop_ir(asts, leaves, params)
    return body
