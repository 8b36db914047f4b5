"""Loop recovery: which natural loops are Julia `for` loops over ranges and which are counted `while` loops.

A `for x in r` lowers to the iterate protocol (see the module docs of
`frontends.julia`): `@_k = Base.iterate(r)` before the loop, `x =
Core.getfield(%s, 1)` at its header, `@_k = Base.iterate(r, %st)` at its end.
This module finds those statements so the translation can skip them and knows
each loop's variable, range, exit block and `continue` target.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .cfg import ControlFlow, NaturalLoop
from .ir import Call, CodeIR, JuliaNotSupportedError, Lit, SSA, Slot, callee_name


@dataclass(eq=False)
class LoopShape:
    """What the translation needs to know of one natural loop."""
    loop: NaturalLoop
    kind: str                    # 'for' or 'while'
    exit: int                    # the block control reaches when the loop ends (and on `break`)
    var_slot: str | None = None  # for: the slot of the loop variable
    iter_slot: str | None = None
    range_expr: object = None    # for: the expression (an SSA value) iterated over
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


def _slot_read(code, e):
    """The slot an expression reads: a Slot, or an SSA value whose statement is a bare slot read (1.11+)."""
    if isinstance(e, Slot):
        return e.name
    if isinstance(e, SSA):
        s = code.stmt(e.n)
        if s.kind == "expr" and isinstance(s.value, Slot):
            return s.value.name
    return None


def _is_call(e, name, nargs=None):
    return isinstance(e, Call) and callee_name(e.fn) == name and (nargs is None or len(e.args) == nargs)


def recover_loops(code: CodeIR, cf: ControlFlow) -> dict:
    """header block -> LoopShape for every natural loop; unsupported loop shapes raise."""
    shapes = {}
    for lp in sorted(cf.loops, key=lambda lp: -lp.depth):
        shape = _for_shape(code, cf, lp) or _while_shape(code, cf, lp)
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


def _for_shape(code, cf, lp):
    header = code.blocks[lp.header]
    for n in header:
        s = code.stmt(n)
        if s.kind == "assign" and _is_call(s.value, "getfield", 2) and s.value.args[1] == Lit(1, "Int64"):
            iter_slot = _slot_read(code, s.value.args[0])
            if iter_slot is None:
                continue
            shape = LoopShape(lp, "for", 0, var_slot=s.target.name, iter_slot=iter_slot)
            shape.protocol.add(n)
            if isinstance(s.value.args[0], SSA):
                shape.protocol.add(s.value.args[0].n)
            for m in header:
                t = code.stmt(m)
                if t.kind == "expr" and _is_call(t.value, "getfield", 2) and t.value.args[0] == s.value.args[0]:
                    shape.protocol.add(m)
            first = nxt = None
            for t in code.stmts:
                if t.kind == "assign" and t.target.name == iter_slot and _is_call(t.value, "iterate"):
                    shape.protocol.add(t.number)
                    inside = t.block in lp.blocks
                    if len(t.value.args) == 1 and not inside:
                        first = t
                    elif len(t.value.args) == 2 and inside:
                        nxt = t
            if first is None or nxt is None:
                raise JuliaNotSupportedError("a `for` loop whose iterate protocol is incomplete", s)
            shape.range_expr = first.value.args[0]
            guard = code.stmt(code.blocks[first.block][-1])
            test = code.stmt(code.blocks[nxt.block][-1])
            if guard.kind != "gotoifnot" or test.kind != "gotoifnot" or guard.target != test.target:
                raise JuliaNotSupportedError("a `for` loop whose exit tests do not match Julia's lowering", s)
            shape.exit, shape.guard_stmt, shape.test_stmt = test.target, guard.number, test.number
            return shape
    return None


def _while_shape(code, cf, lp):
    last = code.stmt(code.blocks[lp.header][-1])
    if last.kind != "gotoifnot" or last.target in lp.blocks:
        first = code.stmt(code.blocks[lp.header][0])
        raise JuliaNotSupportedError("a loop that is neither a `for` over a range nor a `while` with its test "
                                     "at the top", first)
    return LoopShape(lp, "while", last.target, test_stmt=last.number)
