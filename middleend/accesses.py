"""What each scheduled statement writes and reads, on the storage actually used.

One rule for code generation and for the layout checks: a value lives in its
computation's buffer at its store index (Layer III: `store_in`, `storage_fold`),
or, for a producer computed at a consumer's loop, in that loop's tile buffer at
its offset from the tile's corner (folded likewise). Index expressions that are
affine are kept as isl functions of the statement instance (`IslAff`).
"""
from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from .affine import IslAff, affine_text, free_pwaff
from .buffer import as_index_expr
from .expr import Access, BinOp, Sym, binop, floormod, transform, walk
from .layout import inline_reads, read_index, write_index


# indices ------------------------------------------------------------------------

def _index(stmt, expr):
    """An index expression over the statement's instance: isl-symbolic when affine.

    A term in the sizes only that is a min or max (the origin of a buffer starting at
    `min(0, N - 8)`) stays a scalar term: inside the isl function, isl would write the whole
    index as a select over the loop variables, which no longer reads as contiguous."""
    text = affine_text(expr)
    if text is None:
        return expr
    rest, sizes_only = _size_terms(expr, set(stmt.params))
    if sizes_only is not None and rest is not None:
        return binop("add", _isl_aff(stmt, affine_text(rest), rest), sizes_only)
    return _isl_aff(stmt, text, expr)


def _isl_aff(stmt, text, source):
    """The IslAff of `text` (the affine index `source`) on the statement's instances, one object per
    text (an index repeats across a body, and each object is turned into loop IR once per leaf)."""
    cache = stmt.__dict__.setdefault("_isl_affs", {})
    if text not in cache:
        free = free_pwaff(stmt.domain, text, stmt.params)
        cache[text] = IslAff(free.intersect_domain(stmt.domain), source, free)
    return cache[text]


def _size_terms(expr, params):
    """(the rest, the sum of the terms of `expr` (a sum) that are min/max of the sizes only), with
    (expr, None) when there are no such terms."""
    if isinstance(expr, BinOp) and expr.op in ("add", "sub"):
        a_rest, a_sizes = _size_terms(expr.a, params)
        b_rest, b_sizes = _size_terms(expr.b, params)
        if a_sizes is None and b_sizes is None:
            return expr, None
        if expr.op == "sub":
            b_rest = None if b_rest is None else -b_rest
            b_sizes = None if b_sizes is None else -b_sizes
        return _sum(a_rest, b_rest), _sum(a_sizes, b_sizes)
    if (isinstance(expr, BinOp) and expr.op in ("min", "max")
            and all(type(n) is not Sym or n.name in params for n in walk(expr))):
        return None, expr
    return expr, None


def _sum(a, b):
    if a is None or b is None:
        return a if b is None else b
    return binop("add", a, b)


def _tile_corner(stmt, local, d):
    """The lower corner of a tile buffer along dim d, as a function of `stmt`'s instances (computed
    once per statement and dimension: a statement of many pieces takes seconds)."""
    key = (stmt.name, d)
    if key not in local.corners:
        local.corners[key] = local.lower[d].pullback_pw_multi_aff(
            isl.PwMultiAff.from_map(tile_instance(stmt, local))).intersect_domain(stmt.domain)
    return local.corners[key]


def tile_instance(stmt, local):
    """The map from `stmt`'s instances to the consumer loop values that pick the tile buffer they use:
    the instance's own prefix dims for the producer and its updates, else the values of the loops the
    tile depends on, around any statement that reads it (the consumer, or a computation run inside
    the consumer's loops)."""
    if stmt.local is local:
        n = stmt.domain.dim(isl.dim_type.set)
        return (isl.Map.identity(stmt.domain.get_space().map_from_set())
                .project_out(isl.dim_type.out, local.depth, n - local.depth).reset_tuple_id(isl.dim_type.out))
    n = stmt.loop_map.dim(isl.dim_type.out)
    return stmt.loop_map.project_out(isl.dim_type.out, local.depth, n - local.depth).reset_tuple_id(isl.dim_type.out)


def _local_index(stmt, local, d, index):
    """Index of an access to a producer's tile: the global index minus the tile's corner, modulo the
    depth along a folded dimension."""
    corner = _tile_corner(stmt, local, d)
    depth = local.folds.get(d)
    index = as_index_expr(index)
    text = affine_text(index)
    if text is not None:
        # (the corner is already restricted to the instances: a second restriction of the index only
        # makes the difference intersect two copies of the domain)
        offset = free_pwaff(stmt.domain, text, stmt.params).sub(corner)
        return IslAff(offset if depth is None else offset.mod_val(depth))
    offset = binop("sub", index, IslAff(corner))
    return offset if depth is None else floormod(offset, depth)


# accesses ------------------------------------------------------------------------

class BufferAccess(Access):
    """An access already rewritten onto a buffer (so it is not rewritten twice)."""

    __slots__ = ()

    def rebuild(self, children):
        return BufferAccess(self.target, children)


def lower_access(stmt, node, locals_by_comp):
    """The BufferAccess that an access `node` (to a computation or an input) of `stmt` makes."""
    local = locals_by_comp.get(node.target)
    if local is not None:
        return BufferAccess(local.buffer, [_local_index(stmt, local, d, i) for d, i in enumerate(node.indices)])
    buf, idx = read_index(node.target, node.indices)
    return BufferAccess(buf, [_index(stmt, i) for i in idx])


def lower_reads(stmt, expr, locals_by_comp):
    """Rewrite accesses to computations and inputs into buffer accesses."""
    def repl(n):
        if not isinstance(n, Access) or isinstance(n, BufferAccess):
            return None
        return lower_access(stmt, n, locals_by_comp)
    return transform(inline_reads(expr), repl)


def _write(stmt, locals_by_comp):
    """(buffer, index) that `stmt` writes."""
    comp = stmt.comp
    # a scatter's index reads data: lowered like the value's reads, so both compute it alike (and the
    # compiler finds one computation where an update reads the element it writes, as a histogram does)
    if stmt.local is not None:
        written = comp.update_at if comp.updated is not None else comp.vars
        written = [w if affine_text(as_index_expr(w)) is not None else lower_reads(stmt, as_index_expr(w), locals_by_comp)
                   for w in written]
        return stmt.local.buffer, [_local_index(stmt, stmt.local, d, w) for d, w in enumerate(written)]
    buf, idx = write_index(comp)
    return buf, [_index(stmt, i) if affine_text(i) is not None else lower_reads(stmt, i, locals_by_comp)
                 for i in idx]


def statement_body(stmt, locals_by_comp):
    """(buffer, index list, value, predicate) of a statement, with symbolic affine indices."""
    comp = stmt.comp
    value = lower_reads(stmt, comp.expr, locals_by_comp)
    predicate = lower_reads(stmt, comp.predicate, locals_by_comp) if comp.predicate is not None else None
    buf, idx = _write(stmt, locals_by_comp)
    return buf, idx, value, predicate


@dataclass(eq=False)
class StatementAccess:
    """One write or read of a statement: the element of its buffer (`index`, as code generation
    computes it) and the value's place in the program's meaning: `owner[logical]`, the storage
    owner (a computation, or an input) and coordinates over the computation's variables."""

    stmt: object
    is_write: bool
    buffer: object
    index: list
    local: object            # the LocalBuffer when `buffer` is a tile, else None
    owner: object
    logical: list
    guarded: bool = False    # made only where the statement's predicate holds (not a read of the predicate)


def statement_accesses(stmt, locals_by_comp):
    """The statement's write, then every read it makes (value, predicate, a scatter's index)."""
    comp = stmt.comp
    owner = comp.storage_owner
    buf, idx = _write(stmt, locals_by_comp)
    at = comp.update_at if comp.updated is not None else comp.vars
    guarded = comp.predicate is not None
    out = [StatementAccess(stmt, True, buf, idx, stmt.local, owner, [as_index_expr(a) for a in at], guarded)]
    exprs = [(comp.expr, guarded)] + ([(comp.predicate, False)] if guarded else [])
    exprs += [(a, guarded) for a in at if affine_text(as_index_expr(a)) is None]
    for e, under in exprs:
        for n in walk(inline_reads(e)):
            if not isinstance(n, Access):
                continue
            local = locals_by_comp.get(n.target)
            read = lower_reads(stmt, n, locals_by_comp)     # its indices' own reads first, as code generation does
            target = getattr(n.target, "storage_owner", n.target)
            out.append(StatementAccess(stmt, False, read.target, list(read.indices), local, target,
                                       [as_index_expr(i) for i in n.indices], under))
    return out
