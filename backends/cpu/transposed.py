"""Reads that cross rows, transposed in registers: inside one chunk of a vector loop, the `width`
copies of an unrolled loop (trip count = width) that each read X[..., v + lane, ..., u] (lanes a
row apart, u the unrolled loop's variable, stride-one) read a width x width block of X whose rows are
contiguous. Each lane's row is one vector load; the block, transposed by log2(width) rounds of
shuffles, gives each copy its vector. bicg's column sums (s[j] += r[i] * A[i, j], lanes over j, the
copies over i) read 8 rows of 8 lanes with 8 loads and 24 shuffles, against 64 lane loads; each
s[j] still adds the copies in order.
"""
from __future__ import annotations

from llvmlite import ir

from mascarpone.backends.common.affine import stride_along
from mascarpone.middleend.expr import Access, walk
from mascarpone.middleend.loopir import Block, Store

from . import memory
from .exprgen import ExprEmitter
from .llvm_types import I32, i64


def _crosses_rows(node, lane_var, copy_var) -> bool:
    """Whether `node` reads lanes one row apart (lane_var moves one index before the last by one) and
    copies along its rows (copy_var moves the last index by one, nothing else)."""
    if not isinstance(node, Access) or len(node.indices) < 2:
        return False
    lanes = [stride_along(i, lane_var) for i in node.indices]
    copies = [stride_along(i, copy_var) for i in node.indices]
    if None in lanes or None in copies or copies != [0] * (len(copies) - 1) + [1] or lanes[-1] != 0:
        return False
    return sorted(lanes[:-1]) == [0] * (len(lanes) - 2) + [1]


def blocks(loop, first, scope, lane_var, width, fs) -> list | None:
    """For an unrolled loop `loop` of `width` iterations from `first` (its lower bound's value) inside a
    chunk at `scope` (lanes over lane_var): [{id(node): (node, vector)} for each copy] of its statements'
    reads that cross rows, or None where there are none, the body is not stores alone, or `width` is not a
    power of two (the transposition's rounds halve the block)."""
    if width & (width - 1):
        return None
    body = loop.body.body if isinstance(loop.body, Block) else [loop.body]
    if not all(isinstance(st, Store) for st in body):
        return None
    nodes = [n for st in body for n in walk(st.value) if _crosses_rows(n, lane_var, loop.var)]
    if not nodes:
        return None
    B = fs.builder
    out = [{} for _ in range(width)]
    done = {}    # the block of each distinct read (its text), loaded and transposed once
    for node in nodes:
        key = str(node)
        if key not in done:
            view = scope.buf(node.target.name)
            rows = []
            for lane in range(width):
                at = scope.with_var(lane_var, B.add(scope.var(lane_var), i64(lane), flags=("nsw",)))
                at = at.with_var(loop.var, first)
                em = ExprEmitter(fs, at)
                flat = memory.flat_index(B, view, [em.index(i) for i in node.indices])
                rows.append(memory.load(B, view, memory.element_ptr(B, view, flat), width))
            done[key] = transpose(B, rows)
        for k in range(width):
            out[k][id(node)] = (node, done[key][k])
    return out


def transpose(B, rows) -> list:
    """The columns of the square matrix whose rows are the vectors `rows` (a power of two of them):
    rounds that swap the off-diagonal blocks of halves, quarters, ... of each pair of row groups."""
    n = len(rows)
    rows = list(rows)
    half = n // 2
    while half >= 1:
        low = ir.Constant(ir.VectorType(I32, n), [l if not l & half else n + l - half for l in range(n)])
        high = ir.Constant(ir.VectorType(I32, n), [l + half if not l & half else n + l for l in range(n)])
        for i in range(n):
            if not i & half:
                a, b = rows[i], rows[i + half]
                rows[i], rows[i + half] = B.shuffle_vector(a, b, low), B.shuffle_vector(a, b, high)
        half //= 2
    return rows
