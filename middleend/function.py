"""A Function: the container of inputs, computations and their schedule, and the entry to lowering."""
from __future__ import annotations

import contextlib
import warnings

import islpy as isl

from . import algorithm, codegen, dataflow, layout_check, legality, parametric_tiles, pipelining, spmd
from . import loopir as L
from .dependences import compute_dependences
from .recent import Recent
from .errors import DomainError, IllegalScheduleError, ScheduleError
from .isl_budget import OutOfOperations, operations_at_most
from .affine import on_sizes, param_names, pwaff_to_expr
from .expr import Access, pseudo_c, walk
from .copy_in import copied_inputs
from .layout import assign_storage
from .statements import build_statements
from .targets import get_target


class Function:
    """`with ms.Function("name") as f:` collects the inputs and computations declared in the block."""

    #: whether the caller's arrays are checked on each call against the elements the program reads (a
    #: front-end's own check: Halide's regions, Julia's BoundsError); else compiling finds the sizes for
    #: which a read falls outside its array, and each call refuses them
    checks_input_reads_at_call = False

    def __init__(self, name):
        algorithm._check_name(name, "function")
        self.name = name
        self.inputs = []
        self.computations = []
        self.buffers = []
        self.param_names = set()
        self._history = []     # (command text, snapshot of every computation, ordering length)
        self._ordering = []    # (how, computation, other, level name or None)
        self._assumptions = []  # (text, isl set of the parameters): promised sizes, checked at each call
        self._derived = {}      # name -> isl PwAff of the other sizes (see derived_size)
        self._known = {}        # name -> isl PwAff of the other sizes (see known_size)
        self._ranges = {}       # name -> (lo, hi), None for no bound: sizes declared with declare_param
        self._dataflow = None   # the stages of a dataflow region (see dataflow), or None
        self._transfers = []    # (data, consumer, loop name, command): explicit send_receive commands
        self._autoscheduled = None  # the Report of autoschedule, once it has run
        self._undecided = None  # while lowering: [(what, where)] the checks left to each call
        self._kept_results = {}  # see _kept

    # declaration -------------------------------------------------------------
    def __enter__(self):
        algorithm._current.stack = getattr(algorithm._current, "stack", []) + [self]
        return self

    def __exit__(self, *exc):
        algorithm._current.stack.pop()
        return False

    def params_in(self, *exprs):
        names = algorithm.params_of(*exprs)
        self.param_names |= names
        return names

    def _check_new_name(self, name):
        if any(x.name == name for x in self.inputs + self.computations + self.buffers):
            raise DomainError(f"function {self.name} already has something named {name!r}")

    def _add_input(self, inp):
        self._check_new_name(inp.name)
        self.params_in(*inp.shape)
        self.inputs.append(inp)

    def _add_computation(self, comp):
        self._check_new_name(comp.name)
        self.computations.append(comp)

    def _add_buffer(self, buf):
        if buf not in self.buffers:
            if buf.kind == "input":
                raise ScheduleError(f"buffer {buf.name} is an input; computations cannot store in it")
            self._check_new_name(buf.name)
            self.params_in(*buf.shape)
            self.buffers.append(buf)

    def __getitem__(self, name):
        return self.computation(name)

    def computation(self, name):
        """The computation called `name`."""
        for c in self.computations:
            if c.name == name:
                return c
        raise KeyError(f"function {self.name} has no computation {name!r}; it has {[c.name for c in self.computations]}")

    # history and replay ----------------------------------------------------------
    def _record(self, text):
        snap = {c: c.snapshot() for c in self.computations}
        self._history.append((text, snap, len(self._ordering)))

    def history(self):
        """The scheduling commands applied so far, in order."""
        return [text for text, _, _ in self._history]

    def replay(self, lines):
        """Apply scheduling commands written as `history()` prints them (a line, or several in order):
        a schedule saved or edited, or the autoscheduler's, given to a function built the same way.
        Each command checks as when called; a line that cannot be read raises ScheduleError naming
        it. (A front-end's own lines, such as the Halide front-end's `set_schedule`, are given when
        the function is built and are not replayed.)"""
        from .replay import replay
        replay(self, [lines] if isinstance(lines, str) else list(lines))
        return self

    def _culprit(self, violated, context):
        """The first command after which `violated(statements)` holds, by replaying the history
        (statements built under `context`)."""
        final = {c: c.snapshot() for c in self.computations}
        ordering = list(self._ordering)
        try:
            for text, snap, n_order in self._history:
                for c in self.computations:
                    c.restore(snap.get(c, c.initial_state))
                self._ordering = ordering[:n_order]
                try:
                    if violated(build_statements(self, context)):
                        return text
                except Exception:
                    continue
            return None
        finally:
            for c, state in final.items():
                c.restore(state)
            self._ordering = ordering

    def assume(self, constraint):
        """Promise a relation between size parameters: isl text (`"N = M"`, `"N >= 2M"`) or an isl
        set of the sizes.

        Code is generated for the sizes that satisfy it (two outputs of one size fuse without
        guards, for instance); the compiled kernel refuses a call that breaks it."""
        params = sorted(self.param_names)
        if isinstance(constraint, isl.Set):
            cons, text = on_sizes(constraint, self.param_names), str(constraint)
        else:
            text = constraint
            try:
                cons = isl.Set(f"[{', '.join(params)}] -> {{ : {constraint} }}")
            except isl.Error:
                raise DomainError(f"assume({constraint!r}): not a constraint on the parameters {params} "
                                  f"(isl syntax: =, <=, >=, and, or)") from None
        if cons.intersect(self.context()).is_empty():
            raise DomainError(f"assume({text!r}): no sizes satisfy it")
        self._assumptions.append((text, cons))
        self._record(f"assume({text!r})")
        return self

    @contextlib.contextmanager
    def assuming(self, constraint):
        """`assume(constraint)` for the time of a `with` block (a kernel specialized beside a general one)."""
        saved, recorded = list(self._assumptions), len(self._history)
        self.assume(constraint)
        try:
            yield self
        finally:
            self._assumptions = saved
            del self._history[recorded:]   # not a command of the schedule

    def derived_size(self, name, value):
        """A size computed from the others on entry to the kernel, as Halide names each Func's bounds:
        `value` is an isl PwAff of the sizes, or isl text of one (`"max(N, M)"`). Domains and schedules
        written with it stay affine where `value` is piecewise (the max of two consumers' needs, say),
        and so does the code generated for them. Returns its Param."""
        algorithm._check_name(name, "parameter")
        if name in self.param_names:
            raise DomainError(f"function {self.name} already has a parameter named {name!r}")
        if isinstance(value, str):
            params = self.sizes()
            try:
                value = isl.PwAff(f"[{', '.join(params)}] -> {{ [({value})] }}")
            except isl.Error:
                raise DomainError(f"derived_size({name!r}, {value!r}): not an affine expression of the sizes "
                                  f"{params} (isl syntax: +, -, *, floor(/), min, max)") from None
        if not isinstance(value, isl.PwAff) or value.dim(isl.dim_type.in_) != 0:
            raise DomainError(f"derived_size({name!r}): the value must be an isl PwAff of the sizes (no "
                              f"variables) or isl text of one, got {value!r}")
        used = {name for k, name in enumerate(param_names(value)) if value.involves_dims(isl.dim_type.param, k, 1)}
        if used & set(self._derived):
            raise DomainError(f"derived_size({name!r}): its value uses the derived size(s) "
                              f"{sorted(used & set(self._derived))}; write it in the sizes the caller passes")
        self._derived[name] = value
        # the sizes it is computed from are the kernel's, whether or not anything else uses them
        self.param_names |= used
        self.param_names.add(name)
        return algorithm.Param(name)

    def known_size(self, param, value):
        """Promise that the size `param`, which the caller passes, equals `value` (an isl PwAff of the
        other sizes): a bound a front-end computes before each call, as Halide names a Func's bounds.
        The context keeps only its range (declare_param), so that sets built on it stay in one piece;
        the checks use the value to discard counterexamples no call makes, and the kernel checks the
        promise once per new combination of sizes. Returns its Param."""
        name = param.name if isinstance(param, algorithm.Param) else param
        if name not in self.param_names or name in self._derived:
            raise DomainError(f"known_size({name!r}): not a size of {self.name} that the caller passes")
        if not isinstance(value, isl.PwAff) or value.dim(isl.dim_type.in_) != 0:
            raise DomainError(f"known_size({name!r}): the value must be an isl PwAff of the sizes, got {value!r}")
        self._known[name] = value
        return param if isinstance(param, algorithm.Param) else algorithm.Param(name)

    def declare_param(self, param, lo=1, hi=None):
        """A size parameter whose values lie in [lo, hi] (None: no bound on that side) instead of
        every size's default [1, oo): an offset or a count that may be zero or negative
        (`declare_param("n", lo=None)` takes any integer). A domain such as `0 <= r < n` is simply
        empty where n <= 0, and its loops run zero times. `param` is a Param or a name; the
        compiled kernel takes it (even if nothing uses it) and refuses values outside the range.
        Returns its Param."""
        name = param.name if isinstance(param, algorithm.Param) else param
        algorithm._check_name(name, "parameter")
        if name in self._derived:
            raise DomainError(f"parameter {name} is a derived size; its values follow from the others")
        for bound in (lo, hi):
            if bound is not None and (isinstance(bound, bool) or not isinstance(bound, int)):
                raise DomainError(f"declare_param({name!r}): bounds must be integers or None, got {bound!r}")
        if lo is not None and hi is not None and lo > hi:
            raise DomainError(f"declare_param({name!r}): the range [{lo}, {hi}] is empty")
        self._ranges[name] = (lo, hi)
        self.param_names.add(name)
        return param if isinstance(param, algorithm.Param) else algorithm.Param(name)

    def param_range(self, name):
        """(lo, hi) of a size parameter, None for no bound: [1, None] unless declare_param said otherwise."""
        return self._ranges.get(name, L.DEFAULT_SIZE_RANGE)

    def dataflow(self, stages):
        """Run the function as a dataflow region (FPGA back-ends; the others run it as scheduled): each
        computation of `stages`, in order, is a process running at the same time as the others, values
        passing between them through FIFOs in the producer's order (see middleend/dataflow.py). A
        computation not listed joins the stage of the one it is computed at. `None` or [] ends it."""
        if not stages:
            self._dataflow = None
            self._record("dataflow([])")
            return self
        comps = []
        for c in stages:
            comp = self.computation(c) if isinstance(c, str) else c
            if comp not in self.computations:
                raise ScheduleError(f"dataflow: {getattr(c, 'name', c)!r} is not a computation of {self.name}")
            if comp.updated is not None:
                raise ScheduleError(f"dataflow: {comp.name} is an update of {comp.updated.name}; list "
                                    f"{comp.updated.name} (its updates run in its stage)")
            if comp.inlined:
                raise ScheduleError(f"dataflow: {comp.name} is inlined and has no process of its own")
            if comp in comps:
                raise ScheduleError(f"dataflow: {comp.name} is listed twice")
            comps.append(comp)
        self._dataflow = comps
        self._record(f"dataflow([{', '.join(c.name for c in comps)}])")
        return self

    # analysis --------------------------------------------------------------------
    def sizes(self):
        """The size parameters a caller passes (the parameters that are not derived sizes, and the sizes
        of parametric tiles)."""
        return sorted((self.param_names - set(self._derived)) | set(self.tile_sizes()))

    def tile_sizes(self):
        """The names of the tile sizes the parametric tiles of the schedule take at call time."""
        return sorted({n for c in self.computations for b in c.parametric_bands for n in b.sizes})

    def context(self, fixed=None):
        """Constraints on the parameters: every size is in its range (at least 1 unless declared
        otherwise), the sizes in `fixed` ({name: value}) have their value, the `assume`d relations
        hold, and each derived size relates to the others."""
        params = sorted(self.param_names)
        fixed = fixed or {}
        cons = []
        for p in params:
            if p in fixed:
                cons.append(f"{p} = {fixed[p]}")
            elif p not in self._derived:
                lo, hi = self.param_range(p)
                cons += ([f"{p} >= {lo}"] if lo is not None else []) + ([f"{p} <= {hi}"] if hi is not None else [])
        cons = " and ".join(cons) or "true"
        context = isl.Set(f"[{', '.join(params)}] -> {{ : {cons} }}")
        for _, a in self._assumptions:
            context = context.intersect(on_sizes(a, self.param_names))
        for name, value in self._derived.items():
            context = context.intersect(_relation(name, value, context))
        return context

    def with_exact_sizes(self, where, what=None):
        """`where` (a non-empty set or map over the parameters) at sizes where every derived and
        known size has the value computed from the others, or empty where there are none. The
        context relates a piecewise derived size to the sizes by a convex hull (see `_relation`), and
        a known size by its range only, so a counterexample found under it may be one no call makes:
        each check refines its counterexamples with this before it refuses.

        Where that takes more than MAX_REFINED_RELATIONS relations or REFINE_OPERATIONS isl
        operations, the question is left to each call while lowering, if the check says `what` it
        would refuse (the kernel refuses the sizes where `where` holds, naming `what`; see
        `checked_at_call`), and an empty set is returned; otherwise `where` is returned whole (the
        check refuses, as without it)."""
        relations = self._exact_relations(where.get_space())
        if not relations:
            return where
        sizes = where.params()
        added = 0
        try:
            with operations_at_most(sizes.get_ctx(), REFINE_OPERATIONS):
                # (sizes are sampled, and only the relations a sample breaks are added: all of them at
                # once would split the sets into a piece per combination of their pieces, and isl does
                # not count every step of an intersection, hence the bound on how many are added)
                while not sizes.is_empty():
                    sample = isl.Set.from_point(sizes.sample_point())
                    broken = [r for r in relations if sample.intersect_params(r).is_empty()]
                    if not broken:
                        return where.intersect_params(sample)
                    added += len(broken)
                    if added > MAX_REFINED_RELATIONS:
                        return self._left_to_each_call(where, what)
                    for r in broken:
                        sizes = sizes.intersect_params(r)
                    relations = [r for r in relations if not any(r is b for b in broken)]
        except OutOfOperations:
            return self._left_to_each_call(where, what)
        return where.intersect_params(sizes)     # (empty)

    def at_exact_sizes(self, where):
        """`where` (a set over the parameters) where every derived and known size has the value computed
        from the others, all of them at once; None where that takes more than REFINE_OPERATIONS isl
        operations."""
        try:
            with operations_at_most(where.get_ctx(), REFINE_OPERATIONS):
                for relation in self._exact_relations(where.get_space()):
                    where = where.intersect(relation).coalesce()
                return where
        except OutOfOperations:
            return None

    def _left_to_each_call(self, where, what):
        """`where`, undecided: whole outside lowering; else recorded for the kernel, and empty."""
        if self._undecided is None or what is None:
            return where
        self._undecided.append((what, where))
        return type(where).empty(where.get_space())

    def _warn_undecided(self, undecided):
        """One warning for the checks `with_exact_sizes` left to each call while lowering."""
        if not undecided:
            return
        whats = list(dict.fromkeys(what for what, _ in undecided))
        more = f" (and {len(whats) - 1} other check(s))" if len(whats) > 1 else ""
        warnings.warn(f"{self.name}: whether {whats[0]}{more} at sizes a call makes is not decided within the "
                      f"limits on relating its {len(self._derived) + len(self._known)} computed sizes to the "
                      f"others; each call checks its own sizes and refuses those where it does")

    def _exact_relations(self, space):
        """[isl set of the parameters]: each derived or known size `space` involves equal to its value."""
        out = []
        for name, value in {**self._derived, **self._known}.items():
            if space.find_dim_by_name(isl.dim_type.param, name) >= 0:
                out.append(_equal_to(name, value))
        return out

    def outputs(self):
        """Computations returned to the caller: those marked output=True, else the ones nobody reads."""
        roots = [c for c in self.computations if c.updated is None]
        marked = [c for c in roots if c.is_output]
        if marked:
            return marked
        read = set()
        for c in self.computations:
            for e in [c.expr] + ([c.predicate] if c.predicate is not None else []):
                read |= {n.target.storage_owner for n in walk(e)
                         if isinstance(n, Access) and hasattr(n.target, "storage_owner")
                         and n.target.storage_owner is not c.storage_owner}
        return [c for c in roots if c not in read and not c.inlined
                and (c.user_buffer is None or c.user_buffer.kind != "temporary")]

    def _prepare(self, fixed=None):
        """The context for the sizes `fixed`, after choosing every computation's storage."""
        if not self.computations:
            raise DomainError(f"function {self.name} has no computations")
        outs = self.outputs()
        if not outs and not any(b.kind == "output" for b in self.buffers):
            raise DomainError(f"function {self.name} has no output: mark one with output=True")
        for c in outs:
            c.is_output = True
        context = self.context(fixed)
        assign_storage(self, context)
        return context

    def dependences(self, fixed=None):
        """Read-after-write, write-after-read and write-after-write dependences (isl maps), for the
        sizes `fixed` ({name: value}) or all sizes."""
        context = self._prepare(self._checked_fixed(fixed))
        return self._dependences_at(context)

    def _dependences_at(self, context):
        """`compute_dependences` of the computations at `context` (kept: see `_kept`)."""
        kept = self._kept("dependences", context)
        if "all" not in kept:
            kept["all"] = compute_dependences(self.computations, context)
        return kept["all"]

    def _kept(self, kind, context) -> dict:
        """A dict for results of one `kind` about the algorithm at `context`: the same dict while the
        computations, which of them are inlined (that changes what is read), their domains, expressions
        and conditions and the context stay the same. Schedules change none of them, and a search checks
        and lowers many: the dependences, who reads what and the boxes computations write are kept so."""
        key = (str(context),) + tuple((c.name, c.inlined, id(c.domain), id(c.expr), id(c.predicate))
                                      for c in self.computations)
        entries = self._kept_results.setdefault(kind, Recent(8))
        kept = entries.get(key)
        if kept is None:
            # (the objects stay referenced while their ids are in the key, so no other object takes them)
            kept = ([(c.domain, c.expr, c.predicate) for c in self.computations], {})
            entries.put(key, kept)
        return kept[1]

    # lowering ------------------------------------------------------------------------
    def lower(self, check=True, fixed=None, caller_copies_in=False) -> L.LoweredFunction:
        """The loop IR of the scheduled function, after checking the schedule against the dependences
        and the layout against the accesses it makes (layout_check; `check=False` skips both).

        `fixed` ({param: value}) specializes the code for those sizes: loop bounds become
        constants, full tiles need no guards; the kernel then accepts only those sizes. Sizes for
        which a computation reads beyond what another writes are refused on each call (they join
        the `assume`d relations of the lowered function).

        `caller_copies_in` (for targets whose call binds arguments in place: "cpu", "c") leaves out
        the copies of whole inputs into outputs (middleend/copy_in.py), which the call then makes,
        or skips where the caller passes the input's own memory as the output.
        """
        fixed = self._checked_fixed(fixed)
        context = self._prepare({p: v for p, v in fixed.items() if p in self.param_names})
        stmts = build_statements(self, context)
        deps, requirements, undecided = None, [], []
        if check:
            deps = self._dependences_at(context)
            self._undecided = undecided
            try:
                legality.check(stmts, deps, self, context)
                requirements = layout_check.check(stmts, self, context)
            finally:
                self._undecided = None
            self._warn_undecided(undecided)
        pipelines = []
        if any(tag[0] == "pipeline" for s in stmts for tag in s.tags.values()):
            deps = deps or self._dependences_at(context)
            pipelines = pipelining.pipelined_loops(stmts, deps, self, context)
        plan = dataflow.plan(self, stmts, context) if self._dataflow else None
        copied = copied_inputs(self, context) if caller_copies_in else {}
        for comp, source in copied.items():
            comp.buffer.initial_input = source.buffer.name
        generated = [s for s in stmts if s.comp not in copied]
        body = codegen.generate(generated, context, sorted(self.param_names))
        body = parametric_tiles.strip_mine(body, self._parametric_bands(), fixed, self.param_names)
        self._check_tiles_in_scope(body)
        outputs, temps = [], []
        for c in self.computations:
            at_root = c.compute_at_target is None or c.stored_at_root
            if c.updated is None and not c.inlined and at_root and c.buffer not in outputs:
                (outputs if c.buffer.kind == "output" else temps).append(c.buffer)
        for b in self.buffers:
            if b not in outputs and b not in temps:
                (outputs if b.kind == "output" else temps).append(b)
        for b in reversed(temps):
            body = L.Allocate(b, body)
        sizes = self.sizes()
        sizes_context = on_sizes(context, sizes)
        derived = [(name, pwaff_to_expr(value.gist(sizes_context).coalesce(), sizes_context))
                   for name, value in self._derived.items()]
        ranges = {p: self._ranges[p] for p in sizes if p in self._ranges}
        ranges.update((p, L.DEFAULT_SIZE_RANGE) for p in self.tile_sizes())   # (checked on each call)
        lowered = L.LoweredFunction(self.name, sizes, [i.buffer for i in self.inputs], outputs, body, temps,
                                    fixed, list(self._assumptions) + requirements + self._known_promises(),
                                    derived, ranges, pipelines, plan, checked_at_call=undecided)
        lowered.spmd = spmd.deferred(self, stmts, deps, context, lowered)
        return lowered

    def _check_tiles_in_scope(self, body):
        """Refuse a schedule whose statements read a producer's tile outside the loop that holds it
        (a placement the ordering could not keep inside its consumer's loop)."""
        stray = L.uses_outside_allocation(body)
        if stray:
            name, store = stray[0]
            raise IllegalScheduleError(f"{store.buffer.name} would use {name}, a tile that lives in another loop "
                                       f"nest, outside it; the placements (after, before, compute_at) separate "
                                       f"them: place the consumer and its producer in one nest")

    def _known_promises(self):
        """[(text, isl set of the sizes)]: each known size equal to its value, which the kernel checks."""
        out = []
        for name, value in self._known.items():
            text = pseudo_c(pwaff_to_expr(value, isl.Set.universe(value.get_domain_space())))
            out.append((f"{name} = {text}", _equal_to(name, value)))
        return out

    def _parametric_bands(self) -> dict:
        """{computation name: its ParametricBands}, for the computations that have some."""
        return {c.name: c.parametric_bands for c in self.computations if c.parametric_bands}

    def _checked_fixed(self, fixed):
        """`fixed` ({size: value}) as a dict, each name a size and each value in its range."""
        fixed = dict(fixed or {})
        unknown = sorted(set(fixed) - set(self.sizes()))
        if unknown:
            raise DomainError(f"function {self.name} has no size parameter(s) {unknown}; it has {self.sizes()}")
        for p, v in fixed.items():
            bounds = self.param_range(p)
            if isinstance(v, bool) or not isinstance(v, int) or not L.in_range(v, bounds):
                want = "a positive integer" if bounds == L.DEFAULT_SIZE_RANGE else f"an integer in {L.range_text(bounds)}"
                raise DomainError(f"fixed parameter {p} must be {want}, got {v!r}")
        return fixed

    def autoschedule(self, target="cpu", budget_s=20.0, seed=0, sizes=None, measure=True, cache=True):
        """Choose a schedule for every computation no command has scheduled yet, and apply it as
        ordinary commands (`history()` lists them; each is checked like a hand-written one).

        The model orders loops so the stride-one loop is innermost, tiles the innermost band to fit
        the caches, vectorizes at the host's SIMD width, parallelizes the outermost parallel loop,
        unrolls small constant loops, inlines producers read once and computes stencil producers in
        their consumer's tiles. With `measure`, a search within `budget_s` seconds, counted from the
        call (applying the model's choice is part of it: a pipeline whose commands alone spend the budget
        is not measured), times variants (tile sizes, unroll factors, compute_at or root) for `sizes`
        ({size: value}; sizes not given are 256, less in nests deeper than 3) on random inputs, compiling
        for `target`, and then the naive loops beside the best; the best choice is cached on disk
        (folder: $MASCARPONE_AUTOSCHEDULE_CACHE or ~/.cache/mascarpone/autoschedule) per function,
        sizes, target and machine, so a second call measures nothing. Returns a Report."""
        from .autoschedule import autoschedule
        report = autoschedule(self, target, budget_s, seed, sizes, measure, cache)
        self._autoscheduled = report
        return report

    @property
    def autoscheduled(self):
        """The report of `autoschedule` (commands given, schedules timed, times), or None."""
        return self._autoscheduled

    def _apply_schedule_option(self, schedule, target, fixed):
        """compile's `schedule=`: None or "naive" keeps the schedule as it is, "auto" autoschedules
        for `fixed`'s sizes (once: a function autoscheduled already keeps its choice)."""
        if schedule in (None, "naive"):
            return
        if schedule != "auto":
            raise ScheduleError(f"compile: schedule must be 'auto' or 'naive', got {schedule!r}")
        if self._autoscheduled is None:
            self.autoschedule(target, sizes=fixed)

    def compile(self, target="cpu", check=True, fixed=None, schedule=None, **options):
        """Lower, check and compile for `target` (a name `ms.targets()` lists); returns a callable kernel.

        `fixed` specializes for given sizes (see `lower`); `schedule="auto"` autoschedules first
        (see `autoschedule`; the default keeps the schedule given, naive loops where none was);
        other options go to the target (the "cpu" target takes `num_threads`, `fast_math`,
        `fp_contract` and `arch`); an option the target does not take is refused, naming those it does."""
        self._apply_schedule_option(schedule, target, fixed)
        t = get_target(target)
        t.check_options(options)
        t.require()
        return t.compile(self.lower(check=check, fixed=fixed, caller_copies_in=t.binds_in_place), **options)

    def compile_to_object(self, path, check=True, fixed=None, **options):
        """Write an object file for this machine's CPU (or `arch=`'s) and a C header (path with .h) for
        use outside Python; returns the header's path."""
        return self.compile_to_file(path, "cpu", check, fixed, **options)[-1]

    def compile_to_c(self, path, target="c", check=True, fixed=None, **options):
        """Write the kernel as C source to `path` and its header beside it (path with .h), to build with
        any C99 compiler; `target` names a C-printing target. Returns the paths written."""
        return self.compile_to_file(path, target, check, fixed, **options)

    def compile_to_hls(self, path, check=True, fixed=None, **options):
        """Write a Vitis HLS project for this function to the folder `path` (kernel .cpp and .h, a C
        testbench, run_hls.tcl); returns the paths written. Options are the "hls" target's."""
        return self.compile_to_file(path, "hls", check, fixed, **options)

    def compile_to_file(self, path, target, check=True, fixed=None, **options):
        """Write what `target` builds outside Python (an object file, C source...) to `path`, with files
        beside it (a header); returns the paths written."""
        t = get_target(target)
        t.check_options(options, for_write=True)
        return t.write(self.lower(check=check, fixed=fixed), path, **options)


def _equal_to(name, value):
    """The set of the parameters where the size `name` equals `value` (a PwAff of the others)."""
    me = isl.PwAff(f"[{name}] -> {{ [({name})] }}")
    return me.eq_set(value.align_params(me.get_space()))


#: the exact relations and isl operations a check may spend discarding counterexamples no call
#: makes (with_exact_sizes)
MAX_REFINED_RELATIONS = 8
REFINE_OPERATIONS = 20_000_000


def _relation(name, value, context):
    """The constraints relating the derived size `name` to the sizes `value` computes it from: exact
    when that is one convex set (a fixed size, an affine value), else a convex hull (`N_max >= N - 1
    and N_max >= M - 1` for a max), which keeps every set built on the context in one piece. The
    hull holds wherever the exact relation does, so what isl proves under it stays true."""
    exact = _equal_to(name, value).intersect(context).coalesce()
    if exact.n_basic_set() <= 1:
        return exact
    # (isl's simple hull keeps the pieces' own constraints that hold for all: cheap, and for a max
    # of affine pieces exactly the bounds above; the full convex hull costs seconds)
    return isl.Set.from_basic_set(exact.simple_hull())
