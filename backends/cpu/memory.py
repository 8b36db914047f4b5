"""Buffers in generated code: dense row-major addressing, element loads and stores, temporaries.

A buffer is seen through a `BufView`: its base pointer and the extents of its
dimensions as i64 values computed once (at function entry for arguments, at
the `Allocate` for temporaries), so address arithmetic in loops only
multiplies by loop-invariant values.
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from mascarpone.middleend.types import DType

from .llvm_types import I8, I32, I64, PTR, VOID, i64, memory_type
from .ops import declare

#: Alignment of temporaries, in bytes (a cache line; enough for any vector load).
ALIGN = 64


@dataclass
class BufView:
    """A buffer as generated code sees it."""

    name: str
    dtype: DType
    ptr: ir.Value
    extents: list  # one i64 value per dimension
    #: Buffer.padded_lanes: whole vectors of this many lanes may be loaded and stored along the last
    #: dimension, past its last element (a register tile's own padding)
    padded_lanes: int = 0


def flat_index(B: ir.IRBuilder, view: BufView, indices):
    """`i0*s0 + i1*s1 + ... + in` with the strides `sk = e(k+1)*...*en`, with `nsw`: index arithmetic
    never overflows. (Written as a sum of terms rather than Horner's `(i0*e1 + i1)*e2 + ...`, so the
    terms of indices invariant in a loop leave it, and an index that varies (a scatter's bin) costs
    one multiplication by a stride the loops around computed once.)"""
    if not indices:
        return i64(0)
    flat, stride = indices[-1], None
    for ext, idx in zip(reversed(view.extents[1:]), reversed(indices[:-1])):
        stride = ext if stride is None else B.mul(stride, ext, flags=("nsw",))
        flat = B.add(B.mul(idx, stride, flags=("nsw",)), flat, flags=("nsw",))
    return flat


def element_ptr(B: ir.IRBuilder, view: BufView, flat, inbounds=True):
    """The address of element `flat` of the buffer.

    `inbounds=False` for addresses of masked-off vector lanes, which may lie
    outside the buffer (they are computed, never dereferenced).
    """
    return B.gep(view.ptr, [flat], inbounds=inbounds, source_etype=memory_type(view.dtype))


def to_register(B, dt: DType, v):
    """A value loaded from memory as a register value (bool bytes become i1)."""
    if dt.is_bool:
        zero = ir.Constant(v.type, None)
        return B.icmp_unsigned("!=", v, zero)
    return v


def to_memory(B, dt: DType, v):
    """A register value in its memory form (i1 becomes a 0/1 byte)."""
    if dt.is_bool:
        ty = ir.VectorType(I8, v.type.count) if isinstance(v.type, ir.VectorType) else I8
        return B.zext(v, ty)
    return v


def load(B, view: BufView, ptr, width: int = 1):
    """Load one element (or `width` consecutive elements as a vector) at `ptr`."""
    mty = memory_type(view.dtype)
    ty = mty if width == 1 else ir.VectorType(mty, width)
    return to_register(B, view.dtype, B.load(ptr, typ=ty, align=view.dtype.bytes))


def store(B, view: BufView, ptr, value):
    """Store a scalar or a vector of consecutive elements at `ptr`."""
    B.store(to_memory(B, view.dtype, value), ptr, align=view.dtype.bytes)


def prefetch(B, ptr, level: int):
    """`llvm.prefetch` (for reading) of the cache line holding `ptr` into cache `level` (1: the
    nearest; on x86 prefetcht0, level 2 prefetcht1, 3 prefetcht2); never faults, whatever the address."""
    fn = declare(B.module, "llvm.prefetch.p0", ir.FunctionType(VOID, [PTR, I32, I32, I32]))
    locality = max(1, 4 - level)
    B.call(fn, [ptr, ir.Constant(I32, 0), ir.Constant(I32, locality), ir.Constant(I32, 1)])


def byte_size(B, dt: DType, extents):
    """The size in bytes of a dense buffer with these extents (an i64 value)."""
    size = i64(dt.bytes)
    for e in extents:
        size = B.mul(size, e, flags=("nsw",))
    return size


def stack_slot(entry: ir.IRBuilder, ty: ir.Type, name: str = "", align: int | None = None):
    """An `alloca` of `ty` in the entry block, typed as an opaque `ptr` like every other pointer."""
    slot = entry.alloca(ty, name=name)
    slot.type = PTR
    slot.align = align
    return slot


def alloca_bytes(entry: ir.IRBuilder, nbytes: int, name: str):
    """A stack block of `nbytes` bytes, `ALIGN`-aligned, in the function's entry block."""
    return stack_slot(entry, ir.ArrayType(I8, max(nbytes, 1)), name, ALIGN)


def aligned_size(B, nbytes):
    """`round_up(max(nbytes, 1), ALIGN)`: the bytes a heap block of `nbytes` takes."""
    return B.and_(B.add(B.select(B.icmp_signed("<", nbytes, i64(1)), i64(1), nbytes), i64(ALIGN - 1)),
                  i64(-ALIGN))


def heap_alloc(B, nbytes):
    """`aligned_alloc(ALIGN, aligned_size(nbytes))`; null when out of memory."""
    fn = declare(B.module, "aligned_alloc", ir.FunctionType(PTR, [I64, I64]))
    return B.call(fn, [i64(ALIGN), aligned_size(B, nbytes)])


def heap_free(B, ptr):
    """`free(ptr)`."""
    fn = declare(B.module, "free", ir.FunctionType(VOID, [PTR]))
    B.call(fn, [ptr])


def is_null(B, ptr):
    """`ptr == NULL` as an i1."""
    return B.icmp_unsigned("==", ptr, ir.Constant(PTR, None))

