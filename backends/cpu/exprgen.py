"""Scalar code for expressions of the loop IR."""
from __future__ import annotations

from mascarpone.middleend.errors import NotSupportedError
from mascarpone.middleend.expr import (BIT_OPS, COMPARE_OPS, LOGIC_OPS, SHIFT_OPS, Access, BinOp, Call, Cast, Const,
                            Reinterpret, Select, Sym, UnOp, pseudo_c)
from mascarpone.middleend.types import int64

from . import memory
from .llvm_types import constant


class ExprEmitter:
    """Emits expressions at the builder's position of `fs`, with names bound by `scope`.

    Results are cached per node, so an expression DAG that shares sub-trees is
    emitted once per node; use one emitter per statement (values must dominate).
    """

    def __init__(self, fs, scope):
        self.fs = fs
        self.scope = scope
        self.ops = fs.ops
        self._cache = {}

    @property
    def B(self):
        return self.fs.builder

    def emit(self, e, index=False):
        """The value of `e`; `index` marks int64 index arithmetic (emitted with `nsw`)."""
        key = (id(e), index)
        hit = self._cache.get(key)
        if hit is not None and hit[0] is e:
            return hit[1]
        v = self._emit(e, index)
        self._cache[key] = (e, v)
        return v

    def index(self, e):
        """An index or bound expression as an i64 value."""
        v = self.emit(e, index=True)
        if e.dtype != int64:
            v = self.ops.cast(e.dtype, int64, v)
        return v

    def _emit(self, e, index):
        if isinstance(e, Const):
            return constant(e.dtype, e.value)
        if isinstance(e, Sym):
            return self.sym(e)
        if isinstance(e, Access):
            return self.access(e)
        if isinstance(e, BinOp):
            if e.op in LOGIC_OPS:
                return self.ops.logic(e.op, self.emit(e.a), self.emit(e.b))
            a, b = self.emit(e.a, index), self.emit(e.b, index)
            if e.op in COMPARE_OPS:
                return self.ops.compare(e.op, e.a.dtype, a, b)
            if e.op in BIT_OPS:
                return self.ops.bitwise(e.op, a, b)
            if e.op in SHIFT_OPS:
                return self.ops.shift(e.op, e.dtype, e.b.dtype, a, b)
            return self.ops.binary(e.op, e.dtype, a, b, index=index)
        if isinstance(e, UnOp):
            a = self.emit(e.a, index)
            if e.op == "not":
                return self.ops.not_(a)
            return self.ops.bitnot(a) if e.op == "bitnot" else self.ops.neg(e.dtype, a)
        if isinstance(e, Select):
            return self.ops.select(self.emit(e.cond), self.emit(e.t, index), self.emit(e.f, index))
        if isinstance(e, Cast):
            return self.ops.cast(e.a.dtype, e.dtype, self.emit(e.a))
        if isinstance(e, Reinterpret):
            return self.ops.reinterpret(e.dtype, self.emit(e.a))
        if isinstance(e, Call):
            return self.ops.call(e.fn, e.dtype, [self.emit(a) for a in e.args])
        raise NotSupportedError(f"the CPU back-end cannot generate {type(e).__name__} nodes: {pseudo_c(e)}")

    def sym(self, e: Sym):
        """A parameter or loop variable (i64), read as the node's type."""
        v = self.scope.var(e.name)
        return v if e.dtype == int64 else self.ops.cast(int64, e.dtype, v)

    def access(self, e: Access):
        """A load of one element."""
        view = self.scope.buf(e.target.name)
        if len(e.indices) != len(view.extents):
            raise NotSupportedError(f"{pseudo_c(e)}: buffer {view.name} has {len(view.extents)} dimensions")
        flat = memory.flat_index(self.B, view, [self.index(i) for i in e.indices])
        return memory.load(self.B, view, memory.element_ptr(self.B, view, flat))

    def address(self, buffer_name, indices):
        """The address of an element of a buffer (for stores)."""
        view = self.scope.buf(buffer_name)
        if len(indices) != len(view.extents):
            raise NotSupportedError(f"store to {view.name} with {len(indices)} indices; "
                                    f"it has {len(view.extents)} dimensions")
        flat = memory.flat_index(self.B, view, [self.index(i) for i in indices])
        return view, memory.element_ptr(self.B, view, flat)

