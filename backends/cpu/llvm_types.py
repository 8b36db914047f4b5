"""Mapping of the IR's element types to LLVM types and constants.

bool is `i1` in registers and `i8` in memory (numpy's bool layout).
"""
from __future__ import annotations

from llvmlite import ir

from mascarpone.middleend.types import DType

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
PTR = ir.PointerType()
VOID = ir.VoidType()


def value_type(dt: DType) -> ir.Type:
    """The LLVM type of a value of `dt` held in a register."""
    if dt.is_bool:
        return I1
    if dt.is_float:
        return ir.FloatType() if dt.bits == 32 else ir.DoubleType()
    return ir.IntType(dt.bits)


def memory_type(dt: DType) -> ir.Type:
    """The LLVM type of an element of `dt` stored in a buffer."""
    return I8 if dt.is_bool else value_type(dt)


def constant(dt: DType, value) -> ir.Constant:
    """A register constant of type `dt`; integers are given in the type's own range."""
    ty = value_type(dt)
    if dt.is_bool:
        return ir.Constant(ty, 1 if value else 0)
    if dt.is_float:
        return ir.Constant(ty, float(value))
    # LLVM prints integer constants signed; map unsigned values above the signed range.
    v = int(value) & ((1 << dt.bits) - 1)
    if v >= 1 << (dt.bits - 1):
        v -= 1 << dt.bits
    return ir.Constant(ty, v)


def i64(value: int) -> ir.Constant:
    """An `i64` constant."""
    return ir.Constant(I64, int(value))


def is_vector(value) -> bool:
    """Whether an LLVM value has a vector type."""
    return isinstance(value.type, ir.VectorType)


def lanes(value) -> int:
    """The lane count of a vector value (1 for scalars)."""
    return value.type.count if is_vector(value) else 1


def scalar_type(ty: ir.Type) -> ir.Type:
    """The element type of a vector type, or the type itself."""
    return ty.element if isinstance(ty, ir.VectorType) else ty


def type_suffix(ty: ir.Type) -> str:
    """The overload suffix of an intrinsic for `ty`: f32, f64, i8, v8f32, ..."""
    if isinstance(ty, ir.VectorType):
        return f"v{ty.count}{type_suffix(ty.element)}"
    if isinstance(ty, ir.FloatType):
        return "f32"
    if isinstance(ty, ir.DoubleType):
        return "f64"
    if isinstance(ty, ir.IntType):
        return f"i{ty.width}"
    raise TypeError(f"no intrinsic suffix for {ty}")
