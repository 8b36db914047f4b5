"""Loop recovery: which natural loops are Julia `for` loops and which are counted `while` loops.

A `for x in X` lowers to the iterate protocol:

    pre-header:  @_k = Base.iterate(X)
                 %a = @_k === nothing ; %b = Base.not_int(%a) ; goto #exit if not %b
    header:      %s = @_k ; x = Core.getfield(%s, 1) ; %st = Core.getfield(%s, 2)
    latch:       @_k = Base.iterate(X, %st)
                 %c = @_k === nothing ; %d = Base.not_int(%c) ; goto #exit if not %d

(from 1.11 the reads `@_k` are statements of their own; a destructured `for (i, v) in ...` reads the
element as `%v = Core.getfield(%s, 1)` and takes it apart with `Base.indexed_iterate`). Every part
of that pattern is checked: the same collection in both iterate calls, the state operand being this
iteration's `getfield(%s, 2)`, each exit test being `not_int(@_k === nothing)` of the value just
assigned, both tests leaving to the same block. A loop that assigns an iterate slot but differs in
any part is refused, naming the statement; it is never translated as if it were the usual one.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .cfg import ControlFlow, NaturalLoop
from .ir import NOTHING, SSA, Call, CodeIR, Global, JuliaNotSupportedError, Lit, Slot


@dataclass(eq=False)
class LoopShape:
    """What the translation needs to know of one natural loop."""
    loop: NaturalLoop
    kind: str                    # 'for' or 'while'
    exit: int                    # the block control reaches when the loop ends (and on `break`)
    var_slot: str | None = None  # for: the slot of the loop variable (None when the element is destructured)
    iter_slot: str | None = None
    range_expr: object = None    # for: the expression iterated over (the operand of the first iterate)
    element_stmt: int | None = None  # for: the statement `x = Core.getfield(%s, 1)` / `%v = ...`
    guard_stmt: int | None = None   # for: the conditional goto skipping an empty loop
    test_stmt: int | None = None    # the conditional goto that ends the loop (for: at the latch; while: at the head)
    protocol: set = field(default_factory=set)   # statement numbers of the iterate protocol
    breaks: list = field(default_factory=list)   # blocks that jump to the exit other than the test

    @property
    def header(self):
        return self.loop.header

    @property
    def name(self):
        return self.var_slot


def callee(code, fn):
    """The bare name of a callee: a Global, or (1.11+) an SSA value whose statement reads a Global."""
    if isinstance(fn, Global):
        return fn.name
    if isinstance(fn, SSA) and 1 <= fn.n <= len(code.stmts):
        s = code.stmt(fn.n)
        if s.kind == "expr" and isinstance(s.value, Global):
            return s.value.name
    return None


def _slot_read(code, e):
    """The slot an expression reads: a Slot, or an SSA value whose statement is a bare slot read (1.11+)."""
    if isinstance(e, Slot):
        return e.name
    if isinstance(e, SSA):
        s = code.stmt(e.n)
        if s.kind == "expr" and isinstance(s.value, Slot):
            return s.value.name
    return None


def _is_call(code, e, name, nargs=None):
    return isinstance(e, Call) and callee(code, e.fn) == name and (nargs is None or len(e.args) == nargs)


def iterate_slots(code: CodeIR) -> set:
    """Slots that some statement assigns a `Base.iterate(...)` call to."""
    return {s.target.name for s in code.stmts if s.kind == "assign" and _is_call(code, s.value, "iterate")}


def recover_loops(code: CodeIR, cf: ControlFlow) -> dict:
    """header block -> LoopShape for every natural loop; unsupported or malformed loop shapes raise."""
    shapes = {}
    iter_slots = iterate_slots(code)
    for lp in sorted(cf.loops, key=lambda lp: -lp.depth):
        shape = _for_shape(code, cf, lp, iter_slots) or _while_shape(code, cf, lp)
        _absorb_breaks(code, cf, lp, shape.exit)
        exits = lp.exits(cf.graph)
        if exits != [shape.exit]:
            first = code.stmt(code.blocks[lp.header][0])
            raise JuliaNotSupportedError(
                f"the loop starting at block {lp.header} leaves to blocks {exits}; only loops that exit to "
                f"one place (normal end and `break`) are supported (a `return` inside a loop is not)", first)
        for b in sorted(lp.blocks):
            if shape.exit in cf.graph.successors(b):
                last = code.stmt(code.blocks[b][-1])
                if last.number != shape.test_stmt:
                    shape.breaks.append(b)
        shapes[lp.header] = shape
    claimed = set().union(*(s.protocol for s in shapes.values())) if shapes else set()
    for s in code.stmts:
        if s.kind == "assign" and s.target.name in iter_slots and s.number not in claimed:
            raise JuliaNotSupportedError(f"`{s.target.name} = iterate(...)` that belongs to no `for` loop the "
                                         "front-end recognises (Julia's lowering of `for`)", s)
    return shapes


def _absorb_breaks(code, cf, lp, exit_block):
    """Blocks entered only from the loop that go only to its exit (`if c; ...; break; end`) belong to it.

    A natural loop leaves them out because they do not lead back to the header."""
    g = cf.graph
    changed = True
    while changed:
        changed = False
        for b in list(g.nodes):
            if b in lp.blocks or b == exit_block:
                continue
            preds, succs = set(g.predecessors(b)), set(g.successors(b))
            if preds and preds <= lp.blocks and succs == {exit_block}:
                lp.blocks.add(b)
                cf.loop_of[b] = lp
                changed = True


def _for_shape(code, cf, lp, iter_slots):
    """The LoopShape of a `for` loop whose header reads an iterate slot, checked exactly; None otherwise."""
    for n in code.blocks[lp.header]:
        s = code.stmt(n)
        if s.kind not in ("assign", "expr") or not _is_call(code, s.value, "getfield", 2) \
                or s.value.args[1] != Lit(1, "Int64"):
            continue
        iter_slot = _slot_read(code, s.value.args[0])
        if iter_slot in iter_slots:
            return _check_for(code, lp, s, iter_slot)
    for b in sorted(lp.blocks):
        for n in code.blocks[b]:
            s = code.stmt(n)
            if s.kind == "assign" and s.target.name in iter_slots:
                raise JuliaNotSupportedError(
                    f"the loop at block {lp.header} calls iterate but its header does not take the element "
                    f"with `Core.getfield({s.target.name}, 1)` as Julia's lowering of `for` does", s)
    return None


def _refuse(why, stmt):
    raise JuliaNotSupportedError(f"a `for` loop that differs from Julia's lowering: {why}", stmt)


def _check_for(code, lp, elem, iter_slot):
    """Check every statement of the iterate protocol of the loop whose element statement is `elem`."""
    shape = LoopShape(lp, "for", 0, iter_slot=iter_slot, element_stmt=elem.number)
    if elem.kind == "assign":
        shape.var_slot = elem.target.name
    source = elem.value.args[0]          # `%s` (a read of the slot) or the slot itself
    shape.protocol.add(elem.number)
    if isinstance(source, SSA):
        read = code.stmt(source.n)
        if read.block != lp.header or read.number > elem.number:
            _refuse(f"the element is taken from %{source.n}, which does not read {iter_slot} at the start of "
                    "the loop", elem)
        shape.protocol.add(read.number)
    assigns = [t for t in code.stmts if t.kind == "assign" and t.target.name == iter_slot]
    first = [t for t in assigns if t.block not in lp.blocks]
    nxt = [t for t in assigns if t.block in lp.blocks]
    if len(first) != 1 or len(nxt) != 1:
        _refuse(f"{iter_slot} is assigned by statements {[t.number for t in assigns]}; Julia assigns it once "
                "before the loop and once at its end", assigns[-1] if assigns else elem)
    first, nxt = first[0], nxt[0]
    if not _is_call(code, first.value, "iterate", 1):
        _refuse(f"{iter_slot} starts with `{first.text}`, not `Base.iterate(X)`", first)
    if not _is_call(code, nxt.value, "iterate", 2):
        _refuse(f"{iter_slot} advances with `{nxt.text}`, not `Base.iterate(X, state)`", nxt)
    if nxt.value.args[0] != first.value.args[0]:
        _refuse(f"the iterate call at the end of the loop iterates {_show(nxt.value.args[0])}, but the loop "
                f"started iterating {_show(first.value.args[0])} (statement %{first.number})", nxt)
    state = nxt.value.args[1]
    states = [code.stmt(m) for m in code.blocks[lp.header]
              if code.stmt(m).kind == "expr" and _is_call(code, code.stmt(m).value, "getfield", 2)
              and code.stmt(m).value.args[0] == source and code.stmt(m).value.args[1] == Lit(2, "Int64")]
    if len(states) != 1 or state != SSA(states[0].number):
        _refuse(f"the state operand of `{nxt.text}` is {_show(state)}, not this iteration's state "
                f"`Core.getfield({_show(source)}, 2)`" + (f" (statement %{states[0].number})" if states else ""), nxt)
    shape.protocol |= {first.number, nxt.number, states[0].number}
    _check_uses(code, states[0].number, {nxt.number}, "the iteration state")
    if isinstance(source, SSA):
        _check_uses(code, source.n, {elem.number, states[0].number}, f"the value of {iter_slot}")
    guard = _exit_test(code, first, iter_slot, shape)
    test = _exit_test(code, nxt, iter_slot, shape)
    if guard.target != test.target:
        _refuse(f"the loop is skipped to block {guard.target} but ends at block {test.target}", test)
    shape.range_expr = first.value.args[0]
    shape.exit, shape.guard_stmt, shape.test_stmt = test.target, guard.number, test.number
    return shape


def _exit_test(code, assign, iter_slot, shape):
    """The `goto #exit if not %d` ending the block of `assign`, with %d = not_int(%c), %c = (@_k === nothing)
    reading the value `assign` just stored; its statements join the protocol."""
    block = code.blocks[assign.block]
    test = code.stmt(block[-1])
    if test.kind != "gotoifnot":
        _refuse(f"the block of `{assign.text}` ends with `{test.text}`, not the exit test "
                f"`goto #exit if not (not_int({iter_slot} === nothing))`", test)
    cond = test.value
    negation = code.stmt(cond.n) if isinstance(cond, SSA) else None
    if negation is None or negation.kind != "expr" or not (_is_call(code, negation.value, "not_int", 1)
                                                          or _is_call(code, negation.value, "!", 1)):
        _refuse(f"the exit test `{test.text}` does not test `Base.not_int({iter_slot} === nothing)`", test)
    compare = code.stmt(negation.value.args[0].n) if isinstance(negation.value.args[0], SSA) else None
    if compare is None:
        _refuse(f"the exit test negates {_show(negation.value.args[0])}, not `{iter_slot} === nothing`", negation)
    if compare.kind != "expr" or not _is_call(code, compare.value, "===", 2):
        _refuse(f"the exit test is `{compare.text}`, not `{iter_slot} === nothing`", compare)
    a, b = compare.value.args
    operand = b if a == NOTHING else a
    if NOTHING not in (a, b) or _slot_read(code, operand) != iter_slot:
        _refuse(f"the exit test compares `{compare.text}`, not `{iter_slot} === nothing`", compare)
    chain = [compare.number, negation.number]
    if isinstance(operand, SSA):
        chain.append(operand.n)
    if any(code.stmt(m).block != assign.block or not assign.number < m < test.number for m in chain):
        _refuse(f"the exit test does not test the value `{assign.text}` just stored", test)
    for m in chain:
        _check_uses(code, m, set(chain) | {test.number}, "the exit test")
    shape.protocol |= set(chain) | {test.number}
    return test


def _check_uses(code, n, allowed, what):
    for s in code.stmts:
        if s.number not in allowed and any(isinstance(o, SSA) and o.n == n for o in _ssa_operands(s.value)):
            _refuse(f"{what} (%{n}) is also used by `{s.text}`", s)


def _ssa_operands(e):
    if isinstance(e, Call):
        yield from _ssa_operands(e.fn)
        for a in e.args:
            yield from _ssa_operands(a)
    elif isinstance(e, SSA):
        yield e


def _show(e):
    if isinstance(e, SSA):
        return f"%{e.n}"
    if isinstance(e, Slot):
        return e.name
    return repr(e)


def _while_shape(code, cf, lp):
    last = code.stmt(code.blocks[lp.header][-1])
    if last.kind != "gotoifnot" or last.target in lp.blocks:
        first = code.stmt(code.blocks[lp.header][0])
        raise JuliaNotSupportedError("a loop that is neither a `for` over a range nor a `while` with its test "
                                     "at the top", first)
    return LoopShape(lp, "while", last.target, test_stmt=last.number)
