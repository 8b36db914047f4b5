"""The loop IR's operations in C, for every C-family dialect: helper functions written once.

Each helper implements one rule of middleend/semantics.py for one element type
(`ms_ediv_i32`, `ms_f2i_f32_u8`, ...) with C's defined behaviour only: no
signed overflow, no shift by the width or more, no out-of-range float
conversion, no division by zero. Operations that C already computes as the
contract says (float arithmetic, comparisons, integer conversions) need no
helper; the printer writes them inline. A translation unit defines the
helpers it uses, each once.
"""
from __future__ import annotations

from mascarpone.middleend.semantics import float_to_int_via
from mascarpone.middleend.types import DType

from .dialect import TYPE_TAGS, CDialect


def helper_name(op: str, *dts: DType) -> str:
    """`ms_<op>_<type tags>`: the name of the helper for `op` on those types."""
    return "_".join(["ms", op] + [TYPE_TAGS[dt.name] for dt in dts])


class Helpers:
    """The helpers one translation unit uses, in order of first use (a helper's own helpers first)."""

    def __init__(self, dialect: CDialect):
        self.d = dialect
        self._defs = {}

    def call(self, op: str, dts: tuple, args: list) -> str:
        """A call of the helper for `op` on the types `dts`, defining it on first use."""
        name = helper_name(op, *dts)
        if name not in self._defs:
            text = getattr(self, "_" + op)(name, *dts)  # defines the helpers it calls first
            self._defs[name] = text
        return f"{name}({', '.join(args)})"

    def definitions(self) -> list:
        """The definitions, as lines, dependencies first."""
        return [line for text in self._defs.values() for line in text.splitlines()]

    def threads(self) -> str:
        """`ms_threads(requested)`: the threads of a parallel loop (0 or less: OpenMP's default)."""
        name = "ms_threads"
        if name not in self._defs:
            self._defs[name] = (f"{self.d.helper_qualifier} int ms_threads(int32_t requested) {{\n"
                                "#ifdef _OPENMP\n"
                                "    return requested > 0 ? requested : omp_get_max_threads();\n"
                                "#else\n"
                                "    (void)requested;\n"
                                "    return 1;\n"
                                "#endif\n"
                                "}\n")
        return name

    # shapes of the definitions ---------------------------------------------------------------
    def _fn(self, name, ret: DType, params: str, body: str) -> str:
        return f"{self.d.helper_qualifier} {self.d.scalar(ret)} {name}({params}) {{\n{body}}}\n"

    def _binary(self, name, dt, body):
        t = self.d.scalar(dt)
        return self._fn(name, dt, f"{t} a, {t} b", body)

    # min / max -------------------------------------------------------------------------------------
    def _min(self, name, dt):
        # floats: a NaN operand gives the second operand
        return self._binary(name, dt, "    return a < b ? a : b;\n")

    def _max(self, name, dt):
        return self._binary(name, dt, "    return a > b ? a : b;\n")

    # IEEE 754-2019 maximum / minimum: a NaN operand gives NaN (their sum), -0.0 is below 0.0
    def _maximum(self, name, dt):
        return self._ieee_extreme(name, dt, ">", "b : a")

    def _minimum(self, name, dt):
        return self._ieee_extreme(name, dt, "<", "a : b")

    def _ieee_extreme(self, name, dt, beats, if_a_negative):
        """`a` where it `beats` `b`; of two equal values (zeros of either sign), `if_a_negative` picks."""
        return self._binary(name, dt, "    if (a != a || b != b) return a + b;\n"
                                      f"    if (a == b) return {self.d.signbit('a')} ? {if_a_negative};\n"
                                      f"    return a {beats} b ? a : b;\n")

    # division ---------------------------------------------------------------------------------------
    def _negate(self, dt, x):
        """`-x` wrapped, as C text (the minimum negates to itself)."""
        return f"({self.d.scalar(dt)})(0u - ({self.d.work(dt)}){x})"

    def _div(self, name, dt):
        t = self.d.scalar(dt)
        if not dt.is_signed:
            return self._binary(name, dt, f"    return b == 0 ? 0 : ({t})(a / b);\n")
        return self._binary(name, dt, f"    if (b == 0) return 0;\n"
                                      f"    if (b == -1) return {self._negate(dt, 'a')};\n"
                                      f"    return ({t})(a / b);\n")

    def _mod(self, name, dt):
        t = self.d.scalar(dt)
        if not dt.is_signed:
            return self._binary(name, dt, f"    return b == 0 ? 0 : ({t})(a % b);\n")
        return self._binary(name, dt, f"    if (b == 0 || b == -1) return 0;\n"
                                      f"    return ({t})(a % b);\n")

    def _ediv(self, name, dt):
        if not dt.is_signed:
            return self._div(name, dt)
        t = self.d.scalar(dt)
        # the truncated quotient, one step toward -oo (b > 0) or +oo (b < 0) where the remainder is
        # negative: the Euclidean quotient; |q| < |a| there, so q -+ 1 does not overflow
        return self._binary(name, dt, f"    if (b == 0) return 0;\n"
                                      f"    if (b == -1) return {self._negate(dt, 'a')};\n"
                                      f"    {t} q = ({t})(a / b), r = ({t})(a % b);\n"
                                      f"    if (r < 0) q = ({t})(b > 0 ? q - 1 : q + 1);\n"
                                      f"    return q;\n")

    def _emod(self, name, dt):
        if not dt.is_signed:
            return self._mod(name, dt)
        t, w = self.d.scalar(dt), self.d.work(dt)
        # r + |b|, wrapped: |INT_MIN| wraps to INT_MIN and the sum comes out right modulo 2^width
        return self._binary(name, dt, f"    if (b == 0 || b == -1) return 0;\n"
                                      f"    {t} r = ({t})(a % b);\n"
                                      f"    if (r < 0) r = ({t})(({w})r + (b < 0 ? 0u - ({w})b : ({w})b));\n"
                                      f"    return r;\n")

    # shifts ---------------------------------------------------------------------------------------------
    def _lsh(self, name, dt):
        """`a << n` for an amount `n` read as unsigned: 0 from the width on."""
        t, w = self.d.scalar(dt), self.d.work(dt)
        return self._fn(name, dt, f"{t} a, uint64_t n", f"    return n >= {dt.bits} ? 0 : ({t})(({w})a << n);\n")

    def _rsh(self, name, dt):
        """`a >> n` for an amount `n` read as unsigned: arithmetic for signed `a` (written with `~` so
        that no negative value is shifted), saturating at the width."""
        t = self.d.scalar(dt)
        if not dt.is_signed:
            return self._fn(name, dt, f"{t} a, uint64_t n", f"    return n >= {dt.bits} ? 0 : ({t})(a >> n);\n")
        return self._fn(name, dt, f"{t} a, uint64_t n", f"    if (n >= {dt.bits}) n = {dt.bits - 1};\n"
                                                      f"    return a < 0 ? ({t})~(~a >> n) : ({t})(a >> n);\n")

    def _shift(self, name, dt, amount, toward, away):
        t, ta = self.d.scalar(dt), self.d.scalar(amount)
        forward = self.call(toward, (dt,), ["a", "(uint64_t)b"])
        if not amount.is_signed:
            return self._fn(name, dt, f"{t} a, {ta} b", f"    return {forward};\n")
        # a negative amount shifts the other way, by its magnitude (computed without overflow)
        backward = self.call(away, (dt,), ["a", "0u - (uint64_t)(int64_t)b"])
        return self._fn(name, dt, f"{t} a, {ta} b", f"    return b < 0 ? {backward} : {forward};\n")

    def _shl(self, name, dt, amount):
        return self._shift(name, dt, amount, "lsh", "rsh")

    def _shr(self, name, dt, amount):
        return self._shift(name, dt, amount, "rsh", "lsh")

    # bit counts -------------------------------------------------------------------------------------------
    def _unary(self, name, dt, body):
        return self._fn(name, dt, f"{self.d.scalar(dt)} a", body)

    def _popcount(self, name, dt):
        u = self.d.unsigned(dt)
        return self._unary(name, dt, f"    {u} u = ({u})a;\n"
                                     f"    int n = 0;\n"
                                     f"    while (u) {{ u &= ({u})(u - 1); n++; }}\n"
                                     f"    return n;\n")

    def _clz(self, name, dt):
        u = self.d.unsigned(dt)
        return self._unary(name, dt, f"    {u} u = ({u})a;\n"
                                     f"    int n = {dt.bits};\n"
                                     f"    while (u) {{ u >>= 1; n--; }}\n"
                                     f"    return n;\n")

    def _ctz(self, name, dt):
        u = self.d.unsigned(dt)
        return self._unary(name, dt, f"    {u} u = ({u})a;\n"
                                     f"    int n = 0;\n"
                                     f"    if (!u) return {dt.bits};\n"
                                     f"    while (!(u & 1u)) {{ u >>= 1; n++; }}\n"
                                     f"    return n;\n")

    # conversions ------------------------------------------------------------------------------------------
    def _f2i(self, name, src, dst):
        """float -> integer: toward zero, saturating at the range of `float_to_int_via(dst)`, NaN -> 0,
        then wrapped to `dst`. The bounds are powers of two, exact in either float type."""
        via = float_to_int_via(dst)
        lo, hi = via.min_value(), via.max_value()
        v = self.d.scalar(via)
        low_test = f"x <= {self.d.float_literal(float(lo), src)}" if via.is_signed else \
            f"x <= {self.d.float_literal(-1.0, src)}"
        body = (f"    {v} v = x != x ? 0 : {low_test} ? {self.d.int_literal(lo, via)} : "
                f"x >= {self.d.float_literal(float(hi + 1), src)} ? {self.d.int_literal(hi, via)} : ({v})x;\n"
                f"    return ({self.d.scalar(dst)})v;\n")
        return self._fn(name, dst, f"{self.d.scalar(src)} x", body)

    def _bits(self, name, src, dst):
        """The bits of `x` read as `dst` (spelled by the dialect)."""
        return self._fn(name, dst, f"{self.d.scalar(src)} x", self.d.bits_body(src, dst))

