"""Loops tagged 'parallel': the body is outlined and run by the OpenMP runtime (libgomp).

For `for (v = lo; v < hi; v++) body` the generated code is

    closure = {status*, lo, hi, taken[MAX_PARTS] = 0, buffer pointers, their extents, captured scalars}
    if (lo < hi) GOMP_parallel(worker, &closure, num_threads, 0);

    worker(closure): unpack; nt = omp_get_num_threads(); me = omp_get_thread_num();
                     parts = min(nt, MAX_PARTS); chunk = max(1, (hi - lo) / (4 * nt));
                     for q in 0 .. parts-1:            # its own part first, then the others'
                         p = (me + q) % parts; [plo, phi) = part p of [lo, hi)
                         while ((start = plo + atomic_fetch_add(&closure.taken[p], chunk)) < phi)
                             run body for [start, min(start + chunk, phi))

The range is cut into one contiguous part per thread, as a static schedule would,
so that consecutive parallel loops over the same range (the sweeps of a stencil)
give each thread the same iterations, whose data stay in its core's caches. Within
a part, chunks are still claimed one at a time: a thread that is done takes the
remaining chunks of the others, so a thread the operating system delays holds up
nobody at the closing barrier, which matters on machines shared with other work.

The body itself is a separate function whose buffer pointers are `noalias`
arguments and whose sizes are plain arguments, so LLVM optimizes it as well
as the serial code (it inlines it into the worker). Parallel loops nested in
the body run serially. `num_threads` is read from the kernel's global
`NAME.num_threads` (0 lets libgomp choose).
"""
from __future__ import annotations

from llvmlite import ir

from mascarpone.middleend.expr import Access, Sym, walk
from mascarpone.middleend.loopir import stores, walk_exprs

from .context import FnState, Scope
from .llvm_types import I32, I64, PTR, VOID, i64
from .loops import counted_loop
from .memory import BufView, stack_slot
from .ops import declare

#: parts of a parallel loop's range (threads beyond this many share parts)
MAX_PARTS = 64
#: chunks a thread claims from a parallel loop's range, on average
CHUNKS_PER_THREAD = 4


def uses(s):
    """The symbol names and buffer names a statement refers to."""
    syms, bufs = set(), set()
    for e in walk_exprs(s):
        for n in walk(e):
            if isinstance(n, Sym):
                syms.add(n.name)
            elif isinstance(n, Access):
                bufs.add(n.target.name)
    bufs.update(st.buffer.name for st in stores(s))
    return syms, bufs


def num_threads_global(ms):
    """The kernel's `NAME.num_threads` global (created with the module's entry)."""
    g = ms.module.globals.get(f"{ms.name}.num_threads")
    if g is None:
        g = ir.GlobalVariable(ms.module, I32, f"{ms.name}.num_threads")
        g.initializer = ir.Constant(I32, 0)
    return g


def emit_parallel_loop(se, s, fs, scope):
    """Emit the 'parallel' loop `s` through GOMP_parallel."""
    ms = fs.ms
    module = ms.module
    syms, bufs = uses(s.body)
    cap_vars = sorted(n for n in syms if n in scope.vars and n != s.var)
    cap_bufs = [scope.bufs[n] for n in sorted(bufs) if n in scope.bufs]

    # closure layout: status*, lo, hi, chunks taken per part, ptr per buffer, extents per buffer, captured scalars
    taken_ty = ir.ArrayType(I64, MAX_PARTS)
    fields = [PTR, I64, I64, taken_ty] + [PTR] * len(cap_bufs)
    fields += [I64] * sum(len(v.extents) for v in cap_bufs) + [I64] * len(cap_vars)
    closure_ty = ir.LiteralStructType(fields)

    # the body: noalias buffers, sizes and captured scalars as arguments, then [start, end)
    body_args = [PTR] * len(cap_bufs) + [I64] * (len(fields) - 4 - len(cap_bufs)) + [I64, I64, PTR]
    body_fn = ir.Function(module, ir.FunctionType(VOID, body_args), ms.fresh("par.body"))
    body_fn.linkage = "internal"
    body_fn.attributes.add("nounwind")
    for k in range(len(cap_bufs)):
        body_fn.args[k].add_attribute("noalias")
        body_fn.args[k].add_attribute("captures(none)")
    bfs = FnState(ms, body_fn, status=body_fn.args[-1], in_parallel=True)
    args = iter(body_fn.args)
    ptrs = [next(args) for _ in cap_bufs]
    inner = Scope()
    for view, p in zip(cap_bufs, ptrs):
        inner = inner.with_buf(BufView(view.name, view.dtype, p, [next(args) for _ in view.extents]))
    for n in cap_vars:
        inner = inner.with_var(n, next(args))
    start, end = next(args), next(args)
    counted_loop(bfs, start, end, lambda v: se.emit(s.body, bfs, inner.with_var(s.var, v)), name=s.var)
    bfs.builder.ret_void()
    bfs.finish()

    # the worker libgomp calls on each thread
    worker = ir.Function(module, ir.FunctionType(VOID, [PTR]), ms.fresh("par.worker"))
    worker.linkage = "internal"
    worker.attributes.add("nounwind")
    wfs = FnState(ms, worker, status=ir.Constant(PTR, None), in_parallel=True)
    wb = wfs.builder
    data = worker.args[0]
    vals = [wb.load(wb.gep(data, [ir.Constant(I32, 0), ir.Constant(I32, k)], inbounds=True,
                           source_etype=closure_ty), typ=t) if k != 3 else None for k, t in enumerate(fields)]
    status, lo, hi = vals[:3]
    wfs.status = status
    nt = wb.sext(wb.call(declare(module, "omp_get_num_threads", ir.FunctionType(I32, [])), []), I64)
    me = wb.sext(wb.call(declare(module, "omp_get_thread_num", ir.FunctionType(I32, [])), []), I64)
    parts = wb.select(wb.icmp_signed("<", nt, i64(MAX_PARTS)), nt, i64(MAX_PARTS))
    length = wb.sub(hi, lo, flags=("nsw",))
    chunk = wb.sdiv(length, wb.mul(nt, i64(CHUNKS_PER_THREAD), flags=("nsw",)))
    chunk = wb.select(wb.icmp_signed("<", chunk, i64(1)), i64(1), chunk)
    share, extra = wb.sdiv(length, parts), wb.srem(length, parts)

    def part_start(p):   # lo + p * share + min(p, extra): the parts differ in length by at most one
        return wb.add(wb.add(lo, wb.mul(p, share, flags=("nsw",)), flags=("nsw",)),
                      wb.select(wb.icmp_signed("<", p, extra), p, extra), flags=("nsw",))

    def drain(q):
        p = wb.srem(wb.add(wb.srem(me, parts), q, flags=("nsw",)), parts)
        plo, phi = part_start(p), part_start(wb.add(p, i64(1), flags=("nsw",)))
        slot = wb.gep(data, [ir.Constant(I32, 0), ir.Constant(I32, 3), p], inbounds=True, source_etype=closure_ty)
        claim = wfs.new_block("claim")
        run = wfs.new_block("run")
        drained = wfs.new_block("drained")
        wb.branch(claim)
        wb.position_at_end(claim)
        first = wb.add(plo, wb.atomic_rmw("add", slot, chunk, "monotonic"), flags=("nsw",))
        wb.cbranch(wb.icmp_signed("<", first, phi), run, drained)
        wb.position_at_end(run)
        last = wb.add(first, chunk, flags=("nsw",))
        last = wb.select(wb.icmp_signed("<", last, phi), last, phi)
        wb.call(body_fn, vals[4:] + [first, last, status])
        wb.branch(claim)
        wb.position_at_end(drained)

    counted_loop(wfs, i64(0), parts, drain, name="part")
    wb.ret_void()
    wfs.finish()

    # the call site
    B = fs.builder
    em_lo, em_hi = se.bounds(s, fs, scope)
    slot = stack_slot(fs.entry, closure_ty, f"{s.var}.closure", 8)
    values = [fs.status, em_lo, em_hi, ir.Constant(taken_ty, None)] + [v.ptr for v in cap_bufs]
    values += [e for v in cap_bufs for e in v.extents] + [scope.vars[n] for n in cap_vars]
    for k, v in enumerate(values):
        B.store(v, B.gep(slot, [ir.Constant(I32, 0), ir.Constant(I32, k)], inbounds=True,
                         source_etype=closure_ty))
    gomp = declare(module, "GOMP_parallel", ir.FunctionType(VOID, [PTR, PTR, I32, I32]))
    nthreads = B.load(num_threads_global(ms), typ=I32)
    run = fs.new_block(f"{s.var}.par")
    done = fs.new_block(f"{s.var}.par.done")
    B.cbranch(B.icmp_signed("<", em_lo, em_hi), run, done)
    B.position_at_end(run)
    B.call(gomp, [worker, slot, nthreads, ir.Constant(I32, 0)])
    B.branch(done)
    B.position_at_end(done)
