"""Operation latencies in clock cycles: the table the report and the initiation-interval bound use.

These are estimates of what Vitis HLS schedules for an UltraScale+ part at
300 MHz (a 3.33 ns clock, the clock run_hls.tcl asks for), from the
latencies its synthesis reports give for each operator core; they change with
the part, the clock and the tool's version, so every number derived from
them is an estimate. Integer additions, comparisons, logic, selects and
conversions between integers are chained combinationally within one cycle
(0). A value carried from one iteration to a later one is assumed forwarded
in a register (its load and store are free), the textbook recurrence bound:
where it goes through a RAM or off-chip memory, Vitis may need more.
"""
from __future__ import annotations

from mascarpone.middleend.expr import Access, BinOp, Call, Cast, Const, Expr, Reinterpret, Select, UnOp

#: (operation, float bits) -> cycles for float operations
FLOAT = {
    ("add", 32): 4, ("add", 64): 5,      # fadd, dadd (also sub)
    ("mul", 32): 3, ("mul", 64): 6,
    ("div", 32): 12, ("div", 64): 22,
    ("mod", 32): 30, ("mod", 64): 60,    # fmod: a divide, truncate, multiply and subtract
    ("cmp", 32): 1, ("cmp", 64): 1,      # comparisons, min, max
    ("sqrt", 32): 12, ("sqrt", 64): 22,
    ("exp", 32): 15, ("exp", 64): 25,
    ("log", 32): 15, ("log", 64): 25,
    ("trig", 32): 30, ("trig", 64): 45,  # sin, cos, tan, tanh, atan2
    ("pow", 32): 30, ("pow", 64): 50,
    ("round", 32): 1, ("round", 64): 1,  # floor, ceil, trunc, round, fabs
}
#: integer multiplication by width (DSP blocks, pipelined), and division or remainder: a sequential
#: divider of about one cycle per bit
INT_MUL = {8: 1, 16: 1, 32: 2, 64: 4}
INT_DIV_EXTRA = 4
#: conversions between integers and floats, and between float widths
INT_TO_FLOAT = 4
FLOAT_TO_INT = 2
FLOAT_TO_FLOAT = 2
#: memory: a read of an on-chip RAM, a read through an m_axi port once a burst runs, a write
LOAD_ON_CHIP = 1
LOAD_OFF_CHIP = 8
STORE = 1
#: ports of one bank of an on-chip RAM per cycle (true dual-port block RAM), and of an m_axi bundle
#: (one read and one write channel)
RAM_PORTS = 2
MAXI_READS = 1
MAXI_WRITES = 1

_TRIG = {"sin", "cos", "tan", "tanh", "atan2"}
_ROUND = {"floor", "ceil", "trunc", "round", "fabs"}
_COMPARE = {"maximum", "minimum"}


def operation(e: Expr) -> int:
    """Cycles of the operation at the root of `e` (its operands are counted apart)."""
    if isinstance(e, BinOp):
        dt = e.a.dtype
        if dt.is_float:
            op = {"sub": "add", "lt": "cmp", "le": "cmp", "gt": "cmp", "ge": "cmp", "eq": "cmp", "ne": "cmp",
                  "min": "cmp", "max": "cmp"}.get(e.op, e.op)
            return FLOAT.get((op, dt.bits), 0)
        if e.op == "mul" and dt.is_int:
            return INT_MUL.get(dt.bits, 4)
        if e.op in ("div", "mod", "ediv", "emod") and dt.is_int:
            if isinstance(e.b, Const):
                # by a constant: a shift for a power of two, else a multiplication by its reciprocal
                value = abs(e.b.value)
                return 0 if value & (value - 1) == 0 else INT_MUL.get(dt.bits, 4) + 1
            return dt.bits + INT_DIV_EXTRA
        return 0
    if isinstance(e, Call):
        bits = e.dtype.bits
        if e.dtype.is_int:
            return 1
        if e.fn in _TRIG:
            return FLOAT[("trig", bits)]
        if e.fn in _ROUND:
            return 0 if e.fn == "fabs" else FLOAT[("round", bits)]
        if e.fn in _COMPARE:
            return FLOAT[("cmp", bits)]
        return FLOAT.get((e.fn, bits), 0)
    if isinstance(e, Cast):
        src, dst = e.a.dtype, e.dtype
        if src.is_float and dst.is_float:
            return FLOAT_TO_FLOAT if src != dst else 0
        if src.is_float:
            return FLOAT_TO_INT
        if dst.is_float:
            return INT_TO_FLOAT
        return 0
    if isinstance(e, (UnOp, Select, Reinterpret)):
        return 0
    return 0


def path_from(e: Expr, sources) -> int | None:
    """The most cycles from any node of `sources` (identities) to the value of `e`, or None when no source
    is under `e`. The sources themselves cost nothing (a forwarded value)."""
    if any(e is s for s in sources):
        return 0
    best = None
    for c in e.children:
        p = path_from(c, sources)
        if p is not None and (best is None or p > best):
            best = p
    return None if best is None else best + operation(e)


def depth(e: Expr, load=lambda access: LOAD_ON_CHIP) -> int:
    """Cycles from the start of an iteration to the value of `e`: loads (`load(access)` cycles each, their
    indices first) and operations along the longest path."""
    below = max((depth(c, load) for c in e.children), default=0)
    if isinstance(e, Access):
        return below + load(e)
    return below + operation(e)


def table() -> list:
    """The table as (what, cycles) rows, for the report and the documentation."""
    rows = [(f"float{bits} {op}", c) for (op, bits), c in FLOAT.items()]
    rows += [(f"int{bits} mul", c) for bits, c in INT_MUL.items()]
    rows += [("int div/mod", f"bits + {INT_DIV_EXTRA}"), ("int add/sub/logic/compare/select", 0),
             ("int -> float", INT_TO_FLOAT), ("float -> int", FLOAT_TO_INT), ("float -> float", FLOAT_TO_FLOAT),
             ("load, on-chip RAM", LOAD_ON_CHIP), ("load, m_axi (in a burst)", LOAD_OFF_CHIP), ("store", STORE)]
    return rows
