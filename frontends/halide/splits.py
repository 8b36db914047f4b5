"""Halide's loop nests: the loops a stage runs after its splits, as an isl relation to its variables.

Halide (ApplySplit.cpp, Func.cpp of v21) splits a loop `v` of min `m` and extent `e`
by a factor `f` into an outer loop `o` in [0, ceil(e/f)) and an inner loop `i` in
[0, f), and defines `v` from them by the split's tail strategy:

  * GuardWithIf, Predicate: `v = m + f*o + i`, run only where `v < m + e`;
  * ShiftInwards: `v = m + min(f*o, e - f) + i`: the last tile is shifted back over
    the one before, so a few points are computed twice; when `e < f`, Halide's one
    tile starts below `m` (the region grows downward; see builder._grown for what
    this translation does there);
  * RoundUp: `v = m + f*o + i` with no guard: ceil(e/f)*f points, the stage computes
    up to a multiple of `f` (see builder.PipelineTranslation.infer_bounds for what
    its producers compute);
  * Auto is resolved when the schedule is written (and serialized): GuardWithIf for
    RVars, RoundUp for the pure variables of an update (GuardWithIf if the variable
    comes from the inner loop of an earlier split), ShiftInwards for a pure definition
    (RoundUp for a loop that comes from the outer loop of a ShiftInwards split at
    least as large). `resolve_auto` repeats that choice for a pipeline that still
    says Auto.

A split of a split's loop uses that loop's range (an inner loop: [0, f)). Fusing
two loops gives `(outer - outer_min) * inner_extent + (inner - inner_min)` when the
inner extent is a constant. Otherwise (an autoscheduler fuses the tile loops of a
region whose size is a parameter) that is not affine: the fused loop stays the
nest of its loops, which runs the same iterations in the same order, and it is a
group of them by its name (a parallel tag goes to its outermost loop that may have
more than one iteration; splitting or vectorizing it is refused by name).

`loop_nest` builds the relation from a stage's variables to its loops. A pure
variable's bounds are isl parameters (its loop's min and max), set to the region
the stage computes at the root, or per tile when the Func is computed at a
consumer's loop (see middleend.schedule.Schedulable.set_schedule). Bounds
inference applies the same relation to find the region a stage really computes.
PredicateLoads, PredicateStores and the *AndBlend strategies guard only the loads
or only the stores, or blend values; they are refused (NotSupportedError).
"""
from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from mascarpone.middleend.errors import NotSupportedError

from .schema import SPLIT_TYPES, TAIL_STRATEGIES

#: tail strategies with the iterations of GuardWithIf (Halide lowers Predicate exactly like it)
_GUARDED = ("GuardWithIf", "Predicate")


@dataclass
class Variable:
    """A variable of a stage: its Halide name, its isl name, whether it is an RVar, and its loop's
    bounds as isl text (parameters for pure variables, the RDom's bounds for RVars). `extent` is the
    loop's extent when it is a known constant (fusing an inner loop needs one)."""

    halide: str
    ident: str
    rvar: bool
    lo: str
    hi: str
    extent: int | None = None


@dataclass
class Loop:
    """A loop of the nest: Halide name, isl name, range as isl text, and how it came about."""

    halide: str
    ident: str
    lo: str
    hi: str
    extent: int | None     # a constant trip count (split inner loops, constant variables)
    rvar: bool
    from_inner: bool       # comes from the inner loop of a split (RoundUp would recompute updates)
    shift_factor: int | None = None   # outer loop of a ShiftInwards split of this factor, or a loop split from one
    bounded: bool = True   # whether the relation already keeps the loop in its range (not yet for variables)
    members: list | None = None   # a fused loop of non-constant extent: its loops, outermost first

    def flat(self):
        """The loops of the relation this loop stands for: itself, or a fused group's members."""
        return [self] if self.members is None else self.members


@dataclass
class LoopNest:
    """A stage's loops, outermost first (the relation's output dimensions), the relation
    `{ S[variables] -> [loops] }`, and its loops by Halide name (a fused group under its name)."""

    loops: list
    relation: isl.Map
    tails: list            # (old loop, factor, strategy applied), in split order
    named: dict | None = None

    def __post_init__(self):
        if self.named is None:
            self.named = {lp.halide: lp for lp in self.loops}


def split_factor(split, where):
    """The constant factor of a serialized Split."""
    node = split.factor
    if node is not None and node.kind in ("IntImm", "UIntImm") and node.value > 0:
        return node.value
    raise NotSupportedError(f"{where}: the factor of split({split.old_var}) must be a positive integer constant")


def split_strategy(split, where):
    """The name of the tail strategy written in a serialized Split."""
    if 0 <= split.tail < len(TAIL_STRATEGIES):
        return TAIL_STRATEGIES[split.tail]
    raise NotSupportedError(f"{where}: the tail strategy number {split.tail} of split({split.old_var})")


def resolve_auto(loop, factor, exact, is_init):
    """The strategy Halide picks for TailStrategy.Auto (Stage::split in Func.cpp)."""
    if exact:
        return "GuardWithIf"
    if not is_init:
        return "GuardWithIf" if loop.from_inner else "RoundUp"
    if loop.shift_factor is not None and loop.shift_factor >= factor:
        return "RoundUp"
    return "ShiftInwards"


def _check_strategy(strategy, loop, exact, where, is_init):
    """Refuse the strategies whose iterations this translation does not reproduce."""
    if strategy in ("PredicateLoads", "PredicateStores", "ShiftInwardsAndBlend", "RoundUpAndBlend"):
        guards = {"PredicateLoads": "only its loads", "PredicateStores": "only its stores"}.get(
            strategy, "blends the values of its last tile")
        raise NotSupportedError(f"{where}: split({loop.halide}) with TailStrategy.{strategy}, which guards "
                                f"{guards}; use GuardWithIf, ShiftInwards or RoundUp")
    if strategy == "ShiftInwards" and not is_init:
        raise NotSupportedError(f"{where}: split({loop.halide}) with TailStrategy.ShiftInwards in an update "
                                f"definition would compute some updates twice (Halide refuses it too)")
    if strategy == "RoundUp" and not is_init and (exact or loop.from_inner):
        raise NotSupportedError(f"{where}: split({loop.halide}) with TailStrategy.RoundUp in an update "
                                f"definition would compute some updates twice (Halide refuses it too)")


def constant_value(text, params):
    """The value of an isl expression of the parameters when it is one constant, else None."""
    pa = isl.PwAff(f"[{', '.join(params)}] -> {{ [({text})] }}")
    pieces = pa.get_pieces()
    if len(pieces) == 1 and pieces[0][1].is_cst():
        return pieces[0][1].get_constant_val().to_python()
    return None


class _Builder:
    """Applies a stage's splits, in order, to the identity relation of its variables."""

    def __init__(self, tuple_name, variables, params, where, is_init, fresh, guarded=False):
        self.where, self.is_init, self.fresh, self.guarded = where, is_init, fresh, guarded
        self.params = list(params)
        names = [v.ident for v in variables]
        self.relation = isl.Map(f"[{', '.join(self.params)}] -> {{ {tuple_name}[{', '.join(names)}] -> "
                                f"[{', '.join(names)}] }}")
        self.loops = [Loop(v.halide, v.ident, v.lo, v.hi, v.extent, v.rvar, False, bounded=False)
                      for v in variables]
        self.tails = []

    def index(self, halide_name):
        for k, loop in enumerate(self.loops):
            if loop.halide == halide_name:
                return k
        raise NotSupportedError(f"{self.where}: its schedule names the loop {halide_name}, which it does not "
                                f"have")

    def dims(self):
        """The relation's output dimensions (a fused group's members in its place)."""
        return [m.ident for lp in self.loops for m in lp.flat()]

    def _step(self, outs, constraints, ins=None):
        """Compose the relation with `{ [ins] -> [outs] : constraints }` (ins: the loops as they are)."""
        ins = self.dims() if ins is None else ins
        where = f" : {' and '.join(constraints)}" if constraints else ""
        text = f"[{', '.join(self.params)}] -> {{ [{', '.join(ins)}] -> [{', '.join(outs)}]{where} }}"
        self.relation = self.relation.apply_range(isl.Map(text))

    def split(self, s, factor):
        k = self.index(s.old_var)
        old = self.loops[k]
        if old.members is not None:
            raise NotSupportedError(f"{self.where}: split({old.halide}) of a fused loop whose extent is not a "
                                    f"constant; fuse loops of constant extent, or split before fusing")
        strategy = split_strategy(s, self.where)
        if strategy == "Auto":
            strategy = resolve_auto(old, factor, s.exact, self.is_init)
        _check_strategy(strategy, old, s.exact, self.where, self.is_init)
        if self.guarded and strategy == "ShiftInwards":
            strategy = "GuardWithIf"
        o, i = self.fresh(s.outer), self.fresh(s.inner)
        extent = f"(({old.hi}) - ({old.lo}) + 1)"
        base = f"{factor}*{o}" if strategy != "ShiftInwards" else f"min({factor}*{o}, {extent} - {factor})"
        constraints = [f"{old.ident} = ({old.lo}) + {base} + {i}", f"0 <= {i} < {factor}", f"0 <= {o}",
                       f"{factor}*{o} < {extent}"]
        if strategy in _GUARDED:
            constraints.append(f"{old.ident} <= {old.hi}")
        elif strategy != "ShiftInwards" and strategy != "RoundUp":
            raise NotSupportedError(f"{self.where}: split({old.halide}) with TailStrategy.{strategy}")
        outs = [m.ident for lp in self.loops[:k] for m in lp.flat()] + [o, i] + \
            [m.ident for lp in self.loops[k + 1:] for m in lp.flat()]
        self._step(outs, constraints)
        shift = factor if strategy == "ShiftInwards" else old.shift_factor
        outer_extent = -(-old.extent // factor) if old.extent is not None else None
        outer = Loop(s.outer, o, "0", f"floor(({extent} - 1) / {factor})", outer_extent, old.rvar,
                     old.from_inner, shift)
        inner = Loop(s.inner, i, "0", str(factor - 1), factor, old.rvar, True,
                     old.shift_factor if strategy != "ShiftInwards" else None)
        self.loops[k:k + 1] = [outer, inner]
        self.tails.append((old.halide, factor, strategy))

    def bound(self, loops):
        """Keep these loops in their ranges (a variable's loop is free until then: a split's tail may
        take its values outside)."""
        loops = [lp for lp in loops if not lp.bounded]
        if loops:
            self._step(self.dims(), [f"({lp.lo}) <= {lp.ident} <= {lp.hi}" for lp in loops])
            for lp in loops:
                lp.bounded = True

    def fuse(self, s):
        ko, ki = self.index(s.outer), self.index(s.inner)
        outer, inner = self.loops[ko], self.loops[ki]
        self.bound([m for lp in (outer, inner) for m in lp.flat()])
        if inner.extent is None and inner.members is None:
            inner.extent = constant_value(f"({inner.hi}) - ({inner.lo}) + 1", self.params)
        if inner.extent is None or outer.members is not None:
            members = outer.flat() + inner.flat()
            group = Loop(s.old_var, members[-1].ident, "0", "0", None, outer.rvar or inner.rvar,
                         outer.from_inner or inner.from_inner, members=members)
            before = self.dims()
            self.loops = [group if lp is inner else lp for lp in self.loops if lp is not outer]
            self._step(self.dims(), [], ins=before)   # the members move next to each other, outer first
            return
        fused = self.fresh(s.old_var)
        value = f"(({outer.ident}) - ({outer.lo})) * {inner.extent} + (({inner.ident}) - ({inner.lo}))"
        outs = [fused if lp is inner else lp.ident for lp in self.loops if lp is not outer]
        self._step(outs, [f"{fused} = {value}"])
        extent = None if outer.extent is None else outer.extent * inner.extent
        hi = f"(({outer.hi}) - ({outer.lo}) + 1) * {inner.extent} - 1"
        loop = Loop(s.old_var, fused, "0", hi, extent, outer.rvar or inner.rvar, outer.from_inner or inner.from_inner)
        self.loops = [loop if lp is inner else lp for lp in self.loops if lp is not outer]

    def rename(self, s):
        loop = self.loops[self.index(s.old_var)]
        loop.halide = s.outer


def loop_nest(tuple_name, variables, schedule, params, where, is_init, fresh, guarded=False):
    """The loops of a stage (Variables in the order of `tuple_name`'s dimensions) after the splits
    of its serialized `schedule`, outermost first, and the relation from its variables to them.

    `params` are the parameters the variables' bounds use; `fresh(halide_name)` gives isl names
    for new loops. `guarded`: a ShiftInwards split guards its last tile instead (GuardWithIf; see
    schedule.apply_loop_schedules)."""
    b = _Builder(tuple_name, variables, params, where, is_init, fresh, guarded)
    if schedule is None:
        b.bound(b.loops)
        return LoopNest(list(reversed(b.loops)), b.relation, [])
    # gpu_single_thread splits __outermost (one iteration) into block and thread loops of one iteration:
    # they tag the stage for a GPU and hold no points, so they get no loops (a one-thread kernel here)
    unit = {"__outermost"}
    for s in schedule.splits:
        kind = SPLIT_TYPES[s.split_type] if s.split_type < len(SPLIT_TYPES) else str(s.split_type)
        if kind in ("SplitVar", "RenameVar") and s.old_var in unit:
            unit |= {s.outer, s.inner}
            continue
        if kind == "SplitVar":
            b.split(s, split_factor(s, where))
        elif kind == "RenameVar":
            b.rename(s)
        elif kind == "FuseVars":
            b.fuse(s)
        else:
            raise NotSupportedError(f"{where}: the split kind {kind}")
    b.bound(b.loops)
    dims = [d.var for d in schedule.dims if d.var not in unit]
    if sorted(dims) != sorted(lp.halide for lp in b.loops):
        raise NotSupportedError(f"{where}: its loops {[lp.halide for lp in b.loops]} do not match the "
                                f"schedule's {dims}")
    order = [b.loops[b.index(name)] for name in reversed(dims)]
    flat = [m for lp in order for m in lp.flat()]
    # Halide lists dims innermost first; the relation's loops go outermost first
    relation = b.relation.apply_range(isl.Map(
        f"{{ [{', '.join(b.dims())}] -> [{', '.join(m.ident for m in flat)}] }}"))
    return LoopNest(flat, relation, b.tails, {**{m.halide: m for m in flat}, **{lp.halide: lp for lp in order}})
