"""Tokenizer and precedence parser for one statement's expression text (Julia's `show_unquoted` output)."""
from __future__ import annotations

import re

from .ir import Call, Global, JuliaParseError, Lit, NOTHING, SSA, Slot, Special, StaticParam

_OPERATORS = sorted([
    "===", "!==", "==", "!=", "<=", ">=", "≤", "≥", "≠", "<:", "&&", "||", "::", "//", ">>>", "<<", ">>",
    "<", ">", "+", "-", "*", "/", "÷", "%", "^", "&", "|", "⊻", "!", "~", ":", "=", ",", "(", ")", "[", "]",
    "{", "}", "\\", "$", ".", "√",
], key=len, reverse=True)

# Python's regex counts Julia's non-ASCII operators as letters: they must not start or continue a name
_LETTER = r"(?![÷≤≥≠⊻√│┃└┌─┄])[A-Za-z_\u00a1-\uffff]"
_TOKEN = re.compile(rf"""
    (?P<ws>\s+)
  | (?P<ssa>%\d+)
  | (?P<slot>@_\d+)
  | (?P<num>(?:0x[0-9a-fA-F]+)|(?:\d+\.\d*(?:[eE][+-]?\d+)?(?:f[+-]?\d+)?)|(?:\d+(?:[eE][+-]?\d+|f[+-]?\d+))|(?:\d+))
  | (?P<var>var"(?:[^"\\]|\\.)*")
  | (?P<str>"(?:[^"\\]|\\.)*")
  | (?P<name>(?:\#(?:{_LETTER}|[0-9])|{_LETTER})(?:{_LETTER}|[0-9!\#])*(?:@_\d+)?)
""", re.VERBOSE)
# `$(Expr(:static_parameter, 1))` (a `where` parameter) and other `$(Expr(:head, ...))` values
_INTERPOLATED = re.compile(r"\$\(Expr\(:(\w+)((?:[^()]|\((?:[^()]|\([^()]*\))*\))*)\)\)")

# binary operators by precedence (higher binds tighter); Julia's own levels
_BINARY = {
    "||": 1, "&&": 2,
    "<": 3, ">": 3, "<=": 3, ">=": 3, "==": 3, "!=": 3, "===": 3, "!==": 3, "≤": 3, "≥": 3, "≠": 3, "<:": 3, "isa": 3,
    ":": 4,
    "+": 5, "-": 5, "|": 5, "⊻": 5,
    "<<": 5.5, ">>": 5.5, ">>>": 5.5,   # Julia's bit shifts bind between + and *
    "*": 6, "/": 6, "÷": 6, "%": 6, "&": 6, "\\": 6,
    "//": 7,
    "^": 9,
}
_UNARY_LEVEL = 8
_OP_CHARS = set("+-*/÷%^&|⊻<>=!≤≥≠:\\")


def tokenize(text, line):
    """(kind, text) tokens; kinds: ssa, slot, num, str, name, op, special (`$(Expr(...))`).

    `var"..."` names become plain names."""
    out, pos = [], 0
    while pos < len(text):
        if text.startswith("$(Expr(", pos):
            m = _INTERPOLATED.match(text, pos)
            if m is None:
                raise JuliaParseError(f"cannot read the interpolated expression in `{text}`", line)
            out.append(("special", m.group()))
            pos = m.end()
            continue
        m = _TOKEN.match(text, pos)
        if m and m.lastgroup == "var":
            out.append(("name", m.group()[4:-1]))
            pos = m.end()
            continue
        if m and m.lastgroup != "ws":
            out.append((m.lastgroup, m.group()))
            pos = m.end()
            continue
        if m:
            pos = m.end()
            continue
        for op in _OPERATORS:
            if text.startswith(op, pos):
                out.append(("op", op))
                pos += len(op)
                break
        else:
            raise JuliaParseError(f"unexpected character {text[pos]!r} in `{text}`", line)
    return out


def _number(tok):
    if tok.startswith("0x"):
        return Lit(int(tok, 16), "UInt")
    if re.fullmatch(r"\d+", tok) and int(tok) >= 1 << 63:
        return Lit(int(tok), "Int128")    # Julia reads integer literals beyond Int64 as Int128 or BigInt
    if "f" in tok:
        mant, exp = tok.split("f")
        return Lit(float(mant) * 10.0 ** int(exp), "Float32")
    if "." in tok or "e" in tok or "E" in tok:
        return Lit(float(tok), "Float64")
    return Lit(int(tok), "Int64")


_NAMED = {"nothing": NOTHING, "true": Lit(True, "Bool"), "false": Lit(False, "Bool"),
          "Inf": Lit(float("inf"), "Float64"), "NaN": Lit(float("nan"), "Float64"),
          "Inf32": Lit(float("inf"), "Float32"), "NaN32": Lit(float("nan"), "Float32")}
_FLOAT_CONSTANTS = ("Inf", "NaN", "Inf32", "NaN32")


class ExprParser:
    """Recursive-descent parser over the tokens of one statement."""

    def __init__(self, text, line):
        self.text, self.line = text, line
        self.toks = tokenize(text, line)
        self.i = 0
        self.types = []   # `::T` annotations met, outermost last

    # helpers
    def peek(self, k=0):
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else (None, None)

    def take(self):
        tok = self.peek()
        if tok[0] is None:
            self.fail("the statement ends too early")
        self.i += 1
        return tok

    def expect(self, op):
        kind, val = self.take()
        if kind != "op" or val != op:
            self.fail(f"expected `{op}`, found `{val}`")

    def at_op(self, op):
        kind, val = self.peek()
        return kind == "op" and val == op

    def fail(self, why):
        raise JuliaParseError(f"cannot read `{self.text}`: {why}", self.line)

    def done(self):
        return self.i >= len(self.toks)

    # grammar
    def parse_all(self):
        e = self.parse_expr()
        if not self.done():
            self.fail(f"unexpected `{self.peek()[1]}`")
        return e

    def parse_expr(self, level=0):
        left = self.parse_unary()
        while True:
            kind, op = self.peek()
            if kind == "name" and op == "isa":   # `x isa T` (from return-type annotations) is infix
                kind = "op"
            if kind != "op" or op not in _BINARY or _BINARY[op] <= level:
                break
            prec = _BINARY[op]
            self.take()
            right = self.parse_expr(prec if op != "^" else prec - 1)
            if op == ":" and isinstance(left, Call) and left.fn == Global(None, ":") and len(left.args) == 2:
                left = Call(Global(None, ":"), left.args + (right,))   # a:s:b
            else:
                left = Call(Global(None, op), (left, right))
        return left

    def parse_unary(self):
        kind, op = self.peek()
        if kind == "op" and op in ("-", "!", "+", "~", "√"):
            self.take()
            operand = self.parse_expr(_UNARY_LEVEL)
            if op == "-" and isinstance(operand, Lit) and operand.jtype in ("Int64", "Float64", "Float32"):
                return Lit(-operand.value, operand.jtype)
            return Call(Global(None, op), (operand,))
        return self.parse_postfix()

    def parse_postfix(self):
        e = self.parse_atom()
        while True:
            if self.at_op("("):
                self.take()
                e = Call(e, tuple(self.parse_args(")")))
            elif self.at_op("::"):
                self.take()
                self.types.append(self.parse_type())
            else:
                return e

    def parse_args(self, close):
        args = []
        if self.at_op(close):
            self.take()
            return args
        while True:
            args.append(self.parse_expr())
            if self.at_op(","):
                self.take()
                continue
            self.expect(close)
            return args

    def parse_type(self):
        """Skip a printed type (`Vector{Float64}`, `Core.Const(1:10, false)`) and return its text."""
        start = self.i
        kind, val = self.take()
        if kind not in ("name",):
            self.fail(f"expected a type after `::`, found `{val}`")
        while self.at_op(".") and self.peek(1)[0] == "name":
            self.take()
            self.take()
        while self.at_op("{") or self.at_op("("):
            self._skip_balanced()
        return " ".join(t[1] for t in self.toks[start:self.i])

    def _skip_balanced(self):
        pairs = {"(": ")", "{": "}", "[": "]"}
        stack = [pairs[self.take()[1]]]
        while stack:
            kind, val = self.take()
            if kind == "op" and val in pairs:
                stack.append(pairs[val])
            elif kind == "op" and val == stack[-1]:
                stack.pop()

    def parse_atom(self):
        kind, val = self.take()
        if kind == "ssa":
            return SSA(int(val[1:]))
        if kind == "slot":
            return Slot(val)
        if kind == "num":
            return _number(val)
        if kind == "str":
            return Lit(val[1:-1], "String")
        if kind == "special":
            return _special(val)
        if kind == "name":
            if self.at_op(".") and self.peek(1)[0] in ("name", "op"):
                return self.parse_qualified(val)
            if val in _NAMED:
                return _NAMED[val]
            if val == "Core" or val == "Base" or val == "Main":
                self.fail(f"module `{val}` used without a name")
            return Slot(val)
        if kind == "op" and val == "(":
            if self.at_op(")"):
                self.take()
                return Lit((), "Tuple")
            e = self.parse_expr()
            if self.at_op(","):   # a tuple literal
                items = [e]
                while self.at_op(","):
                    self.take()
                    if self.at_op(")"):
                        break
                    items.append(self.parse_expr())
                self.expect(")")
                return Call(Global("Core", "tuple"), tuple(items))
            self.expect(")")
            return e
        if kind == "op" and val == ":":
            return self.parse_quote()
        if kind == "op" and val == "$":
            self.fail("an interpolated expression inside a statement")
        self.fail(f"unexpected `{val}`")

    def parse_quote(self):
        kind, val = self.peek()
        if kind == "name":
            self.take()
            return Lit(val, "Symbol")
        if kind == "op" and val == "(":
            self.take()
            inner = self.parse_expr()
            self.expect(")")
            return Lit(inner.name if isinstance(inner, (Slot, Global)) else inner, "Symbol")
        self.fail("a quoted symbol")

    def parse_qualified(self, first):
        """`Main.sqrt`, `Base.Math.sqrt`, `Main.:+`, `Main.:(==)`."""
        path = [first]
        while self.at_op("."):
            self.take()
            kind, val = self.peek()
            if kind == "name":
                self.take()
                path.append(val)
                continue
            if kind == "op" and val == ":":
                self.take()
                kind, val = self.take()
                if kind == "op" and val == "(":
                    # an operator or name in parentheses, up to the matching `)`
                    parts = []
                    while not self.at_op(")"):
                        parts.append(self.take()[1])
                    self.take()
                    path.append("".join(parts))
                elif kind in ("op", "name"):
                    path.append(val)
                else:
                    self.fail("an operator name after `.:`")
                break
            self.fail(f"unexpected `{val}` after `.`")
        if path[-1] in _FLOAT_CONSTANTS and path[:-1] in (["Main"], ["Base"]):
            return _NAMED[path[-1]]     # `m = -Inf` lowers to `m = -Main.Inf`: Base's constant, read here once
        return Global(".".join(path[:-1]), path[-1])


def _special(text):
    """StaticParam(n) for `$(Expr(:static_parameter, n))`, else a Special value naming its head."""
    m = re.fullmatch(r"\$\(Expr\(:static_parameter,\s*(\d+)\)\)", text)
    if m:
        return StaticParam(int(m.group(1)))
    head = re.match(r"\$\(Expr\(:(\w+)", text).group(1)
    return Special(head, text)
