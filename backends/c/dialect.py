"""What differs between the C-family languages the printer writes: a dialect object per target.

`CDialect` is portable C99 with OpenMP pragmas; the GPU, HLS and MPI back-ends
subclass it and change only what their language spells differently (types,
qualifiers, literals, math names, how a tagged loop is written). How each
operation computes is not here: it is written once, in backends/c/semantics.py.
"""
from __future__ import annotations

import math

import numpy as np

from mascarpone.backends.common.cheader import C_TYPES
from mascarpone.middleend.types import DType

#: short names of the element types, used in helper names (ms_div_i32, ms_f2i_f32_u8, ...)
TYPE_TAGS = {"int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8", "uint16": "u16",
             "uint32": "u32", "uint64": "u64", "float32": "f32", "float64": "f64", "bool": "b"}

#: float functions of the loop IR and their C library names (float64; float32 adds `f`)
MATH_NAMES = {"sqrt": "sqrt", "exp": "exp", "log": "log", "sin": "sin", "cos": "cos", "tan": "tan",
              "tanh": "tanh", "floor": "floor", "ceil": "ceil", "trunc": "trunc", "fabs": "fabs",
              "pow": "pow", "atan2": "atan2", "fmod": "fmod",
              # rint rounds half to even in the default rounding mode, which the code never changes
              "round": "rint"}


class CDialect:
    """Portable C99: <stdint.h> types, `static inline` helpers, OpenMP pragmas for tagged loops."""

    name = "c"
    #: qualifier of the printer's helper functions
    helper_qualifier = "static inline"
    #: written after `*` in pointer arguments that never alias
    restrict = "restrict"

    def includes(self) -> list:
        """The #include lines (and any other preamble) of a translation unit."""
        return ["#include <math.h>", "#include <stdbool.h>", "#include <stdint.h>", "#include <stdlib.h>",
                "#include <string.h>", "#ifdef _OPENMP", "#include <omp.h>", "#endif"]

    # types -----------------------------------------------------------------------------------
    def scalar(self, dt: DType) -> str:
        """The type of a value of `dt` in a variable (bool is `bool`)."""
        return "bool" if dt.is_bool else C_TYPES[dt.name]

    def memory(self, dt: DType) -> str:
        """The type of an element of `dt` in a buffer (bool is a 0/1 byte)."""
        return C_TYPES[dt.name]

    def unsigned(self, dt: DType) -> str:
        """The unsigned type of the same width as the integer type `dt`."""
        return C_TYPES["u" + dt.name if dt.is_signed else dt.name]

    def work(self, dt: DType) -> str:
        """The unsigned type wrapping arithmetic on `dt` is done in: at least 32 bits, so that C's integer
        promotions never turn it into signed `int` arithmetic that could overflow."""
        return C_TYPES["uint64"] if dt.bits > 32 else C_TYPES["uint32"]

    # literals ----------------------------------------------------------------------------------
    def int_literal(self, value: int, dt: DType) -> str:
        """An integer constant of `dt` holding `value` (in the type's range), typed wide enough."""
        if -(1 << 31) < value < (1 << 31):
            return str(value)
        if value == -(1 << 63):
            return "(-9223372036854775807LL - 1)"
        return f"{value}ULL" if value >= (1 << 63) else f"{value}LL"

    def float_literal(self, value: float, dt: DType) -> str:
        """A float constant of `dt` equal to `value` rounded to the type (exact: shortest round-trip
        decimal of the rounded value)."""
        if math.isnan(value):
            return "NAN" if dt.bits == 32 else "((double)NAN)"
        if math.isinf(value):
            text = "INFINITY" if dt.bits == 32 else "((double)INFINITY)"
            return text if value > 0 else f"(-{text})"
        if dt.bits == 32:
            text = str(np.float32(value))
            suffix = "f"
        else:
            text = repr(float(value))
            suffix = ""
        if "e" not in text and "." not in text:
            text += ".0"
        text += suffix
        return f"({text})" if text.startswith("-") else text

    def bool_literal(self, value: bool) -> str:
        return "true" if value else "false"

    # calls ---------------------------------------------------------------------------------------
    def math_call(self, fn: str, dt: DType, args: list) -> str:
        """A call of the C library's float function for the loop IR function `fn`."""
        name = MATH_NAMES[fn] + ("f" if dt.bits == 32 else "")
        return f"{name}({', '.join(args)})"

    def signbit(self, x: str) -> str:
        """Whether the float `x` has its sign bit set (-0.0 and negative NaNs included)."""
        return f"signbit({x})"

    def bits_body(self, src: DType, dst: DType) -> str:
        """The body of a helper returning the bits of its argument `x` (of `src`) read as `dst`, a type
        of the same width (memcpy: the defined way to pun in C)."""
        return f"    {self.scalar(dst)} y;\n    memcpy(&y, &x, sizeof y);\n    return y;\n"

    # cache hints ---------------------------------------------------------------------------------
    #: whether code in this dialect carries the prefetch hints of promoted accumulator tiles
    prefetches = True

    #: whether temporaries are allocated once per thread rather than once per iteration of the serial
    #: loops around them (backends/common/hoist.py); an FPGA's and a GPU's buffers are placed otherwise
    hoists_allocations = True

    def prefetch(self, address: str, level: int) -> list:
        """Lines asking for the cache line at `address` (an integer expression) in cache `level`
        (1: the nearest): GCC's and Clang's builtin, nothing for another compiler."""
        return ["#if defined(__GNUC__)", f"__builtin_prefetch((const void *)({address}), 0, {max(1, 4 - level)});",
                "#endif"]

    # loops ---------------------------------------------------------------------------------------
    #: whether parallel loops run on the host's threads (OpenMP); the outermost of a nest does, so
    #: perfect nests of them are collapsed into one (backends/common/collapse.py)
    threads_parallel_loops = True

    def simd_pragma(self, factor: int) -> str:
        """The line before a vector loop: its iterations carry no dependence (checked by the
        middle-end), so the compiler may run `factor` of them in SIMD lanes."""
        return f"#pragma omp simd simdlen({factor})"

    def unroll_pragma(self, factor: int) -> str:
        """The line before a loop to unroll `factor` times."""
        return f"#pragma GCC unroll {factor}"

    def parallel_pragma(self, threads: str, chunk: str) -> str:
        """The line before a parallel loop run by `threads` threads in dynamic chunks of `chunk`."""
        return f"#pragma omp parallel for num_threads({threads}) schedule(dynamic, {chunk})"

    def atomic_write_pragma(self) -> str:
        """The line before a store several threads may make at once."""
        return "#pragma omp atomic write"
