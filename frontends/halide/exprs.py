"""Halide expressions (decoded Nodes) to typed mascarpone expressions.

Halide's IR is already explicitly typed, so the translation is node for node:
integer `/` and `%` become the floor kinds (`ediv`, `emod`), float `%` is
`a - b * floor(a / b)`, a float divided by a constant (in `/` and in that
quotient) is multiplied by the constant's reciprocal rounded to its type, as
Halide computes it (its `strict_float` keeps the division: `strict_div`),
intrinsics that only guide Halide's compiler (`likely`, `strict_float`)
vanish, `promise_clamped` becomes the clamp it promises, bitwise intrinsics
become the IR's bitwise operations and `lerp` is expanded into the arithmetic Halide lowers it to. Accesses to Funcs and images
reverse the argument order, because Halide's dimension 0 is the innermost and
mascarpone's buffers are row-major.
"""
from __future__ import annotations

import numpy as np

import mascarpone.middleend.expr as E
from mascarpone.middleend.affine import const_value
from mascarpone.middleend.errors import ExprTypeError, NotSupportedError
from mascarpone.middleend.types import DType, bool_, float32, float64, int8, int16, int32, int64, uint8, uint16, uint32, uint64

from .errors import HalideFormatError
from .scalars import evaluate
from .schema import CALL_TYPES, TYPE_CODES

_INTS = {8: int8, 16: int16, 32: int32, 64: int64}
_UINTS = {1: bool_, 8: uint8, 16: uint16, 32: uint32, 64: uint64}
_FLOATS = {32: float32, 64: float64}

#: Halide's math externs (`sqrt_f32`, ...) and the mascarpone functions they are.
_MATH = {"sqrt": "sqrt", "exp": "exp", "log": "log", "sin": "sin", "cos": "cos", "tan": "tan", "tanh": "tanh",
         "floor": "floor", "ceil": "ceil", "round": "round", "trunc": "trunc", "pow": "pow", "atan2": "atan2",
         "abs": "fabs"}
_IDENTITY_INTRINSICS = {"likely", "likely_if_innermost", "strict_float", "promise_clamped_identity"}
#: what `strict_float` makes of float arithmetic
_STRICT = {"strict_add": "add", "strict_sub": "sub", "strict_mul": "mul", "strict_div": "div", "strict_min": "min",
           "strict_max": "max", "strict_lt": "lt", "strict_le": "le", "strict_eq": "eq"}
_CLAMP_INTRINSICS = {"promise_clamped", "unsafe_promise_clamped"}
_BITWISE = {"bitwise_and": "bitand", "bitwise_or": "bitor", "bitwise_xor": "bitxor"}
#: on bools (UInt(1)) the bitwise intrinsics are logic
_BOOL_BITWISE = {"bitwise_and": "and", "bitwise_or": "or", "bitwise_xor": "ne"}
_SHIFTS = {"shift_left": "shl", "shift_right": "shr"}
_BIT_COUNTS = {"popcount": "popcount", "count_leading_zeros": "clz", "count_trailing_zeros": "ctz"}


def _reciprocal(divisor):
    """1 / c as a constant of c's float type, for a divisor c that Halide folds to a constant and whose
    reciprocal is a normal number, else None: Halide's code generator divides by such a constant as a multiply
    by its rounded reciprocal (so `x / 3.0f` differs from IEEE division in about a third of the quotients,
    by one ulp)."""
    if not divisor.dtype.is_float or not _folds(divisor):
        return None
    c = evaluate(divisor, {})
    with np.errstate(all="ignore"):
        r = c.dtype.type(1) / c
    if not np.isfinite(r) or abs(r) < np.finfo(r.dtype).tiny:
        return None
    return E.Const(float(r), divisor.dtype)


def _float_quotient(a, b):
    """a / b for floats as Halide computes it: by a constant, a multiply by its reciprocal (_reciprocal)."""
    reciprocal = _reciprocal(b)
    return E.binop("div", a, b) if reciprocal is None else E.binop("mul", a, reciprocal)


def _folds(e) -> bool:
    """Whether `e` is arithmetic on constants alone (which Halide's simplifier folds to one constant)."""
    if isinstance(e, E.Const):
        return True
    if isinstance(e, E.BinOp) and e.op in ("add", "sub", "mul", "div", "min", "max"):
        return _folds(e.a) and _folds(e.b)
    if isinstance(e, (E.Cast, E.UnOp)):
        return _folds(e.a)
    return False


def dtype_of(t, what="a value") -> DType:
    """The mascarpone type of a Halide Type node (scalars only)."""
    if t is None:
        raise HalideFormatError(f"{what} has no type")
    if t.lanes not in (0, 1):
        raise NotSupportedError(f"{what} is a vector of {t.lanes} lanes; only scalar definitions are supported")
    code = TYPE_CODES[t.code] if 0 <= t.code < len(TYPE_CODES) else str(t.code)
    table = {"Int": _INTS, "UInt": _UINTS, "Float": _FLOATS}.get(code)
    if table is None or t.bits not in table:
        raise NotSupportedError(f"{what} has Halide type {code}({t.bits}), which has no mascarpone equivalent")
    return table[t.bits]


class Translator:
    """Translates the expressions of one Func's definitions.

    `scope` provides what names mean: `var(name)`, `func_call(node, args)`,
    `image_call(node, args)`, `param(node)`; `where` names the Func and
    definition for error messages.
    """

    def __init__(self, scope, where):
        self.scope = scope
        self.where = where
        self.lets = {}

    def unsupported(self, feature):
        return NotSupportedError(f"{self.where}: {feature} is not supported by the Halide front-end")

    def __call__(self, node) -> E.Expr:
        if node is None or node.kind == "UndefinedExpr":
            raise self.unsupported("an undefined expression (hl.undef)")
        method = getattr(self, "_" + node.kind, None)
        if method is None:
            raise self.unsupported(f"the expression node {node.kind}")
        try:
            return method(node)
        except ExprTypeError as err:
            # Halide's IR is typed consistently; operands that do not fit come from corrupted bytes
            raise HalideFormatError(f"{self.where}: its {node.kind} has operands of types that do not fit "
                                    f"({err})") from None

    # leaves -----------------------------------------------------------------
    def _IntImm(self, n):
        return E.Const(n.value, dtype_of(n.type, self.where))

    def _UIntImm(self, n):
        return E.Const(n.value, dtype_of(n.type, self.where))

    def _FloatImm(self, n):
        return E.Const(n.value, dtype_of(n.type, self.where))

    def _StringImm(self, n):
        raise self.unsupported(f"the string {n.value!r} in an expression")

    def _Variable(self, n):
        if n.name in self.lets:
            return self.lets[n.name]
        if n.param_name or n.image_name:
            return self.scope.param(n, dtype_of(n.type, self.where))
        return self.scope.var(n.name, dtype_of(n.type, self.where))

    def _Let(self, n):
        value = self(n.value)
        saved = self.lets.get(n.name)
        self.lets[n.name] = value
        try:
            return self(n.body)
        finally:
            if saved is None:
                self.lets.pop(n.name, None)
            else:
                self.lets[n.name] = saved

    # arithmetic ---------------------------------------------------------------
    def _bin(self, op, n):
        return E.binop(op, self(n.a), self(n.b))

    def _Add(self, n): return self._bin("add", n)
    def _Sub(self, n): return self._bin("sub", n)
    def _Mul(self, n): return self._bin("mul", n)
    def _Min(self, n): return self._bin("min", n)
    def _Max(self, n): return self._bin("max", n)
    def _EQ(self, n): return self._bin("eq", n)
    def _NE(self, n): return self._bin("ne", n)
    def _LT(self, n): return self._bin("lt", n)
    def _LE(self, n): return self._bin("le", n)
    def _GT(self, n): return self._bin("gt", n)
    def _GE(self, n): return self._bin("ge", n)
    def _And(self, n): return self._bin("and", n)
    def _Or(self, n): return self._bin("or", n)

    def _Div(self, n):
        a, b = self(n.a), self(n.b)
        return _float_quotient(a, b) if a.dtype.is_float else E.binop("ediv", a, b)

    def _Mod(self, n):
        a, b = self(n.a), self(n.b)
        if a.dtype.is_float:
            return a - b * E.call("floor", _float_quotient(a, b))
        return E.binop("emod", a, b)

    def _Not(self, n):
        return ~self(n.a)

    def _Select(self, n):
        return E.select(self(n.condition), self(n.true_value), self(n.false_value))

    def _Cast(self, n):
        dtype = dtype_of(n.type, self.where)
        value = self(n.value)
        if dtype.is_bool and not value.dtype.is_bool:
            return value != E.lift(0, value.dtype) if value.dtype.is_int else value != E.Const(0.0, value.dtype)
        return E.cast(dtype, value)

    # calls ----------------------------------------------------------------------
    def _Call(self, n):
        kind = CALL_TYPES[n.call_type] if n.call_type < len(CALL_TYPES) else str(n.call_type)
        if kind == "Halide":
            return self.scope.func_call(n, [self(a) for a in n.args])
        if kind == "Image":
            return self.scope.image_call(n, [self(a) for a in n.args])
        if kind in ("Extern", "PureExtern", "ExternCPlusPlus"):
            return self._extern(n)
        return self._intrinsic(n)

    def _extern(self, n):
        base, _, suffix = n.name.rpartition("_")
        if suffix in ("f32", "f64") and base in _MATH:
            args = [self(a) for a in n.args]
            return E.call(_MATH[base], *args)
        if n.name in ("is_nan_f32", "is_nan_f64"):
            a = self(n.args[0])
            return a != a
        raise self.unsupported(f"the extern function {n.name}")

    def _intrinsic(self, n):
        name = n.name
        if name in _IDENTITY_INTRINSICS:
            return self(n.args[0])
        if name in _STRICT:    # IEEE operations (a division stays a division)
            return E.binop(_STRICT[name], *(self(a) for a in n.args))
        if name in _CLAMP_INTRINSICS:
            value, lo, hi = (self(a) for a in n.args)
            return E.clamp(value, lo, hi)
        if name == "abs":
            a = self(n.args[0])
            out = dtype_of(n.type, self.where)
            if a.dtype.is_float:
                return E.call("fabs", a)
            return E.cast(out, E.select(a < 0, -a, a))
        if name == "absd":
            a, b = self(n.args[0]), self(n.args[1])
            out = dtype_of(n.type, self.where)
            if a.dtype.is_float:
                return E.call("fabs", a - b)
            return E.select(a < b, E.cast(out, b) - E.cast(out, a), E.cast(out, a) - E.cast(out, b))
        if name in _BITWISE:
            a, b = self(n.args[0]), self(n.args[1])
            return E.binop((_BOOL_BITWISE if a.dtype.is_bool else _BITWISE)[name], a, b)
        if name == "bitwise_not":
            return ~self(n.args[0])
        if name in _SHIFTS:
            return self._shift(_SHIFTS[name], n)
        if name in _BIT_COUNTS:
            a = self(n.args[0])
            if a.dtype.is_bool:   # counts of one bit: popcount is the bit, clz and ctz its negation
                return a if name == "popcount" else ~a
            return E.cast(dtype_of(n.type, self.where), E.call(_BIT_COUNTS[name], a))
        if name == "lerp":
            return self._lerp(n)
        if name == "mux":
            index, *values = (self(a) for a in n.args)
            out = values[-1]
            # an index out of range picks the last value, as in Halide
            for k in range(len(values) - 2, -1, -1):
                out = E.select(index == E.lift(k, index.dtype), values[k], out)
            return out
        if name == "if_then_else" and len(n.args) == 3:
            return E.select(self(n.args[0]), self(n.args[1]), self(n.args[2]))
        if name == "return_second":
            return self(n.args[1])
        raise self.unsupported(f"the intrinsic {name}")

    def _shift(self, op, n):
        a, b = self(n.args[0]), self(n.args[1])
        amount = const_value(b)
        if amount is not None and abs(amount) >= a.dtype.bits:
            # Halide refuses these when it compiles (its shifts are undefined there); ours would saturate
            raise self.unsupported(f"shifting a {a.dtype} value by {amount} (Halide rejects constant shifts by "
                                   f"the width or more)")
        return E.binop(op, a, b)

    def _lerp(self, n):
        zero, one, weight = (self(a) for a in n.args)
        vt, wt = zero.dtype, weight.dtype
        if vt.is_bool:
            half = E.Const(0.5, wt) if wt.is_float else E.Const(wt.max_value() // 2, wt)
            return E.select(weight > half, one, zero)
        if vt.is_float:
            if wt.is_float:
                # a weight of another width makes Halide compute in the wider type
                t = vt if vt.bits >= wt.bits else wt
                zero, one, w = E.cast(t, zero), E.cast(t, one), E.cast(t, weight)
            else:
                t, w = vt, E.cast(vt, weight) / E.Const(2.0 ** wt.bits - 1, vt)
            return E.cast(vt, zero * (E.Const(1.0, t) - w) + one * w)
        if vt.bits not in (8, 16, 32):
            raise self.unsupported(f"lerp of {vt} values")
        return _integer_lerp(zero, one, weight)

    def _Reinterpret(self, n):
        dtype = dtype_of(n.type, self.where)
        value = self(n.value)
        if dtype.is_bool or value.dtype.is_bool or dtype.bits != value.dtype.bits:
            raise self.unsupported(f"reinterpret between {value.dtype} and {dtype}")
        return E.reinterpret(dtype, value)


def _integer_lerp(zero, one, weight):
    """Halide's integer lerp: `round((zero * (M - w) + one * w) / M)` with M = 2**bits - 1, computed on
    unsigned values (signed ones offset by 2**(bits-1)) with the weight rescaled to `bits` bits."""
    vt, wt = zero.dtype, weight.dtype
    bits = vt.bits
    u, wide = _UINTS[bits], _UINTS[2 * bits]
    top = (1 << bits) - 1
    if vt.is_signed:
        # offset binary keeps the order, so the unsigned result maps back by the same offset
        bias = E.Const(1 << (bits - 1), u)
        zero, one = E.cast(u, zero) + bias, E.cast(u, one) + bias
    if wt.is_float:
        # Halide multiplies by 2**32 - 1 in double for 32-bit values, in the weight's type otherwise
        scale = E.cast(float64, weight) * E.Const(float(top), float64) if bits == 32 else E.Const(top, wt) * weight
        w = E.cast(u, scale)
    elif wt.bits == bits:
        w = weight
    elif wt.bits < bits:
        # (2**bits - 1) / (2**m - 1) is an integer: 257 for 8 to 16 bits, 65537 for 16 to 32, ...
        w = E.cast(u, weight) * E.Const(top // ((1 << wt.bits) - 1), u)
    else:
        w = E.cast(u, weight / E.Const(((1 << wt.bits) - 1) // top, wt))
    inverse = E.Const(top, u) - w
    total = E.cast(wide, zero) * E.cast(wide, inverse) + E.cast(wide, one) * E.cast(wide, w)
    # round to nearest; M is odd, so there are no ties
    out = E.cast(u, (total + E.Const(top // 2, wide)) / E.Const(top, wide))
    if vt.is_signed:
        out = E.cast(vt, out + bias)
    return out
