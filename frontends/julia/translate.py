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
  guarded statements read; `break` sets a flag the rest of the loop reads;
* a value read from storage that is used after that storage is written (the
  `result = %14; val = %14` of `@inbounds s += a[i]`) is kept in a computation
  of its own where it is computed.

A local that holds an integer constant and then Float64 values (`s = 0` then
`s = s + x[i]`) is typed Float64, as Julia's inference types the loop-carried
value: the translation runs once to learn the types each local receives and
again with the joined types (see `widening`).

Statements run in Julia's order: the original nesting of the statements is
handed to the middle-end (`Function.original_ordering`) for dependences and as
the initial schedule.
"""
from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

import mascarpone.middleend.types as T
from mascarpone.middleend.affine import ISL_KEYWORDS, affine_text
from mascarpone.middleend.algorithm import Computation, Input, Param, Var, iteration_domain
from mascarpone.middleend.buffer import as_index_expr
from mascarpone.middleend.errors import MascarponeError
from mascarpone.middleend.expr import Access, BinOp, Cast, Const, Expr, cast, min_, walk

from . import guards as G
from . import widening
from .calls import KNOWN, apply_function, describe, range_count
from .cfg import analyze
from .ir import (Call, CodeIR, Global, JuliaNotSupportedError, Lit, SSA, Slot, Special, StaticParam, Stmt,
                 slot_names, ssa_refs)
from .loops import callee, recover_loops
from .types import JULIA_NAME, JuliaType, TypeValue, isa, parse_type, promote_dtype, type_from_text, type_value
from .values import (ALIASES, ArrayLength, ArrayRef, BroadcastValue, EnumerateValue, FunctionRef, LinearIndex,
                     NOTHING_VALUE, NothingValue, RangeValue, TAGGED_NUMBERS, TupleValue, TypeRef, ZipValue, number)


#: the calls that write into an array argument
_ARRAY_WRITES = ("setindex!", "materialize!")


def _broadcast_arrays(v):
    """The ArrayRefs a broadcast reads."""
    if isinstance(v, BroadcastValue):
        return [r for a in v.args for r in _broadcast_arrays(a)]
    return [v] if isinstance(v, ArrayRef) else []


class WidenRetry(Exception):
    """Raised by a first translation that met locals of several number types: translate again with `widen`."""

    def __init__(self, widen):
        super().__init__(widen)
        self.widen = widen


@dataclass(eq=False)
class LoopCtx:
    var: Var
    jname: str
    value: Expr
    constraint: Expr | None
    entry_guard: Expr | None
    brk: Computation | None
    shape: object
    element: object = None
    nest_of: str | None = None     # the N-d array of a loop per dimension (`_extents`) it is one of


@dataclass(eq=False)
class ScalarOwner:
    comp: Computation
    loops: tuple


# what a user wrote that lowers to these globals, for messages
_UNSUPPORTED_GLOBALS = {
    "materialize": "broadcasting into a new array (`z = x .+ y`): write into an array argument (`z .= x .+ y`)",
    "dotview": "broadcasting into part of an array (`x[2:end] .= ...`): write the loop instead",
    "Generator": "a generator or comprehension: write the loop instead",
    "collect": "collect or a comprehension: write the loop instead",
    "getproperty": "fields of structs (`x.f`): pass the arrays and numbers as arguments",
    "kwcall": "keyword arguments",
    "kwfunc": "keyword arguments",
    "π": "the constant π (an Irrational): use a Float64 literal",
    "pi": "the constant π (an Irrational): use a Float64 literal",
    "println": "printing (println/print/@show)",
    "print": "printing (println/print/@show)",
    "view": "views (view/@view): index the array itself",
    "similar": "allocating arrays: pass the output array as an argument",
    "zeros": "allocating arrays: pass the output array as an argument",
    "ones": "allocating arrays: pass the output array as an argument",
    "sum": "sum over a collection: write the loop",
}
_SPECIAL_HEADS = {
    "boundscheck": "`@boundscheck` blocks", "foreigncall": "ccall", "new": "constructing a struct",
    "enter": "try/catch", "leave": "try/catch", "pop_exception": "try/catch", "throw_undef_if_not": "a local "
    "that may be undefined", "isdefined": "@isdefined", "gc_preserve_begin": "GC.@preserve",
    "gc_preserve_end": "GC.@preserve", "method": "defining a method", "thunk": "top-level code",
    "cfunction": "@cfunction", "copyast": "quoted expressions", "the_exception": "try/catch",
}


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

    def __init__(self, code: CodeIR, argtypes: dict, function, static_params=(), widen=None):
        self.code = code
        self.f = function
        self.cf = analyze(code)
        self.shapes = recover_loops(code, self.cf)
        self.protocol = set().union(*(s.protocol for s in self.shapes.values())) if self.shapes else set()
        self.iter_slots = {s.iter_slot for s in self.shapes.values() if s.iter_slot}
        self.argtypes = {name: parse_type(t) for name, t in argtypes.items()}
        self.sparams = [Const(v, T.int64) if isinstance(v, int) else TypeRef(type_from_text(v))
                        for v in static_params]
        self.widen = dict(widen or {})    # slot -> the number type all its values are computed in
        self.slot_defs = {}               # slot -> [(statement, value)] as the translation met them
        self.widen_requests = {}          # slot -> joined type, from this translation
        # Size checks the call makes, each with the sizes for which its statement may run (`reached`):
        self.broadcast_sizes = []         # (size, dest's size or 1, what, reached): equal or 1 (`_broadcast`)
        self.linear_sizes = {}            # (B, A) -> (B, its sizes, A, its sizes, what, reached): equal
        #                                   (B indexed with A's linear indices, `_cartesian`)
        self.eachindex_lengths = []       # (arrays, their sizes, what, reached): equal lengths
        #                                   (`eachindex(A, B, ...)`, calls._eachindex_of_several)
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
        self._current_reads = set()
        self._g = G.TRUE                  # the path condition of the statement being translated
        self.bounds_flags = []            # (computation, description): accesses checked while running
        self.affine_reads = []            # (access, loop variables, guard, statement): reads checked at the call
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
            if isinstance(val, Call) and self._callee(val.fn) in _ARRAY_WRITES and val.args \
                    and isinstance(val.args[0], Slot) and val.args[0].name not in self.written_arrays:
                self.written_arrays.append(val.args[0].name)
        for name in self.written_arrays:
            if name not in self.argtypes:
                writer = next(s for s in code.stmts if isinstance(s.value, Call)
                              and self._callee(s.value.fn) in _ARRAY_WRITES and s.value.args[0] == Slot(name))
                raise JuliaNotSupportedError(f"{self._callee(writer.value.fn)} on {name}, which is not an array "
                                             f"argument (arguments: {list(self.argtypes)})", writer)
        # slots that only receive the state of a destructuring (`@_5 = Core.getfield(%8, 2)` after
        # `%8 = Base.indexed_iterate(t, 1)`): bound to their value wherever they are assigned
        states = {}
        for s in code.stmts:
            if s.kind != "assign":
                continue
            v = s.value
            is_state = isinstance(v, Call) and self._callee(v.fn) == "getfield" and len(v.args) == 2 \
                and v.args[1] == Lit(2, "Int64") and isinstance(v.args[0], SSA) \
                and isinstance(code.stmt(v.args[0].n).value, Call) \
                and self._callee(code.stmt(v.args[0].n).value.fn) == "indexed_iterate"
            states[s.target.name] = states.get(s.target.name, True) and is_state
        self.destructure_states = {name for name, ok in states.items() if ok}
        self.writes = [s for s in code.stmts if s.kind == "assign" or (
            s.kind == "expr" and isinstance(s.value, Call) and self._callee(s.value.fn) in _ARRAY_WRITES)]

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
        return callee(self.code, fn)

    def _declare_arguments(self):
        for name, jt in self.argtypes.items():
            if self.assign_count.get(name):
                first = next(s for s in self.code.stmts if s.kind == "assign" and s.target.name == name)
                raise JuliaNotSupportedError(f"the argument {name} is assigned in the function body; "
                                             "assign a local copy instead", first)
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
                # any Int64, as in Julia: a loop `1:n` with n <= 0 runs no iteration
                p = self.f.declare_param(Param(self._name(name)), lo=None)
                self.params[name] = p
                self.bindings[name] = cast(T.int64, p)
            elif jt.dtype.is_bool:
                # a size that is 0 or 1: a branch on it is affine, so what runs under `if flag` has an
                # exact domain (and the size checks of its statements apply only where they run)
                p = self.f.declare_param(Param(self._name(name)), lo=0, hi=1)
                self.params[name] = p
                self.bindings[name] = p > 0
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
        try:
            self._walk_region(top_nodes, None)
        except JuliaNotSupportedError:
            if self.widen_requests and self._checked_widening(quiet=True):
                raise WidenRetry(self._checked_widening()) from None   # maybe a consequence of the types
            raise
        if self.widen_requests:
            raise WidenRetry(self._checked_widening())
        if isinstance(self.returned, Expr):
            ret = Computation(self._name("ret"), [], self.returned, output=True)
            self._register(ret, "the value the function returns")
        elif self.returned is not None and not isinstance(self.returned, (ArrayRef, NothingValue)):
            raise JuliaNotSupportedError(f"returning {describe(self.returned)} (a number, an array argument or "
                                         "nothing can be returned)", self.code.stmts[-1])
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
                known = self.cond[last.number]
                if isinstance(known, Const):      # `x isa T` and other conditions known here: one side runs
                    self._flow(b, b + 1 if known.value else last.target, g, nodes, guard, shape)
                    continue
                self._flow(b, b + 1, G.conj(g, (last.number, True)), nodes, guard, shape)
                self._flow(b, last.target, G.conj(g, (last.number, False)), nodes, guard, shape)
            elif last.kind == "return":
                if shape is not None:
                    raise JuliaNotSupportedError("`return` inside a loop", last)
                if g != G.TRUE:
                    raise JuliaNotSupportedError("a `return` that only some paths reach (several returns)", last)
                self._g = G.TRUE
                self.returned = number(self._value(last.value))
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

    def reached(self) -> G.Reach:
        """Where the statement being translated may run: the bounds of its loops and the affine parts of
        its path condition (a condition that reads data or a non-integer argument is left out)."""
        domain, rest = iteration_domain(self.f, "reached", [c.var for c in self.loops], self._guard_expr(self._g))
        sizes = domain.params()
        caveat = "" if rest is None else \
            " (checked whenever the sizes let the statement run: its condition reads values the call cannot see)"
        return G.Reach(None if self.f.context().is_subset(sizes) else sizes, caveat)

    def assume_where_reached(self, constraint, reached: G.Reach):
        """`f.assume(constraint)` (isl text on the sizes) for the sizes where a statement may run: Julia
        checks sizes only when a statement runs, so a branch not taken may be passed any sizes."""
        if reached.sizes is None:
            self.f.assume(constraint)
            return
        names = sorted(self.f.param_names)
        holds = isl.Set(f"[{', '.join(names)}] -> {{ : {constraint} }}")
        self.f.assume(holds.union(reached.sizes.complement()).coalesce())

    def _condition(self, s: Stmt, g):
        """The expression of a branch condition, stored in a computation when it reads mutable storage."""
        self._current_reads = set()
        self._g = g
        value = self._value(s.value)
        if not isinstance(value, Expr) or not value.dtype.is_bool:
            raise JuliaNotSupportedError(f"a branch on {describe(value)} (Julia needs a Bool and would throw a "
                                         "TypeError)", s)
        if isinstance(value, Const) or not self._reads_storage(value):
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
            ctxs = self._for_ctxs(shape, entry_guard, brk)
        else:
            ctxs = [self._while_ctx(shape, entry_guard, brk)]
        outer = len(self.loops)
        self.loops.extend(ctxs)
        try:
            if shape.kind == "for":
                self._bind_element(shape, ctxs)
            nodes = {b for b in shape.loop.blocks if self.cf.loop_of.get(b) is shape.loop}
            nodes |= {c.header for c in shape.loop.children}
            self._walk_region(nodes, shape)
        finally:
            del self.loops[outer:]
        # the loop variable and values computed inside the loop are not visible after it
        for k in list(self.bindings):
            if k not in saved or self.bindings[k] is not saved[k]:
                if k in saved:
                    self.bindings[k] = saved[k]
                else:
                    del self.bindings[k]
        if shape.kind == "while":
            self.bindings[shape.var_slot] = _Escaped(shape.var_slot)

    def _new_var(self, jname, lo, hi, siblings=()):
        """A loop variable named after `jname`, its name unlike those of the enclosing loops, `siblings`
        (loops made with it), sizes and inputs; its bounds must be affine."""
        taken = {c.var.name for c in [*self.loops, *siblings]} | {p.name for p in self.params.values()} | \
            {i.name for i in self.scalar_inputs.values()}
        name = _safe(jname.split("@")[0] or "i", taken)
        for bound in (lo, hi):
            if affine_text(bound) is None:
                raise JuliaNotSupportedError(f"the bounds of loop {jname} are not affine in the sizes and outer "
                                             f"loop variables ({bound}){self._linear_hint(bound)}", self.stmt)
        return Var(name, lo, hi)

    def _linear_hint(self, e):
        """What to write instead of a linear index or length of an N-d array where an affine one is needed."""
        names = {getattr(n, "name", None) for n in walk(e)}
        nest = next((c.nest_of for c in self.loops if c.var.name in names and c.nest_of), None)
        if nest is not None:
            what, a = f"a linear index of the array {nest} (i1 + (i2 - 1) * size({nest}, 1) + ...)", nest
        else:
            # length(A) of an N-d array: a product of two of its sizes
            products = [n for n in walk(e) if isinstance(n, BinOp) and n.op == "mul"]
            a = next((a for a, jt in self.argtypes.items() if jt.ndim >= 2 and any(
                all(self._mentions_size(x, a) for x in (p.a, p.b)) for p in products)), None)
            if a is None:
                return ""
            what = f"the length of the array {a} (the product of its sizes)"
        return (f"; {what} is not affine: loop over `eachindex({a})` or `1:length({a})` itself, which runs as "
                f"a loop per dimension of {a}, or over Cartesian indices (`for j in axes({a}, 2), i in "
                f"axes({a}, 1)`) and index {a}[i, j]")

    def _mentions_size(self, e, a):
        """Whether the expression `e` reads a size of the array `a`."""
        sizes = set(self.size_names(a))
        return any(getattr(n, "name", None) in sizes for n in walk(e))

    def _counted_var(self, jname, lo, step, hi):
        """The loop variable of `lo:step:hi`: itself for step 1, else an iteration counter from 0
        (isl's code generator wants unit strides) with the Julia value lo + step * counter."""
        if step == 1:
            var = self._new_var(jname, lo, hi + 1)
            return var, cast(T.int64, var)
        count = range_count(RangeValue(lo, step, hi))
        var = self._new_var(jname, Const(0, T.int64), count)
        return var, lo + cast(T.int64, var) * step

    def _for_ctxs(self, shape, entry_guard, brk):
        """The loops of `for x in it`, outermost first (`_extents`); the first one carries the guard of
        the loop's entry and its `break` flag, which stops the whole nest as Julia's single loop stops."""
        it = self._value(shape.range_expr)
        jname = shape.var_slot or self._destructured_name(shape) or "k"
        if isinstance(it, RangeValue) and it.of is None:
            var, value = self._counted_var(jname, it.lo, it.step, it.hi)
            ctx = LoopCtx(var, jname, value, None, entry_guard, brk, shape, element=value)
            ctx.iterated = it
            return [ctx]
        extents = self._extents(it)
        ctxs = []
        for k, count in enumerate(extents):
            # x_2 around x_1 (without the `@_n` of a reused name, which _new_var drops)
            name = jname if len(extents) == 1 else f"{jname.split('@')[0]}_{len(extents) - k}"
            var = self._new_var(name, Const(1, T.int64), count + 1, ctxs)
            ctxs.append(LoopCtx(var, name, cast(T.int64, var), None, entry_guard if k == 0 else None,
                                brk if k == 0 else None, shape,
                                nest_of=self._iterated_array(it) if len(extents) > 1 else None))
            ctxs[-1].iterated = it
        return ctxs

    def _bind_element(self, shape, ctxs):
        """Bind the loop variable (or the element taken apart later) to this iteration's element; an
        element read from an array the function writes is kept where the iteration starts."""
        self._current_reads = set()
        self._g = G.TRUE
        inner = ctxs[-1]
        element = inner.element if inner.element is not None else \
            self._element(inner.iterated, [c.value for c in reversed(ctxs)])
        element = self._keep(element, f"the element of `for` at block {shape.header}")
        if shape.var_slot is not None:
            self.bindings[shape.var_slot] = element
        else:
            self.ssa[shape.element_stmt] = element
            self.ssa_reads[shape.element_stmt] = set()

    def _destructured_name(self, shape):
        """`i` of `for (i, v) in ...`: the first slot taken from the element by indexed_iterate."""
        code = self.code
        for n in code.blocks[shape.header]:
            s = code.stmt(n)
            v = s.value
            if s.kind == "assign" and isinstance(v, Call) and self._callee(v.fn) == "getfield" \
                    and isinstance(v.args[0], SSA):
                src = code.stmt(v.args[0].n).value
                if isinstance(src, Call) and self._callee(src.fn) == "indexed_iterate" \
                        and src.args[0] == SSA(shape.element_stmt):
                    return s.target.name
        return None

    def _extents(self, it):
        """The trip counts (affine) of the loops that visit the elements of `for ... in it` in Julia's
        order, outermost first. An array's elements come in column-major order (Julia's iterate of an
        Array), so an N-d array is N loops, its last dimension outermost and its first innermost (a
        vector: one loop over its length); its linear indices (eachindex, 1:length, LinearIndices) are
        the same loops; enumerate is the loops of what it enumerates; zip is one loop as long as the
        shortest of its collections, each of one loop."""
        s = self.stmt
        if isinstance(it, RangeValue) and it.of is None:
            return [range_count(it)]
        array = self._iterated_array(it)
        if array is not None:
            return [self.size(array, d) for d in range(self.argtypes[array].ndim, 0, -1)]
        if isinstance(it, EnumerateValue):
            return self._extents(it.inner)
        if isinstance(it, ZipValue):
            out = None
            for x in it.items:
                extents = self._extents(x)
                if len(extents) != 1:
                    raise JuliaNotSupportedError(
                        f"`zip` of {describe(x)}, whose elements are those of a {len(extents)}-d array (in "
                        "column-major order, paired one by one with the others'); loop over its indices instead: "
                        "`for j in axes(A, 2), i in axes(A, 1)`", s)
                out = extents[0] if out is None else min_(out, extents[0])
            return [out]
        raise JuliaNotSupportedError(f"`for ... in` over {describe(it)}; supported: a:b, a:s:b, eachindex, axes, "
                                     "arrays, enumerate and zip of those", s)

    def _element(self, it, idx):
        """The element of what `for` iterates at the loop indices `idx` (Julia's, from 1, one per loop of
        `_extents`, the innermost loop's first)."""
        if isinstance(it, RangeValue) and it.of is None:
            (k,) = idx
            return it.lo + (k - 1) * it.step if it.step != 1 else it.lo + (k - 1)
        if isinstance(it, RangeValue):
            return self._position(it, idx)      # a linear index is its own position
        if isinstance(it, ArrayRef):
            return self.read_array(it.name, idx, self.stmt)
        if isinstance(it, EnumerateValue):
            return TupleValue((self._position(it.inner, idx), self._element(it.inner, idx)))
        return TupleValue(tuple(self._element(x, idx) for x in it.items))

    def _iterated_array(self, it):
        """The array whose elements or linear indices `for ... in it` visits (a loop per dimension), or None."""
        if isinstance(it, ArrayRef):
            return it.name
        return it.of if isinstance(it, RangeValue) else None

    def _position(self, it, idx):
        """The position of the element at `idx` among those `for` visits (`_linear_index`): in a loop per
        dimension of an N-d array, a LinearIndex that `B[i]` reads at the Cartesian index `idx`."""
        k = self._linear_index(it, idx)
        array = self._iterated_array(it)
        return LinearIndex(array, tuple(idx), k) if array is not None and len(idx) > 1 else k

    def _linear_index(self, it, idx):
        """The position (from 1) of the element at `idx` among those `for` visits: Julia's linear index
        of an array's element, i1 + (i2 - 1) * size(A, 1) + ... (column-major)."""
        k = idx[0]
        array = self._iterated_array(it)
        if array is not None:
            stride = self.size(array, 1)
            for d, i in enumerate(idx[1:], start=2):
                k = k + (i - 1) * stride
                stride = stride * self.size(array, d)
        return k

    def _keep(self, value, why):
        """The value itself, or (when it reads storage the function writes) a computation that keeps it."""
        if isinstance(value, TupleValue):
            return TupleValue(tuple(self._keep(v, why) for v in value.items))
        if not isinstance(value, Expr) or not self._reads_storage(value):
            return value
        comp = self._new_comp(f"e{self.stmt.number}", value, G.TRUE, why)
        return Access(comp, [c.var for c in self.loops])

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
        if step > 1 << 32:
            raise JuliaNotSupportedError(f"the counter {counter} of a `while` loop grows by {step}: near the test's "
                                         "bound it would wrap around Int64 (steps up to 2^32 are supported)",
                                         inc_stmt)
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
        hi = _counter_bound(cond, marker) if isinstance(cond, Expr) else None
        if hi is None:
            raise JuliaNotSupportedError(f"the test of a `while` loop must be `{counter} <= e` or `{counter} < e` "
                                         "with e not depending on the counter", test)
        jname = counter
        var, value = self._counted_var(jname, init, step, hi - 1)
        self.bindings[counter] = value
        shape.var_slot = counter
        ctx = LoopCtx(var, jname, value, None, entry_guard, brk, shape)
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
        self._g = g
        try:
            self._translate_statement(s, g, dry)
        except JuliaNotSupportedError:
            raise
        except MascarponeError as err:      # a type or domain error of the middle-end: name the statement
            raise JuliaNotSupportedError(str(err), s) from err

    def _translate_statement(self, s, g, dry):
        if s.kind == "expr":
            val = s.value
            if isinstance(val, Call) and self._callee(val.fn) in _ARRAY_WRITES:
                if dry:
                    raise JuliaNotSupportedError(f"{self._callee(val.fn)} inside the test of a `while` loop", s)
                if self._callee(val.fn) == "setindex!":
                    self._setindex(s, val, g)
                    self.ssa[s.number] = NOTHING_VALUE
                else:
                    self.ssa[s.number] = self._broadcast(s, val, g)
                return
            if s.number not in self.uses and not isinstance(val, (Call, Special)):
                if isinstance(val, Slot) and not self._assigned_before(val.name, s):
                    raise JuliaNotSupportedError(f"{val.name} may be read before it is assigned (Julia would "
                                                 "throw an UndefVarError)", s)
                return      # a read nobody uses (the `val` closing @inbounds)
            self._current_reads = set()
            value = self._value(val)
            if isinstance(value, Expr) and self._current_reads and self._used_after_write(s.number):
                comp = self._new_comp(f"v{s.number}", value, g, f"the value of `{s.text}`, kept for its later "
                                      "uses")
                value = Access(comp, [c.var for c in self.loops])
                self._current_reads = {comp}
            self.ssa[s.number] = value
            self.ssa_reads[s.number] = set(self._current_reads)
            return
        if s.kind == "assign":
            if isinstance(s.target, Global):
                raise JuliaNotSupportedError(f"writing the global variable {s.target.module}.{s.target.name}: "
                                             "write into an array argument instead", s)
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

    def _assigned_before(self, name, s):
        """Whether an argument, or an assignment that every path to `s` passes, gives `name` a value."""
        if name in self.argtypes or name in self.bindings or name in self.owners:
            return True
        for t in self.code.stmts:
            if t.kind == "assign" and t.target.name == name and t.number < s.number \
                    and (t.block == s.block or self.cf.dominates(t.block, s.block)):
                return True
        return False

    def _used_after_write(self, n):
        """Whether %n (reading storage now) is used after a statement that may write what it reads:
        a write between n and a use, or anywhere in a loop that holds the use but not n."""
        code = self.code
        block_n = code.stmt(n).block
        for u in self.uses.get(n, ()):
            t = code.stmt(u)
            if t.kind == "assign" and t.target.name not in self.read_slots:
                continue      # `val = %14` of @inbounds: a value nobody reads
            loops = [lp for lp in self.cf.loops if t.block in lp.blocks and block_n not in lp.blocks]
            for w in self.writes:
                if n < w.number < u or any(w.block in lp.blocks for lp in loops):
                    target = self._written_storage(w)
                    if target is not None and target in self._current_reads:
                        return True
        return False

    def _written_storage(self, w):
        """The computation a write statement updates (None when it creates one or writes nothing read)."""
        if w.kind == "assign":
            owner = self.owners.get(w.target.name)
            return owner.comp if owner is not None else None
        first = w.value.args[0] if w.value.args else None
        if isinstance(first, Slot):
            ref = self.bindings.get(first.name)
            return self.arrays.get(ref.name if isinstance(ref, ArrayRef) else first.name)
        return None

    def _assign(self, s, name, value, g):
        if isinstance(value, TAGGED_NUMBERS):
            if self.assign_count.get(name, 0) == 1 and g == G.TRUE:
                self.bindings[name] = value     # `n = length(A)`, `k = i`: A's length, a linear index still
                return
            value = number(value)           # a local assigned again holds the number
        if isinstance(value, ALIASES):
            if name in self.owners:
                # (a local that a computation holds as a number cannot become a range, array or tuple)
                raise JuliaNotSupportedError(f"{name} holds a number, then {describe(value)}", s)
            self.bindings[name] = value     # an alias: `r = 1:n`, `B = A`, `t = (a, b)`
            return
        if name in self.destructure_states:
            self.bindings[name] = value     # the state of `a, b = t`
            return
        if name not in self.read_slots:
            return   # nothing to keep: `val = nothing` of @inbounds, or a value never read
        if not isinstance(value, Expr):
            raise JuliaNotSupportedError(f"assignment of {describe(value)} to {name}", s)
        counted = self.assign_count.get(name, 0)
        if name in self.counters and value.dtype.is_int and not self._reads_storage(value) and g == G.TRUE:
            self.bindings[name] = value      # the start value of a while loop's counter
            return
        if counted == 1 and value.dtype.is_int and not self._reads_storage(value) and g == G.TRUE:
            self.bindings[name] = value      # an index temporary: keep it affine
            return
        owner = self.owners.get(name)
        if owner is not None and self._visible(owner):
            expr = self._slot_value(name, value, owner.comp.dtype, s)
            self._check_hazards(owner.comp, s)
            u = owner.comp.update([c.var for c in self.loops], expr,
                                  at=[c.var for c in self.loops[:len(owner.loops)]],
                                  where=self._guard_expr(g), name=self._name(f"s{s.number}"))
            self._register(u, f"{name} = ... (line {s.line}: `{s.text}`)")
            return
        value = self._slot_value(name, value, self.widen.get(name, value.dtype), s)
        comp = self._new_comp(f"s{s.number}", value, g, f"{name} = ... (line {s.line}: `{s.text}`)")
        self.owners[name] = ScalarOwner(comp, tuple(self.loops))
        self.bindings.pop(name, None)

    def _slot_value(self, name, value, dtype, s):
        """`value` stored in the local `name` of type `dtype`: values of another number type are recorded
        for the widening check of the first translation and converted."""
        self.slot_defs.setdefault(name, []).append((s, value))
        if value.dtype == dtype or name in self.widen:
            return cast(dtype, value)
        join = promote_dtype(dtype, value.dtype)
        if join is None:
            raise JuliaNotSupportedError(f"{name} holds {_jname(dtype)} and {_jname(value.dtype)} values", s)
        self.widen_requests[name] = promote_dtype(join, self.widen_requests.get(name, join))
        return cast(dtype, value)    # the translation is redone with `name` of the joined type

    def _checked_widening(self, quiet=False):
        return widening.checked(self.code, self._callee, self.widen, self.widen_requests, self.slot_defs, quiet)

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
            raise JuliaNotSupportedError(f"setindex! on {describe(target)}, which is not an array argument", s)
        if len(args) < 3:
            raise JuliaNotSupportedError("setindex! without an index", s)
        jt = self.argtypes[target.name]
        value = self.convert(args[1], jt.dtype, s)
        at = self._indices(target.name, args[2:], s)
        owner = self.arrays[target.name]
        self._check_hazards(owner, s)
        where = self._guard_expr(g)
        ok = self._runtime_bounds(target.name, at, s, "writes")
        if ok is not None:
            where = ok if where is None else where & ok
        u = owner.update([c.var for c in self.loops], value, at=at, where=where,
                         name=self._name(f"s{s.number}"))
        self._register(u, f"{target.name}[...] = ... (line {s.line}: `{s.text}`)")

    def _broadcast(self, s, call_, g):
        """`materialize!(dest, bc)` (`dest .= f.(args...)`): for every index of dest, in loops of their
        own, dest[I] = f(args[I]...), arrays indexed by the leading indices of I (a vector runs down a
        matrix's columns) and numbers as they are. As in Julia, an array's size along a dimension is
        dest's or 1, which is expanded (`_broadcast_element`); past dest's rank it is 1. Other sizes
        raise DimensionMismatch at the call (`broadcast_sizes`). Returns dest."""
        dest, bc = (self._value(a) for a in call_.args)
        if not isinstance(dest, ArrayRef) or dest.name not in self.written_arrays:
            raise JuliaNotSupportedError(f"`.=` into {describe(dest)}, which is not an array argument", s)
        if not isinstance(bc, BroadcastValue):
            bc = BroadcastValue(FunctionRef("identity"), (bc,))
        jt = self.argtypes[dest.name]
        reached = self.reached()
        for name in sorted({a.name for a in _broadcast_arrays(bc)} - {dest.name}):
            for d in range(1, self.argtypes[name].ndim + 1):
                size = self.params[(name, d)].name
                dest_size = self.params[(dest.name, d)].name if d <= jt.ndim else 1
                self.assume_where_reached(f"{size} = {dest_size} or {size} = 1", reached)
                self.broadcast_sizes.append((size, dest_size, f"statement %{s.number} (line {s.line}: `{s.text}`) "
                                             f"broadcasts {name} into {dest.name} along dimension {d}", reached))
        outer = len(self.loops)
        for d in range(jt.ndim, 0, -1):     # (column-major: the first index innermost)
            var = self._new_var(f"{dest.name}_i{d}", Const(1, T.int64), self.size(dest.name, d) + 1)
            self.loops.append(LoopCtx(var, var.name, cast(T.int64, var), None, self._guard_expr(g), None, None))
        try:
            index = [c.value for c in reversed(self.loops[outer:])]
            self._current_reads = set()
            value = self.convert(self._broadcast_element(bc, index, dest, s), jt.dtype, s)
            owner = self.arrays[dest.name]
            self._check_hazards(owner, s)
            u = owner.update([c.var for c in self.loops], value, at=self._indices(dest.name, index, s),
                             where=self._guard_expr(g), name=self._name(f"s{s.number}"))
            self._register(u, f"{dest.name} .= ... (line {s.line}: `{s.text}`)")
        finally:
            del self.loops[outer:]
        return dest

    def _broadcast_element(self, v, index, dest, s):
        """The element at dest's `index` (Julia's, 1-based, first dimension first) of a broadcast argument."""
        if isinstance(v, BroadcastValue):
            return self._call(v.fn, [self._broadcast_element(a, index, dest, s) for a in v.args], s)
        if isinstance(v, ArrayRef) and v.name == dest.name:
            return self.read_array(v.name, index, s)
        if isinstance(v, ArrayRef):
            # Each size is dest's or 1, known only at the call (which checks it): min(i, size) is i in
            # the first case and 1, the expanded element, in the second, so one kernel serves both and
            # the index stays affine (isl's min: bounds proved, no run-time checks). Past dest's rank i is 1.
            nd = self.argtypes[v.name].ndim
            padded = list(index[:nd]) + [Const(1, T.int64)] * (nd - len(index))
            return self.read_array(v.name, [min_(i, self.size(v.name, d)) for d, i in enumerate(padded, 1)], s)
        return v

    def _check_hazards(self, owner, s):
        """A value read from `owner` before this write must not be used after it (it would see the new
        value); values that are (`_used_after_write`) were kept in computations of their own."""
        for n, reads in self.ssa_reads.items():
            if owner in reads and n < s.number:
                for u in self.uses.get(n, ()):
                    t = self.code.stmt(u)
                    if u > s.number and not (t.kind == "assign" and t.target.name not in self.read_slots):
                        raise JuliaNotSupportedError(
                            f"%{n} reads {owner.name} before this statement writes it, and is used after it "
                            f"(statement %{u}); the front-end reads storage where the value is used", s)

    def _indices(self, name, idx, s):
        jt = self.argtypes[name]
        if len(idx) == 1 and jt.ndim >= 2:
            idx = self._cartesian(name, idx[0], s)
        if len(idx) != jt.ndim:
            raise JuliaNotSupportedError(f"{name} has {jt.ndim} dimension(s) but is indexed with {len(idx)} "
                                         "index(es) (the front-end indexes an array with one index per "
                                         "dimension, or an N-d one with the linear index of a loop over it)", s)
        idx = [number(i) for i in idx]
        out = []
        for i in reversed(idx):
            if not isinstance(i, Expr) or not i.dtype.is_int:
                raise JuliaNotSupportedError(f"index {describe(i)} of {name} is not an integer", s)
            out.append(cast(T.int64, i) - 1)
        return out

    def _cartesian(self, name, k, s):
        """The Cartesian index of the linear index k of the N-d array `name` (`name[k]`), where it is
        affine: 1 (the first element); a LinearIndex of a loop over an array A, or length(A) (the last
        element), at its Cartesian index in A, which is Julia's element when `name` has A's sizes (assumed,
        and checked at the call: `linear_sizes`)."""
        jt = self.argtypes[name]
        if isinstance(k, Const) and k.dtype.is_int and k.value == 1:
            return [k] * jt.ndim
        if not isinstance(k, (LinearIndex, ArrayLength)):
            raise JuliaNotSupportedError(
                f"linear indexing {name}[k] of the {jt.ndim}-d array {name} with {describe(k)}: the front-end "
                f"reads it with k = 1, length({name}) or the variable of a loop over the linear indices of an "
                f"array of {name}'s sizes itself (`for k in eachindex({name})`, `1:length({name})`, "
                f"`LinearIndices({name})`, the counter of `enumerate({name})`); write {name}[i, j] with "
                "Cartesian indices otherwise", s)
        index = k.index if isinstance(k, LinearIndex) else \
            [self.size(k.array, d) for d in range(1, self.argtypes[k.array].ndim + 1)]
        if jt.ndim != len(index):
            raise JuliaNotSupportedError(
                f"{name}[k] with k {describe(k)} of the {len(index)}-d array {k.array}: {name} is {jt.ndim}-d (the "
                f"front-end reads B[k] at k's Cartesian index in {k.array}, for a B of its sizes); index "
                f"{name} with its own indices (`eachindex({name})`, or {name}[i, j] in loops over "
                f"`axes({name}, d)`)", s)
        if name != k.array:
            self._linear_sizes(name, k.array, s)
        return list(index)

    def _linear_sizes(self, name, of, s):
        """Assume, and have the call check, that `name` has the sizes of `of` where `s` may run (`name` is
        read with linear indices of `of`, at their Cartesian indices in `of`)."""
        reached = self.reached()
        known = self.linear_sizes.get((name, of))
        if known is not None:       # read so in several places: checked wherever one of them may run
            if known[-1].sizes is None or (reached.sizes is not None and reached.sizes.is_subset(known[-1].sizes)):
                return
            reached = reached.union(known[-1])
        sizes, of_sizes = self.size_names(name), self.size_names(of)
        for a, b in zip(sizes, of_sizes):
            self.assume_where_reached(f"{a} = {b}", reached)
        what = known[4] if known is not None else \
            f"statement %{s.number} (line {s.line}: `{s.text}`) indexes {name} with a linear index of {of}"
        self.linear_sizes[(name, of)] = (name, sizes, of, of_sizes, what, reached)

    # values ----------------------------------------------------------------------------------------
    def _value(self, e):
        s = self.stmt
        if isinstance(e, SSA):
            if e.n not in self.ssa:
                raise JuliaNotSupportedError(f"%{e.n} is used before it is computed", s)
            reads = self.ssa_reads.get(e.n)
            if reads:
                self._current_reads = self._current_reads | reads
            return self.ssa[e.n]
        if isinstance(e, Slot):
            return self._read_slot(e.name)
        if isinstance(e, Lit):
            return _literal(e, s)
        if isinstance(e, Global):
            return self._global(e)
        if isinstance(e, StaticParam):
            if not 1 <= e.n <= len(self.sparams):
                raise JuliaNotSupportedError(f"static parameter {e.n} of a method with {len(self.sparams)}", s)
            return self.sparams[e.n - 1]
        if isinstance(e, Special):
            what = _SPECIAL_HEADS.get(e.head, f"`$(Expr(:{e.head}, ...))`")
            raise JuliaNotSupportedError(f"{what} ({e.text[:60]}) is not supported", s)
        if isinstance(e, Call):
            fn = self._value(e.fn)
            if isinstance(fn, TypeRef) and not e.args and isinstance(fn.dtype, tuple):
                return fn          # Val{2}() of literal_pow
            return self._call(fn, [self._value(a) for a in e.args], s)
        raise JuliaNotSupportedError(f"the expression {e!r}", s)

    def _call(self, fn, args, s):
        """`fn(args...)` for a function or a type (a conversion)."""
        if isinstance(fn, TypeRef):
            if len(args) != 1:
                raise JuliaNotSupportedError(f"a conversion with {len(args)} arguments", s)
            return self.convert_to(fn.dtype, args[0], s)
        if not isinstance(fn, FunctionRef):
            raise JuliaNotSupportedError(f"a call of {describe(fn)}", s)
        return apply_function(self, fn.name, args, s)

    def _global(self, g):
        t = type_value(g.name)
        if t is not None:
            return TypeRef(t)
        if g.name == "nothing":
            return NOTHING_VALUE
        if g.name in KNOWN or g.name == "Val":
            return FunctionRef(g.name)
        qual = f"{g.module + '.' if g.module else ''}{g.name}"
        if g.name in _UNSUPPORTED_GLOBALS:
            raise JuliaNotSupportedError(f"{qual}: {_UNSUPPORTED_GLOBALS[g.name]}", self.stmt)
        raise JuliaNotSupportedError(f"the global {qual}: a function the front-end does not translate (supported: "
                                     "arithmetic, comparisons, getindex, setindex!, size, length, min, max, abs, "
                                     "sqrt, exp, zero, one, conversions; inline your own functions by hand) or a "
                                     "global variable (pass it as an argument)", self.stmt)

    def _read_slot(self, name):
        if name in self.iter_slots:
            raise JuliaNotSupportedError(f"a read of the iterate slot {name} outside Julia's `for` protocol",
                                         self.stmt)
        if name in self.bindings:
            v = self.bindings[name]
            if isinstance(v, _Escaped):
                raise JuliaNotSupportedError(f"the value of the loop counter {name} after its loop", self.stmt)
            return v
        owner = self.owners.get(name)
        if owner is None:
            if name == "#self#":
                raise JuliaNotSupportedError("the function object #self# (closures, callable structs)", self.stmt)
            raise JuliaNotSupportedError(f"{name} is read before it is assigned (Julia would throw an "
                                         "UndefVarError)", self.stmt)
        if not self._visible(owner):
            raise JuliaNotSupportedError(f"the value of {name} after the loop it is assigned in (the front-end "
                                         "expands scalars over their loops; read it inside the loop or assign it "
                                         "before the loop)", self.stmt)
        self._current_reads.add(owner.comp)
        return Access(owner.comp, [c.var for c in self.loops[:len(owner.loops)]])

    def value_type(self, v):
        """The JuliaType of a value (for isa), 'Nothing', or None for ranges, tuples and the like."""
        if isinstance(v, Expr):
            return JuliaType(v.dtype, 0)
        if isinstance(v, ArrayRef):
            return self.argtypes[v.name]
        if isinstance(v, NothingValue):
            return "Nothing"
        return None

    def convert_to(self, t, v, s):
        """`T(v)` / `convert(T, v)`: a number conversion, or v itself when it already is a T."""
        v = number(v)
        if isinstance(t, T.DType):
            return self.convert(v, t, s, explicit=True)
        if isinstance(t, TypeValue):
            vt = self.value_type(v)
            if vt is not None and isa(vt, t):
                return v
        raise JuliaNotSupportedError(f"converting {describe(v)} to {t}", s)

    def convert(self, v, dtype, s, explicit=False):
        """v as a `dtype` number: stores into arrays convert implicitly, T(v) explicitly."""
        v = number(v)
        if not isinstance(v, Expr):
            raise JuliaNotSupportedError(f"{describe(v)} where a {_jname(dtype)} number is needed", s)
        if v.dtype == dtype:
            return v
        if v.dtype.is_float and dtype.is_int and not explicit:
            raise JuliaNotSupportedError(f"storing a {_jname(v.dtype)} value where {_jname(dtype)} is expected "
                                         "(Julia would throw InexactError unless the value is integral)", s)
        return cast(dtype, v)

    # arrays --------------------------------------------------------------------------------------
    def read_array(self, name, idx, s):
        at = self._indices(name, idx, s)
        target = self.arrays[name]
        if isinstance(target, Computation):
            self._current_reads.add(target)
        ok = self._runtime_bounds(name, at, s, "reads")
        if ok is None:
            access = Access(target, at)
            # (Julia checks a read whose value nobody uses too, which no computation keeps)
            self.affine_reads.append((access, [c.var for c in self.loops], self._guard_expr(self._g),
                                      f"statement %{s.number} (line {s.line}: `{s.text}`)"))
            return access
        # read only where the index is inside the array; a flag tells the kernel's caller otherwise
        guard = self._guard_expr(self._g)
        comp = Computation(self._name(f"g{s.number}"), [c.var for c in self.loops], Access(target, at),
                           where=ok if guard is None else guard & ok)
        self._register(comp, f"{name}[...] read by `{s.text}` (line {s.line}) where the index is inside {name}")
        self._current_reads.add(comp)
        return Access(comp, [c.var for c in self.loops])

    def _runtime_bounds(self, name, at, s, verb):
        """For an access whose indices are not affine (so not checked against the sizes before the call):
        the condition that it is inside the array, with a flag computation the kernel's caller reads to
        raise Julia's BoundsError. None for affine accesses."""
        if all(affine_text(as_index_expr(i)) is not None for i in at):
            return None
        nd = self.argtypes[name].ndim
        ok = None
        for k, i in enumerate(at):
            size = cast(T.int64, self.params[(name, nd - k)])
            inside = (i >= Const(0, T.int64)) & (i < size)
            ok = inside if ok is None else ok & inside
        guard = self._guard_expr(self._g)
        outside = ~ok if guard is None else guard & ~ok
        flag = Computation(self._name(f"oob{s.number}"), [c.var for c in self.loops], outside, output=True)
        self._register(flag, f"whether `{s.text}` {verb} outside {name}")
        self.bounds_flags.append((flag, f"statement %{s.number} (line {s.line}: `{s.text}`) {verb} {name} at an "
                                        "index outside it"))
        return ok

    def size_names(self, name):
        """The names of the size parameters of the array argument `name`, dimension 1 first."""
        return tuple(self.params[(name, d)].name for d in range(1, self.argtypes[name].ndim + 1))

    def size(self, name, d):
        """size(A, d) for a dimension d from 1 (1 beyond the array's rank, as in Julia)."""
        if d > self.argtypes[name].ndim:
            return Const(1, T.int64)
        return cast(T.int64, self.params[(name, d)])


def _jname(dtype):
    return JULIA_NAME.get(dtype, str(dtype))


class _Escaped:
    def __init__(self, name):
        self.name = name


def _counter_bound(cond, marker):
    """The exclusive upper bound e' of the counter for `c <= e` / `c < e` / `e >= c` / `e > c`."""

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
        if e.value in KNOWN:
            return FunctionRef(e.value)
        raise JuliaNotSupportedError(f"the symbol :{e.value}", s)
    raise JuliaNotSupportedError(f"the literal {e.value!r} of type {e.jtype}", s)


def translate(code: CodeIR, argtypes: dict, function, static_params=(), widen=None):
    """Declare the inputs and computations of `code` in the open `function`; returns the Translator.

    Raises WidenRetry when locals need wider types (translate again, in a new function, with them)."""
    return Translator(code, argtypes, function, static_params, widen).run()
