"""Where a temporary buffer lives on targets that run on this machine's cores: the stack or the heap."""
from __future__ import annotations

from .affine import constant_value

#: Temporaries of a compile-time size up to this many bytes live on the stack...
STACK_LIMIT = 64 * 1024
#: ...while one function's (or one parallel region's) stack temporaries stay under this: worker
#: threads have small stacks.
STACK_BUDGET = 512 * 1024


def constant_bytes(buffer):
    """The size in bytes of `buffer` when its shape is a compile-time constant, else None."""
    sizes = [constant_value(d) for d in buffer.shape]
    if any(v is None for v in sizes):
        return None
    nbytes = buffer.dtype.bytes
    for v in sizes:
        nbytes *= max(v, 0)
    return nbytes


class StackBudget:
    """The stack bytes one function (or parallel region) has given to temporaries so far."""

    def __init__(self):
        self.used = 0

    def take(self, buffer) -> int | None:
        """Reserve stack space for `buffer` and return its size in bytes, or None when it goes to the heap
        (a size known only at run time, above STACK_LIMIT, or beyond the budget)."""
        nbytes = constant_bytes(buffer)
        if nbytes is None or nbytes > STACK_LIMIT or self.used + nbytes > STACK_BUDGET:
            return None
        self.used += nbytes
        return nbytes
