"""Heap temporaries kept from one call to the next, one block per allocation site.

A kernel's temporaries larger than its stack budget (a Func stored at the root, a packed panel) were
taken from `aligned_alloc` and freed at each call. glibc serves blocks that large with fresh pages
of `mmap`, so each call paid a page fault per 4 KB of them: on a shared 2-core machine, Halide's
image pyramid took 36 ms a call, 15 ms with the blocks kept. Each site now keeps the block its last
call freed, in a global slot taken and given back with atomic exchanges (parallel iterations that
allocate at one site each get a block: one the cached one, the others new ones); a block starts
with a header holding its usable size. `NAME_release_memory()` frees every kept block (the kernel
calls it when it is collected; an object file exports it too, and without a call its blocks live as
long as the process, one call's worth).
"""
from __future__ import annotations

from llvmlite import ir

from .llvm_types import I64, PTR, VOID, i64
from .loops import if_then_else
from .memory import ALIGN, aligned_size, heap_alloc, heap_free, is_null, stack_slot


def _slot(ms):
    slot = ir.GlobalVariable(ms.module, PTR, ms.fresh("kept_block"))
    slot.linkage = "internal"
    slot.initializer = ir.Constant(PTR, None)
    ms.kept_blocks.append(slot)
    return slot


def take(fs, nbytes):
    """A 64-byte aligned block of at least `nbytes` for a new site of the function (null when out of
    memory), and the site's slot to give it back to (`give_back`)."""
    B = fs.builder
    slot = _slot(fs.ms)
    need = aligned_size(B, nbytes)
    result = stack_slot(fs.entry, PTR, "block", 8)
    kept = B.atomic_rmw("xchg", slot, ir.Constant(PTR, None), "acq_rel")
    empty = is_null(B, kept)

    def reuse_or_replace():
        fits = B.icmp_signed(">=", B.load(kept, typ=I64), need)
        if_then_else(fs, fits, lambda: B.store(kept, result), lambda: (heap_free(B, kept), fresh()))

    def fresh():
        block = heap_alloc(B, B.add(need, i64(ALIGN)))
        B.store(block, result)
        if_then_else(fs, B.icmp_unsigned("!=", block, ir.Constant(PTR, None)), lambda: B.store(need, block))

    if_then_else(fs, empty, fresh, reuse_or_replace)
    block = B.load(result, typ=PTR)
    usable = B.select(is_null(B, block), block, B.gep(block, [i64(ALIGN)], source_etype=ir.IntType(8)))
    return usable, slot


def give_back(fs, slot, usable):
    """Return a block `take` gave to its site's slot (freeing the block the slot held, if any)."""
    B = fs.builder
    block = B.gep(usable, [i64(-ALIGN)], source_etype=ir.IntType(8))
    old = B.atomic_rmw("xchg", slot, block, "acq_rel")
    if_then_else(fs, B.icmp_unsigned("!=", old, ir.Constant(PTR, None)), lambda: heap_free(B, old))


def release_function(ms):
    """`NAME_release_memory()`: free the blocks every site keeps."""
    f = ir.Function(ms.module, ir.FunctionType(VOID, []), f"{ms.name}_release_memory")
    b = ir.IRBuilder(f.append_basic_block("entry"))
    for slot in ms.kept_blocks:
        old = b.atomic_rmw("xchg", slot, ir.Constant(PTR, None), "acq_rel")
        heap_free(b, old)      # (free(NULL) does nothing)
    b.ret_void()
