"""Where each buffer of an HLS kernel lives: an m_axi port, an on-chip array, or nothing but a FIFO.

Arguments are off-chip arrays reached through m_axi ports. A temporary of a
compile-time size is an on-chip array (block RAM, LUT RAM or registers as
its size and partitioning say); one whose size is known only at run time
cannot be on chip, so it becomes an off-chip array of its own m_axi port that
the caller allocates (or the user fixes the sizes: `fixed=`). A buffer that a
dataflow channel of kind 'stream' carries has no memory at all.
"""
from __future__ import annotations

from mascarpone.backends.common.affine import constant_value
from mascarpone.middleend.errors import NotSupportedError
from mascarpone.middleend.expr import Sym, walk
from mascarpone.middleend.loopir import Allocate, walk_stmts

#: on-chip arrays above this size go off chip (the block RAM of a large part is a few tens of MiB)
ONCHIP_LIMIT = 4 * 1024 * 1024

ARGUMENT, ON_CHIP, OFF_CHIP, STREAM = "m_axi argument", "on-chip", "off-chip temporary", "stream"


def temporaries(lowered) -> list:
    """Every temporary buffer of the kernel, in order of first allocation."""
    seen = {}
    for s in walk_stmts(lowered.body):
        if isinstance(s, Allocate):
            seen.setdefault(s.buffer.name, s.buffer)
    for b in lowered.temporaries:
        seen.setdefault(b.name, b)
    return list(seen.values())


def shape_constants(buffer):
    """The extents of `buffer` as ints, or None when one is known only at run time."""
    dims = [constant_value(d) for d in buffer.shape]
    return None if any(d is None for d in dims) else [max(d, 0) for d in dims]


def place(lowered) -> dict:
    """{buffer name: where it lives} for every buffer of the kernel."""
    sizes = set(lowered.params) | {name for name, _ in lowered.derived}
    plan = lowered.dataflow
    where = {b.name: ARGUMENT for b in lowered.arguments}
    for b in temporaries(lowered):
        channel = plan.channel(b.name) if plan is not None else None
        if channel is not None and channel.kind == "stream":
            where[b.name] = STREAM
            continue
        dims = shape_constants(b)
        if dims is not None:
            nbytes = b.dtype.bytes
            for d in dims:
                nbytes *= d
            if nbytes <= ONCHIP_LIMIT:
                where[b.name] = ON_CHIP
                continue
        used = {n.name for d in b.shape for n in walk(d) if isinstance(n, Sym)}
        if not used <= sizes:
            raise NotSupportedError(
                f"the temporary {b.name} has a size that changes from one loop iteration to the next "
                f"({', '.join(map(str, b.shape))}); an FPGA kernel needs it fixed: fix the sizes "
                f"(compile('hls', fixed={{...}})) or compute it at another loop")
        where[b.name] = OFF_CHIP
    return where
