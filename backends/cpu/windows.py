"""Sliding windows carried across the chunks of a vector loop.

A stencil reads one array at offsets a few elements apart along the vectorized loop
(`a[x - 1] + a[x] + a[x + 1]`). Loaded one by one, each read is a vector load that crosses a
cache line at most offsets, and the loads bound the loop. Where the offsets lie at most a
vector apart, each chunk loads only the vector at the furthest offset and keeps it for the
next chunk: every other read is a shuffle of that vector and the one the chunk before loaded.
On one Zen 5 core, a sweep of jacobi-2d (five reads a point, three of them along the column)
takes 9.1 us this way against 13.0 with a load per read (hand-written C, 260^2 doubles). Such a
window trades a load for a shuffle, so it is taken only where loads outnumber shuffles
(`carried_groups`).

The window may only hold what memory holds: the loop's body must not store to the array it
reads (buffers are distinct objects: `noalias`), and it must be straight-line code (stores
only), so that every chunk reads at the same offsets; an unrolled loop of constant trip count inside
(unroll and jam: rows computed together in each chunk) is written out as its copies first (`jammed`),
so that one window serves a row and the rows beside it. The first chunk's previous vector is made
from a load at the least offset, which that chunk reads anyway, so no element is read that the
scalar loop would not read.
"""
from __future__ import annotations

from llvmlite import ir

from mascarpone.middleend.expr import Access, substitute, walk
from mascarpone.middleend.loopir import Block, For, Store

from mascarpone.backends.common.affine import constant_difference, mentions, stride_along
from .llvm_types import I32, I64, i64


def contiguous(strides) -> bool:
    """Whether an access's per-index strides along the vector loop make it one contiguous vector."""
    return strides[-1] == 1 and all(st == 0 for st in strides[:-1])


def offset_from(first, other):
    """How many elements `other` reads after `first` when both read one array at the same indices but
    for a constant difference in the last one, else None."""
    if other.target.name != first.target.name or len(other.indices) != len(first.indices):
        return None
    if any(constant_difference(a, b) != 0 for a, b in zip(other.indices[:-1], first.indices[:-1])):
        return None
    return constant_difference(other.indices[-1], first.indices[-1])


def neighbour_groups(accesses, var) -> list:
    """[(first access, {offset from it: [accesses]})]: the contiguous reads among `accesses` grouped
    by array and by indices that differ by a constant in the last one only."""
    groups = []
    for node in accesses:
        strides = [stride_along(i, var) for i in node.indices]
        if None in strides or not contiguous(strides):
            continue
        for first, offsets in groups:
            d = offset_from(first, node)
            if d is not None:
                offsets.setdefault(d, []).append(node)
                break
        else:
            groups.append((node, {0: [node]}))
    return groups


def anchors_of(offsets, width) -> list:
    """The offsets (sorted) a chunk loads as vectors so that every other offset lies between two loaded
    ones less than a vector apart: the least, then each time the furthest within `width` of the last
    (the others are shuffled out of the two around them)."""
    anchors = [offsets[0]]
    for k, o in enumerate(offsets[1:], 1):
        if o - anchors[-1] > width:
            anchors.append(offsets[k - 1] if offsets[k - 1] != anchors[-1] else o)
            if o - anchors[-1] > width:
                anchors.append(o)
    if anchors[-1] != offsets[-1]:
        anchors.append(offsets[-1])
    return anchors


def _straight_stores(s) -> list | None:
    """The stores of a body made of stores and blocks only, else None."""
    if isinstance(s, Store):
        return [s]
    if isinstance(s, Block):
        out = []
        for c in s.body:
            inner = _straight_stores(c)
            if inner is None:
                return None
            out += inner
        return out
    return None


#: the most copies of an unrolled loop inside a vector loop that `jammed` writes out
MAX_JAM = 8


def _copies(s, var):
    """The copies of a straight-line loop `s` tagged unroll, of a constant trip count up to MAX_JAM and
    bounds that do not move with `var`, with its variable replaced by each of its values; else None."""
    trip = constant_difference(s.hi, s.lo)
    if s.kind != "unroll" or trip is None or not 0 <= trip <= MAX_JAM or mentions(s.lo, var):
        return None
    body = _straight_stores(jammed(s.body, var))
    if body is None:
        return None
    out = []
    for k in range(trip):
        value = {s.var: s.lo + k if k else s.lo}
        out += [Store(st.buffer, tuple(substitute(i, value) for i in st.indices), substitute(st.value, value))
                for st in body]
    return Block(out)


def jammed(body, var):
    """`body` of a vector loop over `var` with its unrolled inner loops of constant trip count written out
    as straight-line copies (unroll and jam: `for x { for r in 0..2 unrolled { out[r][x] = ... } }`), so
    that reads the copies share along `var` become one window (a row's neighbour below is the next row's
    centre), or `body` itself where it holds no such loop."""
    if isinstance(body, For):
        copies = _copies(body, var)
        return body if copies is None else copies
    if isinstance(body, Block):
        parts = [jammed(c, var) for c in body.body]
        return body if all(a is b for a, b in zip(parts, body.body)) else Block(parts)
    return body


def carried_groups(body, var, width) -> list:
    """[{offset: [accesses]}] of the reads a vector loop over `var` carries as windows: two offsets or more
    of an array the body does not store to, at most `width` apart, while the chunk's vector loads
    outnumber its shuffles. Without a window such a group costs a chunk two loads (its outermost
    offsets) and a shuffle for each offset between; a window trades one of the loads for a shuffle.
    A load that crosses a cache line, as most do where the arrays lie anywhere, issues at one a cycle
    on Zen 5, so the trade pays as long as loads are the more: jacobi-1d's three reads (400 points, 50
    steps, split by 8), at 12 random placements of its two arrays (multiples of 16 bytes), took a
    median 2.84 us a call with windows against 3.10 without (2.67-2.95 against 2.55-3.67); only with
    both arrays 64-byte aligned, where one of the two loads does not cross a line, did it lose (2.7-2.9
    against 2.3-2.8 us). Halide's 13 pipelines and 4 apps ran as before (0.95-1.03 of their time)."""
    body_stores = _straight_stores(body)
    if not body_stores:
        return []
    written = {st.buffer.name for st in body_stores}
    reads = [n for st in body_stores for n in walk(st.value) if isinstance(n, Access) and n.indices]
    groups = neighbour_groups(reads, var)
    loads = shuffles = 0
    for _, offsets in groups:
        anchors = anchors_of(sorted(offsets), width)
        loads, shuffles = loads + len(anchors), shuffles + len(offsets) - len(anchors)
    grouped = {id(n) for _, offsets in groups for nodes in offsets.values() for n in nodes}
    # reads neither contiguous nor uniform (gathers, strided lanes) load too
    loads += sum(1 for n in reads if id(n) not in grouped and any(stride_along(i, var) != 0 for i in n.indices))
    out = []
    for first, offsets in sorted(groups, key=lambda g: -len(g[1])):
        if first.target.name not in written and len(offsets) > 1 and max(offsets) - min(offsets) <= width \
                and loads > shuffles:
            out.append(offsets)
            loads, shuffles = loads - 1, shuffles + 1
    return out


def windowed_loop(fs, lo, hi, step, width, groups, load, chunk, *, name="x", metadata=None):
    """`for (v = lo; v < hi; v += step) chunk(v, given)`, each iteration a chunk of `width` lanes whose
    reads lie `width` elements after the chunk before's, with the reads of `groups` (see
    `carried_groups`) given as windows: `load(v, access)` emits the vector `access` reads in the
    chunk at `v`; `given` maps id(access) to (access, its window). `metadata`: the loop's hints."""
    B = fs.builder
    preheader, header = fs.new_block(f"{name}.win.pre"), fs.new_block(f"{name}.win")
    done = fs.new_block(f"{name}.win.done")
    B.cbranch(B.icmp_signed("<", lo, hi), preheader, done)

    B.position_at_end(preheader)
    previous = []
    for offsets in groups:
        low, high = min(offsets), max(offsets)
        first = load(lo, offsets[low][0])     # its lanes hold the previous vector's last high - low
        shift = width - (high - low)
        previous.append(B.shuffle_vector(first, first, _lanes([max(0, k - shift) for k in range(width)])))
    B.branch(header)

    B.position_at_end(header)
    v = B.phi(I64, name=name)
    v.add_incoming(lo, preheader)
    carried = []
    for p in previous:
        phi = B.phi(p.type)
        phi.add_incoming(p, preheader)
        carried.append(phi)
    given, loaded = {}, []
    for offsets, prev in zip(groups, carried):
        high = max(offsets)
        last = load(v, offsets[high][0])
        loaded.append(last)
        for o, nodes in offsets.items():
            # lanes of (previous, last) from element v + o on: lane width + o - high of the pair
            window = last if o == high else B.shuffle_vector(prev, last, _lanes(
                [width + o - high + k for k in range(width)]))
            for node in nodes:
                given[id(node)] = (node, window)
    chunk(v, given)
    latch = B.block
    nxt = B.add(v, i64(step), flags=("nsw",))
    v.add_incoming(nxt, latch)
    for phi, last in zip(carried, loaded):
        phi.add_incoming(last, latch)
    branch = B.cbranch(B.icmp_signed("<", nxt, hi), header, done)
    if metadata is not None:
        branch.set_metadata("llvm.loop", metadata)
    B.position_at_end(done)


def _only(body):
    """The one statement of `body` (a Block of one, or the statement itself)."""
    return body.body[0] if isinstance(body, Block) and len(body.body) == 1 else body


def _lanes_inside(s):
    """Loop `s` tagged unroll around one vector loop, as that vector loop with `s` inside it: the same
    vector operations in the same order (a vector loop runs its body one statement at a time over all
    its lanes); else `s`."""
    if not isinstance(s, For) or s.kind != "unroll":
        return s
    inner = _only(s.body)
    if not isinstance(inner, For) or inner.kind != "vector" \
            or mentions(inner.lo, s.var) or mentions(inner.hi, s.var):
        return s
    return For(inner.var, inner.lo, inner.hi, For(s.var, s.lo, s.hi, inner.body, s.kind, s.factor, s.origin),
               inner.kind, inner.factor, inner.origin)


def chunk_loop_groups(s, explicit) -> tuple:
    """(the vector loop, its body `jammed`, the body's `carried_groups`) of a loop `s` whose body is one
    vector loop of exactly its `factor` lanes (`vectorize(x, 8)`'s split: `for x0 { for x1 in 0..8: vector
    }`, or rows jammed around it: `for x0 { for r unrolled { for x1 in 0..8: vector } }`) whose reads
    move by a whole vector per iteration of `s`: its chunks follow one another as a vector loop's do.
    (None, None, []) where `s` is not such a loop; `explicit(loop)` says whether a vector loop becomes
    SIMD code."""
    inner = _lanes_inside(_only(s.body))
    if not (isinstance(inner, For) and inner.kind == "vector" and explicit(inner)
            and constant_difference(inner.hi, inner.lo) == inner.factor
            and not mentions(inner.lo, s.var) and not mentions(inner.hi, s.var)):
        return None, None, []
    width = inner.factor
    body = jammed(inner.body, inner.var)
    return inner, body, [offsets for offsets in carried_groups(body, inner.var, width)
                         if all(stride_along(n.indices[-1], s.var) == width
                                and all(stride_along(i, s.var) == 0 for i in n.indices[:-1])
                                for nodes in offsets.values() for n in nodes)]


def _lanes(indices):
    return ir.Constant(ir.VectorType(I32, len(indices)), indices)
