"""The loop IR's contract: how every operation computes, the same on every target.

Each back-end implements these rules in its own language (LLVM IR in
backends/cpu/ops.py, C in backends/c/semantics.py, Python in
backends/common/evaluate.py for sizes); tests/test_semantics.py checks every
operation on every element type against numpy on each target, and the
differential tests compare whole programs across targets bit for bit.

Types. Every node has one element type; nothing is promoted implicitly.
bool is a value 0/1; in memory a bool element is one byte holding 0 or 1
(numpy's layout), and a non-zero byte reads as true.

Integers (int8..int64, uint8..uint64):
  * `add sub mul neg` wrap at the type's width (two's complement).
  * `div mod` truncate toward zero (C, Julia's `div`/`rem`); `ediv emod` are
    Halide's: the remainder `a - b*q` is never negative. For unsigned types
    the two kinds agree.
  * Division or remainder by zero gives 0, in both kinds (Halide's rule).
    The quotient of the type's minimum by -1 wraps (it is the minimum); the
    remainder is 0.
  * `min max` order by value (signed or unsigned as the type says).
  * `bitand bitor bitxor bitnot` act on the bits.
  * `shl shr`: `a << b` is `a * 2**b` wrapped, `a >> b` is `floor(a / 2**b)`
    (arithmetic for signed `a`, logical for unsigned). The amount `b` is an
    integer of any type, read with its own signedness; a negative amount
    shifts the other way; an amount of the width or more gives 0 (or -1 for
    a negative `a` shifted right).
  * `popcount clz ctz` count bits of the argument's type; clz and ctz of 0
    are the width.
  * Comparisons give bool; `and or not` act on bools, both sides evaluated.

Floats (float32, float64): IEEE 754 binary32/binary64, round to nearest even.
  * `add sub mul div` are correctly rounded. Nothing is reassociated.
    `fp_contract` (an option of the targets) may fuse a multiply and an
    add into one FMA with a single rounding; off, every operation rounds.
  * `mod` is C's `fmod` (exact).
  * `min(a, b)` is `a < b ? a : b` and `max(a, b)` is `a > b ? a : b`: with
    a NaN operand they give the second operand.
  * `maximum(a, b)` and `minimum(a, b)` are IEEE 754-2019's (Julia's `max`
    and `min` of floats, LLVM's `llvm.maximum`): a NaN operand gives NaN,
    and -0.0 is below 0.0.
  * `lt le gt ge eq` are ordered (false when either side is NaN); `ne` is
    unordered (true when either side is NaN).
  * `sqrt floor ceil trunc fabs maximum minimum` are exact; `round` rounds half to even; the
    others (`exp log sin cos tan tanh pow atan2`) are those of the C library
    (glibc's libm on Linux), so results are bit-equal across the targets that
    call it.

Conversions (`Cast`):
  * integer -> integer: the value modulo 2**width, read in the target type.
  * integer or float -> bool: `a != 0` (NaN -> true); bool -> number: 0 or 1.
  * integer -> float, float -> float: rounded to nearest even.
  * float -> integer: rounded toward zero, then converted to the type
    `float_to_int_via(dst)` saturating at its range (NaN -> 0), then wrapped
    to `dst` (see that function). In range this is C's conversion; outside it
    every target gives the same defined value.
  * `Reinterpret`: the same bits read as another type of the same width.

Indices and loops. Loop bounds, iterators, size parameters and buffer indices
are int64 in index context; the middle-end guarantees they never overflow,
so targets may compute them without wrap-around checks. A `Sym` whose type is
narrower is read as that type (a truncation). `Select` evaluates both sides;
no operation has side effects, so an expression's value depends only on its
operands.
"""
from __future__ import annotations

from .types import DType, int32, int64


def float_to_int_via(dst: DType) -> DType:
    """The integer type a float converts to, saturating, on its way to `dst`: int32 for types narrower
    than 32 bits and int64 for uint32 (then wrapped to `dst`, as numpy's casts do on in-range values of
    those wider types), `dst` itself for int32, int64 and uint64."""
    if dst.bits < 32:
        return int32
    if dst.bits == 32 and not dst.is_signed:
        return int64
    return dst
