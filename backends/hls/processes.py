"""A dataflow region's processes: the function's loops cut into one body per stage, joined by FIFOs.

Each stage's process runs the function's loop IR with only the stores of the
buffers it writes (middleend/dataflow.py decides the stages and channels).
A store of a channel's buffer becomes, in the producer, a write of the value
to the FIFO; in the consumer of a 'window' channel, a store of the value read
from the FIFO into the tile or line buffer; a 'stream' channel's consumer
reads the FIFO once in the statement that used the buffer. Both processes
keep the loops and conditions around those stores, so they push and pop the
same values in the same order.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

from mascarpone.middleend.errors import NotSupportedError
from mascarpone.middleend.expr import Access, Expr, Sym, transform, walk
from mascarpone.middleend.loopir import Allocate, Block, For, If, Stmt, Store, own_exprs, walk_stmts


@dataclass(eq=False)
class StreamWrite(Stmt):
    """`stream.write(value)`."""

    stream: str
    value: Expr


@dataclass(eq=False)
class StreamRead(Stmt):
    """`const T local = stream.read();` (the element type is the stream's)."""

    stream: str
    local: str
    dtype: object


@dataclass
class Process:
    """One stage: its name, its body, and the buffers and streams it touches."""

    name: str
    body: Stmt
    buffers: list     # names of the buffers it accesses (arguments and off-chip temporaries among them)
    streams: list     # names of the channel buffers it reads or writes through FIFOs


def _prune(s, keep):
    """`s` with each Store replaced by `keep(store)` (None drops it) and emptied structure removed."""
    if isinstance(s, Store):
        return keep(s)
    if isinstance(s, Block):
        body = [c for c in (_prune(c, keep) for c in s.body) if c is not None]
        return Block(body) if body else None
    if isinstance(s, For):
        body = _prune(s.body, keep)
        return None if body is None else For(s.var, s.lo, s.hi, body, s.kind, s.factor, s.origin)
    if isinstance(s, If):
        then = _prune(s.then, keep)
        other = _prune(s.else_, keep) if s.else_ is not None else None
        if then is None and other is None:
            return None
        return If(s.cond, then if then is not None else Block([]), other)
    if isinstance(s, Allocate):
        body = _prune(s.body, keep)
        if body is None:
            return None
        return Allocate(s.buffer, body) if s.buffer.name in touched(body) else body
    return s


def touched(s) -> set:
    """Names of the buffers the statement `s` stores to or reads."""
    names = set()
    for st in walk_stmts(s):
        if isinstance(st, Store):
            names.add(st.buffer.name)
        exprs = list(own_exprs(st)) + ([st.value] if isinstance(st, StreamWrite) else [])
        for e in exprs:
            names |= {n.target.name for n in walk(e) if isinstance(n, Access)}
    return names


def split(lowered, body=None) -> list:
    """The processes of `lowered.dataflow` (cutting `body`, by default the function's), in stage order."""
    plan = lowered.dataflow
    whole = lowered.body if body is None else body
    counter = itertools.count()
    out = []
    for k, (name, _) in enumerate(plan.stages):
        streams = set()

        def keep(st, k=k, streams=streams):
            buf = st.buffer.name
            channel = plan.channel(buf)
            if plan.writer.get(buf) == k:
                if channel is not None:
                    streams.add(buf)
                    return StreamWrite(buf, st.value)
                return _read_streams(st, plan, k, streams, counter)
            if channel is not None and channel.kind == "window" and channel.consumer == k:
                streams.add(buf)
                local = f"{buf}_in{next(counter)}"
                return Block([StreamRead(buf, local, st.buffer.dtype),
                              Store(st.buffer, st.indices, Sym(local, st.buffer.dtype))])
            return None

        part = _prune(whole, keep) or Block([])
        buffers = touched(part)
        _check_control(part, name, buffers)
        out.append(Process(name, part, sorted(buffers), sorted(streams)))
    return out


def _read_streams(st, plan, k, streams, counter):
    """A store of stage k, reading its 'stream' channels' values from their FIFOs first."""
    reads = []
    mapping = {}
    for n in walk(st.value):
        if isinstance(n, Access):
            channel = plan.channel(n.target.name)
            if channel is not None and channel.kind == "stream" and channel.consumer == k:
                if n.target.name not in mapping:
                    local = f"{n.target.name}_in{next(counter)}"
                    mapping[n.target.name] = Sym(local, n.dtype)
                    reads.append(StreamRead(n.target.name, local, n.target.dtype))
                    streams.add(n.target.name)
    if not reads:
        return st

    def repl(n):
        if isinstance(n, Access) and n.target.name in mapping:
            return mapping[n.target.name]
        return None
    return Block(reads + [Store(st.buffer, st.indices, transform(st.value, repl))])


def _check_control(body, stage, buffers):
    """Loop bounds and conditions a process evaluates must not read another process's memory."""
    for st in walk_stmts(body):
        if isinstance(st, (For, If)):
            for e in own_exprs(st):
                for n in walk(e):
                    if isinstance(n, Access) and n.target.kind == "temporary" and n.target.name not in buffers:
                        raise NotSupportedError(f"dataflow: the process of {stage} evaluates a condition or "
                                                f"loop bound that reads {n.target.name}, which it does not hold")
