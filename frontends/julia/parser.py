"""Reading the text Julia prints for `code_lowered`, `code_typed(...; optimize=false)` and `@code_warntype`.

Handles Julia 1.6 to 1.12: the block gutter (`1 ─`, `2 ┄`, `│`, `└──`), used
SSA numbers (`%5  = `), slots `@_3` and `x@_2`, typed annotations `::T`,
1.11's outlined reads (`%4 = @_3`, `%11 = Main.:(==)`), 1.12's call-kind labels
(`builtin`, `dynamic`, `intrinsic`), `$(Expr(:inbounds, ...))` and source-line
lines. Optimized IR and Julia 0.x output are refused with the command to run.
"""
from __future__ import annotations

import re

from .exprparse import ExprParser, tokenize
from .ir import CodeIR, JuliaParseError, Lit, NOTHING, Slot, Stmt, ssa_refs

_GUTTER = re.compile(r"^ ?(?:(?P<bb>\d+) (?P<kind>[─┄])─*|(?P<mid>│)|(?P<last>└─+))(?: (?P<rest>.*))?$")
_USED = re.compile(r"^%(\d+)\s*=(?!=)\s?(.*)$")
_LABEL = re.compile(r"^(?:dynamic builtin|dynamic invoke|dynamic|builtin|intrinsic|unknown|invoke)\s+(?=\S)")
_GOTO = re.compile(r"^goto #(\d+)$")
_GOTOIFNOT = re.compile(r"^goto #(\d+) if not (.+)$")
_META = re.compile(r"^\$\(Expr\(:(\w+)(?:,\s*(.*?))?\)\)(?:::.*)?$")
_NEWVAR = re.compile(r"^Core\.NewvarNode\(:\((.*)\)\)(?:::.*)?$")
_OLD_DIALECT = re.compile(r"(^|\s)unless\s+.*\bgoto\b|^\s*\d+:\s*$|\bgoto\s+\d+\b|^\s*\d+\s+\d+\s+[─┄]")
_OPTIMIZED = re.compile(r"φ \(|π \(|\$\(Expr\(:invoke")

RUN_INSTEAD = ("run `@code_lowered f(args...)` (or `code_typed(f, types; optimize=false)`) "
               "on Julia 1.6 or later and pass its output")


def _refuse_dialects(lines):
    for no, raw in enumerate(lines, 1):
        body = raw.strip()
        if _OPTIMIZED.search(body) or re.search(r"[│└ ]\s*%\d+\s*=\s*φ", raw):
            raise JuliaParseError("this is optimized IR (it has phi nodes or invoke statements), which the "
                                  f"front-end does not read; {RUN_INSTEAD}", no)
        if _OLD_DIALECT.search(body):
            raise JuliaParseError("this looks like Julia 0.x or 1.0 output (numbered labels, `unless ... goto`, "
                                  f"a line-number column); {RUN_INSTEAD}", no)


def _split_lines(text):
    """(header lines, statement lines, closing line or None) with their 1-based line numbers."""
    lines = text.splitlines()
    _refuse_dialects(lines)
    header, body, end = [], [], None
    state = "header"
    for no, raw in enumerate(lines, 1):
        stripped = raw.strip()
        if state == "header":
            if stripped.startswith("CodeInfo("):
                state = "code"
                if stripped != "CodeInfo(":
                    raise JuliaParseError("expected a line break after `CodeInfo(`", no)
                continue
            if _GUTTER.match(raw.rstrip()) and re.match(r"^ ?1 [─┄]", raw):
                state = "code"      # @code_warntype: statements follow the header without CodeInfo(
                body.append((no, raw.rstrip()))
                continue
            header.append((no, raw.rstrip()))
            continue
        if state == "code":
            if stripped.startswith(")") and not _GUTTER.match(raw.rstrip()):
                end = (no, stripped)
                state = "done"
                continue
            if not stripped:
                continue
            body.append((no, raw.rstrip()))
            continue
        if stripped:
            raise JuliaParseError(f"unexpected text after the end of the code: `{stripped}`", no)
    if state == "header":
        raise JuliaParseError("no statements found: expected `CodeInfo(` followed by lines like `1 ─ %1 = ...`; "
                              f"{RUN_INSTEAD}", len(lines) or 1)
    return header, body, end, len(lines)


def _read_header(header):
    """Argument names and slot types from a @code_warntype header (`Arguments`, `Locals`, `Variables`)."""
    arguments, slot_types, section, ret = [], {}, None, None
    for no, raw in header:
        s = raw.strip()
        if s in ("Arguments", "Locals", "Variables"):
            section = s
            continue
        if s.startswith("Body::"):
            ret = s[len("Body::"):]
            section = None
            continue
        if section and "::" in s:
            name, typ = s.split("::", 1)
            slot_types[name] = typ
            if section == "Arguments" and name != "#self#":
                arguments.append(name)
    return arguments, slot_types, ret


def parse(text: str) -> CodeIR:
    """Parse printed lowered IR into a CodeIR; JuliaParseError (with the line number) on bad text."""
    if not isinstance(text, str):
        raise JuliaParseError(f"expected the printed IR as a string, got {type(text).__name__}")
    header, body, end, n_lines = _split_lines(text)
    arguments, slot_types, ret = _read_header(header)
    style = "warntype" if any(r.strip().startswith(("MethodInstance", "Body::", "Variables", "Arguments"))
                              for _, r in header) else "lowered"
    stmts, blocks = [], {}
    current, closed = None, True
    for no, raw in body:
        m = _GUTTER.match(raw)
        if not m:
            raise JuliaParseError(f"expected a statement with a block gutter (`1 ─`, `│`, `└──`), found `{raw.strip()}`",
                                  no)
        rest = (m.group("rest") or "").strip()
        if m.group("bb") is None and (not rest or rest.startswith("@ ") or rest[0] in "┌└│╷╻┃"):
            continue   # a source-location line (debuginfo=:source), not a statement
        if m.group("bb") is not None:
            bb = int(m.group("bb"))
            if bb != len(blocks) + 1:
                raise JuliaParseError(f"block {bb} follows block {len(blocks)}; blocks are numbered in order", no)
            if not closed and blocks.get(current) and len(blocks[current]) > 1:
                raise JuliaParseError(f"block {current} ends without a `└` line before block {bb}", no)
            current, closed = bb, False
            blocks[bb] = []
        elif current is None:
            raise JuliaParseError("the first statement must start block 1 (`1 ─`)", no)
        elif closed:
            raise JuliaParseError(f"a statement after the end (`└`) of block {current} with no new block label", no)
        if m.group("last") is not None:
            closed = True
        number = len(stmts) + 1
        stmt = _parse_statement(rest, number, no)
        stmt.block = current
        if m.group("bb") is not None and stmt.kind in ("goto", "gotoifnot", "return", "unreachable"):
            closed = True
        stmts.append(stmt)
        blocks[current].append(number)
    if not stmts:
        raise JuliaParseError("the code has no statements", n_lines)
    if end is None and style != "warntype":
        raise JuliaParseError("the text ends before the closing `)` of `CodeInfo(` (truncated?)", n_lines)
    last = stmts[-1]
    if last.kind not in ("return", "goto", "unreachable") or not closed:
        raise JuliaParseError(f"the code ends inside block {current}, after `{last.text}` (truncated?)", last.line)
    if end is not None and "=>" in end[1]:
        ret = end[1].split("=>", 1)[1].strip()
        style = "typed"
    elif any(s.jtype for s in stmts):
        style = "typed" if style == "lowered" else style
    code = CodeIR(stmts, blocks, style, arguments, slot_types, ret)
    _check_references(code)
    return code


def _parse_statement(text, number, line):
    m = _USED.match(text)
    if m:
        if int(m.group(1)) != number:
            raise JuliaParseError(f"statement %{m.group(1)} is printed where statement %{number} should be "
                                  "(a line is missing or repeated)", line)
        text = m.group(2).strip()
    if re.match(r"^(?:dynamic )?invoke\s", text):
        raise JuliaParseError(f"this is optimized IR (`invoke` statements), which the front-end does not read; "
                              f"{RUN_INSTEAD}", line)
    text = _LABEL.sub("", text, count=1)
    stmt = Stmt(number, "expr", line, text)
    if (g := _GOTO.match(text)):
        stmt.kind, stmt.target = "goto", int(g.group(1))
        return stmt
    if (g := _GOTOIFNOT.match(text)):
        stmt.kind, stmt.target = "gotoifnot", int(g.group(1))
        stmt.value = _expr(g.group(2), line)[0]
        return stmt
    if text == "return" or text.startswith("return "):
        stmt.kind = "return"
        stmt.value = _expr(text[6:], line)[0] if text[6:].strip() else NOTHING
        return stmt
    if text == "unreachable":
        stmt.kind = "unreachable"
        return stmt
    if (g := _META.match(text)):
        stmt.kind, stmt.meta = "meta", (g.group(1), (g.group(2) or "").strip())
        return stmt
    if _NEWVAR.match(text) or text in ("nothing", "nothing::Nothing"):
        stmt.kind, stmt.meta = "meta", ("nop", "")
        return stmt
    if text.startswith("goto") or text.startswith("$("):
        raise JuliaParseError(f"unknown statement `{text}`", line)
    lhs, rhs, jtype = _assignment(text, line)
    if lhs is not None:
        target, _ = _expr(lhs, line)
        if not isinstance(target, Slot):
            raise JuliaParseError(f"assignment to `{lhs}`, which is not a local variable", line)
        stmt.kind, stmt.target = "assign", target
        stmt.value, types = _expr(rhs, line)
        stmt.jtype = jtype or (types[-1] if types else None)
        return stmt
    stmt.value, types = _expr(text, line)
    stmt.jtype = types[-1] if types else None
    return stmt


def _expr(text, line):
    p = ExprParser(text, line)
    return p.parse_all(), p.types


def _assignment(text, line):
    """(lhs, rhs, type) of `x = e`, `(x = e)` or `(x = e)::T`; (None, None, None) otherwise."""
    jtype = None
    t = text
    if t.startswith("("):
        close = _matching_paren(t)
        if close is not None:
            tail = t[close + 1:].strip()
            if tail == "" or tail.startswith("::"):
                inner = t[1:close]
                if _top_level_equals(inner, line) is not None:
                    jtype = tail[2:].strip() or None
                    t = inner
    k = _top_level_equals(t, line)
    if k is None:
        return None, None, None
    return t[:k].strip(), t[k + 1:].strip(), jtype


def _matching_paren(t):
    depth = 0
    for i, ch in enumerate(t):
        if ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth -= 1
            if depth == 0:
                return i
    return None


def _top_level_equals(t, line):
    """Index of a top-level `=` that is an assignment (not `==`, `<=`, `===`...), or None."""
    depth = 0
    i = 0
    in_str = False
    while i < len(t):
        ch = t[i]
        if in_str:
            if ch == "\\":
                i += 2
                continue
            if ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth -= 1
        elif ch == "=" and depth == 0:
            prev = t[i - 1] if i else ""
            nxt = t[i + 1] if i + 1 < len(t) else ""
            if nxt != "=" and prev not in "=<>!≤≥:":
                return i
            while i < len(t) and t[i] == "=":
                i += 1
            continue
        i += 1
    return None


def _check_references(code: CodeIR):
    """Every goto names an existing block; every %n used is a statement before... or a loop-carried one."""
    n_blocks = len(code.blocks)
    for s in code.stmts:
        if s.kind in ("goto", "gotoifnot") and not 1 <= s.target <= n_blocks:
            raise JuliaParseError(f"`{s.text}` jumps to block #{s.target}, but the code has blocks 1 to {n_blocks}",
                                  s.line)
        if s.kind in ("goto", "gotoifnot", "return", "unreachable") and code.blocks[s.block][-1] != s.number:
            raise JuliaParseError(f"`{s.text}` ends block {s.block} but more statements follow it in that block",
                                  s.line)
    for s in code.stmts:
        for ref in ssa_refs(s.value):
            if not 1 <= ref <= len(code.stmts):
                raise JuliaParseError(f"`{s.text}` uses %{ref}, which is not a statement of this code", s.line)


__all__ = ["parse", "JuliaParseError", "tokenize", "Lit"]
