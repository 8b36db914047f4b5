"""The program each rank runs (SPMD): distributed loops over the rank's block, local storage, exchanges.

`lower_spmd` turns a scheduled function with distributed loops or buffers into
one loop IR kernel that every rank runs with its own rank number:

* each statement of a distributed loop runs the instances of the rank's block
  (the block bounds are parameters of the isl AST, computed on entry);
* every buffer is held per rank as the bounding box of the elements the rank
  touches (computes, reads, receives or holds), indexed from its first element;
  a distributed input or output is the caller's block, used in place when the
  rank touches nothing outside it, else copied into a box with room for halos;
* before each phase that reads other ranks' values, an `Exchange` starts one
  message per peer and a `Wait` completes them; the exchange points are
  statements of the isl AST like the computations (markers), so they sit
  exactly in the loops around their phase, on every rank alike;
* where a distributed loop's iterations split into an interior that needs no
  received value and a boundary that does, the interior runs between the
  `Exchange` and the `Wait`, overlapping the messages.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import islpy as isl

from . import codegen
from . import loopir as L
from .accesses import statement_body
from .affine import IslAff, affine_text, constraint_text, pwaff_on, pwaff_to_expr
from .buffer import Buffer
from .communication import Accesses, Communication, Exchange, Span, Wait, find_phases, scanner
from .dependences import collect_accesses, compute_dependences
from .distribution import (PREFIX, Distributions, block_exprs, extent_pwaff, find_groups, group_of, on_role,
                           owned)
from .errors import NotSupportedError, ScheduleError
from .expr import Access, Const, Sym, binop, max_, min_, simplify, pseudo_c, transform, walk
from .statements import Statement
from .types import int64

RANK, NRANKS = f"{PREFIX}rank", f"{PREFIX}nranks"


@dataclass(eq=False)
class Placement:
    """How every rank holds one buffer of the program.

    `dim` is the dimension held in blocks of `dist` (a distributed input or output), None for a
    buffer held whole (a replicated input or output) or as a box (a temporary). `argument` is what the
    caller passes on each rank (inputs and outputs), `local` the storage the code indexes, `origin`
    the global index of its first element per dimension (expressions on entry); `copy` says whether
    `local` is a copy of the argument (a box wider than the block)."""

    buffer: Buffer
    dim: int | None
    dist: object
    argument: Buffer | None
    local: Buffer
    origin: list
    copy: bool = False

    @property
    def kind(self):
        return self.buffer.kind


@dataclass(eq=False)
class DistributedFunction:
    """What the MPI back-end prints: the kernel of one rank and the data its communication needs."""

    lowered: L.LoweredFunction     # arguments are the rank's blocks; Exchange/Wait statements in the body
    distributions: list             # Distribution, by index
    placements: list                # Placement of each argument, in argument order
    exchanges: dict                 # index -> (number of loops around it, [(local Buffer, scanner Stmt)])
    phases: list                    # communication.Phase (for reports and counting)
    final: list                     # (buffer name, element set): the outputs' last transfers
    pair_context: isl.Set = None
    sizes: list = field(default_factory=list)
    size_derived: list = field(default_factory=list)   # (name, expression): the sizes computed on entry
    communication: object = None    # the communication.Communication it was built from (for counting)

    def block(self, index, rank, nranks):
        """(lo, hi) loop IR expressions of the block of distribution `index` held by rank `rank` of
        `nranks` (expressions of the sizes and of those two)."""
        d = self.distributions[index]
        return block_exprs(d.lo_expr, d.hi_expr, rank, nranks)


def deferred(function, stmts, deps, context, lowered):
    """`lowered.spmd`: builds the per-rank program on its first call (only the MPI back-end asks),
    refusing if the function was rescheduled since `lowered` was made."""
    made_at = len(function._history)
    cache = []

    def build() -> DistributedFunction:
        if not cache:
            if len(function._history) != made_at:
                raise ScheduleError(f"{function.name} was rescheduled after it was lowered; lower it again")
            cache.append(lower_spmd(function, stmts, deps or compute_dependences(function.computations, context),
                                    context, lowered))
        return cache[0]
    return build


def lower_spmd(function, stmts, deps, context, lowered) -> DistributedFunction:
    """The per-rank program of `function` (scheduled as `stmts`, lowered globally as `lowered`)."""
    return _Lowering(function, stmts, deps, context, lowered).run()


class _Lowering:
    def __init__(self, function, stmts, deps, context, lowered):
        self.f, self.stmts, self.deps, self.context, self.lowered = function, stmts, deps, context, lowered
        self.params = sorted(function.param_names)
        names = self.params + [loop for s in stmts for loop in s.loops] + [b.name for b in lowered.arguments]
        clash = sorted({n for n in names if n.startswith(PREFIX)})
        if clash:
            raise NotSupportedError(f"{clash[0]!r}: names starting with {PREFIX!r} are the MPI back-end's; rename it")
        self.n_time = max(s.time.dim(isl.dim_type.out) for s in stmts)
        self.dists = Distributions(context)
        self.groups = find_groups(stmts, context, self.dists)
        self.buffers = list(lowered.inputs) + list(lowered.outputs) + list(lowered.temporaries)
        self.holding = {}   # buffer name -> (dim, Distribution) for distributed inputs and outputs
        self.entry = []     # (name, expression) of the local storage's boxes, computed on entry
        self._hold_inputs()
        self._hold_outputs()

    # which rank holds which elements ---------------------------------------------------------------
    def _hold_inputs(self):
        for inp in self.f.inputs:
            dim = getattr(inp, "distributed_dim", None)
            if dim is None:
                continue
            ext = extent_pwaff(inp.buffer.shape[dim], self.params, f"input {inp.name}")
            zero = isl.PwAff(f"[{', '.join(self.params)}] -> {{ [(0)] }}")
            self.holding[inp.name] = (dim, self.dists.get(zero, ext, f"dimension {dim} of {inp.name}"))

    def _hold_outputs(self):
        writers = {}
        for s in self.stmts:
            if s.local is None:
                writers.setdefault(s.comp.storage_owner.buffer.name, []).append(s)
        for b in self.lowered.outputs:
            owner = next((c for c in self.f.computations if c.storage_owner.buffer.name == b.name), None)
            dim = getattr(b, "distributed_dim", None)
            if dim is None and owner is not None:
                dim = getattr(owner.storage_owner, "storage_distribution", None)
            if dim is None:
                dim = self._inferred_dim(b, writers.get(b.name, []))
            if dim is None:
                continue
            ext = extent_pwaff(b.shape[dim], self.params, f"output {b.name}")
            zero = isl.PwAff(f"[{', '.join(self.params)}] -> {{ [(0)] }}")
            self.holding[b.name] = (dim, self.dists.get(zero, ext, f"dimension {dim} of {b.name}"))

    def _inferred_dim(self, buffer, writers):
        """The dimension of an output along which its distributed writers' loop moves (the rows a
        rank computes), or None when no writer is distributed."""
        comm = collect_accesses([w.comp for w in writers], self.context)
        for w in writers:
            g = group_of(w, self.groups)
            if g is None:
                continue
            by_time = None
            for m in _maps(comm.must_writes.union(comm.may_writes)):
                if m.get_tuple_name(isl.dim_type.in_) == w.comp.name:
                    t = w.to_original.apply_range(m).apply_domain(w.time)
                    by_time = t if by_time is None else by_time.union(t)
            if by_time is None:
                continue
            n = by_time.dim(isl.dim_type.in_)
            loop = by_time.project_out(isl.dim_type.in_, g.dim + 1, n - g.dim - 1).project_out(
                isl.dim_type.in_, 0, g.dim)
            for d in range(buffer.ndim):
                k = loop.dim(isl.dim_type.out)
                rel = loop.project_out(isl.dim_type.out, d + 1, k - d - 1).project_out(isl.dim_type.out, 0, d)
                rel = rel.intersect_params(self.context)
                if not rel.is_equal(isl.Map.from_domain_and_range(rel.domain(), rel.range())):
                    return d
        return None

    # the whole lowering ---------------------------------------------------------------------------
    def run(self) -> DistributedFunction:
        phases = find_phases(self.stmts, self.groups)
        comp_acc = collect_accesses(self.f.computations, self.context)
        self.acc = Accesses(self.stmts, comp_acc, self.buffers)
        self.me_context = self.dists.constraints("me")
        pair = self.dists.pair_constraints()
        inputs = [(b, *self.holding.get(b.name, (None, None))) for b in self.lowered.inputs]
        outputs = [(b, *self.holding.get(b.name, (None, None))) for b in self.lowered.outputs]
        comm = Communication(self.stmts, self.deps, self.groups, phases, self.acc, inputs, outputs,
                             list(self.f._transfers), self.n_time, pair, self.params)
        self.placements = self._place()
        body = self._generate(comm)
        exchanges = {}
        ends = (self.dists.pair_constraints("before"), self.dists.pair_constraints("after"))
        for p in comm.phases:
            if p.items:
                exchanges[p.index] = (p.depth, [(self._local(name), self._localize_stmt(scanner(
                    self.placements[name].buffer, e, *ends))) for name, e in p.items])
        final_index = len(comm.phases)
        if comm.final:
            exchanges[final_index] = (0, [(self._local(name), self._localize_stmt(scanner(
                self.placements[name].buffer, e, *ends))) for name, e in comm.final])
            body = L.Block([body, Exchange(final_index), Wait(final_index)])
        body = self._localize_stmt(body)
        body = self._copies(body)
        derived = list(self.lowered.derived) + self._entry_values()
        temps = [p.local for p in self.placements.values() if p.argument is None or p.copy]
        arguments = [self.placements[b.name] for b in self.lowered.arguments]
        rank_fn = L.LoweredFunction(
            self.lowered.name, list(self.lowered.params),
            [p.argument for p in arguments[:len(self.lowered.inputs)]],
            [p.argument for p in arguments[len(self.lowered.inputs):]],
            body, temps, dict(self.lowered.fixed_params), list(self.lowered.assumptions), derived,
            dict(self.lowered.param_ranges))
        out = DistributedFunction(rank_fn, list(self.dists.items), arguments, exchanges, comm.phases, comm.final,
                                  pair, list(self.lowered.params), list(self.lowered.derived))
        out.communication = comm
        return out

    # storage ----------------------------------------------------------------------------------------------
    def _accessed(self, name) -> list:
        """[(elements, distribution or None)]: the elements of buffer `name` that the rank (role me)
        writes or reads, per statement, with the distribution whose block they depend on."""
        out = []
        for s in self.stmts:
            g = group_of(s, self.groups)
            maps = []
            w = self.acc.writes.get(s)
            if w is not None:
                maps += [m for m in _maps(w) if m.get_tuple_name(isl.dim_type.out) == name]
            r = self.acc.reads[s].get(name)
            if r is not None:
                maps.append(r)
            if maps:
                mine = on_role(s, g, "me")
                for m in maps:
                    out.append((m.intersect_domain(mine).range(), None if g is None else g.dist))
        return out

    def _place(self):
        """A Placement for every buffer the program allocates or is passed."""
        out = {}
        n_in = len(self.lowered.inputs)
        for k, b in enumerate(self.buffers):
            is_arg = k < len(self.lowered.arguments)
            held = self.holding.get(b.name)
            if is_arg and held is None:   # replicated: the caller's whole array
                zero = [Const(0, int64)] * b.ndim
                out[b.name] = Placement(b, None, None, b, b, zero)
                continue
            parts = self._accessed(b.name)
            if held is not None:
                dim, dist = held
                own = owned(b, self.params, dim, dist, "me")
                lo, hi = Sym(dist.param("me", "lo"), int64), Sym(dist.param("me", "hi"), int64)
                shape = list(b.shape)
                shape[dim] = simplify(hi - lo)
                argument = Buffer(b.name, shape, b.dtype, "input" if k < n_in else "output")
                argument.zero_init = b.zero_init
                origin = [Const(0, int64)] * b.ndim
                origin[dim] = lo
                mine = own.intersect_params(self.me_context)
                if all(e.intersect_params(self.me_context).is_subset(mine) for e, _ in parts):
                    out[b.name] = Placement(b, dim, dist, argument, argument, origin)
                    continue
                local = self._box_buffer(b, f"{b.name}_local", parts + [(own, dist)])
                out[b.name] = Placement(b, dim, dist, argument, local[0], local[1], copy=True)
                continue
            local, origin = self._box_buffer(b, b.name, parts)
            out[b.name] = Placement(b, None, None, None, local, origin)
        return out

    def _box_buffer(self, b, name, parts):
        """(a buffer over the bounding box of the elements of `parts` ([(elements, distribution)]) as a
        rank holds them, its origin). Each part's bounds are taken where its block holds something (an
        empty part needs no room), which keeps them simple; the box is their min and max."""
        shape, origin = [], []
        parts = [(e.intersect_params(self.me_context).coalesce(), dist) for e, dist in parts]
        parts = [(e, dist) for e, dist in parts if not e.is_empty()]
        for d in range(b.ndim):
            los, his = [], []
            for e, dist in parts:
                where = self.me_context if dist is None else self.me_context.intersect(self.dists.nonempty(dist, "me"))
                los.append(self._param_expr(e.dim_min(d).gist_params(where), where))
                his.append(self._param_expr(e.dim_max(d).gist_params(where), where))
            lo_e = _fold(min_, los) if los else Const(0, int64)
            hi_e = _fold(max_, his) if his else Const(-1, int64)
            o_name, n_name = f"{PREFIX}{name}_o{d}", f"{PREFIX}{name}_n{d}"
            self.entry.append((o_name, lo_e))
            self.entry.append((n_name, max_(simplify(hi_e - Sym(o_name, int64) + 1), Const(0, int64))))
            origin.append(Sym(o_name, int64))
            shape.append(Sym(n_name, int64))
        local = Buffer(name, shape, b.dtype, "temporary")
        local.zero_init = b.zero_init and b.kind == "output"
        return local, origin

    def _param_expr(self, pa, context):
        """A loop IR expression of a PwAff of the sizes and the rank's blocks on `context` (0 where it is
        undefined: where the elements it bounds are none)."""
        pa = pa.intersect_params(context).coalesce()
        rest = context.subtract(pa.domain())
        if not rest.is_empty():
            zero = isl.PwAff.zero_on_domain(isl.LocalSpace.from_space(context.get_space()))
            pa = pa.union_max(zero.intersect_domain(rest)).coalesce()
        return pwaff_to_expr(pa, context)

    def _entry_values(self):
        """(name, expression) computed on entry, in order: each distribution's range and the rank's
        block, then the boxes of the local storage."""
        out = []
        rank, nranks = Sym(RANK, int64), Sym(NRANKS, int64)
        for d in self.dists.items:
            lo, hi = block_exprs(d.lo_expr, d.hi_expr, rank, nranks)
            out += [(d.param("me", "lo"), lo), (d.param("me", "hi"), hi)]
        return out + self.entry

    def _local(self, name) -> Buffer:
        return self.placements[name].local

    def _localize_expr(self, e):
        def repl(n):
            if isinstance(n, Access) and isinstance(n.target, Buffer) and n.target.name in self.placements:
                p = self.placements[n.target.name]
                idx = [transform(i, repl) for i in n.indices]
                return Access(p.local, _shifted(idx, p.origin))
            return None
        return transform(e, repl)

    def _localize_stmt(self, s):
        """`s` on the rank's storage: every access to a placed buffer indexed from its local origin."""
        if isinstance(s, L.Block):
            return L.Block([self._localize_stmt(c) for c in s.body])
        if isinstance(s, L.For):
            kind = L.LoopKind.PARALLEL if s.kind == L.LoopKind.DISTRIBUTE else s.kind
            return L.For(s.var, self._localize_expr(s.lo), self._localize_expr(s.hi), self._localize_stmt(s.body),
                         kind, s.factor)
        if isinstance(s, L.If):
            return L.If(self._localize_expr(s.cond), self._localize_stmt(s.then),
                        None if s.else_ is None else self._localize_stmt(s.else_))
        if isinstance(s, L.Allocate):
            return L.Allocate(s.buffer, self._localize_stmt(s.body))
        if isinstance(s, L.Store):
            idx = [self._localize_expr(i) for i in s.indices]
            value = self._localize_expr(s.value)
            p = self.placements.get(s.buffer.name)
            if p is None:
                return L.Store(s.buffer, tuple(idx), value)
            return L.Store(p.local, tuple(_shifted(idx, p.origin)), value)
        if isinstance(s, Span):
            p = self.placements[s.buffer.name]
            idx = [self._localize_expr(i) for i in s.indices]
            return Span(p.local, tuple(_shifted(idx, p.origin)), s.length)
        return s

    def _copies(self, body):
        """Copy the caller's blocks into local boxes before the body (zeroing an output's box first
        where not every element is written) and back after it."""
        before, after = [], []
        for p in self.placements.values():
            if not p.copy:
                continue
            if p.kind == "input":
                before.append(_copy_block(p, to_local=True))
            else:
                if p.local.zero_init:
                    before.append(_fill_zero(p.local))
                after.append(_copy_block(p, to_local=False))
        if not before and not after:
            return body
        return L.Block(before + [body] + after)

    # code generation ------------------------------------------------------------------------------------
    def _generate(self, comm):
        """The rank's loop IR from the isl AST of its statements and the exchange markers."""
        scale = _scale_betas(self.n_time)
        boundaries = self._boundaries(comm)
        stmts = []
        for s in self.stmts:
            g = group_of(s, self.groups)
            domain = on_role(s, g, "me")
            time = s.time.intersect_domain(domain)
            if s.name in boundaries:
                # the interior runs between the exchange and the wait (see _boundaries)
                edge = time.intersect_range(boundaries[s.name])
                inner = time.subtract(edge).apply_range(scale).apply_range(_earlier(self.n_time, 2 * g.depth))
                time = inner.union(edge.apply_range(scale))
            else:
                time = time.apply_range(scale)
            stmts.append(dataclasses.replace(s, domain=domain, time=time))
        locals_by_comp = {s.comp: s.local for s in self.stmts if s.local is not None}
        bodies = {s.name: statement_body(s, locals_by_comp) for s in self.stmts}
        self.markers = {}
        for p in comm.phases:
            if not p.items:
                continue
            for kind, offset in (("post", -3), ("wait", -1)):
                marker = self._marker(p, kind, offset)
                stmts.append(marker)
                bodies[marker.name] = self._marker_body(marker)
        return self._replace_markers(codegen.generate(stmts, self.me_context, self.params, bodies))

    def _boundaries(self, comm):
        """{statement name: the times of its boundary instances} for the statements of distributed
        phases that receive values: an iteration of the distributed loop (in an iteration of the loops
        around it) is on the boundary when an instance in it reads a value another rank computed or
        holds; the others (the interior) need nothing from the exchange and run while it is under
        way. Reordering the iterations is legal: a distributed loop carries no dependence."""
        out = {}
        for p in comm.phases:
            if not p.items or p.group is None or p.command is not None:
                continue
            k, dim = p.depth, p.group.dim
            n = self.n_time
            ins = [f"c{i}" for i in range(n)]
            keys = [f"c{2 * j + 1}" for j in range(k)] + [f"c{dim}"]
            proj = isl.Map(f"{{ [{', '.join(ins)}] -> [{', '.join(keys)}] }}")
            remote = runs = None
            for b in p.stmts:
                t = b.time.intersect_domain(on_role(b, p.group, "me")).range().apply(proj)
                runs = t if runs is None else runs.union(t)
                sinks = self._remote_sinks(comm, b)
                if sinks is None:
                    continue
                t = b.time.intersect_domain(sinks).range().apply(proj)
                remote = t if remote is None else remote.union(t)
            if remote is None:
                continue
            interior = self._simple_interior(runs.intersect_params(self.me_context).coalesce(),
                                             remote.intersect_params(self.me_context).coalesce())
            edge = runs.subtract(interior).apply(proj.reverse()).coalesce()
            for b in p.stmts:
                out[b.name] = edge
        return out

    def _simple_interior(self, runs, remote):
        """The iterations of `runs` that read nothing from other ranks (not in `remote`), described as a
        rank with neighbours on both sides sees them where that is exact for every rank (a rank at the
        end of the line reads less from elsewhere, clamped at the edge): a band such as [lo + 1, hi - 1)
        is one loop, where the exact set adds the edge rows as cases tested in the inner loops."""
        exact = runs.subtract(remote).coalesce()
        middle = self.me_context
        for d in self.dists.items:
            lo = _param_pwaff(middle.get_space(), d.param("me", "lo"))
            hi = _param_pwaff(middle.get_space(), d.param("me", "hi"))
            middle = middle.intersect(lo.gt_set(d.lo)).intersect(hi.lt_set(d.hi))
        if middle.is_empty():
            return exact
        band = runs.subtract(remote.gist_params(middle)).coalesce()
        return band if band.n_basic_set() < exact.n_basic_set() and band.is_subset(exact) else exact

    def _remote_sinks(self, comm, b):
        """The instances of `b` on this rank that read a value another rank computed (the source of a
        flow dependence runs there) or holds (a distributed input's element), or None."""
        mine = on_role(b, group_of(b, self.groups), "me")
        out = None
        for a, b2, pairs in comm._pairs(self.deps):
            if b2 is not b:
                continue
            elsewhere = a.domain.subtract(on_role(a, group_of(a, self.groups), "me"))
            sinks = pairs.intersect_domain(elsewhere).range().intersect(mine)
            out = sinks if out is None else out.union(sinks)
        for name, (dim, dist) in self.holding.items():
            r = self.acc.reads[b].get(name)
            if r is None or name not in {x.name for x in self.lowered.inputs}:
                continue
            buf = self.placements[name].buffer
            not_held = owned(buf, self.params, None, None, "me").subtract(owned(buf, self.params, dim, dist, "me"))
            sinks = r.intersect_range(not_held).domain().intersect(mine)
            out = sinks if out is None else out.union(sinks)
        return None if out is None else out.intersect_params(self.me_context).coalesce()

    def _marker(self, phase, kind, offset):
        """A statement of the AST standing for an exchange point before `phase`, in each iteration of
        the loops around it (all iterations any rank runs, so every rank reaches it alike)."""
        name = f"{PREFIX}{kind}{phase.index}"
        k = phase.depth
        image = None
        for s in phase.stmts:
            t = s.time.intersect_domain(s.domain).range()
            image = t if image is None else image.union(t)
        dims = [f"c{i}" for i in range(self.n_time)]
        outer = [f"c{2 * j + 1}" for j in range(k)]
        proj = isl.Map(f"{{ [{', '.join(dims)}] -> {name}[{', '.join(outer)}] }}")
        domain = image.apply(proj).coalesce()
        names = [f"o{j}" for j in range(k)]
        for j, nm in enumerate(names):
            domain = domain.set_dim_name(isl.dim_type.set, j, nm)
        time_out = []
        for j in range(k):
            time_out += [str(4 * phase.betas[j]), names[j]]
        time_out.append(str(4 * phase.betas[k] + offset))
        time_out += ["0"] * (self.n_time - len(time_out))
        time = isl.Map(f"{{ {name}[{', '.join(names)}] -> [{', '.join(time_out)}] }}").intersect_domain(domain)
        loops = list(phase.stmts[0].loops[:k])
        marker = Statement(_Marker(name, self.f), domain, loops, time, time, {}, None, [], time)
        self.markers[name] = (kind, phase.index)
        phase.outer = domain
        return marker

    def _marker_body(self, marker):
        k = marker.domain.dim(isl.dim_type.set)
        buf = Buffer(marker.name, [Const(max(k, 1), int64)], int64, "temporary")
        index = [IslAff(pwaff_on(marker.domain, f"o{j}", self.params)) for j in range(k)]
        return buf, index, Const(0, int64), None

    def _replace_markers(self, s, around=()):
        """The loop IR with the markers' stores turned into Exchange and Wait statements; `around` are
        the conditions and loop bounds enclosing `s` (checked to be the same on every rank)."""
        if isinstance(s, L.Block):
            return L.Block([self._replace_markers(c, around) for c in s.body])
        if isinstance(s, L.For):
            inner = around + (("bound", s.lo), ("bound", s.hi))
            return L.For(s.var, s.lo, s.hi, self._replace_markers(s.body, inner), s.kind, s.factor)
        if isinstance(s, L.If):
            inner = around + (("cond", s.cond),)
            return L.If(s.cond, self._replace_markers(s.then, inner),
                        None if s.else_ is None else self._replace_markers(s.else_, inner))
        if isinstance(s, L.Allocate):
            return L.Allocate(s.buffer, self._replace_markers(s.body, around))
        if isinstance(s, L.Store) and s.buffer.name in self.markers:
            kind, index = self.markers[s.buffer.name]
            for what, e in around:
                self._check_rank_independent(what, e, index)
            return Exchange(index, tuple(s.indices)) if kind == "post" else Wait(index)
        return s

    def _check_rank_independent(self, what, e, index):
        """Every rank must reach an exchange point alike (or the others wait for it forever): a
        condition or loop bound around it may not depend on the rank's blocks beyond what the sizes
        decide."""
        blocks = {d.param("me", side) for d in self.dists.items for side in ("lo", "hi")}
        names = {n.name for n in walk(e) if isinstance(n, Sym)}
        if not names & blocks:
            return
        loops = sorted(names - blocks - set(self.params))
        space = f"[{', '.join(self.params + sorted(blocks) + loops)}]"
        text = constraint_text(e) if what == "cond" else affine_text(e)
        ok = text is not None
        if ok and what == "cond":
            holds = isl.Set(f"{space} -> {{ : {text} }}").intersect_params(self.me_context)
            decided = holds   # where some blocks make it hold: it must hold for all of them
            for name in blocks:
                decided = decided.project_out(isl.dim_type.param, decided.find_dim_by_name(isl.dim_type.param, name), 1)
            ok = decided.intersect_params(self.me_context).is_subset(holds)
        elif ok:
            pa = isl.PwAff(f"{space} -> {{ [({text})] }}").gist_params(self.me_context)
            ok = not any(pa.involves_dims(isl.dim_type.param, pa.find_dim_by_name(isl.dim_type.param, b), 1)
                         for b in blocks if pa.find_dim_by_name(isl.dim_type.param, b) >= 0)
        if not ok:
            raise NotSupportedError(f"exchange {index} would sit under {pseudo_c(e)}, which differs between ranks; "
                                    f"the ranks would not all reach it")

class _Marker:
    """What code generation reads of a computation, for an exchange marker."""

    def __init__(self, name, function):
        self.name = name
        self.function = function
        self.stored_at_root = False
        self.store_level = None


def _scale_betas(n):
    """[c0, c1, ...] -> [4 c0, c1, 4 c2, ...]: room before each statement for its exchange points."""
    ins = [f"c{i}" for i in range(n)]
    outs = [f"4*c{i}" if i % 2 == 0 else f"c{i}" for i in range(n)]
    return isl.Map(f"{{ [{', '.join(ins)}] -> [{', '.join(outs)}] }}")


def _param_pwaff(space, name):
    space = space.params()
    return isl.PwAff.var_on_domain(isl.LocalSpace.from_space(space), isl.dim_type.param,
                                   space.find_dim_by_name(isl.dim_type.param, name))


def _fold(op, exprs):
    out = exprs[0]
    for e in exprs[1:]:
        out = op(out, e)
    return simplify(out)


def _earlier(n, dim):
    """Moves a time to 2 steps earlier along the static dimension `dim` (between the exchange at -3
    and the wait at -1 of its phase)."""
    ins = [f"c{i}" for i in range(n)]
    outs = [f"c{i} - 2" if i == dim else f"c{i}" for i in range(n)]
    return isl.Map(f"{{ [{', '.join(ins)}] -> [{', '.join(outs)}] }}")


def _maps(x):
    if isinstance(x, isl.Map):
        return [x]
    out = []
    x.foreach_map(out.append)
    return out


def _one(pa):
    return isl.PwAff.val_on_domain(pa.domain(), isl.Val(1))


def _shifted(indices, origin):
    return tuple(i if isinstance(o, Const) and o.value == 0 else simplify(binop("sub", i, o))
                 for i, o in zip(indices, origin))


def _box_loops(extents, body_of):
    """A loop nest over [0, extents) (outer loop parallel) around `body_of(index syms)`."""
    idx = [Sym(f"{PREFIX}i{d}", int64) for d in range(len(extents))]
    body = body_of(idx)
    for d in reversed(range(len(extents))):
        body = L.For(idx[d].name, Const(0, int64), extents[d], body,
                     L.LoopKind.PARALLEL if d == 0 else L.LoopKind.SERIAL)
    return body


def _copy_block(p, to_local):
    """The caller's block <-> the local box (the block sits at its global place in the box)."""
    arg, local = p.argument, p.local
    # argument index i -> global index i + block origin -> local index minus the box origin
    block_origin = [Const(0, int64)] * arg.ndim
    block_origin[p.dim] = Sym(p.dist.param("me", "lo"), int64)

    def body(idx):
        glob = [simplify(i + o) if not (isinstance(o, Const) and o.value == 0) else i
                for i, o in zip(idx, block_origin)]
        there = _shifted(glob, p.origin)
        if to_local:
            return L.Store(local, there, Access(arg, idx))
        return L.Store(arg, tuple(idx), Access(local, there))
    return _box_loops(list(arg.shape), body)


def _fill_zero(buffer):
    zero = Const(0, buffer.dtype)
    return _box_loops(list(buffer.shape), lambda idx: L.Store(buffer, tuple(idx), zero))
