"""A bound on the isl operations one computation may take.

isl's exact operations on sets of many pieces with existential variables can
run for hours. A refinement that is only worth having (separating full tiles
from partial ones) is skipped when it needs more than its budget; a step that
is required (building the AST) is refused by name instead of left running.
"""
from __future__ import annotations

import contextlib

import islpy as isl


class OutOfOperations(Exception):
    """A computation needed more isl operations than its budget."""


#: the limits of the blocks now running, innermost last
_active: list[int] = []


@contextlib.contextmanager
def operations_at_most(ctx: isl.Context, limit: int):
    """Run the block with at most `limit` isl operations on `ctx` (0: no limit); raise
    OutOfOperations when it needs more. Inside another such block, the tighter limit holds; when the
    inner block ends, the outer one's limit is back and its count starts afresh (isl's count cannot
    be read, only reset), so an outer budget bounds each stretch of work between inner blocks."""
    outer = _active[-1] if _active else 0
    effective = min(x for x in (limit, outer) if x) if (limit or outer) else 0
    _active.append(effective)
    ctx.set_max_operations(effective)
    ctx.reset_operations()
    try:
        yield
    except isl.Error as err:
        if "maximal number of operations" not in str(err):
            raise
        raise OutOfOperations(f"more than {effective:,} isl operations") from None
    finally:
        _active.pop()
        ctx.set_max_operations(_active[-1] if _active else 0)
        ctx.reset_operations()
