"""Counted loop skeletons and LLVM loop metadata."""
from __future__ import annotations

from llvmlite import ir

from .llvm_types import I1, I32, I64


class LoopID(ir.values.MDValue):
    """A `distinct !{!self, ...}` loop-ID node, as `!llvm.loop` requires."""

    def descr(self, buf):
        ops = [self.get_reference()] + [op.get_reference() for op in self.operands]
        buf += ("distinct !{{ {0} }}".format(", ".join(ops)), "\n")


def loop_metadata(module: ir.Module, **hints):
    """A loop ID carrying hints: vectorize_width=N, vectorize=False, unroll_count=N, unroll=False."""
    props = []
    for key, val in hints.items():
        if key == "vectorize_width":
            props.append(module.add_metadata([ir.MetaDataString(module, "llvm.loop.vectorize.width"),
                                              ir.Constant(I32, val)]))
            props.append(module.add_metadata([ir.MetaDataString(module, "llvm.loop.vectorize.enable"),
                                              ir.Constant(I1, 1)]))
        elif key == "vectorize" and not val:
            props.append(module.add_metadata([ir.MetaDataString(module, "llvm.loop.vectorize.width"),
                                              ir.Constant(I32, 1)]))
            props.append(module.add_metadata([ir.MetaDataString(module, "llvm.loop.interleave.count"),
                                              ir.Constant(I32, 1)]))
        elif key == "unroll_count":
            props.append(module.add_metadata([ir.MetaDataString(module, "llvm.loop.unroll.count"),
                                              ir.Constant(I32, val)]))
        elif key == "unroll" and not val:
            props.append(module.add_metadata([ir.MetaDataString(module, "llvm.loop.unroll.disable")]))
        else:
            raise ValueError(f"unknown loop hint {key}={val!r}")
    return LoopID(module, props, name=str(len(module.metadata)))


def counted_loop(fs, lo, hi, body, *, step=1, name="i", metadata=None):
    """Emit `for (v = lo; v < hi; v += step) body(v)` at the builder's position.

    `body(v)` emits the loop body with the builder positioned in it and may
    create blocks. The builder ends up after the loop.
    """
    B = fs.builder
    pre = B.block
    header = fs.new_block(f"{name}.head")
    loop = fs.new_block(f"{name}.body")
    latch = fs.new_block(f"{name}.next")
    done = fs.new_block(f"{name}.done")
    B.branch(header)

    B.position_at_end(header)
    v = B.phi(I64, name=name)
    v.add_incoming(lo, pre)
    B.cbranch(B.icmp_signed("<", v, hi), loop, done)

    B.position_at_end(loop)
    body(v)
    B.branch(latch)

    B.position_at_end(latch)
    nxt = B.add(v, ir.Constant(I64, step), flags=("nsw",))
    v.add_incoming(nxt, latch)
    br = B.branch(header)
    if metadata is not None:
        br.set_metadata("llvm.loop", metadata)
    B.position_at_end(done)
    return v


def if_then_else(fs, cond, then, else_=None, *, name="if"):
    """Emit `if (cond) then() else else_()`; the builder ends up after it."""
    B = fs.builder
    t = fs.new_block(f"{name}.then")
    e = fs.new_block(f"{name}.else") if else_ is not None else None
    done = fs.new_block(f"{name}.end")
    B.cbranch(cond, t, e if e is not None else done)
    B.position_at_end(t)
    then()
    B.branch(done)
    if e is not None:
        B.position_at_end(e)
        else_()
        B.branch(done)
    B.position_at_end(done)
