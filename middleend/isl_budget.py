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


@contextlib.contextmanager
def operations_at_most(ctx: isl.Context, limit: int):
    """Run the block with at most `limit` isl operations on `ctx` (0: no limit); raise
    OutOfOperations when it needs more. Budgets do not nest: the block's end lifts every limit."""
    ctx.set_max_operations(limit)
    ctx.reset_operations()
    try:
        yield
    except isl.Error as err:
        if "maximal number of operations" not in str(err):
            raise
        raise OutOfOperations(f"more than {limit:,} isl operations") from None
    finally:
        ctx.set_max_operations(0)
        ctx.reset_operations()
