"""What isl's scheduler proposes for a function: which statements share their outer loops (fusion)
and, for each statement, the order of its loops.

The schedule constraints are the exact dependences (validity), which isl's scheduler also brings
close (proximity, Pluto's objective) and keeps parallel where it can (coincidence), as PPCG asks.
The schedule it computes is read back as commands the model can give: the statements under one
outermost band are fused (left in their source nest), the others distributed; a statement whose bands
run its loops one by one (each member a loop variable plus a constant) gets that loop order. Skewed
members are not read back: the model's own skewing and time tiles cover the stencils that need them.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import islpy as isl

from ..isl_budget import OutOfOperations, operations_at_most

#: isl operations the scheduler may take before the proposal is given up (a pipeline of many stages)
SCHEDULER_OPERATIONS = 5_000_000


@dataclass
class Proposal:
    """isl's schedule read as the model's choices: `groups`, sets of statement names fused at the
    outermost loop; `orders`, {statement: its loop variables outermost first}."""

    groups: list = field(default_factory=list)
    orders: dict = field(default_factory=dict)

    def fused(self, a: str, b: str) -> bool:
        """Whether isl runs statements `a` and `b` in one outermost loop."""
        return any(a in g and b in g for g in self.groups)


def propose(function, context, dependences) -> Proposal | None:
    """isl's proposal for the computations not inlined, under their exact `dependences` (a
    dependences.Dependences), or None where its scheduler gives none within SCHEDULER_OPERATIONS."""
    comps = [c for c in function.computations if not c.inlined]
    if not comps:
        return None
    ctx = context.get_ctx()
    try:
        with operations_at_most(ctx, SCHEDULER_OPERATIONS):
            deps = dependences.all()
            domain = isl.UnionSet.empty(context.get_space())
            for comp in comps:
                domain = domain.union(isl.UnionSet(comp.domain.intersect_params(context)))
            deps = deps.intersect_domain(domain).intersect_range(domain)
            schedule = (isl.ScheduleConstraints.on_domain(domain).set_context(context).set_validity(deps)
                        .set_proximity(deps).set_coincidence(deps).compute_schedule())
    except (OutOfOperations, isl.Error):
        return None
    variables = {c.name: [v.name for v in c.vars] for c in comps}
    proposal = Proposal()
    root = schedule.get_root().child(0)
    if root.get_type() in (isl.schedule_node_type.sequence, isl.schedule_node_type.set):
        tops = [root.child(k) for k in range(root.n_children())]
    else:
        tops = [root]
    for top in tops:
        names = _reaching(top)
        proposal.groups.append(names)
        _read_orders(top, variables, {n: [] for n in names}, proposal.orders)
    return proposal


def _reaching(node) -> set:
    """The statements whose instances run below `node` (past its filter, for a filter node)."""
    domain = node.get_domain()
    if node.get_type() == isl.schedule_node_type.filter:
        domain = domain.intersect(node.filter_get_filter())
    names = set()
    domain.foreach_set(lambda s: names.add(s.get_tuple_name()))
    return names


def _read_orders(node, variables, placed, orders):
    """Walk the tree below `node`, appending to `placed[statement]` the loop variable each band member
    runs for it (None where a member is skewed); at the leaves, record the full orders."""
    kind = node.get_type()
    if kind == isl.schedule_node_type.band:
        partial = node.band_get_partial_schedule()
        for member in range(node.band_n_member()):
            upa = partial.get_union_pw_aff(member)
            for name in placed:
                placed[name].append(_member_variable(upa, name, variables[name]))
    if node.n_children() == 0 or kind == isl.schedule_node_type.leaf:
        for name, members in placed.items():
            if None in members:
                continue
            order = [v for v in members if v != ""]
            if len(set(order)) == len(order):
                orders[name] = order + [v for v in variables[name] if v not in order]
        return
    for k in range(node.n_children()):
        child = node.child(k)
        below = _reaching(child)
        _read_orders(child, variables, {n: list(m) for n, m in placed.items() if n in below}, orders)


def _member_variable(upa: isl.UnionPwAff, name: str, names: list):
    """The loop variable a band member runs for statement `name` ('' where it is constant for it), or
    None where it combines several variables or scales one."""
    pw_affs = upa.get_pw_aff_list()
    found = [pa for pa in (pw_affs.get_at(k) for k in range(pw_affs.n_pw_aff()))
             if pa.get_domain_space().get_tuple_name(isl.dim_type.set) == name]
    if not found:
        return ""
    pieces = found[0].get_pieces()
    if len(pieces) != 1:
        return None
    aff = pieces[0][1]
    if any(not aff.get_coefficient_val(isl.dim_type.param, k).is_zero()
           for k in range(aff.dim(isl.dim_type.param))):
        return None
    used = [(names[k], aff.get_coefficient_val(isl.dim_type.in_, k)) for k in range(len(names))
            if not aff.get_coefficient_val(isl.dim_type.in_, k).is_zero()]
    if not used:
        return ""
    if len(used) == 1 and used[0][1].is_one() and aff.get_denominator_val().is_one():
        return used[0][0]
    return None
