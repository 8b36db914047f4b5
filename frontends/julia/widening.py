"""Locals that receive values of several number types, typed the way Julia's inference types them.

`s = 0` followed by `s = s + x[i]` with Float64 elements makes `s` a Union{Float64, Int64} local in
Julia: it holds the integer until the first addition and Float64 values after. Computing it in Float64
from the start gives the same numbers when every integer value it can hold is exact in Float64 and
no integer arithmetic happens on it. A first translation records the values each local receives
(`defs`: (statement, expression) pairs) and the joined type it asks for (`requests`); `checked`
accepts the join when each value is of that type, an integer literal exact in it, (for Float64) an
integer index expression that does not read the local, or when the local's reads only convert it
(the temporary that a return-type annotation `f(x)::T` lowers to). A local whose integer values come
from integer arithmetic (`s = s * 3`, which wraps) is a true Union whose results depend on the type:
it is refused, naming both statements.
"""
from __future__ import annotations

import mascarpone.middleend.types as T
from mascarpone.middleend.affine import affine_text
from mascarpone.middleend.expr import Const

from .ir import SSA, Call, JuliaNotSupportedError, Slot
from .types import JULIA_NAME


def checked(code, callee, widen, requests, defs, quiet=False):
    """{local: joined type} (those of `widen` and the requests that can be widened), or, when no request
    can be, the refusal (None when quiet). `callee(fn)` names a call's function."""
    out, refusal = {}, None
    for name, join in requests.items():
        values = defs[name]
        bad = next(((s, v) for s, v in values if v.dtype != join and not exact_integer(v, join)
                    and not only_converted(code, callee, name)), None)
        if bad is None:
            out[name] = join
        elif refusal is None:
            s, value = bad
            other = next((t for t, v in values if v.dtype == join), None)
            a, j = _name(value.dtype), _name(join)
            where = f" at statement %{other.number} (`{other.text}`)" if other else ""
            refusal = JuliaNotSupportedError(
                f"{name} holds {a} values computed with {a} arithmetic here and {j} values{where}: a "
                f"Union{{{j}, {a}}} local, whose results depend on which type it holds (integer arithmetic "
                f"wraps); give {name} one type, e.g. start it at zero({j}) or convert: {name} = {j}(...)", s)
    if not out:
        if quiet:
            return None
        raise refusal
    return {**widen, **out}


def exact_integer(value, join):
    """An integer value that is exactly a `join` number: a literal in range, or (Float64) an integer
    index expression, affine in loop variables and sizes (so not reading the local itself)."""
    if not value.dtype.is_int or not join.is_float:
        return False
    if isinstance(value, Const):
        return abs(value.value) <= (1 << (53 if join == T.float64 else 24))
    return join == T.float64 and affine_text(value) is not None


def only_converted(code, callee, name):
    """Whether every read of the local is an operand of isa, convert, typeassert or return."""
    reads = {s.number for s in code.stmts if s.kind == "expr" and s.value == Slot(name)}

    def ok(e, parent):
        if e == Slot(name) or (isinstance(e, SSA) and e.n in reads):
            return parent in ("isa", "convert", "typeassert", "return")
        if isinstance(e, Call):
            fname = callee(e.fn)
            return ok(e.fn, None) and all(ok(a, fname) for a in e.args)
        return True

    return all(s.number in reads or ok(s.value, "return" if s.kind == "return" else None) for s in code.stmts)


def _name(dtype):
    return JULIA_NAME.get(dtype, str(dtype))
