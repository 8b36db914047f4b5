"""What a Julia function takes: its arguments (checked against `argtypes`) and the static parameters
of a `where` method (`$(Expr(:static_parameter, n))`), for the translator and the interpreter alike."""
from __future__ import annotations

import re

from mascarpone.middleend.errors import ArgumentError

from .ir import CodeIR, Slot, StaticParam, operands
from .types import ARRAY_KINDS, JULIA_NAME, parse_type


def ordered_argtypes(code: CodeIR, argtypes) -> dict:
    """`argtypes` in the order of the arguments the IR's header lists (when it lists them).

    An argument the header names but argtypes lacks, or the other way round, raises ArgumentError."""
    argtypes = dict(argtypes)
    if not code.arguments or list(argtypes) == code.arguments:
        return argtypes
    missing = [a for a in code.arguments if a not in argtypes]
    extra = [a for a in argtypes if a not in code.arguments]
    if missing:
        raise ArgumentError(f"argtypes has no entry for the argument(s) {missing} (the IR's header lists the "
                            f"arguments {code.arguments}); add their Julia types, e.g. "
                            f"{{{', '.join(repr(a) + ': ...' for a in missing)}}}")
    if extra:
        raise ArgumentError(f"argtypes names {extra}, which the IR's header does not list among the arguments "
                            f"{code.arguments}")
    return {a: argtypes[a] for a in code.arguments}


def check_read_slots(code: CodeIR, argtypes):
    """A slot the code reads but never assigns is an argument: it must be in argtypes."""
    assigned = {s.target.name for s in code.stmts if s.kind == "assign"}
    for s in code.stmts:
        for o in operands(s.value):
            if isinstance(o, Slot) and o.name not in assigned and o.name not in argtypes \
                    and o.name not in ("#self#", "_"):
                raise ArgumentError(
                    f"`{o.name}` is read by statement %{s.number} (line {s.line}: `{s.text}`) and never assigned, "
                    f"so it is an argument of the function, but argtypes has no entry for it; argtypes gives "
                    f"{list(argtypes)}. Add it, e.g. {{{o.name!r}: 'Vector{{Float64}}'}}")


def static_parameters(code: CodeIR, argtypes, given=None) -> list:
    """The values of the method's static parameters (`where T`), in order: type names or integers.

    From `given` (a list), else the `Static Parameters` section of a @code_warntype header, else by
    matching the `from f(x::AbstractVector{T}) where T` header line with argtypes; [] when the code
    uses none. A code that uses one that none of these gives raises ArgumentError."""
    used = max((o.n for s in code.stmts for o in operands(s.value) if isinstance(o, StaticParam)), default=0)
    if given is not None:
        values = list(given)
    elif code.static_params:
        values = [_param_value(t) for _, t in code.static_params]
    else:
        values = _from_signature(code.signature, argtypes) if code.signature else []
    if used > len(values):
        raise ArgumentError(
            f"the code uses static parameter {used} of a `where` method ($(Expr(:static_parameter, {used}))) "
            f"but its value is not known: pass static_parameters=[...] (their types in order, e.g. "
            f"['Float64']), or print the code with @code_warntype, which lists them")
    return values


def _param_value(text):
    text = text.strip()
    return int(text) if re.fullmatch(r"-?\d+", text) else text


def _from_signature(signature, argtypes):
    """Values of `where` parameters by matching `x::AbstractVector{T}`, `A::Array{T, N}`, `x::T` with argtypes."""
    m = re.match(r"^[^(]*\((.*)\)\s+where\s+(.*)$", signature)
    if not m:
        return []
    names = [re.split(r"<:|>:", v)[0].strip() for v in m.group(2).strip("{} ").split(",")]
    found = {}
    params = [p.strip() for p in _split_top(m.group(1).split(";")[0])]
    for param, (arg, jtext) in zip(params, argtypes.items()):
        if "::" not in param:
            continue
        pattern = param.split("::", 1)[1].replace(" ", "")
        jt = parse_type(jtext)
        if pattern in names:
            found[pattern] = str(jt)
            continue
        pm = re.fullmatch(r"(\w+)\{(.*)\}", pattern)
        if not pm or pm.group(1) not in ARRAY_KINDS or not jt.is_array:
            continue
        parts = _split_top(pm.group(2))
        if parts and parts[0] in names:
            found[parts[0]] = JULIA_NAME[jt.dtype]
        if len(parts) == 2 and parts[1] in names:
            found[parts[1]] = jt.ndim
    return [found[n] for n in names] if all(n in found for n in names) else []


def _split_top(text):
    out, depth, part = [], 0, ""
    for ch in text:
        if ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(part.strip())
            part = ""
            continue
        part += ch
    if part.strip():
        out.append(part.strip())
    return out
