"""A Function: the container of inputs, computations and their schedule, and the entry to lowering."""
from __future__ import annotations

import islpy as isl

from . import algorithm, codegen, legality
from . import loopir as L
from .dependences import compute_dependences
from .errors import DomainError, ScheduleError
from .expr import Access, walk
from .layout import assign_storage
from .statements import build_statements


class Function:
    """`with ms.Function("name") as f:` collects the inputs and computations declared in the block."""

    def __init__(self, name):
        algorithm._check_name(name, "function")
        self.name = name
        self.inputs = []
        self.computations = []
        self.buffers = []
        self.param_names = set()
        self._history = []     # (command text, snapshot of every computation, ordering length)
        self._ordering = []    # (how, computation, other, level name or None)
        self.assumptions = []  # isl constraints on the sizes the code may rely on (see assume)

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

    def _culprit(self, violated):
        """The first command after which `violated(statements)` holds, by replaying the history."""
        final = {c: c.snapshot() for c in self.computations}
        ordering = list(self._ordering)
        context = self.context()
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

    # analysis --------------------------------------------------------------------
    def assume(self, constraint):
        """Let the generated code rely on a constraint on the sizes: isl text such as `N >= 8`, or an
        isl set of the sizes. The code is then wrong for sizes that break it: the caller must not
        call the kernel with those (a kernel specialized for large sizes beside a general one)."""
        if isinstance(constraint, str):
            params = sorted(self.param_names)
            constraint = isl.Set(f"[{', '.join(params)}] -> {{ : {constraint} }}")
        self.assumptions.append(constraint)

    def context(self):
        """Constraints on the parameters: every size is at least 1, fixed ones have their value, and
        the assumptions hold."""
        params = sorted(self.param_names)
        fixed = getattr(self, "_fixed", {})
        cons = " and ".join(f"{p} = {fixed[p]}" if p in fixed else f"{p} >= 1" for p in params) or "true"
        context = isl.Set(f"[{', '.join(params)}] -> {{ : {cons} }}")
        for a in self.assumptions:
            # (an assumption on a size the function does not use says nothing about the others)
            unused = [a.get_dim_name(isl.dim_type.param, k) for k in range(a.dim(isl.dim_type.param))
                      if a.get_dim_name(isl.dim_type.param, k) not in self.param_names]
            for name in unused:
                a = a.project_out(isl.dim_type.param, a.find_dim_by_name(isl.dim_type.param, name), 1)
            context = context.intersect(a)
        return context

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

    def _prepare(self):
        if not self.computations:
            raise DomainError(f"function {self.name} has no computations")
        outs = self.outputs()
        if not outs and not any(b.kind == "output" for b in self.buffers):
            raise DomainError(f"function {self.name} has no output: mark one with output=True")
        for c in outs:
            c.is_output = True
        context = self.context()
        assign_storage(self, context)
        return context

    def dependences(self):
        """Read-after-write, write-after-read and write-after-write dependences (isl maps)."""
        context = self._prepare()
        return compute_dependences(self.computations, context)

    # lowering ------------------------------------------------------------------------
    def lower(self, check=True, fixed=None) -> L.LoweredFunction:
        """The loop IR of the scheduled function, after checking the schedule against the dependences.

        `fixed` ({param: value}) specializes the code for those sizes: loop bounds become
        constants, full tiles need no guards; the kernel then accepts only those sizes.
        """
        fixed = dict(fixed or {})
        unknown = sorted(set(fixed) - self.param_names)
        if unknown:
            raise DomainError(f"function {self.name} has no parameter(s) {unknown}; it has {sorted(self.param_names)}")
        for p, v in fixed.items():
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise DomainError(f"fixed parameter {p} must be a positive integer, got {v!r}")
        self._fixed = fixed
        context = self._prepare()
        stmts = build_statements(self, context)
        if check:
            deps = compute_dependences(self.computations, context)
            legality.check(stmts, deps, self, context)
        locals_by_comp = {s.comp: s.local for s in stmts if s.local is not None}
        bodies = {s.name: codegen.statement_body(s, locals_by_comp) for s in stmts}
        params = sorted(self.param_names)
        ast, leaves = codegen.build_ast(stmts, bodies, context)
        body, allocations = codegen.to_loop_ir(ast, leaves, params)
        broken = codegen.broken_tiles(allocations, stmts, bodies, leaves)
        if broken:
            keep_whole = codegen.statements_using(stmts, bodies, broken)
            ast, leaves = codegen.build_ast(stmts, bodies, context, unseparated=keep_whole)
            body, _ = codegen.to_loop_ir(ast, leaves, params)
        outputs, temps = [], []
        for c in self.computations:
            if c.updated is None and not c.inlined and c.compute_at_target is None and c.buffer not in outputs:
                (outputs if c.buffer.kind == "output" else temps).append(c.buffer)
        for b in self.buffers:
            if b not in outputs and b not in temps:
                (outputs if b.kind == "output" else temps).append(b)
        for b in reversed(temps):
            body = L.Allocate(b, body)
        return L.LoweredFunction(self.name, params, [i.buffer for i in self.inputs], outputs, body, temps,
                                 fixed)

    def compile(self, target="cpu", check=True, fixed=None, **options):
        """Lower, check and compile for `target` ('cpu'); returns a callable kernel.

        `fixed` specializes for given sizes (see `lower`); other options go to the back-end
        (`num_threads`, `fast_math`, `fp_contract`)."""
        lowered = self.lower(check=check, fixed=fixed)
        if target == "cpu":
            from backends.cpu import compile_cpu
            return compile_cpu(lowered, **options)
        from .errors import NotSupportedError
        raise NotSupportedError(f"target {target!r} is not available yet; use 'cpu'")

    def compile_to_object(self, path, check=True):
        """Write an object file and a C header (path with .h) for use outside Python."""
        from backends.cpu import emit_object
        return emit_object(self.lower(check=check), path)
