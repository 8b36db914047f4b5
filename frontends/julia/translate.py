"""Translation of a Julia function's lowered code to Layer I computations.

The walk follows the loop forest: each loop body (with inner loops collapsed)
is an acyclic region whose blocks run in order under path conditions (see
`guards`). Side effects become computations over the enclosing loops:

* `Base.setindex!(A, v, i, j)` updates the storage of array A at Julia's
  column-major, 1-based index, i.e. buffer element `[j - 1, i - 1]`;
* an assignment to a scalar slot creates, the first time in a loop body, a
  computation over the enclosing loops (the scalar is expanded, so those loops
  stay free to be reordered); later assignments in the same or inner loops
  update it, which makes reductions (`s = s + ...`) updates with the inner
  loops as reduction loops;
* a data-dependent branch condition is stored in a boolean computation that
  guarded statements read; `break` sets a flag the rest of the loop reads.

Statements run in Julia's order: the original nesting of the statements is
handed to the middle-end (`Function.original_ordering`) for dependences and as
the initial schedule.
"""
from __future__ import annotations

from dataclasses import dataclass

import mascarpone.middleend.types as T
from mascarpone.middleend.affine import ISL_KEYWORDS, affine_text
from mascarpone.middleend.algorithm import Computation, Input, Param, Var
from mascarpone.middleend.expr import Access, Const, Expr, cast, call, floordiv, max_, min_, select, walk

from . import guards as G
from .cfg import analyze
from .ir import Call, CodeIR, Global, JuliaNotSupportedError, Lit, SSA, Slot, Stmt, slot_names, ssa_refs
from .loops import recover_loops
from .types import parse_type


# values other than scalar expressions ------------------------------------------------------

class _Protocol:
    """A value of the iterate protocol (skipped by the translation)."""


PROTOCOL = _Protocol()


@dataclass(frozen=True)
class NothingValue:
    pass


NOTHING_VALUE = NothingValue()


@dataclass(frozen=True)
class FunctionRef:
    name: str


@dataclass(frozen=True)
class TypeRef:
    dtype: object            # a DType, or ('Val', n)


@dataclass(frozen=True)
class ArrayRef:
    name: str


@dataclass(frozen=True)
class RangeValue:
    lo: Expr
    step: int
    hi: Expr


@dataclass(eq=False)
class LoopCtx:
    var: Var
    jname: str
    value: Expr
    constraint: Expr | None
    entry_guard: Expr | None
    brk: Computation | None
    shape: object


@dataclass(eq=False)
class ScalarOwner:
    comp: Computation
    loops: tuple


TYPE_NAMES = {"Float64": T.float64, "Float32": T.float32, "Int64": T.int64, "Int": T.int64, "Bool": T.bool_,
              "Int32": T.int32}
MATH = {"sqrt", "exp", "log", "sin", "cos", "tan", "tanh", "floor", "ceil", "trunc", "round"}
KNOWN = {"+", "-", "*", "/", "÷", "div", "%", "rem", "^", "<", "<=", ">", ">=", "==", "!=", "≤", "≥", "≠",
         "===", "!==", "!", "&", "|", "min", "max", "abs", "zero", "one", "float", "convert", "muladd", "fma",
         "ifelse", "getindex", "setindex!", "size", "length", "eachindex", "axes", "OneTo", ":", "eltype",
         "iterate", "getfield", "not_int", "literal_pow", "apply_type", "typeassert", "tuple", "oftype",
         "firstindex", "lastindex", "Val", "sub_int", "add_int", "mul_int", "slt_int", "sle_int",
         "~", "⊻", "xor", "<<", ">>", ">>>", "and_int", "or_int", "xor_int", "shl_int", "lshr_int", "ashr_int"} \
    | MATH \
    | set(TYPE_NAMES)


def _safe(name, taken):
    base = name.replace("@", "_").replace("#", "").replace("!", "_bang")
    if not base.isidentifier():
        base = "v_" + "".join(ch if ch.isalnum() else "_" for ch in base)
    if base in ISL_KEYWORDS:
        base += "_"
    out, k = base, 2
    while out in taken:
        out, k = f"{base}_{k}", k + 1
    return out


class Translator:
    """Builds the Layer I computations of one CodeIR inside an open `ms.Function`."""

    def __init__(self, code: CodeIR, argtypes: dict, function):
        self.code = code
        self.f = function
        self.cf = analyze(code)
        self.shapes = recover_loops(code, self.cf)
        self.protocol = set().union(*(s.protocol for s in self.shapes.values())) if self.shapes else set()
        self.iter_slots = {s.iter_slot for s in self.shapes.values() if s.iter_slot}
        self.argtypes = {name: parse_type(t) for name, t in argtypes.items()}
        self._scan()
        self.counters = self._find_counters()
        self.names = set()
        self.ssa = {}
        self.ssa_reads = {}
        self.bindings = {}            # slot -> value (loop variables, index temporaries, arguments)
        self.owners = {}              # slot -> ScalarOwner
        self.arrays = {}              # Julia array name -> Input or the Computation holding its storage
        self.array_inputs = {}        # Julia array name -> Input (the values passed in)
        self.params = {}
        self.scalar_inputs = {}
        self.loops = []
        self.cond = {}                # gotoifnot statement -> boolean expression
        self.order = []               # (computation, loops tuple) in Julia's order
        self.statements = {}          # computation name -> description
        self.returned = None
        self.stmt = None
        self._declare_arguments()

    # pre-scan --------------------------------------------------------------------------------
    def _scan(self):
        code = self.code
        self.assign_count, self.written_arrays, self.uses = {}, [], {}
        used_ssa = set()
        for s in code.stmts:
            for ref in ssa_refs(s.value):
                used_ssa.add(ref)
                self.uses.setdefault(ref, []).append(s.number)
        self.read_slots = set()
        for s in code.stmts:
            if s.kind == "assign":
                self.assign_count[s.target.name] = self.assign_count.get(s.target.name, 0) + 1
            if s.kind == "expr" and isinstance(s.value, Slot) and s.number not in used_ssa:
                continue   # a bare read whose value nobody uses (the tail of @inbounds)
            for sl in slot_names(s.value):
                self.read_slots.add(sl)
            val = s.value
            if isinstance(val, Call) and self._callee(val.fn) == "setindex!" and val.args \
                    and isinstance(val.args[0], Slot) and val.args[0].name not in self.written_arrays:
                self.written_arrays.append(val.args[0].name)
        for name in self.written_arrays:
            if name not in self.argtypes:
                raise JuliaNotSupportedError(f"setindex! on {name}, which is not an array argument "
                                             f"(arguments: {list(self.argtypes)})")

    def _find_counters(self):
        """Slots incremented by a constant in a `while` loop: their start value stays an expression."""
        out = {}
        for shape in self.shapes.values():
            if shape.kind != "while":
                continue
            for b in shape.loop.blocks:
                for n in self.code.blocks[b]:
                    s = self.code.stmt(n)
                    if s.kind == "assign" and self._increment(s) is not None:
                        out[s.target.name] = shape
        return out

    def _callee(self, fn):
        if isinstance(fn, Global):
            return fn.name
        if isinstance(fn, SSA):
            s = self.code.stmt(fn.n)
            if s.kind == "expr" and isinstance(s.value, Global):
                return s.value.name
        return None

    def _declare_arguments(self):
        for name, jt in self.argtypes.items():
            if self.assign_count.get(name):
                raise JuliaNotSupportedError(f"the argument {name} is assigned in the function body; "
                                             "assign a local copy instead")
            if jt.is_array:
                shape = []
                for d in range(jt.ndim, 0, -1):
                    pname = self._name(f"{name}_{d}")
                    self.params[(name, d)] = Param(pname)
                    shape.append(self.params[(name, d)])
                if name in self.written_arrays:
                    inp = Input(self._name(f"{name}_in"), shape, jt.dtype)
                    vars_ = [Var(self._name(f"{name}_d{d}"), 0, self.params[(name, d)])
                             for d in range(jt.ndim, 0, -1)]
                    comp = Computation(self._name(name), vars_, inp[tuple(vars_)], output=True)
                    self.statements[comp.name] = f"the values of {name} passed in (copied into its storage)"
                    self.order.append((comp, ()))
                    self.arrays[name] = comp
                    self.array_inputs[name] = inp
                else:
                    inp = Input(self._name(name), shape, jt.dtype)
                    self.arrays[name] = inp
                    self.array_inputs[name] = inp
                self.bindings[name] = ArrayRef(name)
            elif jt.dtype.is_int:
                p = Param(self._name(name))
                self.params[name] = p
                self.bindings[name] = cast(T.int64, p)
            else:
                inp = Input(self._name(name), [], jt.dtype)
                self.scalar_inputs[name] = inp
                self.bindings[name] = inp[()]

    def _name(self, base):
        n = _safe(base, self.names)
        self.names.add(n)
        return n

    # driver ----------------------------------------------------------------------------------
    def run(self):
        top_nodes = {b for b in self.cf.graph.nodes if b not in self.cf.loop_of}
        top_nodes |= {lp.header for lp in self.cf.top_loops()}
        self._walk_region(top_nodes, None)
        if isinstance(self.returned, Expr):
            ret = Computation(self._name("ret"), [], self.returned, output=True)
            self._register(ret, "the value the function returns")
        entries, prev = [], None
        for comp, loops in self.order:
            if prev is not None:
                shared = 0
                for a, b in zip(loops, prev[1]):
                    if a is not b:
                        break
                    shared += 1
                entries.append(("after", comp, prev[0], shared))
            prev = (comp, loops)
        self.f.original_ordering = list(entries)
        self.f._ordering = list(entries)
        return self

    # regions ---------------------------------------------------------------------------------
    def _walk_region(self, nodes, shape):
        entry = min(nodes) if shape is None else shape.header
        guard = {entry: G.TRUE}
        children = {lp.header: self.shapes[lp.header] for lp in
                    (shape.loop.children if shape is not None else self.cf.top_loops())}
        for b in sorted(nodes):
            g = guard.pop(b, G.FALSE)
            if g == G.FALSE:
                continue
            if b in children and (shape is None or b != shape.header):
                child = children[b]
                self._loop(child, g)
                self._flow(b, child.exit, g, nodes, guard, shape)
                continue
            for n in self.code.blocks[b]:
                s = self.code.stmt(n)
                self.stmt = s
                if s.kind in ("goto", "gotoifnot", "return", "unreachable"):
                    break
                self._statement(s, g)
            last = self.code.stmt(self.code.blocks[b][-1])
            self.stmt = last
            if last.kind == "goto":
                self._flow(b, last.target, g, nodes, guard, shape)
            elif last.kind == "gotoifnot":
                if shape is not None and last.number == shape.test_stmt:
                    if shape.kind == "while":
                        self._flow(b, b + 1, g, nodes, guard, shape)
                    continue    # a for loop's end test: the iteration is over
                if last.number in {sh.guard_stmt for sh in children.values()}:
                    self._flow(b, b + 1, g, nodes, guard, shape)   # the empty-range test of the next loop
                    continue
                self._condition(last, g)
                self._flow(b, b + 1, G.conj(g, (last.number, True)), nodes, guard, shape)
                self._flow(b, last.target, G.conj(g, (last.number, False)), nodes, guard, shape)
            elif last.kind == "return":
                if shape is not None:
                    raise JuliaNotSupportedError("`return` inside a loop", last)
                if g != G.TRUE:
                    raise JuliaNotSupportedError("a `return` that only some paths reach (several returns)", last)
                self.returned = self._value(last.value)
            elif last.kind == "unreachable":
                continue
            else:
                self._flow(b, b + 1, g, nodes, guard, shape)

    def _flow(self, src, dst, g, nodes, guard, shape):
        if g == G.FALSE:
            return
        if dst in nodes and dst > src and (shape is None or dst != shape.header):
            guard[dst] = G.disj(guard.get(dst, G.FALSE), g)
            return
        if shape is not None and dst == shape.header:
            return           # the back edge, or `continue` in a while loop
        if shape is not None and dst == shape.exit:
            self._break(shape, g)
            return
        raise JuliaNotSupportedError(f"a jump from block {src} to block {dst} that leaves the structured "
                                     "loop/if nesting", self.stmt)

    # guards ------------------------------------------------------------------------------------
    def _guard_expr(self, g):
        local = G.to_expr(g, lambda n: self.cond[n])
        parts = []
        for ctx in self.loops:
            for e in (ctx.entry_guard, ctx.constraint):
                if e is not None:
                    parts.append(e)
            if ctx.brk is not None:
                outer = self.loops[:self.loops.index(ctx)]
                parts.append(~Access(ctx.brk, [c.var for c in outer]))
        if local is not None:
            parts.append(local)
        out = None
        for p in parts:
            out = p if out is None else out & p
        return out

    def _condition(self, s: Stmt, g):
        """The expression of a branch condition, stored in a computation when it reads mutable storage."""
        value = self._value(s.value)
        if isinstance(value, _Protocol):
            raise JuliaNotSupportedError("a branch on the iterate protocol outside a recognised `for` loop", s)
        if not isinstance(value, Expr) or not value.dtype.is_bool:
            raise JuliaNotSupportedError(f"a branch on a non-Bool value {value!r}", s)
        if not self._reads_storage(value):
            self.cond[s.number] = value
            return
        comp = self._new_comp(f"c{s.number}", value, g, f"the condition of `{s.text}`")
        self.cond[s.number] = Access(comp, [c.var for c in self.loops])

    def _reads_storage(self, e):
        return any(isinstance(n, Access) and isinstance(n.target, Computation) for n in walk(e))

    # loops ----------------------------------------------------------------------------------------
    def _loop(self, shape, g):
        entry_guard = self._guard_expr(g)
        header_stmt = self.code.stmt(self.code.blocks[shape.header][0])
        self.stmt = header_stmt
        saved = dict(self.bindings)
        brk = None
        if shape.breaks:
            brk = self._new_comp(f"brk{header_stmt.number}", Const(False, T.bool_), g,
                                 f"the `break` flag of the loop at block {shape.header}")
        if shape.kind == "for":
            ctx = self._for_ctx(shape, entry_guard, brk)
        else:
            ctx = self._while_ctx(shape, entry_guard, brk)
        self.loops.append(ctx)
        nodes = {b for b in shape.loop.blocks if self.cf.loop_of.get(b) is shape.loop}
        nodes |= {c.header for c in shape.loop.children}
        try:
            self._walk_region(nodes, shape)
        finally:
            self.loops.pop()
        # the loop variable and values computed inside the loop are not visible after it
        for k in list(self.bindings):
            if k not in saved or self.bindings[k] is not saved[k]:
                if k in saved:
                    self.bindings[k] = saved[k]
                else:
                    del self.bindings[k]
        if shape.kind == "while":
            self.bindings[shape.var_slot] = _Escaped(shape.var_slot)

    def _new_var(self, jname, lo, hi):
        taken = {c.var.name for c in self.loops} | {p.name for p in self.params.values()} | \
            {i.name for i in self.scalar_inputs.values()}
        name = _safe(jname.split("@")[0] or "i", taken)
        for bound in (lo, hi):
            if affine_text(bound) is None:
                raise JuliaNotSupportedError(f"the bounds of loop {jname} are not affine in the sizes and outer "
                                             f"loop variables ({bound})", self.stmt)
        return Var(name, lo, hi)

    def _counted_var(self, jname, lo, step, hi):
        """The loop variable of `lo:step:hi`: itself for step 1, else an iteration counter from 0
        (isl's code generator wants unit strides) with the Julia value lo + step * counter."""
        if step == 1:
            var = self._new_var(jname, lo, hi + 1)
            return var, cast(T.int64, var)
        count = floordiv(hi - lo, step) + 1 if step > 0 else floordiv(lo - hi, -step) + 1
        var = self._new_var(jname, Const(0, T.int64), count)
        return var, lo + cast(T.int64, var) * step

    def _for_ctx(self, shape, entry_guard, brk):
        rng = self._value(shape.range_expr)
        if not isinstance(rng, RangeValue):
            raise JuliaNotSupportedError(f"`for {shape.var_slot} in ...` over {rng!r}; supported: a:b, a:s:b, "
                                         "eachindex, axes(A, d), 1:size(A, d), 1:length(A)", self.stmt)
        jname = shape.var_slot
        var, value = self._counted_var(jname, rng.lo, rng.step, rng.hi)
        constraint = None
        self.bindings[jname] = value
        return LoopCtx(var, jname, value, constraint, entry_guard, brk, shape)

    def _while_ctx(self, shape, entry_guard, brk):
        """`while i <= n ... i += c end` with c a positive constant: a loop over i."""
        code = self.code
        counter, step, inc_stmt = None, None, None
        for b in shape.loop.blocks:
            for n in code.blocks[b]:
                s = code.stmt(n)
                if s.kind == "assign":
                    inc = self._increment(s)
                    if inc is not None and self.assign_count.get(s.target.name) == 2:
                        counter, step, inc_stmt = s.target.name, inc, s
        if counter is None:
            raise JuliaNotSupportedError("a `while` loop without an integer counter `i = i + c` (c > 0) assigned "
                                         "once before the loop and once in it", code.stmt(shape.test_stmt))
        if self.cf.loop_of.get(inc_stmt.block) is not shape.loop:
            raise JuliaNotSupportedError("the counter of a `while` loop is incremented inside an inner loop",
                                         inc_stmt)
        init = self.bindings.get(counter)
        if not isinstance(init, Expr) or not init.dtype.is_int:
            raise JuliaNotSupportedError(f"the counter {counter} of a `while` loop has no integer start value "
                                         "before the loop", inc_stmt)
        marker = Var("_counter", 0, 1)
        self.bindings[counter] = cast(T.int64, marker)
        test = code.stmt(shape.test_stmt)
        for n in code.blocks[shape.header][:-1]:
            self._statement(code.stmt(n), G.TRUE, dry=True)
        cond = self._value(test.value)
        hi = _counter_bound(cond, marker)
        if hi is None:
            raise JuliaNotSupportedError(f"the test of a `while` loop must be `{counter} <= e` or `{counter} < e` "
                                         "with e not depending on the counter", test)
        jname = counter
        var, value = self._counted_var(jname, init, step, hi - 1)
        constraint = None
        self.bindings[counter] = value
        shape.var_slot = counter
        ctx = LoopCtx(var, jname, value, constraint, entry_guard, brk, shape)
        ctx.increment = (inc_stmt.number, step)
        return ctx

    def _increment(self, s):
        """c for `x = x + c` (c a positive Int literal), else None."""
        v = s.value
        if isinstance(v, SSA):
            v = self.code.stmt(v.n).value
        if isinstance(v, Call) and self._callee(v.fn) == "+" and len(v.args) == 2:
            a, b = v.args
            if isinstance(b, Lit) and b.jtype == "Int64" and b.value > 0 and self._reads_slot(a, s.target.name):
                return b.value
        return None

    def _reads_slot(self, e, name):
        if isinstance(e, Slot):
            return e.name == name
        if isinstance(e, SSA):
            t = self.code.stmt(e.n)
            return t.kind == "expr" and isinstance(t.value, Slot) and t.value.name == name
        return False

    def _break(self, shape, g):
        ctx = next((c for c in self.loops if c.shape is shape), None)
        if ctx is None or ctx.brk is None:
            raise JuliaNotSupportedError("a jump out of a loop that is not its `break`", self.stmt)
        outer = self.loops[:self.loops.index(ctx)]
        where = self._guard_expr(g)
        u = ctx.brk.update([c.var for c in self.loops], Const(True, T.bool_), at=[c.var for c in outer],
                           where=where, name=self._name(f"s{self.stmt.number}"))
        self._register(u, f"`break` (line {self.stmt.line})")

    # statements -----------------------------------------------------------------------------------
    def _statement(self, s: Stmt, g, dry=False):
        if s.number in self.protocol or s.kind == "meta":
            return
        if s.kind == "expr":
            val = s.value
            if isinstance(val, Call) and self._callee(val.fn) == "setindex!":
                if dry:
                    raise JuliaNotSupportedError("setindex! inside the test of a `while` loop", s)
                self._setindex(s, val, g)
                self.ssa[s.number] = NOTHING_VALUE
                return
            if s.number not in self.uses and not isinstance(val, Call):
                return      # a read nobody uses (the `val` closing @inbounds)
            self._current_reads = set()
            self.ssa[s.number] = self._value(val)
            self.ssa_reads[s.number] = self._current_reads
            return
        if s.kind == "assign":
            name = s.target.name
            if name in self.iter_slots:
                return
            ctx = next((c for c in self.loops if getattr(c, "increment", (None,))[0] == s.number), None)
            if ctx is not None:
                self.bindings[name] = ctx.value + ctx.increment[1]
                return
            if dry:
                raise JuliaNotSupportedError("an assignment inside the test of a `while` loop", s)
            self._current_reads = set()
            value = self._value(s.value)
            self._assign(s, name, value, g)
            return
        raise JuliaNotSupportedError(f"unknown statement kind {s.kind}", s)

    def _assign(self, s, name, value, g):
        if isinstance(value, (ArrayRef, RangeValue, TypeRef, FunctionRef)):
            self.bindings[name] = value     # an alias: `r = 1:n`, `B = A`
            return
        if isinstance(value, NothingValue):
            self.bindings[name] = value
            return
        if name not in self.read_slots:
            return   # nothing to keep: `val = nothing` of @inbounds, or a value never read
        if not isinstance(value, Expr):
            raise JuliaNotSupportedError(f"assignment of {value!r} to {name}", s)
        counted = self.assign_count.get(name, 0)
        if name in self.counters and value.dtype.is_int and not self._reads_storage(value) and g == G.TRUE:
            self.bindings[name] = value      # the start value of a while loop's counter
            return
        if counted == 1 and value.dtype.is_int and not self._reads_storage(value) and g == G.TRUE:
            self.bindings[name] = value      # an index temporary: keep it affine
            return
        owner = self.owners.get(name)
        if owner is not None and self._visible(owner):
            expr = self._convert(value, owner.comp.dtype, s)
            self._check_hazards(owner.comp, s)
            u = owner.comp.update([c.var for c in self.loops], expr,
                                  at=[c.var for c in self.loops[:len(owner.loops)]],
                                  where=self._guard_expr(g), name=self._name(f"s{s.number}"))
            self._register(u, f"{name} = ... (line {s.line}: `{s.text}`)")
            return
        comp = self._new_comp(f"s{s.number}", value, g, f"{name} = ... (line {s.line}: `{s.text}`)")
        self.owners[name] = ScalarOwner(comp, tuple(self.loops))
        self.bindings.pop(name, None)

    def _visible(self, owner):
        return len(owner.loops) <= len(self.loops) and all(a is b for a, b in zip(owner.loops, self.loops))

    def _new_comp(self, base, expr, g, description):
        comp = Computation(self._name(base), [c.var for c in self.loops], expr, where=self._guard_expr(g))
        self._register(comp, description)
        return comp

    def _register(self, comp, description):
        self.order.append((comp, tuple(self.loops)))
        self.statements[comp.name] = description

    def _setindex(self, s, call_, g):
        args = [self._value(a) for a in call_.args]
        target = args[0]
        if not isinstance(target, ArrayRef) or target.name not in self.written_arrays:
            raise JuliaNotSupportedError(f"setindex! on {call_.args[0]}, which is not an array argument", s)
        jt = self.argtypes[target.name]
        value = self._convert(args[1], jt.dtype, s)
        at = self._indices(target.name, args[2:], s)
        owner = self.arrays[target.name]
        self._check_hazards(owner, s)
        u = owner.update([c.var for c in self.loops], value, at=at, where=self._guard_expr(g),
                         name=self._name(f"s{s.number}"))
        self._register(u, f"{target.name}[...] = ... (line {s.line}: `{s.text}`)")

    def _check_hazards(self, owner, s):
        """A value read from `owner` before this write must not be used after it (it would see the new value)."""
        for n, reads in self.ssa_reads.items():
            if owner in reads and n < s.number:
                for u in self.uses.get(n, ()):
                    if u > s.number:
                        raise JuliaNotSupportedError(
                            f"%{n} reads {owner.name} before this statement writes it, and is used after it "
                            f"(statement %{u}); the front-end reads storage where the value is used", s)

    def _indices(self, name, idx, s):
        jt = self.argtypes[name]
        if len(idx) != jt.ndim:
            raise JuliaNotSupportedError(f"{name} has {jt.ndim} dimension(s) but is indexed with {len(idx)} "
                                         "index(es) (linear indexing of arrays is not supported)", s)
        out = []
        for i in reversed(idx):
            if not isinstance(i, Expr) or not i.dtype.is_int:
                raise JuliaNotSupportedError(f"index {i!r} of {name} is not an integer", s)
            out.append(cast(T.int64, i) - 1)
        return out

    # values ----------------------------------------------------------------------------------------
    def _value(self, e):
        s = self.stmt
        if isinstance(e, SSA):
            if e.n not in self.ssa:
                raise JuliaNotSupportedError(f"%{e.n} is used before it is computed", s)
            reads = self.ssa_reads.get(e.n)
            if reads and hasattr(self, "_current_reads"):
                self._current_reads |= reads
            return self.ssa[e.n]
        if isinstance(e, Slot):
            return self._read_slot(e.name)
        if isinstance(e, Lit):
            return _literal(e, s)
        if isinstance(e, Global):
            return self._global(e)
        if isinstance(e, Call):
            fn = self._value(e.fn)
            if isinstance(fn, TypeRef) and not e.args and isinstance(fn.dtype, tuple):
                return fn          # Val{2}() of literal_pow
            if isinstance(fn, TypeRef):
                return self._apply(fn.dtype if not isinstance(fn.dtype, tuple) else None, e, "convert-to")
            if not isinstance(fn, FunctionRef):
                raise JuliaNotSupportedError(f"a call of {fn!r}", s)
            return self._apply(fn.name, e)
        raise JuliaNotSupportedError(f"the expression {e!r}", s)

    def _global(self, g):
        if g.name in TYPE_NAMES:
            return TypeRef(TYPE_NAMES[g.name])
        if g.name in KNOWN:
            return FunctionRef(g.name)
        if g.name == "nothing":
            return NOTHING_VALUE
        raise JuliaNotSupportedError(f"the global {g.module + '.' if g.module else ''}{g.name}: supported calls are "
                                     "arithmetic, comparisons, getindex, setindex!, size, length, min, max, abs, "
                                     "sqrt, exp, zero, one and conversions", self.stmt)

    def _read_slot(self, name):
        if name in self.iter_slots:
            return PROTOCOL
        if name in self.bindings:
            v = self.bindings[name]
            if isinstance(v, _Escaped):
                raise JuliaNotSupportedError(f"the value of the loop counter {name} after its loop", self.stmt)
            return v
        owner = self.owners.get(name)
        if owner is None:
            raise JuliaNotSupportedError(f"{name} is read before it is assigned", self.stmt)
        if not self._visible(owner):
            raise JuliaNotSupportedError(f"the value of {name} after the loop it is assigned in (the front-end "
                                         "expands scalars over their loops; read it inside the loop or assign it "
                                         "before the loop)", self.stmt)
        if hasattr(self, "_current_reads"):
            self._current_reads.add(owner.comp)
        return Access(owner.comp, [c.var for c in self.loops[:len(owner.loops)]])

    def _apply(self, name, e, mode="call"):
        s = self.stmt
        args = [self._value(a) for a in e.args]
        if mode == "convert-to":
            if len(args) != 1:
                raise JuliaNotSupportedError(f"a conversion with {len(args)} arguments", s)
            return self._convert(args[0], name, s, explicit=True)
        if any(isinstance(a, _Protocol) for a in args) or name in ("iterate", "getfield"):
            return PROTOCOL
        return apply_function(self, name, args, s)

    def _convert(self, v, dtype, s, explicit=False):
        if not isinstance(v, Expr):
            raise JuliaNotSupportedError(f"{v!r} where a {dtype} number is needed", s)
        if v.dtype == dtype:
            return v
        if v.dtype.is_float and dtype.is_int and not explicit:
            raise JuliaNotSupportedError(f"storing a {v.dtype} value where {dtype} is expected (Julia would "
                                         "throw InexactError unless the value is integral)", s)
        return cast(dtype, v)

    # arrays --------------------------------------------------------------------------------------
    def read_array(self, name, idx, s):
        at = self._indices(name, idx, s)
        target = self.arrays[name]
        if isinstance(target, Computation) and hasattr(self, "_current_reads"):
            self._current_reads.add(target)
        return Access(target, at)

    def size(self, name, d, s):
        jt = self.argtypes[name]
        if not 1 <= d <= jt.ndim:
            return Const(1, T.int64)
        return cast(T.int64, self.params[(name, d)])


class _Escaped:
    def __init__(self, name):
        self.name = name


def _counter_bound(cond, marker):
    """The exclusive upper bound e' of the counter for `c <= e` / `c < e` / `e >= c` / `e > c`."""
    from mascarpone.middleend.expr import BinOp

    def is_marker(x):
        return any(getattr(n, "name", None) == marker.name for n in walk(x)) and _strip(x) is marker

    def mentions(x):
        return any(getattr(n, "name", None) == marker.name for n in walk(x))

    if not isinstance(cond, BinOp):
        return None
    a, b, op = cond.a, cond.b, cond.op
    if is_marker(b) and not mentions(a):
        a, b = b, a
        op = {"ge": "le", "gt": "lt", "le": "ge", "lt": "gt"}.get(op, op)
    if not is_marker(a) or mentions(b):
        return None
    if op == "le":
        return b + 1
    if op == "lt":
        return b
    return None


def _strip(x):
    from mascarpone.middleend.expr import Cast
    while isinstance(x, Cast):
        x = x.a
    return x


def _literal(e: Lit, s):
    if e.jtype == "Int64":
        return Const(e.value, T.int64)
    if e.jtype == "Float64":
        return Const(e.value, T.float64)
    if e.jtype == "Float32":
        return Const(e.value, T.float32)
    if e.jtype == "Bool":
        return Const(e.value, T.bool_)
    if e.jtype == "Nothing":
        return NOTHING_VALUE
    if e.jtype == "Symbol":
        return FunctionRef(e.value) if e.value in KNOWN else e
    raise JuliaNotSupportedError(f"the literal {e.value!r} of type {e.jtype}", s)


# the supported functions --------------------------------------------------------------------------

def _promote(a, b, s):
    """Julia's promotion of two numbers: Bool < Int64 < Float32 < Float64 (Int with Float32 is Float32)."""
    ta, tb = a.dtype, b.dtype
    if ta == tb:
        return a, b
    def rank(t):
        return {T.bool_: 0, T.int32: 1, T.int64: 2, T.float32: 3, T.float64: 4}.get(t)
    if rank(ta) is None or rank(tb) is None:
        raise JuliaNotSupportedError(f"arithmetic on {ta} and {tb}", s)
    if ta.is_float and tb.is_float or ta.is_int and tb.is_int or ta.is_bool or tb.is_bool:
        t = ta if rank(ta) > rank(tb) else tb
        if ta.is_bool and tb.is_bool:
            t = T.bool_
    else:
        t = ta if ta.is_float else tb
    return cast(t, a), cast(t, b)


def _numbers(args, s, n=None, name="?"):
    if n is not None and len(args) != n:
        raise JuliaNotSupportedError(f"{name} with {len(args)} argument(s)", s)
    for a in args:
        if not isinstance(a, Expr):
            raise JuliaNotSupportedError(f"{name} of {a!r}", s)
    return args


_COMPARE = {"<": "lt", "<=": "le", ">": "gt", ">=": "ge", "==": "eq", "!=": "ne", "≤": "le", "≥": "ge",
            "≠": "ne", "===": "eq", "!==": "ne", "slt_int": "lt", "sle_int": "le"}


_BITWISE = {"&": "and", "and_int": "and", "|": "or", "or_int": "or", "⊻": "xor", "xor": "xor", "xor_int": "xor"}
#: `>>` is arithmetic on signed integers, `>>>` logical; counts of the width or more saturate, as in the IR
_SHIFTS = {"<<": "shl", "shl_int": "shl", ">>": "shr", "ashr_int": "shr", ">>>": "lshr", "lshr_int": "lshr"}


def _unsigned(dtype):
    return T.as_dtype("u" + dtype.name) if dtype.is_signed else dtype


def apply_function(tr, name, args, s):
    """The expression of a supported Julia call, or JuliaNotSupportedError naming it."""
    from mascarpone.middleend.expr import BinOp
    if name in ("+", "*", "add_int", "mul_int") and len(args) >= 2:
        _numbers(args, s, name=name)
        out = args[0]
        for b in args[1:]:
            x, y = _promote(out, b, s)
            if x.dtype.is_bool:
                x, y = cast(T.int64, x), cast(T.int64, y)
            out = x + y if name in ("+", "add_int") else x * y
        return out
    if name in ("-", "sub_int"):
        _numbers(args, s, name=name)
        if len(args) == 1:
            a = args[0]
            return -(cast(T.int64, a) if a.dtype.is_bool else a)
        a, b = _promote(*_numbers(args, s, 2, name), s)
        return a - b
    if name == "/":
        a, b = _promote(*_numbers(args, s, 2, name), s)
        if not a.dtype.is_float:
            a, b = cast(T.float64, a), cast(T.float64, b)
        return a / b
    if name in ("÷", "div", "%", "rem"):
        a, b = _promote(*_numbers(args, s, 2, name), s)
        if not a.dtype.is_int:
            raise JuliaNotSupportedError(f"{name} of floating-point numbers", s)
        return a / b if name in ("÷", "div") else a % b
    if name in _COMPARE:
        a, b = args
        if isinstance(a, NothingValue) or isinstance(b, NothingValue):
            return Const(isinstance(a, NothingValue) and isinstance(b, NothingValue), T.bool_) \
                if name in ("===", "==") else Const(not (isinstance(a, NothingValue) and isinstance(b, NothingValue)), T.bool_)
        a, b = _promote(*_numbers(args, s, 2, name), s)
        return BinOp(_COMPARE[name], a, b)
    if name in ("!", "not_int", "~"):
        (a,) = _numbers(args, s, 1, name)
        if not a.dtype.is_bool and (name == "!" or not a.dtype.is_int):
            raise JuliaNotSupportedError(f"{name} of a {a.dtype}", s)
        return ~a   # logical on Bool, bitwise on integers
    if name in _BITWISE:
        a, b = _promote(*_numbers(args, s, 2, name), s)
        if a.dtype.is_float:
            raise JuliaNotSupportedError(f"{name} of floating-point numbers", s)
        op = _BITWISE[name]
        return a & b if op == "and" else (a | b if op == "or" else a ^ b)
    if name in _SHIFTS:
        a, n = _numbers(args, s, 2, name)
        if not (a.dtype.is_int and n.dtype.is_int):
            raise JuliaNotSupportedError(f"{name} of {a.dtype} by {n.dtype}", s)
        if name.endswith("_int"):   # the intrinsics read the count as unsigned (a negative one is too large)
            n = cast(_unsigned(n.dtype), n)
        if _SHIFTS[name] == "lshr" and a.dtype.is_signed:
            return cast(a.dtype, cast(_unsigned(a.dtype), a) >> n)
        return a << n if _SHIFTS[name] == "shl" else a >> n
    if name in ("min", "max"):
        _numbers(args, s, name=name)
        out = args[0]
        for b in args[1:]:
            x, y = _promote(out, b, s)
            out = min_(x, y) if name == "min" else max_(x, y)
        return out
    if name == "abs":
        (a,) = _numbers(args, s, 1, name)
        return select(a < Const(0, a.dtype), -a, a) if not a.dtype.is_float else call("fabs", a)
    if name in MATH:
        (a,) = _numbers(args, s, 1, name)
        if not a.dtype.is_float:
            a = cast(T.float64, a)
        return call(name, a)
    if name == "^":
        a, b = _numbers(args, s, 2, name)
        x, y = _promote(a, b, s)
        if not x.dtype.is_float:
            raise JuliaNotSupportedError("integer powers with a non-literal exponent", s)
        return call("pow", x, y)
    if name == "literal_pow":
        if len(args) != 3 or not isinstance(args[2], TypeRef) or not isinstance(args[2].dtype, tuple):
            raise JuliaNotSupportedError("literal_pow with an unexpected exponent", s)
        base, p = args[1], args[2].dtype[1]
        if not isinstance(base, Expr) or not isinstance(p, int) or not 0 <= p <= 4:
            raise JuliaNotSupportedError(f"x^{p}: only literal exponents 0 to 4 are supported", s)
        if p == 0:
            return Const(1, base.dtype)
        out = base
        for _ in range(p - 1):
            out = out * base
        return out
    if name == "apply_type":
        if len(args) == 2 and isinstance(args[0], FunctionRef) and args[0].name == "Val" \
                and isinstance(args[1], Const):
            return TypeRef(("Val", args[1].value))
        raise JuliaNotSupportedError("Core.apply_type other than Val{n}", s)
    if name in ("muladd", "fma"):
        a, b, c = _numbers(args, s, 3, name)
        x, y = _promote(a, b, s)
        p = x * y
        p, z = _promote(p, c, s)
        return p + z
    if name == "ifelse":
        c, a, b = _numbers(args, s, 3, name)
        a, b = _promote(a, b, s)
        return select(c, a, b)
    if name in ("zero", "one", "oftype"):
        if name == "oftype":
            a, v = _numbers(args, s, 2, name)
            return cast(a.dtype, v)
        (a,) = args
        t = a.dtype if isinstance(a, TypeRef) else getattr(a, "dtype", None)
        if t is None or isinstance(t, tuple):
            raise JuliaNotSupportedError(f"{name} of {a!r}", s)
        return Const(0 if name == "zero" else 1, t)
    if name == "float":
        (a,) = _numbers(args, s, 1, name)
        return a if a.dtype.is_float else cast(T.float64, a)
    if name == "convert":
        t, v = args
        if not isinstance(t, TypeRef):
            raise JuliaNotSupportedError("convert to a non-type", s)
        return tr._convert(v, t.dtype, s, explicit=True)
    if name == "typeassert":
        return args[0]
    if name in TYPE_NAMES:
        (a,) = _numbers(args, s, 1, name)
        return tr._convert(a, TYPE_NAMES[name], s, explicit=True)
    if name == "eltype":
        (a,) = args
        if isinstance(a, ArrayRef):
            return TypeRef(tr.argtypes[a.name].dtype)
        raise JuliaNotSupportedError("eltype of a non-array", s)
    if name == "getindex":
        a = args[0]
        if not isinstance(a, ArrayRef):
            raise JuliaNotSupportedError(f"getindex on {a!r}", s)
        return tr.read_array(a.name, args[1:], s)
    if name == "setindex!":
        raise JuliaNotSupportedError("the value of setindex! used as an expression", s)
    if name == "size":
        a = args[0]
        if not isinstance(a, ArrayRef) or len(args) != 2 or not isinstance(args[1], Const):
            raise JuliaNotSupportedError("size(A, d) with a constant d is supported; size(A) is not", s)
        return tr.size(a.name, args[1].value, s)
    if name == "length":
        (a,) = args
        if not isinstance(a, ArrayRef):
            raise JuliaNotSupportedError(f"length of {a!r}", s)
        jt = tr.argtypes[a.name]
        out = tr.size(a.name, 1, s)
        for d in range(2, jt.ndim + 1):
            out = out * tr.size(a.name, d, s)
        return out
    if name in ("eachindex", "axes", "OneTo"):
        if name == "OneTo":
            (n,) = _numbers(args, s, 1, name)
            return RangeValue(Const(1, T.int64), 1, cast(T.int64, n))
        a = args[0]
        if not isinstance(a, ArrayRef):
            raise JuliaNotSupportedError(f"{name} of {a!r}", s)
        if name == "axes":
            if len(args) != 2 or not isinstance(args[1], Const):
                raise JuliaNotSupportedError("axes(A, d) with a constant d is supported; axes(A) is not", s)
            return RangeValue(Const(1, T.int64), 1, tr.size(a.name, args[1].value, s))
        if len(args) != 1 or tr.argtypes[a.name].ndim != 1:
            raise JuliaNotSupportedError("eachindex of a multi-dimensional array (linear indices); use "
                                         "axes(A, d) or 1:size(A, d)", s)
        return RangeValue(Const(1, T.int64), 1, tr.size(a.name, 1, s))
    if name == ":":
        _numbers(args, s, name=name)
        if len(args) == 2:
            lo, hi = args
            step = 1
        elif len(args) == 3:
            lo, st, hi = args
            if not isinstance(st, Const) or st.value == 0:
                raise JuliaNotSupportedError("a range a:s:b whose step s is not a nonzero integer literal", s)
            step = st.value
        else:
            raise JuliaNotSupportedError("a range with more than three parts", s)
        for x in (lo, hi):
            if not x.dtype.is_int:
                raise JuliaNotSupportedError("a range of non-integers", s)
        return RangeValue(cast(T.int64, lo), step, cast(T.int64, hi))
    if name in ("firstindex", "lastindex"):
        a = args[0]
        d = args[1].value if len(args) == 2 else 1
        return Const(1, T.int64) if name == "firstindex" else tr.size(a.name, d, s)
    if name == "tuple":
        raise JuliaNotSupportedError("tuples", s)
    raise JuliaNotSupportedError(f"the function {name}: supported calls are arithmetic on Int64/Float64/Float32, "
                                 "comparisons, getindex, setindex!, size, length, min, max, abs, sqrt, exp, "
                                 "zero, one and conversions", s)


def translate(code: CodeIR, argtypes: dict, function):
    """Declare the inputs and computations of `code` in the open `function`; returns the Translator."""
    return Translator(code, argtypes, function).run()
