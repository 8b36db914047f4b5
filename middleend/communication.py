"""Communication between ranks, computed exactly from the access relations by isl.

The ranks run the distributed program's *phases* one after the other: a phase
is a distributed loop (with every statement sharing it), or a statement that
runs on every rank, inside the loops around it. Before a phase, each rank
receives exactly the elements its instances of the phase read that another
rank computed (the source of a flow dependence runs there) or holds (a block of
a distributed input), each element in the first phase that reads it, in one
message per peer; after the last phase, each rank receives the elements of its
blocks of the outputs that another rank wrote last.

An element set is an isl set of a buffer's elements parametric in the sizes,
the sender's and the receiver's blocks (see distribution.py) and the values of
the loops around the exchange point; the loop IR here scans it as runs of
consecutive elements (`Span`), which both ends of a message walk in the same
order on their own storage.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import islpy as isl

from . import loopir as L
from .affine import context_on, from_ast_expr
from .dependences import union_maps
from .distribution import group_of, on_role, outer_param, owned
from .errors import IllegalScheduleError, NotSupportedError
from .expr import Const, Sym, UnOp, binop, simplify, pseudo_c, transform
from .types import int64


# loop IR statements of the distributed program --------------------------------------------------

@dataclass(eq=False)
class Exchange(L.Stmt):
    """Start the messages of exchange `index` (receives and sends with every peer); `outer` are the
    values of the loops around it (the parameters mpi_o0, mpi_o1... of its element sets)."""

    index: int
    outer: tuple = ()

    def pseudo_c(self):
        outer = f" at ({', '.join(pseudo_c(e) for e in self.outer)})" if self.outer else ""
        return [f"exchange_start({self.index});  // messages of exchange {self.index}{outer}"]


@dataclass(eq=False)
class Wait(L.Stmt):
    """Wait until the messages of exchange `index` have arrived and left."""

    index: int

    def pseudo_c(self):
        return [f"exchange_wait({self.index});"]


@dataclass(eq=False)
class Span(L.Stmt):
    """`length` consecutive elements of `buffer` from `indices` on, in a message."""

    buffer: object
    indices: tuple
    length: object

    def pseudo_c(self):
        return [f"span(&{self.buffer.name}[{', '.join(pseudo_c(i) for i in self.indices)}], {pseudo_c(self.length)});"]


# phases ------------------------------------------------------------------------------------------------

@dataclass(eq=False)
class Phase:
    """Statements run between two exchange points: those whose first depth + 1 betas are `betas`."""

    index: int
    betas: tuple
    depth: int
    stmts: list
    group: object = None          # the distribution Group, or None for statements on every rank
    items: list = field(default_factory=list)   # (Buffer, element set) received before it
    command: str | None = None     # the send_receive command that placed it, if any
    outer: isl.Set | None = None   # the values of the loops around it where it runs (on some rank)

    def times(self, n_time) -> isl.Set:
        """Its statements' times in the iteration of the loops around it given by mpi_o0..."""
        dims = [f"c{i}" for i in range(n_time)]
        cons = [f"c{2 * j} = {b}" for j, b in enumerate(self.betas)]
        cons += [f"c{2 * j + 1} = {outer_param(j)}" for j in range(self.depth)]
        params = [outer_param(j) for j in range(self.depth)]
        return isl.Set(f"[{', '.join(params)}] -> {{ [{', '.join(dims)}] : {' and '.join(cons)} }}")


def find_phases(stmts, groups) -> list:
    """The phases: one per distributed loop, and for the other statements one per place in the
    loops they share with distributed ones (a statement inside a time loop around distributed
    loops gets its data in each iteration)."""
    phases = [Phase(0, g.betas, g.depth, list(g.stmts), g) for g in groups]
    for s in stmts:
        if group_of(s, groups) is not None:
            continue
        depth = 0
        for g in groups:
            j = 0
            while j < min(g.depth, len(s.loops)) and tuple(s.betas[:j + 1]) == g.betas[:j + 1]:
                j += 1
            depth = max(depth, j)
        key = tuple(s.betas[:depth + 1])
        for p in phases:
            if p.group is None and p.betas == key and p.depth == depth:
                p.stmts.append(s)
                break
        else:
            phases.append(Phase(0, key, depth, [s]))
    for k, p in enumerate(phases):
        p.index = k
    return phases


# accesses per statement -------------------------------------------------------------------------

class Accesses:
    """Statement-level access relations on the buffers the program allocates or is passed."""

    def __init__(self, stmts, comp_accesses, buffers):
        names = {b.name for b in buffers}
        self.writes = {}   # stmt -> UnionMap inst -> element
        self.reads = {}    # stmt -> {buffer name: Map inst -> element}
        by_comp = {}
        for kind, umap in (("w", comp_accesses.must_writes), ("w", comp_accesses.may_writes),
                           ("r", comp_accesses.reads)):
            for m in union_maps(umap):
                if m.get_tuple_name(isl.dim_type.out) in names:
                    by_comp.setdefault((kind, m.get_tuple_name(isl.dim_type.in_)), []).append(m)
        for s in stmts:
            w = [s.to_original.apply_range(m) for m in by_comp.get(("w", s.comp.name), [])]
            self.writes[s] = w[0] if len(w) == 1 else _union(w)
            reads = {}
            for m in by_comp.get(("r", s.comp.name), []):
                buf = m.get_tuple_name(isl.dim_type.out)
                r = s.to_original.apply_range(m)
                reads[buf] = r if buf not in reads else reads[buf].union(r)
            self.reads[s] = reads


def _union(maps):
    out = None
    for m in maps:
        out = m if out is None else out.union(m)
    return out


def _exempt(producer, sink_name) -> bool:
    """Reads of a producer by the consumer it is computed in: the reader's rank computes them."""
    target = producer.compute_at_target
    return target is not None and target[0].name == sink_name and not producer.stored_at_root


def _to_union(x):
    if x is None:
        return None
    return x if isinstance(x, isl.UnionMap) else isl.UnionMap.from_map(x)


def _domain_sets(uset):
    out = []
    uset.foreach_set(out.append)
    return out


class Communication:
    """The element sets of every exchange of a distributed program."""

    def __init__(self, stmts, deps, groups, phases, accesses, inputs, outputs, transfers, n_time, pair_context,
                 params):
        self.stmts, self.groups, self.phases = stmts, groups, phases
        self.params = params
        self.inputs = inputs
        self.acc = accesses
        self.n_time = n_time
        self.pair_context = pair_context
        self.by_name = {s.name: s for s in stmts}
        explicit = self._explicit(transfers)
        covered = {(data_name, consumer) for data_name, consumer, _ in explicit}
        self._flow(deps, covered)
        self._inputs(inputs, covered)
        for data_name, consumer, phase in explicit:
            self._explicit_items(data_name, consumer, phase, deps, inputs)
        self.final = self._final(outputs)

    # flow from distributed statements ------------------------------------------------------------
    def _pairs(self, deps):
        """(source stmt, sink stmt, statement instance pairs) of the flow dependences whose source
        runs on one rank (a replicated source is on every rank; a recomputed producer on the rank of
        its consumer)."""
        for m in union_maps(deps.raw):
            a = self.by_name.get(m.get_tuple_name(isl.dim_type.in_))
            b = self.by_name.get(m.get_tuple_name(isl.dim_type.out))
            if a is None or b is None or group_of(a, self.groups) is None or a.recomputed_with(b):
                continue
            if _exempt(a.comp, b.name):
                continue
            yield a, b, a.to_original.apply_range(m).apply_range(b.to_original.reverse())

    def _flow(self, deps, covered):
        """For each source statement, its instances that another rank reads, with the time of the
        first read there; the elements they wrote go to the phase of that read."""
        per_source = {}
        for a, b, pairs in self._pairs(deps):
            if (a.comp.storage_owner.buffer.name, b.name) in covered:
                continue
            src = on_role(a, group_of(a, self.groups), "src")
            snk = on_role(b, group_of(b, self.groups), "dst")
            d = pairs.intersect_domain(src).intersect_range(snk).intersect_params(self.pair_context)
            if d.is_empty():
                continue
            d = d.apply_range(b.time)
            per_source[a] = d if a not in per_source else per_source[a].union(d)
        for a, d in per_source.items():
            first = self._first(d)
            for p in self.phases:
                if p.command is not None:
                    continue
                sources = first.intersect_range(p.times(self.n_time)).domain()
                if sources.is_empty():
                    continue
                elements = _to_union(self.acc.writes[a]).intersect_domain(isl.UnionSet.from_set(sources)).range()
                for e in _domain_sets(elements):
                    self._add(p, e)

    def _inputs(self, inputs, covered):
        """Elements of distributed inputs read by a rank that does not hold them, in the phase of the
        first read."""
        for buf, dim, dist in inputs:
            name = buf.name
            if dist is None:
                continue
            reads = None
            for b in self.stmts:
                r = self.acc.reads[b].get(name)
                if r is None or (name, b.name) in covered:
                    continue
                r = r.intersect_domain(on_role(b, group_of(b, self.groups), "dst"))
                t = r.reverse().apply_range(b.time)
                reads = t if reads is None else reads.union(t)
            if reads is None:
                continue
            held = owned(buf, self.params, dim, dist, "src").subtract(owned(buf, self.params, dim, dist, "dst"))
            first = self._first(reads.intersect_domain(held).intersect_params(self.pair_context))
            for p in self.phases:
                if p.command is not None:
                    continue
                elements = first.intersect_range(p.times(self.n_time)).domain()
                self._add(p, elements)

    def _first(self, reads):
        """`reads` (a value -> the times a rank reads it) at the first read only; as it is where every
        read of a value is in one iteration of one phase (the lexmin is costly)."""
        depth = max(p.depth for p in self.phases)
        n = self.n_time
        ins = [f"c{i}" for i in range(n)]
        key = isl.Map(f"{{ [{', '.join(ins)}] -> [{', '.join(ins[:2 * depth + 1])}] }}")
        if reads.apply_range(key).is_single_valued():
            return reads
        return reads.lexmin()

    def _add(self, phase, elements):
        elements = elements.intersect_params(self.pair_context).coalesce()
        if elements.is_empty():
            return
        name = elements.get_tuple_name()
        for k, (buf, e) in enumerate(phase.items):
            if buf == name:
                phase.items[k] = (buf, e.union(elements).coalesce())
                return
        phase.items.append((name, elements))

    def box_sets(self, phase, name):
        """(needed, source) for Distributed Halide's way of exchanging buffer `name` before `phase`: the
        receiver asks for the bounding box of what its instances of the phase read (in the iteration
        of the loops around it given by mpi_o0...), and each sender sends its part of that box: the
        bounding box of what it computed of the buffer (or holds, of an input). Both are sets whose
        boxes are taken for given sizes and ranks (see middleend/volume.py)."""
        times = phase.times(self.n_time)
        needed = None
        for b in phase.stmts:
            r = self.acc.reads[b].get(name)
            if r is None:
                continue
            mine = on_role(b, group_of(b, self.groups), "dst")
            at = b.time.intersect_range(times).domain()
            e = r.intersect_domain(mine.intersect(at)).range()
            needed = e if needed is None else needed.union(e)
        held = next(((buf, dim, dist) for buf, dim, dist in self.inputs if buf.name == name), None)
        if held is not None:
            return needed, owned(held[0], self.params, held[1], held[2], "src")
        source = None
        for a in self.stmts:
            g = group_of(a, self.groups)
            w = self.acc.writes.get(a)
            if g is None or w is None:
                continue
            for m in union_maps(_to_union(w)):
                if m.get_tuple_name(isl.dim_type.out) == name:
                    e = m.intersect_domain(on_role(a, g, "src")).range()
                    source = e if source is None else source.union(e)
        return needed, source

    # outputs -----------------------------------------------------------------------------------------
    def _final(self, outputs):
        """[(buffer name, elements)]: the elements of each output that a rank holds at the end and
        another rank wrote last."""
        out = []
        for buf, dim, dist in outputs:
            name = buf.name
            writers = [s for s in self.stmts if self.acc.writes.get(s) is not None
                       and any(m.get_tuple_name(isl.dim_type.out) == name
                               for m in union_maps(_to_union(self.acc.writes[s])))]
            if not any(group_of(s, self.groups) is not None for s in writers):
                continue
            times = None
            when = None
            for s in writers:
                w = _to_union(self.acc.writes[s]).reverse().apply_range(isl.UnionMap.from_map(s.time))
                when = w if when is None else when.union(w)
                t = isl.UnionMap.from_map(s.time.intersect_domain(s.domain))
                times = t if times is None else times.union(t)
            last = when.lexmax().apply_range(times.reverse())   # element -> its last writer
            held = owned(buf, self.params, dim, dist, "dst")
            elements = None
            for s in writers:
                g = group_of(s, self.groups)
                if g is None:
                    continue
                e = last.intersect_range(isl.UnionSet.from_set(on_role(s, g, "src"))).domain()
                elements = e if elements is None else elements.union(e)
            for e in _domain_sets(elements.intersect(isl.UnionSet.from_set(held))):
                e = e.intersect_params(self.pair_context).coalesce()
                if not e.is_empty():
                    out.append((name, e))
        return out

    # explicit send/receive ------------------------------------------------------------------------------
    def _explicit(self, transfers):
        """[(data buffer name, consumer name, phase)] for the send_receive commands, each with a phase
        of its own at the consumer's loop."""
        out = []
        for data, consumer, level, cmd in transfers:
            stmt = self.by_name.get(consumer.name)
            if stmt is None:
                raise NotSupportedError(f"{cmd}: {consumer.name} is inlined and has no loops")
            depth = stmt.loops.index(level) if level in stmt.loops else None
            if depth is None:
                raise NotSupportedError(f"{cmd}: {consumer.name} has no loop {level!r} here; its loops are "
                                        f"{stmt.loops}")
            g = group_of(stmt, self.groups)
            if g is not None and depth > g.depth:
                raise IllegalScheduleError(
                    f"{cmd}: loop {level} is inside the distributed loop {g.loop} of {consumer.name}, whose "
                    f"iterations run at the same time on different ranks; send before {g.loop} or a loop "
                    f"around it", command=cmd)
            name = getattr(data, "storage_owner", data).buffer.name   # an input, or a computation's storage
            phase = Phase(len(self.phases), tuple(stmt.betas[:depth + 1]), depth, [stmt], None, command=cmd)
            self.phases.append(phase)
            out.append((name, consumer.name, phase))
        return out

    def _explicit_items(self, data_name, consumer_name, phase, deps, inputs):
        """The elements of `data_name` that the consumer's instances in one iteration of the loops
        around the send_receive read from other ranks; every flow it carries must come from before."""
        b = self.by_name[consumer_name]
        gb = group_of(b, self.groups)
        snk = on_role(b, gb, "dst")
        in_phase = b.time.intersect_range(phase.times(self.n_time)).domain()
        marker = self._marker_time(phase)
        for a, b2, pairs in self._pairs(deps):
            if b2 is not b or a.comp.storage_owner.buffer.name != data_name:
                continue
            d = pairs.intersect_domain(on_role(a, group_of(a, self.groups), "src")).intersect_range(snk)
            d = d.intersect_params(self.pair_context)
            # the source must run before the exchange point of its sink's iteration
            late = d.apply_domain(a.time.apply_range(self._doubled())).apply_range(b.time.apply_range(marker))
            late = late.intersect(isl.Map.lex_ge(late.get_space().domain()).intersect_params(late.params()))
            if not late.is_empty():
                raise IllegalScheduleError(
                    f"{phase.command} exchanges values of {a.name} before {b.name}'s loop, but some are written "
                    f"later on another rank (source time -> exchange time: {_sample(late)}); place it later or "
                    f"leave the exchange to the compiler", source=a.name, sink=b.name, dependence=d,
                    command=phase.command)
            sources = d.intersect_range(in_phase).domain()
            written = _to_union(self.acc.writes[a]).intersect_domain(isl.UnionSet.from_set(sources)).range()
            for e in _domain_sets(written):
                if e.get_tuple_name() == data_name:
                    self._add(phase, e)
        for buf, dim, dist in inputs:
            name = buf.name
            if name != data_name or dist is None:
                continue
            r = self.acc.reads[b].get(name)
            if r is None:
                continue
            held = owned(buf, self.params, dim, dist, "src").subtract(owned(buf, self.params, dim, dist, "dst"))
            self._add(phase, r.intersect_domain(snk.intersect(in_phase)).range().intersect(held))

    def _doubled(self) -> isl.Map:
        """Times with their static dimensions doubled (room for the exchange points between them)."""
        ins = [f"c{i}" for i in range(self.n_time)]
        outs = [f"2*c{i}" if i % 2 == 0 else f"c{i}" for i in range(self.n_time)]
        return isl.Map(f"{{ [{', '.join(ins)}] -> [{', '.join(outs)}] }}")

    def _marker_time(self, phase) -> isl.Map:
        """time -> the time of the exchange point before the iteration of `phase`'s loops it is in, in
        the doubled time space (see `_doubled`: the exchange sits one step before the phase's beta)."""
        n = self.n_time
        k = phase.depth
        ins = [f"c{i}" for i in range(n)]
        outs = [f"2*c{i}" if i % 2 == 0 else f"c{i}" for i in range(2 * k)]
        outs += [f"2*c{2 * k} - 1"] + ["0"] * (n - 2 * k - 1)
        return isl.Map(f"{{ [{', '.join(ins)}] -> [{', '.join(outs)}] }}")


def _sample(m):
    text = str(m.sample())
    return text[text.find("{") + 1:text.rfind("}")].strip()


# scanning element sets as runs ----------------------------------------------------------------------------

#: the symbols of the two ends' rank numbers in a scan (a message goes up or down the ranks)
SRC_RANK, DST_RANK = "mpi_src_rank", "mpi_dst_rank"


def scanner(buffer, elements: isl.Set, before: isl.Set, after: isl.Set) -> L.Stmt:
    """Loop IR that visits `elements` (a set of `buffer`'s elements, parametric) as Spans of consecutive
    elements along the last dimension, in an order that depends only on the parameters: one scan for
    a sender of a lower rank than the receiver (`before`: its blocks come first in every distribution),
    one for a higher rank (`after`); each is simpler than a scan for both."""
    scans = []
    for context in (before, after):
        e = elements.intersect_params(context).coalesce()
        if e.is_empty():
            scans.append(None)
            continue
        e = e.gist_params(context).coalesce()
        scans.append(_scan_set(buffer, e, context_on(e, context)))
    if scans[0] is None and scans[1] is None:
        return L.Block([])
    lower = binop("lt", Sym(SRC_RANK, int64), Sym(DST_RANK, int64))
    if scans[1] is None:
        return L.If(lower, scans[0])
    if scans[0] is None:
        return L.If(UnOp("not", lower), scans[1])
    return L.If(lower, scans[0], scans[1])


def _scan_set(buffer, elements, context):
    """The Spans of `elements` (see `scanner`) for parameters in `context`: one loop nest over the
    points of all dimensions but the last, each with the interval of the last one, where the set is
    such intervals; else per convex piece, element by element where a piece has holes."""
    whole = _rows(buffer, elements, context)
    if whole is not None:
        return whole
    parts = []
    for piece in elements.make_disjoint().get_basic_sets():
        piece = isl.Set.from_basic_set(piece)
        parts.append(_rows(buffer, piece, context) or _scan(buffer, piece, None, context))
    return L.Block(parts)


def _rows(buffer, elements, context):
    """The scan of `elements` as intervals of its last dimension, or None when it has holes there."""
    n = elements.dim(isl.dim_type.set)
    if n == 0:
        return _scan(buffer, elements, None, context)
    rows = isl.Map.from_range(elements).move_dims(isl.dim_type.in_, 0, isl.dim_type.out, 0, n - 1)
    lo = rows.lexmin_pw_multi_aff().get_pw_aff(0).coalesce()
    hi = rows.lexmax_pw_multi_aff().get_pw_aff(0).coalesce()
    line = isl.Space.set_alloc(rows.get_ctx(), 0, 1)
    interval = (isl.Map.from_pw_aff(lo).apply_range(isl.Map.lex_le(line))
                .intersect(isl.Map.from_pw_aff(hi).apply_range(isl.Map.lex_ge(line))))
    if not interval.intersect_domain(rows.domain()).is_subset(rows):
        return None
    return _scan(buffer, rows.domain().coalesce(), (lo, hi), context)


def _scan(buffer, domain, bounds, context):
    """Loops over `domain` (the first dims of the elements; all of them when `bounds` is None) with a
    Span at each point: from lo to hi along the last dimension, or the point itself."""
    made, errors = [], []
    n = domain.dim(isl.dim_type.set)
    names = {f"c{i}": f"mpi_e{i}" for i in range(n)}

    def expr(e):
        return _renamed(from_ast_expr(e), names)

    def leaf(node, build):
        try:
            schedule = isl.Map.from_union_map(build.get_schedule())
            iterators = isl.PwMultiAff.from_map(schedule.reverse())
            coords = [expr(build.expr_from_pw_aff(iterators.get_pw_aff(i))) for i in range(n)]
            if bounds is None:
                made.append(Span(buffer, tuple(coords), Const(1, int64)))
            else:
                lo, hi = (expr(build.expr_from_pw_aff(b.pullback_pw_multi_aff(iterators))) for b in bounds)
                made.append(Span(buffer, tuple(coords) + (lo,), simplify(binop("add", binop("sub", hi, lo), 1))))
            return node.set_annotation(isl.Id(f"span{len(made) - 1}"))
        except Exception as exc:   # an exception must not cross isl's C callback
            errors.append(exc)
            return node

    if n == 0:
        schedule = isl.Map.from_domain_and_range(domain, isl.Set("{ [] }"))
    else:
        schedule = isl.Map.identity(domain.get_space().map_from_set()).intersect_domain(domain)
        schedule = schedule.reset_tuple_id(isl.dim_type.out)
    build = isl.AstBuild.from_context(context)
    build, _ = build.set_at_each_domain(leaf)
    ast = build.node_from_schedule_map(isl.UnionMap.from_map(schedule))
    if errors:
        raise errors[0]
    return _loop_ir(ast, made, expr, names)


def _renamed(e, names):
    def repl(x):
        if type(x) is Sym and x.name in names:
            return Sym(names[x.name], int64)
        return None
    return transform(e, repl)


def _loop_ir(node, made, expr, names):
    t = node.get_type()
    if t == isl.ast_node_type.block:
        children = node.block_get_children()
        return L.Block([_loop_ir(children.get_at(i), made, expr, names) for i in range(children.n_ast_node())])
    if t == isl.ast_node_type.user:
        return made[int(node.get_annotation().name[4:])]
    if t == isl.ast_node_type.if_:
        other = _loop_ir(node.if_get_else_node(), made, expr, names) if node.if_has_else_node() else None
        return L.If(expr(node.if_get_cond()), _loop_ir(node.if_get_then_node(), made, expr, names), other)
    if t == isl.ast_node_type.for_:
        var = names[node.for_get_iterator().get_id().name]
        lo = expr(node.for_get_init())
        cond = node.for_get_cond()
        bound = expr(cond.get_op_arg(1))
        hi = simplify(binop("add", bound, 1)) if cond.get_op_type() == isl.ast_expr_op_type.le else bound
        return L.For(var, lo, hi, _loop_ir(node.for_get_body(), made, expr, names))
    raise NotSupportedError(f"unexpected isl AST node in a message scan: {node.to_C_str()}")
