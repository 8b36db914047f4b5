"""State shared while generating one module: options, the function being built, and scopes."""
from __future__ import annotations

from dataclasses import dataclass, field

from llvmlite import ir

from mascarpone.backends.common.temporaries import StackBudget
from mascarpone.middleend.errors import NotSupportedError

from .llvm_types import I32
from .memory import BufView, stack_slot
from .ops import Ops


@dataclass
class Options:
    """Code generation options (see `compile_cpu`)."""

    fast_math: bool = False
    fp_contract: bool = True
    #: load the lanes of an unmasked gather one by one instead of with the CPU's gather instruction
    lane_loads: bool = False
    #: run a vector loop's last iterations, fewer than a vector, as one chunk under a lane mask (the CPU
    #: masks loads and stores itself) rather than as a scalar loop
    masked_tails: bool = False


@dataclass
class ModuleState:
    """The module under construction and what is unique in it."""

    module: ir.Module
    name: str
    options: Options
    counter: int = 0
    kept_blocks: list = field(default_factory=list)   # the slots of heap temporaries kept across calls (blocks.py)

    def fresh(self, stem: str) -> str:
        """A new symbol name in the kernel's namespace."""
        self.counter += 1
        return f"{self.name}.{stem}.{self.counter}"


class FnState:
    """One LLVM function being generated: its builder, its entry block for stack slots, its status slot.

    The entry block holds only allocas and falls through to the code, so every
    stack slot is created once per call, whatever loop it is used in.
    """

    def __init__(self, ms: ModuleState, fn: ir.Function, *, status=None, in_parallel=False):
        self.ms = ms
        self.fn = fn
        entry = fn.append_basic_block("entry")
        start = fn.append_basic_block("start")
        self.entry = ir.IRBuilder(entry)
        self.builder = ir.IRBuilder(start)
        self.status = status if status is not None else self._new_status()
        self.in_parallel = in_parallel
        self.stack = StackBudget()  # temporaries placed in stack slots so far
        self.unrolled_depth = 0     # copies of unrolled loops the code being emitted is in
        self.ops = Ops(self.builder, fast_math=ms.options.fast_math, fp_contract=ms.options.fp_contract)

    def _new_status(self):
        slot = stack_slot(self.entry, I32, "status", 4)
        self.entry.store(ir.Constant(I32, 0), slot)
        return slot

    def new_block(self, name: str) -> ir.Block:
        return self.fn.append_basic_block(name)

    def finish(self):
        """Close the entry block (call once the body is complete)."""
        self.entry.branch(self.fn.blocks[1])

    def fail(self):
        """Record that the kernel ran out of memory (the call then returns non-zero)."""
        # several threads may fail at once; an atomic store keeps that race defined
        st = ir.instructions.StoreAtomicInstr(self.builder.block, ir.Constant(I32, 1), self.status,
                                              "monotonic", 4)
        self.builder._insert(st)


@dataclass
class Scope:
    """What names mean at a point of the code: loop iterators / parameters (i64) and buffers."""

    vars: dict = field(default_factory=dict)
    bufs: dict = field(default_factory=dict)

    def with_var(self, name, value) -> "Scope":
        return Scope({**self.vars, name: value}, self.bufs)

    def with_buf(self, view: BufView) -> "Scope":
        return Scope(self.vars, {**self.bufs, view.name: view})

    def var(self, name):
        try:
            return self.vars[name]
        except KeyError:
            raise NotSupportedError(f"the symbol {name!r} is neither a parameter nor an enclosing loop variable") from None

    def buf(self, name):
        try:
            return self.bufs[name]
        except KeyError:
            raise NotSupportedError(f"the buffer {name!r} is not an argument and not allocated here") from None
