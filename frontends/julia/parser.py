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
from .ir import CodeIR, Global, JuliaParseError, Lit, NOTHING, Slot, Stmt, ssa_refs

# the block gutter: a block label (`1 ─`, `2 ┄`, `10 ─`, ASCII `3 -` or a bare `4 ` where a page dropped
# the box characters), a continuing line (`│`, `|`) or the last line of a block (`└──`, `--`)
_LABEL = re.compile(r"^(?P<bb>\d+) (?:[─┄-][─-]*|(?= ))")
_LAST = re.compile(r"^(?:└─+|└-+|--+)")
_MID = re.compile(r"^[│|](?=[ │┃]|$)")
_INLINE_INDENT = " │┃"                   # inlining depth printed after the gutter (`1 ─│ %1 = ...`)
_SOURCE_MARKS = ("@ ", "┌", "└", "╷", "╻")
# right-aligned inlining annotations of `debuginfo=:compact` (`│╻ getindex`) after a statement
_RIGHT_ANNOTATION = re.compile(r"\s{2,}[│┃╻╷]+(?:\s.*)?$")
_BLOCK_ONE = re.compile(r"^(?P<prefix> *(?:\d+ +)?)1 (?:[─┄-]|(?= ))")
_USED = re.compile(r"^%(\d+)\s*=(?!=)\s?(.*)$")
_KIND = re.compile(r"^(?:dynamic builtin|dynamic invoke|dynamic|builtin|intrinsic|unknown|invoke)\s+(?=\S)")
_GOTO = re.compile(r"^goto #(\d+)$")
_GOTOIFNOT = re.compile(r"^goto #(\d+) if not (.+)$")
# statements without a value: `@inbounds`, `@simd`, `@aliasscope` markers, `@meta`, coverage, world age
_META = re.compile(r"^\$\(Expr\(:(inbounds|loopinfo|meta|aliasscope|popaliasscope|code_coverage_effect|"
                   r"latestworld)(?:,\s*(.*?))?\)\)(?:::.*)?$")
_NEWVAR = re.compile(r"^Core\.NewvarNode\(:\((.*)\)\)(?:::.*)?$")
_GLOBAL_DECL = re.compile(r"^global\s+[^\s=]+(?:::.*)?$")
_OLD_DIALECT = re.compile(r"(^|\s)unless\s+.*\bgoto\b|^\s*\d+:\s*$|\bgoto\s+\d+\b")
_OPTIMIZED = re.compile(r"φ \(|π \(|ϒ \(|φᶜ \(|\$\(Expr\(:invoke")
# what may follow the code: a new REPL prompt, Cthulhu's menu (after which anything goes)
_CTHULHU_MENU = re.compile(r"^(?:Select a call to descend|Toggles: |Show: |Actions: |Advanced: )")

RUN_INSTEAD = ("run `@code_lowered f(args...)` (or `code_typed(f, types; optimize=false)`) "
               "on Julia 1.6 or later and pass its output")


def _refuse_dialects(lines):
    for no, raw in enumerate(lines, 1):
        body = raw.strip()
        if _OPTIMIZED.search(body) or re.search(r"[│└ ]\s*%\d+\s*=\s*φ", raw):
            raise JuliaParseError("this is optimized IR (it has phi nodes or invoke statements), which the "
                                  f"front-end does not read; {RUN_INSTEAD}", no)
        if _OLD_DIALECT.search(body):
            raise JuliaParseError("this looks like Julia 0.x output (numbered labels, `unless ... goto`); "
                                  f"{RUN_INSTEAD}", no)


def _gutter(line):
    """(kind, block number or None, text after the gutter); kind is 'label', 'last', 'mid' or None."""
    for kind, rx in (("label", _LABEL), ("last", _LAST), ("mid", _MID)):
        m = rx.match(line)
        if m:
            return kind, (int(m.group("bb")) if kind == "label" else None), line[m.end():]
    return None, None, line


def _after_indent(text):
    """The text after the inlining indent (`│`s and spaces) that follows the gutter."""
    return text.lstrip(_INLINE_INDENT)


def _is_source_location(rest):
    """A source-location or inlining line (`@ REPL[3]:2 within `f``, `┌ @ int.jl:87`, `└`): not a statement."""
    return rest == "" or rest.startswith(_SOURCE_MARKS)


def _split_lines(text):
    """(header lines, [(line number, gutter kind, block, statement text)], closing line or None, line count,
    whether the code is wrapped in `CodeInfo(`)."""
    lines = text.splitlines()
    _refuse_dialects(lines)
    start, codeinfo = None, False
    for i, raw in enumerate(lines):
        stripped = raw.strip()
        if stripped.startswith("CodeInfo("):
            if stripped != "CodeInfo(":
                raise JuliaParseError("expected a line break after `CodeInfo(`", i + 1)
            start, codeinfo = i + 1, True
            break
        if _BLOCK_ONE.match(raw):
            start = i      # @code_warntype and Cthulhu: statements follow the header without CodeInfo(
            break
    if start is None:
        raise JuliaParseError("no statements found: expected `CodeInfo(` followed by lines like `1 ─ %1 = ...`; "
                              f"{RUN_INSTEAD}", len(lines) or 1)
    header = [(no, raw.rstrip()) for no, raw in enumerate(lines[:start - codeinfo], 1)]
    # a common indentation (a pasted Markdown block) or a line-number column (`debuginfo=:compact`)
    first = next((lines[i] for i in range(start, len(lines)) if _BLOCK_ONE.match(lines[i])), None)
    width = len(_BLOCK_ONE.match(first).group("prefix")) if first is not None else 0
    body, end = [], None
    for no in range(start + 1, len(lines) + 1):
        raw = lines[no - 1].rstrip()
        if width and re.fullmatch(r"[\d ]*", raw[:width]):
            raw = raw[width:]
        elif raw[:1] == " " and _gutter(raw[1:])[0] is not None:
            raw = raw[1:]        # ` CodeInfo(` printed inside a Vector indents by one space
        if not raw.strip():
            continue
        kind, bb, rest = _gutter(raw)
        if kind is None:
            stripped = raw.strip()
            if _is_source_location(_after_indent(raw)):
                continue
            if stripped.startswith(")") and codeinfo:
                end = (no, stripped)
                _check_trailer(lines, no)
                break
            if not codeinfo and body:
                _check_trailer(lines, no - 1)
                break
            raise JuliaParseError(f"expected a statement with a block gutter (`1 ─`, `│`, `└──`), found "
                                  f"`{stripped}`", no)
        stmt = _after_indent(rest)
        if kind == "mid" and _is_source_location(stmt):
            continue
        stmt = _RIGHT_ANNOTATION.sub("", stmt).strip()
        body.append((no, kind, bb, stmt))
    return header, body, end, len(lines), codeinfo


def _check_trailer(lines, last):
    """Only a REPL prompt or Cthulhu's menu may follow the code (not a second CodeInfo)."""
    for no in range(last + 1, len(lines) + 1):
        s = lines[no - 1].strip()
        if not s:
            continue
        if s.startswith("julia>") or _CTHULHU_MENU.match(s):
            return
        what = "a second `CodeInfo(`: pass the code of one method" if s.startswith(("CodeInfo(", "1 ")) else f"`{s}`"
        raise JuliaParseError(f"unexpected text after the end of the code: {what}", no)


def _read_header(header):
    """Arguments, slot types, return type, static parameters and signature from a @code_warntype header.

    `Arguments` / `Locals` (1.7+) or `Variables` (1.6) list `name::Type`; `Static Parameters` lists
    `T = Type`; `from f(x, y::T) where T @ Main file:1` (or `in Main at`) gives the signature."""
    arguments, slot_types, section, ret, sparams, signature = [], {}, None, None, [], None
    for no, raw in header:
        s = raw.strip()
        if s in ("Arguments", "Locals", "Variables", "Static Parameters"):
            section = s
            continue
        if s.startswith("Body::"):
            ret = s[len("Body::"):]
            section = None
            continue
        m = re.match(r"^from (.+?)(?: @ \S+ .*| in \S+ at .*)$", s)
        if m:
            signature = m.group(1)
            continue
        if section == "Static Parameters" and "=" in s:
            name, typ = s.split("=", 1)
            sparams.append((name.strip(), typ.strip()))
        elif section and "::" in s:
            name, typ = s.split("::", 1)
            slot_types[name] = typ
            if section == "Arguments" and name != "#self#":
                arguments.append(name)
    if not arguments and signature:
        arguments = _signature_arguments(signature)
    return arguments, slot_types, ret, sparams, signature


def _signature_arguments(signature):
    """Positional argument names of `f(x, y::T; k=1) where T` ([] when one has no name)."""
    m = re.match(r"^[^(]*\((.*)\)(?:\s+where\s.*)?$", signature)
    if not m:
        return []
    names, depth, part = [], 0, ""
    for ch in m.group(1) + ",":
        if ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth -= 1
        if depth == 0 and ch in ",;":
            name = re.split(r"::|=", part.strip(), maxsplit=1)[0].strip()
            if part.strip():
                if not name.isidentifier():
                    return []
                names.append(name)
            part = ""
            if ch == ";":
                break
            continue
        part += ch
    return names


def parse(text: str) -> CodeIR:
    """Parse printed lowered IR into a CodeIR; JuliaParseError (with the line number) on bad text."""
    if not isinstance(text, str):
        raise JuliaParseError(f"expected the printed IR as a string, got {type(text).__name__}")
    header, body, end, n_lines, codeinfo = _split_lines(text)
    arguments, slot_types, ret, sparams, signature = _read_header(header)
    style = "warntype" if any(r.strip().startswith(("MethodInstance", "Body::", "Variables", "Arguments"))
                              for _, r in header) else "lowered"
    stmts, blocks = [], {}
    current, closed = None, True
    for no, kind, bb, rest in body:
        if bb is not None:
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
        if kind == "last":
            closed = True
        if not rest:
            raise JuliaParseError("a gutter without a statement", no)
        number = len(stmts) + 1
        stmt = _parse_statement(rest, number, no)
        stmt.block = current
        if bb is not None and stmt.kind in ("goto", "gotoifnot", "return", "unreachable"):
            closed = True
        stmts.append(stmt)
        blocks[current].append(number)
    if not stmts:
        raise JuliaParseError("the code has no statements", n_lines)
    if end is None and codeinfo:
        raise JuliaParseError("the text ends before the closing `)` of `CodeInfo(` (truncated?)", n_lines)
    last = stmts[-1]
    if last.kind not in ("return", "goto", "unreachable") or not closed:
        raise JuliaParseError(f"the code ends inside block {current}, after `{last.text}` (truncated?)", last.line)
    if end is not None and "=>" in end[1]:
        ret = end[1].split("=>", 1)[1].strip()
        style = "typed"
    elif any(s.jtype for s in stmts):
        style = "typed" if style == "lowered" else style
    code = CodeIR(stmts, blocks, style, arguments, slot_types, ret, sparams, signature)
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
    text = _KIND.sub("", text, count=1)
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
    if _GLOBAL_DECL.match(text):
        stmt.kind, stmt.meta = "meta", ("global", text.split(None, 1)[1])
        return stmt
    if _NEWVAR.match(text) or text in ("nothing", "nothing::Nothing"):
        stmt.kind, stmt.meta = "meta", ("nop", "")
        return stmt
    if text.startswith("goto"):
        raise JuliaParseError(f"unknown statement `{text}`", line)
    lhs, rhs, jtype = _assignment(text, line)
    if lhs is not None:
        target, _ = _expr(lhs, line)
        if not isinstance(target, (Slot, Global)):
            raise JuliaParseError(f"assignment to `{lhs}`, which is neither a local nor a global variable", line)
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
