"""Writes the printed-IR fixtures of the Julia front-end's tests from the kernels' Julia source.

Julia cannot run on the project's machines, so this script reproduces, for the
small subset of Julia the kernels use, what Julia's lowering produces (the
iterate protocol of `for`, `while`, `if`/`else`, `&&` in conditions, `break`,
`continue`, `@inbounds`, `x^2` as `literal_pow`) and how Julia prints it in
several versions:

* ``v1_6.lowered``   `@code_lowered` of Julia 1.6-1.10 (infix operators, `$(Expr(:inbounds, ...))`);
* ``v1_6.typed``     `code_typed(f, types; optimize=false)` of Julia 1.6 (`(x = e)::T`, `) => T`);
* ``v1_10.warntype`` `@code_warntype` of Julia 1.10 (header, `::T` on values, `nothing` for inbounds);
* ``v1_12.lowered``  `@code_lowered` of Julia 1.11/1.12 (reads of locals and globals outlined into
  statements of their own, `(%2)(1, n)` calls, 1.12's call-kind labels).

The formats follow Julia's printer (base/compiler/ssair/show.jl: gutter, padding of
used SSA numbers, block labels with `┄` for blocks with several predecessors).

    python tests/julia_fixtures/lowering.py      # rewrites the *.txt fixtures next to the .jl files
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

HERE = Path(__file__).parent
STYLES = ("v1_6.lowered", "v1_6.typed", "v1_10.warntype", "v1_12.lowered")

# --- a tiny Julia reader ------------------------------------------------------------------------

_TOK = re.compile(r"""\s*(?:
    (?P<num>\d+\.\d*(?:e[+-]?\d+)?(?:f0)?|\d+(?:e[+-]?\d+|f0)?)
  | (?P<name>@?[A-Za-z_][A-Za-z0-9_!]*)
  | (?P<op>\+=|-=|\*=|/=|==|!=|<=|>=|&&|\|\||[-+*/^<>=(),\[\]:!÷%])
)""", re.VERBOSE)
KEYWORDS = {"function", "for", "while", "if", "elseif", "else", "end", "break", "continue", "return", "in",
            "begin"}


def tokenize_line(line):
    line = line.split("#", 1)[0]
    out, pos = [], 0
    while pos < len(line):
        if line[pos:].strip() == "":
            break
        m = _TOK.match(line, pos)
        if not m or m.end() == pos:
            raise SyntaxError(f"cannot read {line[pos:]!r}")
        kind = m.lastgroup
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


class Reader:
    def __init__(self, source):
        self.lines = [tokenize_line(l) for l in source.splitlines()]
        self.lines = [l for l in self.lines if l]
        self.li = 0

    def function(self):
        toks = self.lines[self.li]
        assert toks[0] == ("name", "function"), toks
        name = toks[1][1]
        args = [v for k, v in toks[3:-1] if k == "name"]
        self.li += 1
        body = self.block()
        return name, args, body

    def block(self):
        stmts = []
        while self.li < len(self.lines):
            toks = self.lines[self.li]
            head = toks[0][1]
            if head in ("end", "else", "elseif"):
                return stmts
            stmts.append(self.statement())
        return stmts

    def statement(self):
        toks = self.lines[self.li]
        head = toks[0][1]
        if head == "@inbounds":
            rest = toks[1:]
            if rest and rest[0][1] in ("for", "while", "begin"):
                self.lines[self.li] = rest
                inner = self.statement() if rest[0][1] != "begin" else self._begin()
                return ("inbounds", [inner] if not isinstance(inner, list) else inner)
            self.lines[self.li] = rest
            return ("inbounds", [self.statement()])
        self.li += 1
        if head == "for":
            var = toks[1][1]
            assert toks[2][1] in ("in", "=")
            rng = Expr(toks[3:]).parse()
            body = self.block()
            self._end()
            return ("for", var, rng, body)
        if head == "while":
            cond = Expr(toks[1:]).parse()
            body = self.block()
            self._end()
            return ("while", cond, body)
        if head == "if":
            return self._if(toks[1:])
        if head == "break":
            return ("break",)
        if head == "continue":
            return ("continue",)
        if head == "return":
            return ("return", Expr(toks[1:]).parse() if len(toks) > 1 else None)
        e = Expr(toks)
        lhs = e.parse()
        if e.done():
            return ("expr", lhs)
        op = e.take()[1]
        rhs = e.parse()
        if op != "=":
            rhs = ("call", op[0], [lhs, rhs])
        return ("assign", lhs, rhs)

    def _begin(self):
        self.li += 1
        body = self.block()
        self._end()
        return body

    def _if(self, cond_toks):
        cond = Expr(cond_toks).parse()
        then = self.block()
        toks = self.lines[self.li]
        other = None
        if toks[0][1] == "else":
            self.li += 1
            other = self.block()
            self._end()
        elif toks[0][1] == "elseif":
            self.li += 1
            other = [self._if(toks[1:])]
        else:
            self._end()
        return ("if", cond, then, other)

    def _end(self):
        assert self.lines[self.li][0][1] == "end", self.lines[self.li]
        self.li += 1


_PREC = {"||": 1, "&&": 2, "<": 3, ">": 3, "<=": 3, ">=": 3, "==": 3, "!=": 3, ":": 4, "+": 5, "-": 5,
         "*": 6, "/": 6, "÷": 6, "%": 6, "^": 9}


class Expr:
    def __init__(self, toks):
        self.toks, self.i = toks, 0

    def done(self):
        return self.i >= len(self.toks)

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else (None, None)

    def take(self):
        t = self.peek()
        self.i += 1
        return t

    def parse(self, level=0):
        left = self.unary()
        while True:
            kind, op = self.peek()
            if kind != "op" or op not in _PREC or _PREC[op] <= level:
                return left
            self.take()
            right = self.parse(_PREC[op] if op != "^" else _PREC[op] - 1)
            if op in ("&&", "||"):
                left = (op, left, right)
            elif op in ("+", "*") and left[0] == "call" and left[1] == op and len(left) == 3:
                left = ("call", op, left[2] + [right])        # a + b + c is one call in Julia
            elif op == ":" and left[0] == "call" and left[1] == ":" and len(left[2]) == 2:
                left = ("call", ":", left[2] + [right])
            elif op == "^" and right[0] == "num" and right[2] == "Int64":
                left = ("pow", left, right[1])
            else:
                left = ("call", op, [left, right])

    def unary(self):
        kind, op = self.peek()
        if kind == "op" and op in ("-", "!"):
            self.take()
            inner = self.parse(8)
            if op == "-" and inner[0] == "num":
                return ("num", -inner[1], inner[2])
            return ("call", op, [inner])
        return self.postfix()

    def postfix(self):
        kind, val = self.take()
        if kind == "num":
            if val.endswith("f0"):
                e = ("num", float(val[:-2]), "Float32")
            elif "." in val or "e" in val:
                e = ("num", float(val), "Float64")
            else:
                e = ("num", int(val), "Int64")
        elif kind == "name":
            e = ("name", val)
        elif val == "(":
            e = self.parse()
            assert self.take()[1] == ")"
            if e[0] == "call":
                e = e + ("closed",)     # parentheses end an n-ary chain
        else:
            raise SyntaxError(f"unexpected {val}")
        while True:
            if self.peek() == ("op", "("):
                self.take()
                e = ("call", e[1], self.args(")"))
            elif self.peek() == ("op", "["):
                self.take()
                e = ("index", e, self.args("]"))
            else:
                return e

    def args(self, close):
        out = []
        if self.peek() == ("op", close):
            self.take()
            return out
        while True:
            out.append(self.parse())
            t = self.take()[1]
            if t == close:
                return out
            assert t == ",", t


# --- lowering --------------------------------------------------------------------------------------

class SSA:
    def __init__(self, n):
        self.n = n


class Slot:
    def __init__(self, name, jtype):
        self.name, self.jtype = name, jtype


class Lit:
    def __init__(self, value, jtype):
        self.value, self.jtype = value, jtype


ELT = {"Matrix{Float64}": "Float64", "Vector{Float64}": "Float64", "Array{Float64, 3}": "Float64",
       "Matrix{Float32}": "Float32", "Vector{Float32}": "Float32", "Array{Float32, 3}": "Float32"}
RANGE_T = "UnitRange{Int64}"
ITER_T = "Union{Nothing, Tuple{Int64, Int64}}"
FUNCS = {"size", "length", "sqrt", "exp", "min", "max", "abs", "zero", "one", "float", "eachindex", "axes",
         "Float64", "Float32", "div"}


class Lowerer:
    """Lowers one function for one printing style (outline: 1.11+ reads of locals/globals)."""

    def __init__(self, name, args, argtypes, body, outline):
        self.name, self.args, self.argtypes, self.body, self.outline = name, args, argtypes, body, outline
        self.code = []           # dicts: op, args..., type
        self.labels = {}
        self.n_labels = 0
        self.slot_types = {}
        self.iter_count = 0
        self.n_slots = 1 + len(args)
        self.temps = []
        self.locals = []
        self.assigned = set()
        self._collect_assigned(body)
        self.loop_stack = []
        self.inbounds_count = 0

    def _collect_assigned(self, stmts):
        for s in stmts:
            if s[0] == "assign" and s[1][0] == "name":
                self.assigned.add(s[1][1])
            elif s[0] == "for":
                self.assigned.add(s[1])
                self._collect_assigned(s[3])
            elif s[0] in ("while",):
                self._collect_assigned(s[2])
            elif s[0] == "if":
                self._collect_assigned(s[2])
                self._collect_assigned(s[3] or [])
            elif s[0] == "inbounds":
                self.assigned.add("val")
                self._collect_assigned(s[1])

    # emission
    def emit(self, op, *args, jtype="Any"):
        self.code.append({"op": op, "args": args, "type": jtype})
        return SSA(len(self.code))

    def label(self):
        self.n_labels += 1
        return self.n_labels

    def place(self, label):
        self.labels[label] = len(self.code) + 1

    def slot(self, name):
        if name in self.args:
            return Slot(name, self.argtypes[name])
        return Slot(name, self.slot_types.get(name, "Any"))

    def temp_slot(self):
        self.iter_count += 1
        self.n_slots += 1
        name = f"@_{self.n_slots}"
        self.temps.append(name)
        self.slot_types[name] = ITER_T
        return Slot(name, ITER_T)

    def read(self, slot):
        """A slot as a call argument: outlined into `%n = x` from 1.11 for assigned locals."""
        if self.outline and slot.name not in self.args:
            return self.emit("read", slot, jtype=slot.jtype)
        return slot

    def callee(self, module, fname):
        if self.outline and module == "Main":
            return self.emit("global", module, fname, jtype=f"Core.Const({fname})")
        return ("global", module, fname)

    # expressions
    def value(self, e, as_arg=True):
        """Lower `e` to a simple value (a slot, literal or SSA)."""
        kind = e[0]
        if kind == "num":
            return Lit(e[1], e[2])
        if kind == "name":
            if e[1] == "nothing":
                return Lit(None, "Nothing")
            s = self.slot(e[1])
            return self.read(s) if as_arg else s
        call = self.call_parts(e)
        return self.emit("call", *call, jtype=self.type_of(call))

    def call_parts(self, e):
        kind = e[0]
        if kind == "index":
            arr = self.value(e[1])
            idx = [self.value(i) for i in e[2]]
            return (("global", "Base", "getindex"), [arr] + idx)
        if kind == "pow":
            f = self.callee("Base", "literal_pow")
            caret = self.callee("Main", "^")
            base = self.value(e[1])
            v = self.emit("call", ("global", "Core", "apply_type"), [("global", "Base", "Val"), Lit(e[2], "Int64")],
                          jtype=f"Core.Const(Val{{{e[2]}}})")
            inst = self.emit("call", v, [], jtype=f"Core.Const(Val{{{e[2]}}}())")
            return (("global", "Base", "literal_pow"), [caret if isinstance(caret, SSA) else caret, base, inst])
        if kind == "call":
            fname = e[1]
            f = self.callee("Main", fname)
            args = [self.value(a) for a in e[2]]
            return (f, args)
        raise ValueError(e)

    def type_of(self, call):
        f, args = call
        name = f[2] if isinstance(f, tuple) else self.code[f.n - 1]["args"][1]
        ts = [self.arg_type(a) for a in args]
        if name in ("<", ">", "<=", ">=", "==", "!=", "!", "===", "not_int"):
            return "Bool"
        if name == "getindex":
            return ELT.get(ts[0], "Float64")
        if name in ("size", "length", "div", "÷", "%"):
            return "Int64"
        if name == ":":
            return RANGE_T if len(args) == 2 else "StepRange{Int64, Int64}"
        if name in ("eachindex", "axes"):
            return "Base.OneTo{Int64}"
        if name in ("/", "sqrt", "exp", "float"):
            return "Float32" if "Float32" in ts and "Float64" not in ts else "Float64"
        if name in ("Float64", "Float32"):
            return name
        if name in ("zero", "one"):
            return "Float64"
        if name == "literal_pow":
            return ts[1]
        if name == "iterate":
            return ITER_T
        nums = [t for t in ts if t in ("Int64", "Float64", "Float32", "Bool")]
        for t in ("Float64", "Float32", "Int64"):
            if t in nums:
                return t
        return "Any"

    def arg_type(self, a):
        if isinstance(a, SSA):
            return self.code[a.n - 1]["type"]
        if isinstance(a, Slot):
            return a.jtype
        if isinstance(a, Lit):
            return a.jtype
        return "Any"

    # statements
    def statements(self, stmts):
        for s in stmts:
            self.statement(s)

    def statement(self, s):
        kind = s[0]
        if kind == "assign":
            lhs, rhs = s[1], s[2]
            if lhs[0] == "index":
                arr = self.value(lhs[1])
                idx = [self.value(i) for i in lhs[2]]
                v = self.value(rhs)
                self.emit("call", ("global", "Base", "setindex!"), [arr, v] + idx, jtype=self.arg_type(arr))
                return
            name = lhs[1]
            if rhs[0] in ("num", "name"):
                v = self.value(rhs)
                t = self.arg_type(v)
                self.slot_types.setdefault(name, t)
                self._note_local(name)
                self.emit("assign", self.slot(name), v, jtype=t)
                return
            call = self.call_parts(rhs)
            t = self.type_of(call)
            self.slot_types.setdefault(name, t)
            self._note_local(name)
            self.emit("assign", self.slot(name), ("callexpr",) + call, jtype=t)
        elif kind == "expr":
            call = self.call_parts(s[1])
            self.emit("call", *call, jtype=self.type_of(call))
        elif kind == "for":
            self.lower_for(s)
        elif kind == "while":
            self.lower_while(s)
        elif kind == "if":
            self.lower_if(s)
        elif kind == "break":
            self.emit("goto", self.loop_stack[-1][0])
        elif kind == "continue":
            self.emit("goto", self.loop_stack[-1][1])
        elif kind == "return":
            v = self.value(s[1]) if s[1] is not None else Lit(None, "Nothing")
            self.emit("return", v)
        elif kind == "inbounds":
            self.inbounds_count += 1
            self._note_local("val")
            self.emit("meta", "inbounds", "true")
            self.statements(s[1])
            self.emit("assign", self.slot("val"), Lit(None, "Nothing"), jtype="Nothing")
            self.emit("meta", "inbounds", ":pop")
            self.emit("bare", self.slot("val"), jtype="Nothing")
        else:
            raise ValueError(s)

    def _note_local(self, name):
        if name not in self.locals and name not in self.args:
            self.locals.append(name)

    def condition(self, cond, else_label):
        """`goto else if not cond`, with `&&` as successive tests (Julia's lowering of conditions)."""
        if cond[0] == "&&":
            self.condition(cond[1], else_label)
            self.condition(cond[2], else_label)
            return
        v = self.value(cond)
        self.emit("gotoifnot", v, else_label)

    def lower_if(self, s):
        _, cond, then, other = s
        else_label = self.label()
        self.condition(cond, else_label)
        self.statements(then)
        if other is not None:
            join = self.label()
            if not then or then[-1][0] not in ("break", "continue", "return"):
                self.emit("goto", join)
            self.place(else_label)
            self.statements(other)
            self.place(join)
        else:
            self.place(else_label)

    def lower_for(self, s):
        _, var, rng, body = s
        r = self.value(rng)
        it = self.temp_slot()
        self.slot_types[var] = "Int64"
        self._note_local(var)
        exit_label, head, latch = self.label(), self.label(), self.label()
        self.emit("assign", it, ("callexpr", ("global", "Base", "iterate"), [r]), jtype=ITER_T)
        self._exit_test(it, exit_label)
        self.place(head)
        st = self.emit("read", Slot(it.name, "Tuple{Int64, Int64}"), jtype="Tuple{Int64, Int64}")
        self.emit("assign", self.slot(var), ("callexpr", ("global", "Core", "getfield"), [st, Lit(1, "Int64")]),
                  jtype="Int64")
        nxt = self.emit("call", ("global", "Core", "getfield"), [st, Lit(2, "Int64")], jtype="Int64")
        self.loop_stack.append((exit_label, latch))
        self.statements(body)
        self.loop_stack.pop()
        self.place(latch)
        self.emit("assign", it, ("callexpr", ("global", "Base", "iterate"), [r, nxt]), jtype=ITER_T)
        self._exit_test(it, exit_label)
        self.emit("goto", head)
        self.place(exit_label)

    def _exit_test(self, it, exit_label):
        x = self.read(it) if self.outline else it
        a = self.emit("call", ("core", "==="), [x, Lit(None, "Nothing")], jtype="Bool")
        b = self.emit("call", ("global", "Base", "not_int"), [a], jtype="Bool")
        self.emit("gotoifnot", b, exit_label)

    def lower_while(self, s):
        _, cond, body = s
        head, exit_label = self.label(), self.label()
        self.place(head)
        self.condition(cond, exit_label)
        self.loop_stack.append((exit_label, head))
        self.statements(body)
        self.loop_stack.pop()
        self.emit("goto", head)
        self.place(exit_label)

    def lower(self):
        self.statements(self.body)
        if not self.code or self.code[-1]["op"] != "return":
            self.emit("return", Lit(None, "Nothing"))
        return self


# --- printing ------------------------------------------------------------------------------------

INFIX = {"+", "-", "*", "/", "<", ">", "<=", ">=", "==", "!=", ":", "^", "÷", "%"}


def fmt_lit(v):
    if v.jtype == "Nothing":
        return "nothing"
    if v.jtype == "Float64":
        text = repr(float(v.value))
        if "e" in text:
            mant, exp = text.split("e")
            mant = mant if "." in mant else mant + ".0"
            text = f"{mant}e{int(exp)}"
        return text
    if v.jtype == "Float32":
        return f"{float(v.value)}f0"
    return str(v.value)


class Printer:
    def __init__(self, low: Lowerer, style):
        self.low, self.style = low, style
        self.typed = style in ("v1_6.typed", "v1_10.warntype")
        self.labels12 = style == "v1_12.lowered"

    def blocks(self):
        code = self.low.code
        targets = set(self.low.labels.values())
        starts = {1}
        for i, st in enumerate(code, 1):
            if i in targets:
                starts.add(i)
            if st["op"] in ("goto", "gotoifnot", "return") and i + 1 <= len(code):
                starts.add(i + 1)
        starts = sorted(s for s in starts if s <= len(code))
        block_of = {}
        for b, s in enumerate(starts, 1):
            end = starts[b] if b < len(starts) else len(code) + 1
            for i in range(s, end):
                block_of[i] = b
        return starts, block_of

    def render(self):
        code = self.low.code
        starts, block_of = self.blocks()
        label_block = {lab: block_of[pos] for lab, pos in self.low.labels.items()}
        preds = {b: 0 for b in range(1, len(starts) + 1)}
        for i, st in enumerate(code, 1):
            b = block_of[i]
            last = i == len(code) or block_of.get(i + 1) != b
            if not last:
                continue
            if st["op"] == "goto":
                preds[label_block[st["args"][0]]] += 1
            elif st["op"] == "gotoifnot":
                preds[label_block[st["args"][1]]] += 1
                if b + 1 in preds:
                    preds[b + 1] += 1
            elif st["op"] != "return" and b + 1 in preds:
                preds[b + 1] += 1
        used = set()
        for st in code:
            for a in _walk_args(st):
                if isinstance(a, SSA):
                    used.add(a.n)
        width = len(str(max(used))) if used else 0
        bbw = len(str(len(starts)))
        lines = []
        for i, st in enumerate(code, 1):
            b = block_of[i]
            first = starts[b - 1] == i
            last = i == len(code) or block_of.get(i + 1) != b
            if first:
                gutter = f"{b} {'┄' if preds[b] > 1 else '─'}{'─' * (bbw - len(str(b)))}"
            elif last:
                gutter = "└" + "─" * (1 + bbw)
            else:
                gutter = "│ " + " " * bbw
            if i in used:
                lead = f"%{i}" + " " * (width - len(str(i)) + 1) + "= "
            else:
                lead = " " * (width + 4)
            lines.append(f"{gutter} {lead}{self.stmt(st, label_block)}".rstrip())
        return lines

    def val(self, a):
        if isinstance(a, SSA):
            return f"%{a.n}"
        if isinstance(a, Slot):
            return a.name
        if isinstance(a, Lit):
            return fmt_lit(a)
        if isinstance(a, tuple) and a[0] == "global":
            return self.gref(a[1], a[2])
        raise ValueError(a)

    def gref(self, module, name):
        if module == "Main" and not name.isidentifier():
            return f"Main.:({name})" if name in ("==", ":", "!=", "<=", ">=") else f"Main.:{name}"
        return f"{module}.{name}"

    def call_text(self, f, args):
        """(text, is_infix)."""
        a = [self.val(x) for x in args]
        if isinstance(f, SSA):
            return f"(%{f.n})({', '.join(a)})", False
        if f[0] == "core":
            return f"{a[0]} {f[1]} {a[1]}", True
        _, module, name = f
        if module == "Main" and name in INFIX:
            if name == ":":
                return ":".join(a), True
            if len(a) == 1:
                return f"{name}{a[0]}", False
            return f" {name} ".join(a), True
        if module == "Main" and name == "!":
            return f"!{a[0]}", False
        return f"{self.gref(module, name)}({', '.join(a)})", False

    def typed_value(self, text, infix, jtype):
        if not self.typed:
            return text
        return f"({text})::{jtype}" if infix else f"{text}::{jtype}"

    def kind_label(self, f):
        if not self.labels12:
            return ""
        if isinstance(f, SSA):
            return "  dynamic "
        if f[0] == "core" or (f[1] == "Core" and f[2] == "getfield"):
            return "  builtin "
        if f[1] == "Core" and f[2] == "apply_type":
            return "  builtin "
        if f[2] == "not_int":
            return "intrinsic "
        return "  dynamic "

    def stmt(self, st, label_block):
        op, args, jtype = st["op"], st["args"], st["type"]
        if op == "call":
            text, infix = self.call_text(args[0], args[1])
            return self.kind_label(args[0]) + self.typed_value(text, infix, jtype)
        if op == "read":
            return self.typed_value(args[0].name, False, jtype)
        if op == "bare":
            return self.typed_value(args[0].name, False, jtype)
        if op == "global":
            return self.typed_value(self.gref(args[0], args[1]), False, jtype)
        if op == "assign":
            slot, rhs = args
            if isinstance(rhs, tuple) and rhs[0] == "callexpr":
                text, _ = self.call_text(rhs[1], rhs[2])
            else:
                text = self.val(rhs)
            s = f"{slot.name} = {text}"
            if self.style == "v1_6.typed":
                return f"({s})::{jtype}"
            if self.style == "v1_10.warntype":
                return f"({s})"
            return s
        if op == "goto":
            return f"goto #{label_block[args[0]]}"
        if op == "gotoifnot":
            return f"goto #{label_block[args[1]]} if not {self.val(args[0])}"
        if op == "return":
            return f"return {self.val(args[0])}"
        if op == "meta":
            if self.style in ("v1_6.lowered", "v1_6.typed"):
                text = f"$(Expr(:{args[0]}, {args[1]}))"
                return text + ("::Any" if self.typed else "")
            return "nothing" + ("::Nothing" if self.typed else "")
        raise ValueError(op)

    def document(self, ret_type):
        lines = self.render()
        low = self.low
        if self.style == "v1_10.warntype":
            sig = ", ".join(f"::{low.argtypes[a]}" for a in low.args)
            head = [f"MethodInstance for {low.name}({sig})",
                    f"  from {low.name}({', '.join(low.args)}) @ Main kernels.jl:1",
                    "Arguments", f"  #self#::Core.Const(Main.{low.name})"]
            head += [f"  {a}::{low.argtypes[a]}" for a in low.args]
            head.append("Locals")
            head += [f"  {t}::{ITER_T}" for t in low.temps]
            head += [f"  {n}::{low.slot_types.get(n, 'Any')}" for n in low.locals]
            head.append(f"Body::{ret_type}")
            return "\n".join(head + lines) + "\n"
        end = ")" if self.style != "v1_6.typed" else f") => {ret_type}"
        return "\n".join(["CodeInfo("] + lines + [end]) + "\n"


def _walk_args(st):
    for a in st["args"]:
        if isinstance(a, SSA):
            yield a
        elif isinstance(a, list):
            yield from (x for x in a if isinstance(x, SSA))
        elif isinstance(a, tuple) and a and a[0] == "callexpr":
            if isinstance(a[1], SSA):
                yield a[1]
            yield from (x for x in a[2] if isinstance(x, SSA))


def read_kernel(path):
    """(name, args, argtypes, body, return type) of a kernel .jl file with a `# argtypes:` line."""
    source = Path(path).read_text()
    m = re.search(r"^# argtypes: (.*)$", source, re.M)
    argtypes = {}
    for part in re.split(r",\s*(?![^{]*\})", m.group(1)):
        n, t = part.split("::")
        argtypes[n.strip()] = t.strip()
    ret = re.search(r"^# returns: (.*)$", source, re.M)
    name, args, body = Reader(source).function()
    return name, args, argtypes, body, ret.group(1).strip() if ret else "Nothing"


def render(path, style):
    """The fixture text of one kernel in one style."""
    name, args, argtypes, body, ret = read_kernel(path)
    low = Lowerer(name, args, argtypes, body, outline=style == "v1_12.lowered").lower()
    return Printer(low, style).document(ret)


def main():
    for jl in sorted(HERE.glob("*.jl")):
        for style in STYLES:
            out = HERE / f"{jl.stem}.{style}.txt"
            out.write_text(render(jl, style))
            print("wrote", out.relative_to(HERE.parent.parent))


if __name__ == "__main__":
    sys.exit(main())
