"""The IR's operations on LLVM values, with the semantics of middleend/semantics.py.

Every operation works on scalars and on `<N x T>` vectors alike (lane-wise),
so the scalar and the vectorized code compute exactly the same thing; a scalar
operand meeting a vector one is broadcast. Shifts compare the amount with the
width first, so LLVM never sees an amount that would make its result poison;
float -> int conversions saturate (what `llvm.fptosi.sat` computes, written
as clamps and a plain conversion), which defines every input.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from mascarpone.middleend.errors import NotSupportedError
from mascarpone.middleend.semantics import float_to_int_via
from mascarpone.middleend.types import DType

from .llvm_types import I1, I32, is_vector, lanes, scalar_type, type_suffix, value_type

_INTRINSICS = {"sqrt", "exp", "log", "sin", "cos", "pow", "floor", "ceil", "trunc", "fabs", "maximum", "minimum"}
_LIBM = {"tan", "tanh", "atan2"}
_BIT_COUNTS = {"popcount": "llvm.ctpop", "clz": "llvm.ctlz", "ctz": "llvm.cttz"}
_ICMP = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}
_FCMP_ORDERED = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "=="}


def declare(module: ir.Module, name: str, fnty: ir.FunctionType) -> ir.Function:
    """The function `name` of `module`, declared on first use."""
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, fnty, name)
    return fn


def const_int(v):
    """The integer a constant (or uniform constant vector) holds, else None."""
    if not isinstance(v, ir.Constant) or not isinstance(scalar_type(v.type), ir.IntType):
        return None
    c = v.constant
    if isinstance(c, (list, tuple)):
        vals = {x.constant if isinstance(x, ir.Constant) else x for x in c}
        if len(vals) != 1:
            return None
        c = vals.pop()
    return c if isinstance(c, int) else None


class Ops:
    """Emits the IR's operations with a builder; `fast_math`/`fp_contract` choose float flags."""

    def __init__(self, builder: ir.IRBuilder, *, fast_math=False, fp_contract=True):
        self.b = builder
        self.fast_math = fast_math
        self.fp_contract = fp_contract

    @property
    def module(self):
        return self.b.module

    # flags ------------------------------------------------------------------
    def _fflags(self, fusable=False):
        if self.fast_math:
            return ("fast",)
        if fusable and self.fp_contract:
            return ("contract",)
        return ()

    # shapes -----------------------------------------------------------------
    def broadcast(self, v, width: int):
        """`v` as a `<width x T>` vector (vectors are returned as they are)."""
        if is_vector(v):
            return v
        vt = ir.VectorType(v.type, width)
        if isinstance(v, ir.Constant):
            return ir.Constant(vt, [v.constant] * width)
        first = self.b.insert_element(ir.Constant(vt, ir.Undefined), v, ir.Constant(I32, 0))
        return self.b.shuffle_vector(first, ir.Constant(vt, ir.Undefined),
                                     ir.Constant(ir.VectorType(I32, width), [0] * width))

    def unify(self, *vals):
        """The operands, broadcast to a common lane count."""
        w = max(lanes(v) for v in vals)
        if w == 1:
            return vals
        return tuple(self.broadcast(v, w) for v in vals)

    def splat_const(self, ty, value, like):
        """A constant of scalar type `ty` shaped like `like` (scalar or vector)."""
        if isinstance(ty, ir.IntType):
            value = int(value) & ((1 << ty.width) - 1)
            if ty.width > 1 and value >> (ty.width - 1):
                value -= 1 << ty.width
        if is_vector(like):
            return ir.Constant(ir.VectorType(ty, like.type.count), [value] * like.type.count)
        return ir.Constant(ty, value)

    # arithmetic ---------------------------------------------------------------
    def binary(self, op: str, dt: DType, a, b, *, index=False):
        """`a op b` for op in ARITH_OPS; `index` marks int64 index arithmetic that cannot overflow."""
        a, b = self.unify(a, b)
        B = self.b
        if dt.is_float:
            if op == "add":
                return B.fadd(a, b, flags=self._fflags(True))
            if op == "sub":
                return B.fsub(a, b, flags=self._fflags(True))
            if op == "mul":
                return B.fmul(a, b, flags=self._fflags(True))
            if op == "div":
                return B.fdiv(a, b, flags=self._fflags())
            if op == "mod":
                return B.frem(a, b, flags=self._fflags())
            if op == "min":
                return B.select(B.fcmp_ordered("<", a, b, flags=self._fflags()), a, b)
            if op == "max":
                return B.select(B.fcmp_ordered(">", a, b, flags=self._fflags()), a, b)
            raise NotSupportedError(f"{op} on {dt}")
        if dt.is_bool:
            if op == "min":
                return B.and_(a, b)
            if op == "max":
                return B.or_(a, b)
            raise NotSupportedError(f"{op} on bool")
        nsw = ("nsw",) if index and dt.is_signed and dt.bits == 64 else ()
        if op == "add":
            return B.add(a, b, flags=nsw)
        if op == "sub":
            return B.sub(a, b, flags=nsw)
        if op == "mul":
            return B.mul(a, b, flags=nsw)
        if op in ("min", "max"):
            cmp = B.icmp_signed if dt.is_signed else B.icmp_unsigned
            return B.select(cmp("<" if op == "min" else ">", a, b), a, b)
        if op in ("div", "mod", "ediv", "emod"):
            return self._divide(op, dt, a, b)
        raise NotSupportedError(f"{op} on {dt}")

    def _divide(self, op, dt, a, b):
        B = self.b
        c = const_int(b)
        if not dt.is_signed:
            if c is not None:
                c &= (1 << dt.bits) - 1
                if c == 0:
                    return self.splat_const(a.type if not is_vector(a) else a.type.element, 0, a)
                return B.udiv(a, b) if op in ("div", "ediv") else B.urem(a, b)
            zero = self.splat_const(scalar_type(b.type), 0, b)
            one = self.splat_const(scalar_type(b.type), 1, b)
            is_zero = B.icmp_unsigned("==", b, zero)
            safe = B.select(is_zero, one, b)
            if op in ("div", "ediv"):
                return B.select(is_zero, zero, B.udiv(a, safe))
            return B.urem(a, safe)  # a % 1 == 0 already

        ety = scalar_type(a.type)
        zero = self.splat_const(ety, 0, a)
        one = self.splat_const(ety, 1, a)
        if c is not None:
            if c == 0:
                return zero
            if c == -1:  # avoid the INT_MIN / -1 trap; the quotient wraps
                return B.sub(zero, a) if op in ("div", "ediv") else zero
            if c > 0 and op in ("ediv", "emod") and c & (c - 1) == 0:
                k = c.bit_length() - 1
                if op == "ediv":
                    return B.ashr(a, self.splat_const(ety, k, a))
                return B.and_(a, self.splat_const(ety, c - 1, a))
            q = B.sdiv(a, b) if op in ("div", "ediv") else None
            r = B.srem(a, b) if op != "div" else None
            if op == "div":
                return q
            if op == "mod":
                return r
            neg_r = B.icmp_signed("<", r, zero)
            if op == "ediv":
                adj = self.splat_const(ety, -1 if c > 0 else 1, a)
                return B.add(q, B.select(neg_r, adj, zero))
            return B.add(r, B.select(neg_r, self.splat_const(ety, abs(c), a), zero))

        minus_one = self.splat_const(ety, -1, a)
        is_zero = B.icmp_signed("==", b, zero)
        is_m1 = B.icmp_signed("==", b, minus_one)
        safe = B.select(B.or_(is_zero, is_m1), one, b)
        r = B.srem(a, safe)  # 0 for b in {0, -1}, as required
        if op == "mod":
            return r
        if op == "emod":
            neg_r = B.icmp_signed("<", r, zero)
            b_abs = B.select(B.icmp_signed("<", b, zero), B.sub(zero, b), b)
            return B.add(r, B.select(neg_r, b_abs, zero))
        q = B.sdiv(a, safe)
        q = B.select(is_m1, B.sub(zero, a), q)
        if op == "ediv":
            neg_r = B.icmp_signed("<", r, zero)
            adj = B.select(B.icmp_signed("<", b, zero), one, minus_one)
            q = B.add(q, B.select(neg_r, adj, zero))
        return B.select(is_zero, zero, q)

    def bitwise(self, op: str, a, b):
        """`a & b`, `a | b` or `a ^ b` for op in BIT_OPS."""
        a, b = self.unify(a, b)
        return {"bitand": self.b.and_, "bitor": self.b.or_, "bitxor": self.b.xor}[op](a, b)

    def bitnot(self, a):
        """`~a` of an integer."""
        return self.b.xor(a, self.splat_const(scalar_type(a.type), -1, a))

    def shift(self, op: str, dt: DType, amount_dt: DType, a, b):
        """`a << b` ('shl') or `a >> b` ('shr') with the IR's semantics: `b`, of type `amount_dt`, shifts
        the other way when negative, and amounts of the width or more saturate."""
        a, b = self.unify(a, b)
        B = self.b
        ety, bty = scalar_type(a.type), scalar_type(b.type)
        bits = dt.bits
        left = op == "shl"
        c = const_int(b)
        if c is not None:  # the common case: one plain shift, or a constant
            c &= (1 << amount_dt.bits) - 1
            if amount_dt.is_signed and c >> (amount_dt.bits - 1):
                c -= 1 << amount_dt.bits
            if c < 0:
                left, c = not left, -c
            if left or not dt.is_signed:
                if c >= bits:
                    return self.splat_const(ety, 0, a)
                return (B.shl if left else B.lshr)(a, self.splat_const(ety, c, a))
            return B.ashr(a, self.splat_const(ety, min(c, bits - 1), a))
        negative = None
        magnitude = b  # read as unsigned from here on
        if amount_dt.is_signed:
            negative = B.icmp_signed("<", b, self.splat_const(bty, 0, b))
            magnitude = B.select(negative, B.sub(self.splat_const(bty, 0, b), b), b)
        # the width fits the amount's type (8 bits or more), and a clamped amount fits the value's
        too_far = B.icmp_unsigned(">=", magnitude, self.splat_const(bty, bits, b))
        n = B.select(too_far, self.splat_const(bty, bits - 1, b), magnitude)
        if bty.width > ety.width:
            n = B.trunc(n, a.type)
        elif bty.width < ety.width:
            n = B.zext(n, a.type)
        zero = self.splat_const(ety, 0, a)
        shifted_left = B.select(too_far, zero, B.shl(a, n))
        shifted_right = B.ashr(a, n) if dt.is_signed else B.select(too_far, zero, B.lshr(a, n))
        if negative is None:
            return shifted_left if left else shifted_right
        return B.select(negative, shifted_right, shifted_left) if left else \
            B.select(negative, shifted_left, shifted_right)

    def compare(self, op: str, dt: DType, a, b):
        """`a op b` for op in COMPARE_OPS; a bool (i1) result."""
        a, b = self.unify(a, b)
        if dt.is_float:
            if op == "ne":
                return self.b.fcmp_unordered("!=", a, b, flags=self._fflags())
            return self.b.fcmp_ordered(_FCMP_ORDERED[op], a, b, flags=self._fflags())
        if dt.is_signed:
            return self.b.icmp_signed(_ICMP[op], a, b)
        return self.b.icmp_unsigned(_ICMP[op], a, b)

    def logic(self, op: str, a, b):
        """`and` / `or` of bools (both sides are evaluated)."""
        a, b = self.unify(a, b)
        return self.b.and_(a, b) if op == "and" else self.b.or_(a, b)

    def neg(self, dt: DType, a):
        """`-a` (wrapping for ints)."""
        if dt.is_float:
            return self.b.fneg(a, flags=self._fflags())
        return self.b.sub(self.splat_const(scalar_type(a.type), 0, a), a)

    def not_(self, a):
        """Logical not of a bool."""
        return self.b.xor(a, self.splat_const(I1, 1, a))

    def select(self, c, t, f):
        """`c ? t : f`, lane-wise for vector conditions."""
        if is_vector(c):
            c, t, f = self.unify(c, t, f)
        else:
            t, f = self.unify(t, f)
        return self.b.select(c, t, f)

    # conversions ---------------------------------------------------------------
    def _retype(self, ty, like):
        return ir.VectorType(ty, like.type.count) if is_vector(like) else ty

    def cast(self, src: DType, dst: DType, v):
        """Convert `v` of type `src` to `dst` (see the module docstring for the rules)."""
        if src == dst:
            return v
        B = self.b
        dty = self._retype(value_type(dst), v)
        if dst.is_bool:
            if src.is_float:
                return B.fcmp_unordered("!=", v, self.splat_const(value_type(src), 0.0, v))
            return B.icmp_unsigned("!=", v, self.splat_const(value_type(src), 0, v))
        if src.is_bool:
            return B.uitofp(v, dty) if dst.is_float else B.zext(v, dty)
        if src.is_float and dst.is_float:
            return B.fpext(v, dty) if dst.bits > src.bits else B.fptrunc(v, dty)
        if dst.is_float:
            return B.sitofp(v, dty) if src.is_signed else B.uitofp(v, dty)
        if src.is_float:
            via = float_to_int_via(dst)
            vty = self._retype(value_type(via), v)
            converted = self._saturating_conversion(src, via, v, vty)
            return converted if via == dst else B.trunc(converted, dty)
        if dst.bits == src.bits:
            return v
        if dst.bits < src.bits:
            return B.trunc(v, dty)
        return B.sext(v, dty) if src.is_signed else B.zext(v, dty)

    def _saturating_conversion(self, src: DType, via: DType, v, vty):
        """What `llvm.fpto[su]i.sat` computes, as clamps and one plain conversion: LLVM expands the
        intrinsic with a branch per case (on x86, lane by lane for vectors), where this is a few
        branch-free instructions, in vector registers for vectors. The value is clamped to [lowest,
        the largest float below 2^bits] of `via` (NaN to 0), which converts exactly; values at 2^bits
        and above give the type's maximum."""
        B = self.b
        fty = value_type(src)
        lowest = -2.0 ** (via.bits - 1) if via.is_signed else 0.0
        limit = 2.0 ** (via.bits - 1 if via.is_signed else via.bits)
        below = float(np.nextafter(np.array(limit, dtype=src.numpy), np.array(0, dtype=src.numpy)))
        low = self.splat_const(fty, lowest, v)
        x = B.select(B.fcmp_ordered("<", v, low), low, v)
        high = self.splat_const(fty, below, v)
        x = B.select(B.fcmp_ordered(">", x, high), high, x)
        x = B.select(B.fcmp_unordered("uno", v, v), self.splat_const(fty, 0.0, v), x)
        converted = B.fptosi(x, vty) if via.is_signed else B.fptoui(x, vty)
        top = self.splat_const(scalar_type(vty), (1 << (via.bits - 1 if via.is_signed else via.bits)) - 1, v)
        return B.select(B.fcmp_ordered(">=", v, self.splat_const(fty, limit, v)), top, converted)

    def reinterpret(self, dst: DType, v):
        """The bits of `v` as a value of `dst` (same width, no bools)."""
        return self.b.bitcast(v, self._retype(value_type(dst), v))

    # math ------------------------------------------------------------------------
    def call(self, fn: str, dt: DType, args):
        """A MATH_FUNCS call on float values, or an INT_FUNCS bit count."""
        args = self.unify(*args)
        ty = args[0].type
        if fn in _BIT_COUNTS:
            # ctlz and cttz of 0 give the width when their second argument (is_zero_poison) is false
            extra = [] if fn == "popcount" else [ir.Constant(I1, 0)]
            f = declare(self.module, f"{_BIT_COUNTS[fn]}.{type_suffix(ty)}",
                        ir.FunctionType(ty, [ty] + [I1] * len(extra)))
            return self.b.call(f, list(args) + extra)
        if fn in _INTRINSICS or fn == "round":
            name = "llvm.roundeven" if fn == "round" else f"llvm.{fn}"
            f = declare(self.module, f"{name}.{type_suffix(ty)}", ir.FunctionType(ty, [ty] * len(args)))
            return self.b.call(f, args, fastmath=self._fflags())
        if fn in _LIBM:
            sty = scalar_type(ty)
            f = declare(self.module, fn + ("f" if dt.bits == 32 else ""), ir.FunctionType(sty, [sty] * len(args)))
            if not is_vector(args[0]):
                return self.b.call(f, args)
            out = ir.Constant(ty, ir.Undefined)
            for k in range(ty.count):
                idx = ir.Constant(I32, k)
                r = self.b.call(f, [self.b.extract_element(a, idx) for a in args])
                out = self.b.insert_element(out, r, idx)
            return out
        raise NotSupportedError(f"math function {fn!r} on the CPU back-end")
