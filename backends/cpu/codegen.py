"""The LLVM module of a `LoweredFunction` with the calling convention of `backends.common.cheader`.

The thread count of parallel loops lives in the global `NAME.num_threads`,
which `NAME_set_num_threads` sets and the Python kernel writes before a call.
"""
from __future__ import annotations

from llvmlite import ir

from mascarpone.middleend.errors import NotSupportedError
from mascarpone.backends.common.cheader import kernel_name
from mascarpone.backends.common.collapse import collapse_parallel_nests
from mascarpone.backends.common.hoist import hoist_allocations
from mascarpone.backends.common.promote import promote_accumulators
from mascarpone.middleend.loopir import Allocate, walk_stmts

from .context import FnState, ModuleState, Options, Scope
from .exprgen import ExprEmitter
from .llvm_types import I32, I64, PTR, VOID
from .memory import BufView
from .blocks import release_function
from .parallel import num_threads_global
from .stmtgen import StmtEmitter, allocate
from .vectorize import explicit_simd


def build_module(lowered, options: Options | None = None) -> ir.Module:
    """The LLVM module (not yet optimized) implementing `lowered` with the ABI above."""
    options = options or Options()
    name = kernel_name(lowered)
    module = ir.Module(name=name)
    ms = ModuleState(module, name, options)
    buffers = list(lowered.arguments)
    names = [b.name for b in buffers]
    if len(set(names)) != len(names):
        raise NotSupportedError(f"kernel {name}: two arguments share a name in {names}")
    params = list(lowered.params)

    fnty = ir.FunctionType(I32, [PTR] * len(buffers) + [I64] * len(params))
    fn = ir.Function(module, fnty, name)
    fn.attributes.add("nounwind")
    fn.attributes.add("noinline")  # one copy of the code, not another one in NAME_argv
    for arg, buf in zip(fn.args, buffers):
        arg.name = buf.name
        arg.add_attribute("noalias")
        arg.add_attribute("captures(none)")
        arg.attributes.align = buf.dtype.bytes
    for arg, p in zip(fn.args[len(buffers):], params):
        arg.name = p

    fs = FnState(ms, fn)
    scope = Scope(vars={p: a for p, a in zip(params, fn.args[len(buffers):])})
    for derived, value in lowered.derived:
        scope = scope.with_var(derived, ExprEmitter(fs, scope).index(value))
    em = ExprEmitter(fs, scope)
    for arg, buf in zip(fn.args, buffers):
        scope = scope.with_buf(BufView(buf.name, buf.dtype, arg, [em.index(d) for d in buf.shape]))

    num_threads_global(ms)
    se = StmtEmitter()
    # the explicit SIMD code of a vector loop takes its body as it is
    body_ir = hoist_allocations(promote_accumulators(
        collapse_parallel_nests(lowered.body), enters=lambda loop: not explicit_simd(loop), prefetch=True,
        padded=lambda loop: ms.options.masked_tails and explicit_simd(loop)))
    allocated = {s.buffer.name for s in walk_stmts(lowered.body) if isinstance(s, Allocate)}
    pending = [t for t in lowered.temporaries if t.name not in allocated]

    def body(sc, k=0):
        if k < len(pending):  # kernel-wide temporaries without their own Allocate
            allocate(fs, sc, pending[k], lambda inner: body(inner, k + 1))
        else:
            se.emit(body_ir, fs, sc)

    body(scope)
    fs.builder.ret(fs.builder.load(fs.status, typ=I32))
    fs.finish()

    _argv_entry(module, fn, len(buffers), len(params))
    _thread_setter(ms)
    release_function(ms)
    return module


def _argv_entry(module, fn, nbuf, nparam):
    f = ir.Function(module, ir.FunctionType(I32, [PTR, PTR]), f"{fn.name}_argv")
    f.attributes.add("nounwind")
    b = ir.IRBuilder(f.append_basic_block("entry"))
    bufs, params = f.args
    args = [b.load(b.gep(bufs, [ir.Constant(I64, k)], inbounds=True, source_etype=PTR), typ=PTR)
            for k in range(nbuf)]
    args += [b.load(b.gep(params, [ir.Constant(I64, k)], inbounds=True, source_etype=I64), typ=I64)
             for k in range(nparam)]
    b.ret(b.call(fn, args))


def _thread_setter(ms):
    f = ir.Function(ms.module, ir.FunctionType(VOID, [I32]), f"{ms.name}_set_num_threads")
    b = ir.IRBuilder(f.append_basic_block("entry"))
    n = f.args[0]
    b.store(b.select(b.icmp_signed("<", n, ir.Constant(I32, 0)), ir.Constant(I32, 0), n),
            num_threads_global(ms))
    b.ret_void()
