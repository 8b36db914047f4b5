"""Exact dependences of the original program, from its access relations, by isl's flow analysis.

The original program runs computations in declaration order, each over its
domain in lexicographic order. Its meaning is that of each computation (with
its updates) in storage of its own, whatever layout Layer III chooses
(`store_in`, `storage_fold`): the dependences are computed on that storage, and
the layout is checked apart (layout_check: no value overwritten before it is read).
"""
from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from .affine import affine_text
from .expr import Access, walk
from .layout import inline_reads, logical_read, logical_write, read_index, write_index


def access_map(comp, array, indices, context, shape=None):
    """The relation from comp's instances to the elements `indices` touch in `array` (a Buffer, or a
    name), and whether it is exact.

    A non-affine index is over-approximated by the whole extent in that dimension (the buffer's, or
    `shape`'s when given; unbounded for a name without a shape).
    """
    if shape is None:
        shape = getattr(array, "shape", None)
    array = getattr(array, "name", array)
    dims = [v.name for v in comp.vars]
    outs, constraints, exact = [], [], True
    for d, idx in enumerate(indices):
        text = affine_text(idx)
        if text is None:
            exact = False
            name = f"o{d}_"
            outs.append(name)
            extent = affine_text(shape[d]) if shape is not None else None
            if extent:
                constraints.append(f"0 <= {name} < {extent}")
        else:
            outs.append(text)
    params = sorted(comp.function.param_names)
    text = f"[{', '.join(params)}] -> {{ {comp.name}[{', '.join(dims)}] -> {array}[{', '.join(outs)}]"
    if constraints:
        text += " : " + " and ".join(constraints)
    m = isl.Map(text + " }").intersect_domain(comp.domain).intersect_params(context)
    return m, exact


def _sym_names(e):
    from .expr import Sym
    return {n.name for n in walk(e) if isinstance(n, Sym)}


@dataclass
class Accesses:
    reads: isl.UnionMap
    must_writes: isl.UnionMap
    may_writes: isl.UnionMap


def collect_accesses(computations, context, program=False) -> Accesses:
    """Read and write relations of all computations on the buffers their layout gives them, or with
    `program`, on the program's storage (each computation's own array, see layout.logical_write;
    inputs as they are)."""
    space = isl.Space.params_alloc(isl.DEFAULT_CONTEXT, 0)
    reads = isl.UnionMap.empty(space)
    must = isl.UnionMap.empty(space)
    may = isl.UnionMap.empty(space)
    for comp in computations:
        array, index = logical_write(comp) if program else write_index(comp)
        w, exact = access_map(comp, array, index, context)
        if exact and comp.predicate is None:
            must = must.union(isl.UnionMap.from_map(w))
        else:
            may = may.union(isl.UnionMap.from_map(w))
        for node in _accesses(inline_reads(comp.expr), comp):
            if program:
                array, idx = logical_read(node.target, node.indices)
                shape = None if hasattr(node.target, "storage_owner") else node.target.buffer.shape
            else:
                (array, idx), shape = read_index(node.target, node.indices), None
            r, _ = access_map(comp, array, idx, context, shape)
            reads = reads.union(isl.UnionMap.from_map(r))
    return Accesses(reads, must, may)


def _accesses(expr, comp):
    nodes = list(walk(expr))
    if comp.predicate is not None:
        nodes += list(walk(inline_reads(comp.predicate)))
    return [n for n in nodes if isinstance(n, Access)]


def original_schedule(computations, context):
    """Declaration order, then each domain in lexicographic order, padded to one dimensionality.

    A front-end whose source language interleaves statements inside shared loops (Julia) sets
    `function.original_ordering` (placement entries, see `ordering.resolve`); the original
    program then runs in that nesting instead of one computation after the other.
    """
    function = computations[0].function if computations else None
    entries = getattr(function, "original_ordering", None)
    if entries:
        return _nested_schedule(computations, entries)
    depth = max(len(c.vars) for c in computations)
    sched = isl.UnionMap.empty(isl.Space.params_alloc(isl.DEFAULT_CONTEXT, 0))
    for k, comp in enumerate(computations):
        dims = [v.name for v in comp.vars]
        out = [str(k)] + dims + ["0"] * (depth - len(dims))
        m = isl.Map(f"{{ {comp.name}[{', '.join(dims)}] -> [{', '.join(out)}] }}").intersect_domain(comp.domain)
        sched = sched.union(isl.UnionMap.from_map(m))
    return sched


def source_nests(function) -> dict:
    """{computation: position of the outermost loop nest of the source program that holds it} where a
    front-end's nesting (`original_ordering`) is the source order; empty where declaration order is."""
    entries = getattr(function, "original_ordering", None)
    if not entries:
        return {}
    return {c: b[0] for c, b in _source_betas(function.computations, entries)[1].items()}


def _source_betas(computations, entries):
    """(the staged copies among `computations`, the betas `entries` give the others): the source program
    places every computation but the copies a staging command added."""
    from .ordering import resolve
    copies = [c for c in computations if getattr(c, "staged_for", None) in computations]
    placed = [c for c in computations if c not in copies]
    return copies, resolve(placed, entries, lambda c: [v.name for v in c.vars])


def _nested_schedule(computations, entries):
    """The 2d+1 time-space of the computations placed by `entries` over their own variables. A staged
    copy (cache_read, cache_shared) runs whole, right before the outermost loop nest of the source
    that holds its consumer: the source program has no place of its own for it."""
    copies, betas = _source_betas(computations, entries)
    nests = sorted({b[0] for b in betas.values()})
    before = {}     # a nest's root position -> the copies that run just before it
    for copy in copies:
        before.setdefault(betas[copy.staged_for][0], []).append(copy)
    root, position = {}, 0
    for nest in nests:
        for copy in before.get(nest, []):
            betas[copy] = [position] + [0] * len(copy.vars)
            position += 1
        root[nest] = position
        position += 1
    for comp in [c for c in computations if c not in copies]:
        betas[comp] = [root[betas[comp][0]]] + betas[comp][1:]
    depth = max(len(c.vars) for c in computations)
    sched = isl.UnionMap.empty(isl.Space.params_alloc(isl.DEFAULT_CONTEXT, 0))
    for comp in computations:
        dims = [v.name for v in comp.vars]
        out = []
        for i, b in enumerate(betas[comp]):
            out.append(str(b))
            if i < len(dims):
                out.append(dims[i])
        out += ["0"] * (2 * depth + 1 - len(out))
        m = isl.Map(f"{{ {comp.name}[{', '.join(dims)}] -> [{', '.join(out)}] }}").intersect_domain(comp.domain)
        sched = sched.union(isl.UnionMap.from_map(m))
    return sched


@dataclass
class Dependences:
    """Read-after-write, write-after-read and write-after-write dependences (source -> sink instances)."""

    raw: isl.UnionMap
    war: isl.UnionMap
    waw: isl.UnionMap

    def all(self):
        return self.raw.union(self.war).union(self.waw)

    def items(self):
        return (("read-after-write", self.raw), ("write-after-read", self.war), ("write-after-write", self.waw))

    def __str__(self):
        return "\n".join(f"{kind}: {m}" for kind, m in self.items())


def union_maps(umap: isl.UnionMap):
    """The maps of a union map, as a list."""
    out = []
    umap.foreach_map(out.append)
    return out


def _on_buffers(umap: isl.UnionMap, names) -> isl.UnionMap:
    """The part of an access relation on the named buffers."""
    out = isl.UnionMap.empty(umap.get_space())
    for m in union_maps(umap):
        if m.get_tuple_name(isl.dim_type.out) in names:
            out = out.union(isl.UnionMap.from_map(m))
    return out


def _reuse_candidates(computations, writes: isl.UnionMap, reads: isl.UnionMap):
    """Buffers that may carry write-after-write and write-after-read dependences.

    A buffer written by one computation, each cell once, has no write-after-write; if, besides,
    every reader comes after that writer in the original order (declaration order), it has no
    write-after-read either. Leaving such buffers (most of a pipeline) out of the flow analysis
    keeps it fast; the test is conservative, so the dependences are the same."""
    writers = {}
    for m in union_maps(writes):
        writers.setdefault(m.get_tuple_name(isl.dim_type.out), []).append(m)
    nested = getattr(computations[0].function, "original_ordering", None) if computations else None
    position = {c.name: k for k, c in enumerate(computations)}
    waw, war = set(), set()
    for buf, ms in writers.items():
        if len(ms) > 1 or not ms[0].is_injective():
            waw.add(buf)
    for m in union_maps(reads):
        buf = m.get_tuple_name(isl.dim_type.out)
        if buf not in writers:
            continue
        reader = position.get(m.get_tuple_name(isl.dim_type.in_), -1)
        if nested or buf in waw or any(position.get(w.get_tuple_name(isl.dim_type.in_), -1) >= reader
                                       for w in writers[buf]):
            war.add(buf)
    return waw, war


def compute_dependences(computations, context) -> Dependences:
    """Exact (isl flow analysis) dependences of the computations in their original order."""
    acc = collect_accesses(computations, context, program=True)
    sched = original_schedule(computations, context)
    writes = acc.must_writes.union(acc.may_writes)
    waw_bufs, war_bufs = _reuse_candidates(computations, writes, acc.reads)
    # a buffer written once per cell by one computation that runs before all its readers: each read's
    # source is the write of that cell, so the flow is the composition (flow analysis of a pipeline's
    # many clamped reads costs minutes)
    flowing = waw_bufs | war_bufs
    single = {m.get_tuple_name(isl.dim_type.out) for m in union_maps(writes)} - flowing
    raw = _on_buffers(writes, single).apply_range(_on_buffers(acc.reads, single).reverse())
    raw = raw.union(isl.UnionAccessInfo.from_sink(_on_buffers(acc.reads, flowing))
                    .set_must_source(_on_buffers(acc.must_writes, flowing))
                    .set_may_source(_on_buffers(acc.may_writes, flowing)).set_schedule_map(sched)
                    .compute_flow().get_may_dependence())
    war = (isl.UnionAccessInfo.from_sink(_on_buffers(writes, war_bufs))
           .set_may_source(_on_buffers(acc.reads, war_bufs)).set_kill(_on_buffers(acc.must_writes, war_bufs))
           .set_schedule_map(sched).compute_flow().get_may_dependence())
    waw = (isl.UnionAccessInfo.from_sink(_on_buffers(writes, waw_bufs))
           .set_must_source(_on_buffers(acc.must_writes, waw_bufs))
           .set_may_source(_on_buffers(acc.may_writes, waw_bufs)).set_schedule_map(sched)
           .compute_flow().get_may_dependence())
    # (read-after-write is left as computed: coalescing the composed maps of a pipeline with clamped
    # reads took 9.5 of local_laplacian's 58 s of compilation at 4 levels, and the checks do not need it)
    return Dependences(raw, war.coalesce(), waw.coalesce())
