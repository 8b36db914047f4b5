"""What a distributed program sends, counted from its element sets for given sizes and rank counts,
without running it; and what a bounding-box exchange of the same accesses would send.

For a sender rank p, each exchange's element sets are evaluated with the sizes, p's and every other
rank q's blocks (the rule of distribution.block_bounds) and each value of the loops around the
exchange point; the points are counted box by box. The bounding-box model is Distributed Halide's:
the receiver asks for the bounding box of what its instances read, and each sender sends the part of
that box inside the bounding box of what it computed or holds.
"""
from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from .distribution import block_bounds


@dataclass
class Sent:
    """What one rank sends in a run: bytes and messages (one per peer and exchange point)."""

    rank: int
    bytes: int
    messages: int


def sent(dist, sizes: dict, ranks: int, senders=None, model="exact") -> list:
    """[Sent] for each rank in `senders` (default: all) of `ranks`, with the sizes `sizes` ({name:
    int}, every size the kernel takes); `model` "exact" (the program's messages) or "box"."""
    senders = range(ranks) if senders is None else senders
    values = _size_values(dist, sizes)
    exchanges = [([(tuple(x if not isinstance(x, isl.Set) else _fixed(x, values) for x in what), size)
                   for what, size in items], outer) for items, outer in _exchanges(dist, model)]
    out = []
    for p in senders:
        total = messages = 0
        for items, outer in exchanges:
            for o in _points(outer, values):
                for q in range(ranks):
                    if q == p:
                        continue
                    env = dict(values, **_blocks(dist, values, p, q, ranks), **o)
                    counts = [n * size for n, size in ((_count(item, env), size) for item, size in items)]
                    if any(counts):
                        messages += 1
                        total += sum(counts)
        out.append(Sent(p, total, messages))
    return out


def _exchanges(dist, model):
    """[(items, outer domain)]: each exchange's items as (what to count, bytes per element)."""
    comm = dist.communication
    bytes_of = {buf.name: buf.dtype.bytes for _, items in dist.exchanges.values() for buf, _ in items}
    bytes_of.update({p.buffer.name: p.buffer.dtype.bytes for p in dist.placements})
    out = []
    for p in dist.phases:
        if not p.items:
            continue
        if model == "exact":
            items = [(("exact", e), bytes_of[name]) for name, e in p.items]
        else:
            items = [(("box", *comm.box_sets(p, name)), bytes_of[name]) for name, _ in p.items]
        out.append((items, p.outer))
    if dist.final:
        # the outputs' last transfers are the same in both models (a sender's rows of the receiver's block)
        out.append(([(("exact", e), bytes_of[name]) for name, e in dist.final], None))
    return out


def _size_values(dist, sizes):
    values = dict(sizes)
    missing = [p for p in list(dist.sizes) + [name for name, _ in dist.size_derived] if p not in values]
    if missing:
        raise ValueError(f"counting what {dist.lowered.name} sends needs the sizes {missing}")
    return values


def _value(pa, env) -> int:
    """The value of a PwAff of the sizes for the sizes `env`."""
    line = _fixed(isl.Map.from_pw_aff(pa.from_range()).range(), env)
    if line.is_empty():
        raise ValueError(f"{pa} is not defined for the sizes {env}")
    return line.dim_min_val(0).to_python()


def _blocks(dist, values, p, q, ranks):
    """The block parameters of sender p and receiver q."""
    out = {}
    for d in dist.distributions:
        lo, hi = _value(d.lo, values), _value(d.hi, values)
        for role, rank in (("src", p), ("dst", q)):
            out[d.param(role, "lo")], out[d.param(role, "hi")] = block_bounds(lo, hi, rank, ranks)
    return out


def _points(outer, values):
    """The values of the loops around an exchange point ({mpi_o0: v, ...}), one dict per iteration."""
    if outer is None or outer.dim(isl.dim_type.set) == 0:
        return [{}]
    s = _fixed(outer, values)
    found = []
    s.foreach_point(lambda pt: found.append({f"mpi_o{j}": pt.get_coordinate_val(isl.dim_type.set, j).to_python()
                                             for j in range(s.dim(isl.dim_type.set))}))
    return found


def _fixed(s, env):
    """`s` with every parameter that `env` gives set to its value and projected out."""
    for k in reversed(range(s.dim(isl.dim_type.param))):
        name = s.get_dim_name(isl.dim_type.param, k)
        if name in env:
            s = s.fix_val(isl.dim_type.param, k, isl.Val(int(env[name]))).project_out(isl.dim_type.param, k, 1)
    return s


def _count(item, env) -> int:
    kind = item[0]
    if kind == "exact":
        return _cardinality(_fixed(item[1], env))
    needed, source = (None if s is None else _fixed(s, env) for s in item[1:])
    if needed is None or source is None or needed.is_empty() or source.is_empty():
        return 0
    total = 1
    for d in range(needed.dim(isl.dim_type.set)):
        lo = max(needed.dim_min_val(d).to_python(), source.dim_min_val(d).to_python())
        hi = min(needed.dim_max_val(d).to_python(), source.dim_max_val(d).to_python())
        if hi < lo:
            return 0
        total *= hi - lo + 1
    return total


def _cardinality(s) -> int:
    """The number of points of a set without parameters: box by box, row by row where a piece is not a
    box."""
    if s.is_empty():
        return 0
    total = 0
    for b in s.make_disjoint().get_basic_sets():
        total += _piece(isl.Set.from_basic_set(b))
    return total


def _piece(s) -> int:
    n = s.dim(isl.dim_type.set)
    if n == 0:
        return 0 if s.is_empty() else 1
    lo = [s.dim_min_val(d).to_python() for d in range(n)]
    hi = [s.dim_max_val(d).to_python() for d in range(n)]
    box = isl.Set.universe(s.get_space())
    for d in range(n):
        box = box.lower_bound_val(isl.dim_type.set, d, isl.Val(lo[d])).upper_bound_val(isl.dim_type.set, d,
                                                                                       isl.Val(hi[d]))
    if box.is_subset(s):
        total = 1
        for a, b in zip(lo, hi):
            total *= b - a + 1
        return total
    return sum(_cardinality(s.fix_val(isl.dim_type.set, 0, isl.Val(v)).project_out(isl.dim_type.set, 0, 1))
               for v in range(lo[0], hi[0] + 1))
