"""Distribution over MPI ranks: which rank runs each statement instance and holds each buffer element.

A loop tagged `distribute` is split into one block of consecutive iterations
per rank. A block distribution of the integer range [lo, hi) over R ranks gives
rank r the values [lo + n*r // R, lo + n*(r+1) // R), n = max(hi - lo, 0):
blocks differ by at most one value and any rank count works (a rank may get
none). Every statement sharing a distributed loop (a *group*) runs the
instances of its rank's block; the others run everywhere (replicated). A
distributed input or output (`img.distribute(dim=0)`) is held in blocks of its
dimension `dim` by the same rule; ranges that are equal share one distribution,
so a loop over the rows of an image and the image's rows split alike.

The analyses here are parametric in the blocks: each distribution d has the
block bounds of a *role* as isl parameters (`mpi_lo{d}`, `mpi_hi{d}` for the
rank that runs the code, `mpi_src_lo{d}`... for the sender and `mpi_dst_lo{d}`...
for the receiver of a message), so one isl set describes every rank; the code
computes the bounds from the rank on entry.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import islpy as isl

from .affine import affine_text, pwaff_to_expr
from .errors import NotSupportedError, ScheduleError
from .expr import Const, Expr, binop, max_, simplify
from .types import int64

#: roles of the block parameters: the rank running the code, and the two ends of a message
ROLES = ("me", "src", "dst")
#: loop kinds that run iterations at the same time: a distributed loop may not be inside one
_CONCURRENT = ("parallel", "vector", "gpu_block", "gpu_thread", "pipeline")
PREFIX = "mpi_"


def block_param(role: str, side: str, index: int) -> str:
    """The isl parameter of the `side` ('lo' or 'hi') bound of distribution `index`'s block held by
    `role`: mpi_lo0, mpi_src_hi1, mpi_dst_lo0..."""
    return f"{PREFIX}{'' if role == 'me' else role + '_'}{side}{index}"


def outer_param(j: int) -> str:
    """The isl parameter of the value of the j-th loop around an exchange point."""
    return f"{PREFIX}o{j}"


def block_bounds(lo: int, hi: int, rank: int, ranks: int) -> tuple:
    """(first, end) of rank `rank`'s block of [lo, hi) among `ranks` ranks."""
    n = max(hi - lo, 0)
    return lo + n * rank // ranks, lo + n * (rank + 1) // ranks


def block_exprs(lo: Expr, hi: Expr, rank: Expr, ranks: Expr) -> tuple:
    """`block_bounds` as loop IR expressions (what the generated code computes)."""
    n = max_(simplify(hi - lo), Const(0, int64))
    return (simplify(lo + binop("ediv", n * rank, ranks)), simplify(lo + binop("ediv", n * (rank + 1), ranks)))


# the commands --------------------------------------------------------------------------------------

def check_dim(name, ndim, dim, cmd) -> int:
    """`dim` as a dimension of a buffer of `ndim` dimensions, or ScheduleError naming the command."""
    if isinstance(dim, bool) or not isinstance(dim, int) or not 0 <= dim < ndim:
        raise ScheduleError(f"{cmd}: {name} has {ndim} dimension(s); dim must be an integer in [0, {ndim})")
    return dim


def record_transfer(function, data, consumer, level, cmd):
    """Note an explicit send/receive: the values of `data` (a computation or input) that `consumer`
    reads on other ranks move right before `consumer`'s loop `level`."""
    from .schedule import Schedulable, loop_name
    if not isinstance(consumer, Schedulable) or consumer.function is not function:
        raise ScheduleError(f"{cmd}: the consumer must be a computation of the same function")
    consumer._loop_index(level, cmd)
    function._transfers.append((data, consumer, loop_name(level), cmd))
    function._record(cmd)


# groups and distributions ----------------------------------------------------------------------------

@dataclass(eq=False)
class Distribution:
    """A block distribution of [lo, hi) (isl PwAffs of the sizes; `lo_expr`, `hi_expr` the same as
    loop IR expressions) over the ranks; `users` says what it splits, for messages."""

    index: int
    lo: isl.PwAff
    hi: isl.PwAff
    lo_expr: Expr
    hi_expr: Expr
    users: list = field(default_factory=list)

    def param(self, role, side):
        return block_param(role, side, self.index)

    def constraint(self, role) -> isl.Set:
        """lo <= role's block lo <= role's block hi <= hi, on the parameters."""
        lo_p, hi_p = self.param(role, "lo"), self.param(role, "hi")
        box = isl.Set(f"[{lo_p}, {hi_p}] -> {{ : {lo_p} <= {hi_p} }}")
        mine_lo = _param_pwaff(box.get_space(), lo_p)
        mine_hi = _param_pwaff(box.get_space(), hi_p)
        return box.intersect(mine_lo.ge_set(self.lo)).intersect(mine_hi.le_set(self.hi))


@dataclass(eq=False)
class Group:
    """The statements that share one distributed loop: at depth `depth` of the statements whose first
    depth + 1 betas are `betas`; its time dimension is 2 * depth + 1."""

    betas: tuple
    depth: int
    dist: Distribution
    stmts: list
    loop: str

    @property
    def dim(self):
        return 2 * self.depth + 1

    def describe(self):
        names = ", ".join(s.name for s in self.stmts)
        return f"loop {self.loop} of {names}"


def _param_pwaff(space, name) -> isl.PwAff:
    space = space.params()
    return isl.PwAff.var_on_domain(isl.LocalSpace.from_space(space), isl.dim_type.param,
                                   space.find_dim_by_name(isl.dim_type.param, name))


def _total(pa: isl.PwAff, context: isl.Set) -> isl.PwAff:
    """`pa` on the whole context, 0 where it is undefined (sizes for which a loop is empty)."""
    pa = pa.intersect_params(context).coalesce()
    rest = context.subtract(pa.domain())
    if not rest.is_empty():
        zero = isl.PwAff.zero_on_domain(isl.LocalSpace.from_space(context.get_space()))
        pa = pa.union_max(zero.intersect_domain(rest))
    return pa.coalesce()


class Distributions:
    """The distributions of one function, equal ranges sharing one."""

    def __init__(self, context):
        self.context = context
        self.items = []

    def get(self, lo: isl.PwAff, hi: isl.PwAff, user: str) -> Distribution:
        lo, hi = _total(lo, self.context), _total(hi, self.context)
        for d in self.items:
            if d.lo.is_equal(lo) and d.hi.is_equal(hi):
                d.users.append(user)
                return d
        d = Distribution(len(self.items), lo, hi, pwaff_to_expr(lo, self.context),
                         pwaff_to_expr(hi, self.context), [user])
        self.items.append(d)
        return d

    def constraints(self, *roles) -> isl.Set:
        """The context with every distribution's bounds of each role in range."""
        out = self.context
        for d in self.items:
            for role in roles:
                out = out.intersect(d.constraint(role))
        return out

    def pair_constraints(self, order=None) -> isl.Set:
        """The context of a message: sender and receiver blocks in range, and the sender's blocks all
        before the receiver's (`order` "before": a lower rank sends), all after ("after"), or either
        (None): blocks follow the rank order in every distribution."""
        if order is None:
            return self.pair_constraints("before").union(self.pair_constraints("after")).coalesce()
        out = self.constraints("src", "dst")
        for d in self.items:
            s_lo, s_hi = d.param("src", "lo"), d.param("src", "hi")
            r_lo, r_hi = d.param("dst", "lo"), d.param("dst", "hi")
            cons = f"{s_hi} <= {r_lo}" if order == "before" else f"{r_hi} <= {s_lo}"
            out = out.intersect(isl.Set(f"[{s_lo}, {s_hi}, {r_lo}, {r_hi}] -> {{ : {cons} }}"))
        return out.coalesce()

    def nonempty(self, dist, role) -> isl.Set:
        """The sizes and blocks for which `role`'s block of `dist` holds something."""
        lo, hi = dist.param(role, "lo"), dist.param(role, "hi")
        return isl.Set(f"[{lo}, {hi}] -> {{ : {lo} < {hi} }}")


def extent_pwaff(expr, params, what) -> isl.PwAff:
    """An isl PwAff of the sizes for a buffer extent, or NotSupportedError naming `what`."""
    text = affine_text(expr)
    if text is None:
        raise NotSupportedError(f"{what}: its extent {expr} is not affine in the sizes; it cannot be distributed")
    return isl.PwAff(f"[{', '.join(params)}] -> {{ [({text})] }}")


def distributed_loops(stmts):
    """[(statement, depth)] of the statements with a loop tagged distribute, checked: one per
    statement, not inside a loop whose iterations run at the same time, not a loop of a producer
    computed inside another computation's loops."""
    out = []
    for s in stmts:
        ks = [k for k, loop in enumerate(s.loops) if s.tags.get(loop, ("serial", 1))[0] == "distribute"]
        if not ks:
            continue
        if len(ks) > 1:
            raise NotSupportedError(f"{s.name} has {len(ks)} distributed loops ({', '.join(s.loops[k] for k in ks)}); "
                                    f"the ranks form a line: distribute one loop")
        k = ks[0]
        for loop in s.loops[:k]:
            kind = s.tags.get(loop, ("serial", 1))[0]
            if kind in _CONCURRENT:
                raise NotSupportedError(f"loop {s.loops[k]} of {s.name} is distributed inside the {kind} loop "
                                        f"{loop}; distribute the outer loop, or run the inner one in parallel")
        if s.local is not None and k >= s.prefix_depth:
            consumer = s.comp.storage_owner.compute_at_target[0].name
            raise NotSupportedError(f"loop {s.loops[k]} of {s.name} is distributed, but {s.name} is computed inside "
                                    f"the loops of {consumer}; distribute a loop of {consumer} around it instead")
        out.append((s, k))
    return out


def find_groups(stmts, context, dists: Distributions) -> list:
    """The groups of statements sharing a distributed loop, each with the distribution of its range."""
    groups = []
    seen = {}
    for s, k in distributed_loops(stmts):
        key = (tuple(s.betas[:k + 1]), k)
        if key in seen:
            continue
        members = [t for t in stmts if len(t.loops) > k and tuple(t.betas[:k + 1]) == key[0]]
        dim = 2 * k + 1
        values = None
        for t in members:
            image = t.time.intersect_domain(t.domain).range()
            n = image.dim(isl.dim_type.set)
            line = image.project_out(isl.dim_type.set, dim + 1, n - dim - 1).project_out(isl.dim_type.set, 0, dim)
            values = line if values is None else values.union(line)
        values = values.intersect_params(context).coalesce()
        if values.is_empty():
            raise NotSupportedError(f"the distributed loop {s.loops[k]} of {s.name} runs no iteration")
        lo, hi = values.dim_min(0), values.dim_max(0)
        user = f"loop {s.loops[k]} of {', '.join(t.name for t in members)}"
        g = Group(key[0], k, dists.get(lo, hi.add(_one(hi)), user), members, s.loops[k])
        seen[key] = g
        groups.append(g)
    return groups


def _one(pa):
    return isl.PwAff.val_on_domain(pa.domain(), isl.Val(1))


def group_of(stmt, groups):
    """The group whose distributed loop `stmt` runs in, or None (it runs on every rank)."""
    for g in groups:
        if stmt in g.stmts:
            return g
    return None


def on_role(stmt, group, role) -> isl.Set:
    """The instances of `stmt` that the rank in `role` runs (all of them for a replicated one)."""
    if group is None:
        return stmt.domain
    lo, hi = group.dist.param(role, "lo"), group.dist.param(role, "hi")
    n = stmt.time.dim(isl.dim_type.out)
    dims = [f"c{i}" for i in range(n)]
    band = isl.Set(f"[{lo}, {hi}] -> {{ [{', '.join(dims)}] : {lo} <= c{group.dim} < {hi} }}")
    return stmt.time.intersect_domain(stmt.domain).intersect_range(band).domain()


def elements(buffer, params) -> isl.Set:
    """All the elements of `buffer` (its shape affine in the sizes `params`)."""
    dims = [f"e{i}" for i in range(buffer.ndim)]
    cons = []
    for d, ext in enumerate(buffer.shape):
        text = affine_text(ext)
        if text is None:
            raise NotSupportedError(f"buffer {buffer.name}: its extent {ext} is not affine in the sizes")
        cons.append(f"0 <= e{d} < {text}")
    body = " and ".join(cons) or "true"
    return isl.Set(f"[{', '.join(params)}] -> {{ {buffer.name}[{', '.join(dims)}] : {body} }}")


def owned(buffer, params, dim, dist, role) -> isl.Set:
    """The elements of `buffer` held in blocks of dimension `dim` that the rank in `role` holds (all
    of them when `dist` is None)."""
    whole = elements(buffer, params)
    if dist is None:
        return whole
    lo, hi = dist.param(role, "lo"), dist.param(role, "hi")
    dims = [f"e{i}" for i in range(buffer.ndim)]
    block = isl.Set(f"[{lo}, {hi}] -> {{ {buffer.name}[{', '.join(dims)}] : {lo} <= e{dim} < {hi} }}")
    return whole.intersect(block)
