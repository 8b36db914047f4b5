"""Layer I: what is computed. Parameters, loop variables, inputs, computations and updates.

A computation is a name, an iteration domain (an isl set over its variables and
the size parameters) and an expression. Updates are further computations that
write the storage of the computation they update.
"""
from __future__ import annotations

import threading

import islpy as isl

from .affine import ISL_KEYWORDS, affine_text, constraint_text
from .buffer import Buffer
from .errors import DomainError, ExprTypeError, ScheduleError
from .expr import Access, Expr, Sym, lift, pseudo_c, walk
from .schedule import Schedulable
from .types import as_dtype, index_type

_current = threading.local()


def _check_name(name, what):
    if not isinstance(name, str) or not name.isidentifier() or name in ISL_KEYWORDS:
        raise DomainError(f"{what} name {name!r} must be an identifier and not one of {sorted(ISL_KEYWORDS)}")


def current_function(required=True):
    """The Function whose `with` block is open."""
    stack = getattr(_current, "stack", [])
    if not stack:
        if required:
            raise DomainError("declare inputs and computations inside `with ms.Function(name) as f:`")
        return None
    return stack[-1]


class Param(Sym):
    """A symbolic size, bound when the compiled function is called (an int32 in expressions)."""

    __slots__ = ()

    def __init__(self, name):
        _check_name(name, "parameter")
        super().__init__(name, index_type)


class Var(Sym):
    """A loop variable ranging over [lo, hi): bounds are affine in Params."""

    __slots__ = ("lo", "hi")

    def __init__(self, name, lo, hi=None):
        _check_name(name, "variable")
        super().__init__(name, index_type)
        if hi is None:
            lo, hi = 0, lo
        self.lo, self.hi = lift(lo), lift(hi)
        for bound in (self.lo, self.hi):
            if affine_text(bound) is None:
                raise DomainError(f"bound {pseudo_c(bound)} of variable {name} is not affine in the parameters")


def params_of(*exprs) -> set:
    """Names of the Params used in expressions."""
    return {n.name for e in exprs for n in walk(lift(e)) if isinstance(n, Param)}


class Input:
    """An array the caller passes in: a name, a shape (ints or expressions of Params), a type."""

    def __init__(self, name, shape, dtype):
        _check_name(name, "input")
        self.name = name
        self.dtype = as_dtype(dtype)
        self.shape = tuple(lift(d) for d in shape)
        self.buffer = Buffer(name, self.shape, self.dtype, "input")
        self.distributed_dim = None      # set by distribute(dim)
        self.function = current_function()
        self.function._add_input(self)

    @property
    def ndim(self):
        return len(self.shape)

    def __getitem__(self, idx):
        return _access(self, idx)

    def gpu_constant(self):
        """Keep this input in the GPU's constant memory (a small read-only array every thread reads
        alike, such as filter weights); other targets ignore it. The GPU targets check at each call
        that it fits the device's constant memory."""
        self.buffer.memory = "constant"
        self.function._record(f"{self.name}.gpu_constant()")
        return self

    def distribute(self, dim=0):
        """Hold this input in blocks of its dimension `dim` over the MPI ranks: rank r of R passes
        the r-th block (the MPI back-end; other targets take the whole array)."""
        from .distribution import check_dim
        cmd = f"{self.name}.distribute(dim={dim})"
        self.distributed_dim = check_dim(self.name, self.ndim, dim, cmd)
        self.function._record(cmd)
        return self

    def send_receive(self, consumer, at):
        """Move the elements of this input that `consumer` reads on ranks that do not hold them right
        before `consumer`'s loop `at` (see Computation.send_receive)."""
        from .distribution import record_transfer
        from .schedule import loop_name
        record_transfer(self.function, self, consumer, at,
                        f"{self.name}.send_receive({getattr(consumer, 'name', consumer)}, {loop_name(at)})")


def _access(target, idx):
    idx = idx if isinstance(idx, tuple) else (idx,)
    if len(idx) != target.ndim:
        raise DomainError(f"{target.name} has {target.ndim} dimension(s) but is accessed with {len(idx)} index(es)")
    idx = tuple(lift(i) for i in idx)
    for i in idx:
        if not i.dtype.is_int:
            raise ExprTypeError(f"index {pseudo_c(i)} of {target.name} is {i.dtype}, not an integer; cast it")
    return Access(target, idx)


class Computation(Schedulable):
    """`name(vars) = expr` over the domain of `vars` (restricted by `where`).

    `where` is a boolean expression: its affine parts shape the domain (a
    triangle, a band), the rest becomes a predicate checked per instance.
    """

    def __init__(self, name, vars, expr, dtype=None, *, where=None, output=None, _updates=None):
        _check_name(name, "computation")
        self.function = current_function()
        self.name = name
        self.vars = list(vars)
        names = [v.name for v in self.vars]
        if len(set(names)) != len(names):
            raise DomainError(f"computation {name}: variable names repeat: {names}")
        for v in self.vars:
            if not isinstance(v, Var):
                raise DomainError(f"computation {name}: {v!r} is not an ms.Var")
        dtype = as_dtype(dtype) if dtype is not None else (expr.dtype if isinstance(expr, Expr) else None)
        self.expr = lift(expr, dtype)
        self.dtype = dtype or self.expr.dtype
        if self.expr.dtype != self.dtype:
            raise ExprTypeError(f"computation {name} is {self.dtype} but its expression is {self.expr.dtype}")
        self.where = lift(where) if where is not None else None
        self.updated = _updates          # the computation whose storage an update writes
        self.update_at = None            # index expressions of that storage
        self.updates = []
        self.is_output = output
        self.domain, self.predicate = iteration_domain(self.function, name, self.vars, self.where)
        self.function.params_in(self.expr)
        self._check_expression()
        Schedulable.__init__(self)
        self.function._add_computation(self)

    # Layer I ------------------------------------------------------------------
    @property
    def ndim(self):
        return len(self.storage_owner.vars)

    @property
    def storage_owner(self):
        """The computation whose storage this one writes (itself unless it is an update)."""
        return self.updated or self

    def __getitem__(self, idx):
        return _access(self.storage_owner, idx)

    def _check_expression(self):
        allowed = {v.name for v in self.vars}
        for n in walk(self.expr):
            if isinstance(n, Var) and n.name not in allowed:
                raise DomainError(
                    f"computation {self.name} uses variable {n.name}, which is not among its variables {sorted(allowed)}")
            if isinstance(n, Access) and n.target is not None and n.target.function is not self.function:
                raise DomainError(f"computation {self.name} reads {n.target.name} from another Function")

    def update(self, vars, expr, at=None, *, where=None, name=None):
        """Add an update that writes this computation's storage at `at` (default: its own variables by name).

        Variables of the update that are not among `at` are its reduction loops.
        """
        if self.updated is not None:
            return self.updated.update(vars, expr, at, where=where, name=name)
        if self.compute_at_target is not None:
            raise ScheduleError(f"update of {self.name}: {self.name} is already computed at "
                                f"{self.compute_at_target[0].name}; define updates before scheduling")
        vars = list(vars)
        if at is None:
            by_name = {v.name: v for v in vars}
            missing = [v.name for v in self.vars if v.name not in by_name]
            if missing:
                raise DomainError(f"update of {self.name}: no variable named {missing} among {list(by_name)}; pass at=")
            at = [by_name[v.name] for v in self.vars]
        at = [lift(a) for a in (at if isinstance(at, (list, tuple)) else [at])]
        if len(at) != len(self.vars):
            raise DomainError(f"update of {self.name} writes {len(at)} indices but {self.name} has {len(self.vars)}")
        name = name or f"{self.name}_update{len(self.updates)}"
        u = Computation(name, vars, lift(expr, self.dtype), self.dtype, where=where, _updates=self)
        u.update_at = at
        self.function.params_in(*at)
        for a in at:
            for n in walk(a):
                if isinstance(n, Var) and n.name not in {v.name for v in vars}:
                    raise DomainError(f"update {name} writes at {pseudo_c(a)}, which uses {n.name}, not one of its variables")
        self.updates.append(u)
        return u

    def expand(self, loop, dim=None):
        """Give each iteration of the loop named `loop` a copy of its own of this array, where the loop's
        iterations reuse it as scratch (each reads only what the same iteration wrote): the loop then
        carries no dependence through it. The last values are copied back after the loop nest. Returns
        the expanded array, whose dimension `dim` (default: the last) is the loop's; `ms.ScheduleError`
        names the read that keeps it from being private."""
        from .expansion import expand
        return expand(self, loop, dim)

    def __repr__(self):
        return f"Computation({self.name}[{', '.join(v.name for v in self.vars)}] = {pseudo_c(self.expr)})"


def iteration_domain(function, name, vars, where=None):
    """(isl set, predicate) of the instances `name[vars]` of `function` where `where` holds: the loop
    bounds and the affine conjuncts of `where` make the set, the other conjuncts the predicate (None
    when there are none), checked per instance."""
    params = sorted(function.params_in(*(b for v in vars for b in (v.lo, v.hi)), where if where is not None else 0))
    parts = [f"{affine_text(v.lo)} <= {v.name} < {affine_text(v.hi)}" for v in vars]
    predicate = None
    if where is not None:
        affine, rest = _split_conjunction(where)
        parts += [constraint_text(c) for c in affine]
        for c in rest:
            predicate = c if predicate is None else predicate & c
    text = f"[{', '.join(params)}] -> {{ {name}[{', '.join(v.name for v in vars)}]"
    if parts:
        text += " : " + " and ".join(f"({p})" for p in parts)
    try:
        return isl.Set(text + " }"), predicate
    except isl.Error as err:
        raise DomainError(f"computation {name}: cannot build its domain from {text} }} ({err})") from None


def _split_conjunction(cond):
    """Split `a & b & ...` into the affine conjuncts and the others."""
    from .expr import BinOp
    if isinstance(cond, BinOp) and cond.op == "and":
        a1, r1 = _split_conjunction(cond.a)
        a2, r2 = _split_conjunction(cond.b)
        return a1 + a2, r1 + r2
    if constraint_text(cond) is not None:
        return [cond], []
    return [], [cond]
