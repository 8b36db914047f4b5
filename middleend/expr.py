"""Typed expressions shared by the algorithm layer and the loop IR.

Every node carries its element type. Python numbers take the type of the other
operand; two expressions of different types need an explicit cast. How each
operation computes (wrapping integers, C and Halide division, division by zero,
shifts, conversions, floats) is the loop IR's contract, written once in
middleend/semantics.py.
"""
from __future__ import annotations

import math
import numbers

from .errors import ExprTypeError
from .types import DType, as_dtype, bool_, float32, float64, index_type, int64

ARITH_OPS = ("add", "sub", "mul", "div", "mod", "ediv", "emod", "min", "max")
COMPARE_OPS = ("lt", "le", "gt", "ge", "eq", "ne")
LOGIC_OPS = ("and", "or")
BIT_OPS = ("bitand", "bitor", "bitxor")
SHIFT_OPS = ("shl", "shr")
MATH_FUNCS = {
    "sqrt": 1, "exp": 1, "log": 1, "sin": 1, "cos": 1, "tan": 1, "tanh": 1,
    "floor": 1, "ceil": 1, "round": 1, "trunc": 1, "fabs": 1, "pow": 2, "atan2": 2,
    "maximum": 2, "minimum": 2,
}
#: bit counts of integers, of the argument's type; clz and ctz of 0 are the width
INT_FUNCS = {"popcount": 1, "clz": 1, "ctz": 1}
_SYMBOL = {"add": "+", "sub": "-", "mul": "*", "div": "/", "mod": "%", "ediv": "//",
           "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!=",
           "and": "&&", "or": "||", "bitand": "&", "bitor": "|", "bitxor": "^", "shl": "<<", "shr": ">>"}


class Expr:
    """Base of all expression nodes. Subclasses define `children` and `rebuild`."""

    __slots__ = ("dtype",)
    __hash__ = object.__hash__

    children: tuple = ()

    def rebuild(self, children):
        """A copy of this node with new children (same kind, same attributes)."""
        return self

    # arithmetic -----------------------------------------------------------
    def __add__(self, o): return binop("add", self, o)
    def __radd__(self, o): return binop("add", o, self)
    def __sub__(self, o): return binop("sub", self, o)
    def __rsub__(self, o): return binop("sub", o, self)
    def __mul__(self, o): return binop("mul", self, o)
    def __rmul__(self, o): return binop("mul", o, self)
    def __truediv__(self, o): return binop("div", self, o)
    def __rtruediv__(self, o): return binop("div", o, self)
    def __floordiv__(self, o): return binop("ediv", self, o)
    def __rfloordiv__(self, o): return binop("ediv", o, self)
    def __mod__(self, o): return binop("mod", self, o)
    def __rmod__(self, o): return binop("mod", o, self)
    def __neg__(self): return UnOp("neg", self)
    def __pos__(self): return self

    # comparisons build expressions, as in Halide
    def __lt__(self, o): return binop("lt", self, o)
    def __le__(self, o): return binop("le", self, o)
    def __gt__(self, o): return binop("gt", self, o)
    def __ge__(self, o): return binop("ge", self, o)
    def __eq__(self, o): return binop("eq", self, o)
    def __ne__(self, o): return binop("ne", self, o)

    # logic on bool expressions, bitwise operations on integers
    def __and__(self, o): return binop(_logic_or_bits("and", self), self, o)
    def __rand__(self, o): return binop(_logic_or_bits("and", self), o, self)
    def __or__(self, o): return binop(_logic_or_bits("or", self), self, o)
    def __ror__(self, o): return binop(_logic_or_bits("or", self), o, self)
    def __xor__(self, o): return binop(_logic_or_bits("xor", self), self, o)
    def __rxor__(self, o): return binop(_logic_or_bits("xor", self), o, self)
    def __invert__(self): return UnOp("not" if self.dtype.is_bool else "bitnot", self)
    def __lshift__(self, o): return binop("shl", self, o)
    def __rlshift__(self, o): return binop("shl", o, self)
    def __rshift__(self, o): return binop("shr", self, o)
    def __rrshift__(self, o): return binop("shr", o, self)

    def __bool__(self):
        raise ExprTypeError(
            f"the expression {self} has no truth value in Python; use ms.select, & and | instead of if/and/or")

    def __repr__(self):
        return pseudo_c(self)

    __str__ = __repr__


class Const(Expr):
    """A literal of a given type."""

    __slots__ = ("value",)

    def __init__(self, value, dtype):
        self.dtype = as_dtype(dtype)
        if self.dtype.is_float:
            value = float(value)
        elif self.dtype.is_bool:
            value = bool(value)
        else:
            value = int(value)
            lo, hi = self.dtype.min_value(), self.dtype.max_value()
            if not lo <= value <= hi:
                # wrap like the machine does, so constants behave as values of the type
                span = hi - lo + 1
                value = (value - lo) % span + lo
        self.value = value


class Sym(Expr):
    """A named scalar: a size parameter or a loop iterator of the loop IR."""

    __slots__ = ("name",)

    def __init__(self, name, dtype=int64):
        self.name = name
        self.dtype = as_dtype(dtype)


class Access(Expr):
    """A read of an input, a computation or a buffer at the given indices."""

    __slots__ = ("target", "indices")

    def __init__(self, target, indices):
        self.target = target
        self.indices = tuple(indices)
        self.dtype = target.dtype

    @property
    def children(self):
        return self.indices

    def rebuild(self, children):
        return Access(self.target, children)


class BinOp(Expr):
    """A binary operation; `op` is one of ARITH_OPS, COMPARE_OPS, LOGIC_OPS, BIT_OPS, SHIFT_OPS.

    Both operands have one type, except for shifts, whose amount `b` may be any integer type."""

    __slots__ = ("op", "a", "b")

    def __init__(self, op, a, b):
        self.op, self.a, self.b = op, a, b
        self.dtype = bool_ if op in COMPARE_OPS else a.dtype

    @property
    def children(self):
        return (self.a, self.b)

    def rebuild(self, children):
        return BinOp(self.op, *children)


class UnOp(Expr):
    """Negation ('neg'), logical not of a bool ('not') or bitwise not of an integer ('bitnot')."""

    __slots__ = ("op", "a")

    def __init__(self, op, a):
        if op == "not" and not a.dtype.is_bool:
            raise ExprTypeError(f"~ needs a bool expression, got {a.dtype}: {a}")
        if op == "bitnot" and not a.dtype.is_int:
            raise ExprTypeError(f"bitwise not needs an integer expression, got {a.dtype}: {a}")
        self.op, self.a = op, a
        self.dtype = a.dtype

    @property
    def children(self):
        return (self.a,)

    def rebuild(self, children):
        return UnOp(self.op, children[0])


class Select(Expr):
    """`cond ? t : f`, evaluating both sides."""

    __slots__ = ("cond", "t", "f")

    def __init__(self, cond, t, f):
        self.cond, self.t, self.f = cond, t, f
        self.dtype = t.dtype

    @property
    def children(self):
        return (self.cond, self.t, self.f)

    def rebuild(self, children):
        return Select(*children)


class Cast(Expr):
    """Conversion to `dtype`: floats to ints truncate toward zero, ints wrap."""

    __slots__ = ("a",)

    def __init__(self, dtype, a):
        self.dtype = as_dtype(dtype)
        self.a = a

    @property
    def children(self):
        return (self.a,)

    def rebuild(self, children):
        return Cast(self.dtype, children[0])


class Reinterpret(Expr):
    """The bits of `a` read as `dtype`, a type of the same width (a float's bits as an int, ...)."""

    __slots__ = ("a",)

    def __init__(self, dtype, a):
        self.dtype = as_dtype(dtype)
        self.a = a

    @property
    def children(self):
        return (self.a,)

    def rebuild(self, children):
        return Reinterpret(self.dtype, children[0])


class Call(Expr):
    """A pure function: one of MATH_FUNCS on floats or of INT_FUNCS on integers."""

    __slots__ = ("fn", "args")

    def __init__(self, fn, args):
        self.fn = fn
        self.args = tuple(args)
        self.dtype = self.args[0].dtype

    @property
    def children(self):
        return self.args

    def rebuild(self, children):
        return Call(self.fn, children)


for _cls in (Const, Sym):
    _cls.children = ()


# construction helpers ---------------------------------------------------------

def lift(value, like: DType | None = None) -> Expr:
    """Turn a Python number into a Const of the type `like` (or a default type)."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, bool):
        return Const(value, bool_)
    if isinstance(value, numbers.Integral):
        if like is not None and like.is_bool:
            raise ExprTypeError(f"cannot combine the integer {value} with a bool expression")
        return Const(value, like or index_type)
    if isinstance(value, numbers.Real):
        if like is not None and not like.is_float:
            raise ExprTypeError(
                f"cannot combine the float {value} with a {like} expression; cast one side with ms.cast")
        return Const(value, like or float64)
    raise ExprTypeError(f"not an expression: {value!r}")


def _logic_or_bits(op, e):
    """The operation `&`, `|` or `^` stands for on `e`: logic on bools, bitwise on integers."""
    if e.dtype.is_bool:
        return {"and": "and", "or": "or", "xor": "ne"}[op]
    return "bit" + op


def binop(op, a, b) -> Expr:
    """Build a type-checked binary operation from expressions or Python numbers."""
    if not isinstance(a, Expr) and not isinstance(b, Expr):
        raise ExprTypeError(f"{op} needs at least one expression operand")
    like = a.dtype if isinstance(a, Expr) else b.dtype
    if op in SHIFT_OPS:
        # a Python amount keeps its sign (x << -1 shifts right): it becomes an int32 constant
        a, b = lift(a, like), lift(b)
        if not (a.dtype.is_int and b.dtype.is_int):
            raise ExprTypeError(f"'{_SYMBOL[op]}' needs integer operands, got {a.dtype} and {b.dtype}")
        return BinOp(op, a, b)
    a, b = lift(a, like), lift(b, like)
    if a.dtype != b.dtype:
        raise ExprTypeError(
            f"operands of '{_SYMBOL.get(op, op)}' have different types ({a.dtype} and {b.dtype}) in "
            f"{pseudo_c(a)} {_SYMBOL.get(op, op)} {pseudo_c(b)}; insert ms.cast(...) on one side")
    if op in LOGIC_OPS and not a.dtype.is_bool:
        raise ExprTypeError(f"'{_SYMBOL[op]}' needs bool operands, got {a.dtype}")
    if op in BIT_OPS and not a.dtype.is_int:
        raise ExprTypeError(f"'{_SYMBOL[op]}' needs integer operands, got {a.dtype}")
    if op in ("ediv", "emod") and not a.dtype.is_int:
        if a.dtype.is_float and op == "ediv":
            return Call("floor", [BinOp("div", a, b)])
        raise ExprTypeError(f"{op} needs integer operands, got {a.dtype}")
    if a.dtype.is_bool and op in ARITH_OPS and op not in ("min", "max"):
        raise ExprTypeError(f"arithmetic on bool values: {pseudo_c(a)} {_SYMBOL.get(op, op)} {pseudo_c(b)}")
    return BinOp(op, a, b)


def select(cond, t, f) -> Expr:
    """`t` where `cond` holds, else `f` (both are evaluated)."""
    like = t.dtype if isinstance(t, Expr) else (f.dtype if isinstance(f, Expr) else None)
    cond, t, f = lift(cond), lift(t, like), lift(f, like)
    if not cond.dtype.is_bool:
        raise ExprTypeError(f"select condition must be bool, got {cond.dtype}: {cond}")
    if t.dtype != f.dtype:
        raise ExprTypeError(f"select branches have different types: {t.dtype} and {f.dtype}")
    return Select(cond, t, f)


def min_(a, b) -> Expr:
    """The smaller of two values of one type."""
    return binop("min", a, b)


def max_(a, b) -> Expr:
    """The larger of two values of one type."""
    return binop("max", a, b)


def clamp(e, lo, hi) -> Expr:
    """`min(max(e, lo), hi)`."""
    return min_(max_(e, lo), hi)


def abs_(e) -> Expr:
    """Absolute value (of the same type; integer abs of the minimum wraps)."""
    e = lift(e)
    return select(e < 0, -e, e)


def cast(dtype, e) -> Expr:
    """Explicit conversion to `dtype`."""
    dtype = as_dtype(dtype)
    e = lift(e, dtype if not isinstance(e, Expr) else None)
    return e if e.dtype == dtype else Cast(dtype, e)


def reinterpret(dtype, e) -> Expr:
    """The bits of `e` read as `dtype`, which must have the same width (no bools)."""
    dtype = as_dtype(dtype)
    e = lift(e)
    if dtype.bits != e.dtype.bits or dtype.is_bool or e.dtype.is_bool:
        raise ExprTypeError(f"reinterpret needs two non-bool types of one width, got {e.dtype} to {dtype}")
    if dtype == e.dtype:
        return e
    if dtype.is_int and e.dtype.is_int:
        return Cast(dtype, e)   # integer casts of one width keep the bits
    return Reinterpret(dtype, e)


def floordiv(a, b) -> Expr:
    """Halide's integer division (rounds so the remainder is never negative)."""
    return binop("ediv", a, b)


def floormod(a, b) -> Expr:
    """Halide's integer modulo (never negative)."""
    return binop("emod", a, b)


def call(fn, *args) -> Expr:
    """A math function call on floating-point arguments, or a bit count (INT_FUNCS) of an integer."""
    if fn in INT_FUNCS:
        if len(args) != 1 or not isinstance(args[0], Expr) or not args[0].dtype.is_int:
            raise ExprTypeError(f"{fn} takes one integer expression, got {args}")
        return Call(fn, args)
    if fn not in MATH_FUNCS:
        known = sorted(MATH_FUNCS) + sorted(INT_FUNCS)
        raise ExprTypeError(f"unknown function {fn!r}; known: {', '.join(known)}")
    if len(args) != MATH_FUNCS[fn]:
        raise ExprTypeError(f"{fn} takes {MATH_FUNCS[fn]} argument(s), got {len(args)}")
    like = next((a.dtype for a in args if isinstance(a, Expr)), float32)
    args = [lift(a, like) for a in args]
    for a in args:
        if not a.dtype.is_float:
            raise ExprTypeError(f"{fn} needs floating-point arguments, got {a.dtype} in {a}; cast it first")
        if a.dtype != args[0].dtype:
            raise ExprTypeError(f"{fn} arguments have different types")
    return Call(fn, args)


# traversal --------------------------------------------------------------------

def transform(e: Expr, fn) -> Expr:
    """Rebuild `e` bottom-up; `fn(node)` returns a replacement or None to keep the node."""
    kids = e.children
    if kids:
        new = tuple(transform(k, fn) for k in kids)
        if any(n is not k for n, k in zip(new, kids)):
            e = e.rebuild(new)
    out = fn(e)
    return e if out is None else out


def walk(e: Expr):
    """All nodes of `e`, parents before children."""
    stack = [e]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children))


def walk_distinct(e: Expr):
    """The nodes of `e`, each object once, parents before children: an expression that shares a
    subexpression (a `max` of many values, unrolled into selects) is a DAG whose tree walk is exponential."""
    seen, stack = set(), [e]
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        yield n
        stack.extend(reversed(n.children))


def substitute(e: Expr, mapping: dict) -> Expr:
    """Replace Sym nodes (and Layer I variables) by name with the expressions in `mapping`."""
    def repl(n):
        name = getattr(n, "name", None)
        if isinstance(n, Sym) and name in mapping:
            return mapping[name]
        return None
    return transform(e, repl)


# printing (pseudo-C) ---------------------------------------------------------------------

def _const_str(c: Const):
    if c.dtype.is_bool:
        return "true" if c.value else "false"
    if c.dtype.is_float:
        v = c.value
        if math.isinf(v) or math.isnan(v):
            return f"{v}"
        text = repr(v)
        return text + ("f" if c.dtype == float32 else "")
    return str(c.value)


_UNARY = {"neg": "-", "not": "!", "bitnot": "~"}


def pseudo_c(e: Expr) -> str:
    """The expression in the loop IR's printed notation: C's syntax for what C has, Halide's `//` and
    `floormod`, `reinterpret<T>`, `min`/`max`. For reading and messages; real C comes from backends/c."""
    if isinstance(e, Const):
        return _const_str(e)
    if isinstance(e, Sym):
        return e.name
    if isinstance(e, Access):
        return f"{e.target.name}[{', '.join(pseudo_c(i) for i in e.indices)}]"
    if isinstance(e, BinOp):
        if e.op in ("min", "max"):
            return f"{e.op}({pseudo_c(e.a)}, {pseudo_c(e.b)})"
        if e.op == "emod":
            return f"floormod({pseudo_c(e.a)}, {pseudo_c(e.b)})"
        return f"({pseudo_c(e.a)} {_SYMBOL[e.op]} {pseudo_c(e.b)})"
    if isinstance(e, UnOp):
        return f"{_UNARY[e.op]}{pseudo_c(e.a)}"
    if isinstance(e, Select):
        return f"({pseudo_c(e.cond)} ? {pseudo_c(e.t)} : {pseudo_c(e.f)})"
    if isinstance(e, Cast):
        return f"({e.dtype}){pseudo_c(e.a)}"
    if isinstance(e, Reinterpret):
        return f"reinterpret<{e.dtype}>({pseudo_c(e.a)})"
    if isinstance(e, Call):
        return f"{e.fn}({', '.join(pseudo_c(a) for a in e.args)})"
    name = getattr(e, "name", None)
    if name is not None:
        return name
    raise TypeError(f"unknown expression node {type(e).__name__}")


# simplification -----------------------------------------------------------------

def _fold(n):
    """Fold constants and identities in integer index arithmetic (one node, children already folded)."""
    if not isinstance(n, BinOp) or not n.dtype.is_int or n.op not in ("add", "sub", "mul", "min", "max", "ediv"):
        return None
    a, b = n.a, n.b
    ca = a.value if isinstance(a, Const) else None
    cb = b.value if isinstance(b, Const) else None
    if n.op == "ediv":    # (a positive divisor: Halide's division is Python's floor division there)
        return Const(ca // cb, n.dtype) if ca is not None and cb is not None and cb > 0 else None
    if ca is not None and cb is not None:
        value = {"add": ca + cb, "sub": ca - cb, "mul": ca * cb, "min": min(ca, cb), "max": max(ca, cb)}[n.op]
        return Const(value, n.dtype)
    if n.op in ("add", "sub") and cb == 0:
        return a
    if n.op == "add" and ca == 0:
        return b
    if n.op == "mul" and (ca == 1 or cb == 1):
        return b if ca == 1 else a
    if n.op in ("add", "sub") and cb is not None and isinstance(a, BinOp) and a.op in ("add", "sub") \
            and isinstance(a.b, Const):
        # (x +- c1) +- c2 -> x + (+-c1 +- c2)
        total = (a.b.value if a.op == "add" else -a.b.value) + (cb if n.op == "add" else -cb)
        merged = BinOp("add", a.a, Const(total, n.dtype))
        folded = _fold(merged)
        return merged if folded is None else folded
    if n.op == "add" and cb is not None and cb < 0:
        return BinOp("sub", a, Const(-cb, n.dtype))
    return None


def simplify(e: Expr) -> Expr:
    """`e` with integer constants folded (x + 0, (x + 1) - 1, 2 * 3 ...)."""
    return transform(e, _fold)
