"""Expanding an array over a loop (privatization): each iteration of the loop gets a copy of its own
of an array that the loop's iterations reuse, so that the loop no longer carries a dependence through it.

A Julia function that fills a scratch array inside a loop (doitgen's `sum[p]`, zeroed and summed
for every (r, q)) makes each iteration wait for the previous one to finish with the array: the
loop cannot run in parallel, nor its iterations in vector lanes. `array.expand(loop)` gives the
updates of `array` in that loop nest (the group) the storage `array[..., loop]` instead, reads in
the group read the copy of their own iteration, and an update after the nest copies each element's
last value back into `array`, so that what the caller or a later statement reads is unchanged.

The rewrite keeps the program's meaning exactly where every read of the array in the group reads a
value the group wrote in the same iteration of `loop` (isl's flow analysis on the program as it is,
checked here), and where the last write of each element happens in one and the same iteration for
all elements (its copy is then read back). Elsewhere `ms.ScheduleError` says which read or element
breaks it. The dependences of the rewritten program are then computed as for any other.
"""
from __future__ import annotations

import islpy as isl

from .affine import affine_text, pwaff_to_expr
from .dependences import access_map, original_schedule, source_nests, union_maps
from .errors import ScheduleError
from .expr import Access, Const, Sym, transform, walk
from .layout import logical_read, logical_write
from .schedule import fresh_name, loop_name


def _reads(comp, array):
    """The accesses of `comp` (its expression and condition) that read `array`'s storage."""
    exprs = [comp.expr] + ([comp.predicate] if comp.predicate is not None else [])
    return [n for e in exprs for n in walk(e)
            if isinstance(n, Access) and getattr(n.target, "storage_owner", None) is array]


def touching(function, array):
    """The computations other than `array` itself that update or read its storage, in declaration order."""
    return [c for c in function.computations
            if c is not array and (c.updated is array or _reads(c, array))]


def _group(function, array, loop, cmd):
    """The computations that touch `array` inside the loop nest whose loop is named `loop`."""
    users = touching(function, array)
    within = [c for c in users if loop in [v.name for v in c.vars]]
    if not any(c.updated is array for c in within):
        raise ScheduleError(f"{cmd}: no update of {array.name} runs in a loop named {loop!r}")
    nests = source_nests(function)
    if nests:
        nest = {nests[c] for c in within}
        if len(nest) > 1:
            raise ScheduleError(f"{cmd}: loops named {loop!r} of several loop nests touch {array.name}")
        group = [c for c in users if nests[c] in nest]
    else:
        # declaration order: the group must be a run of the computations that touch the array
        first, last = users.index(within[0]), users.index(within[-1])
        group = users[first:last + 1]
    outside = [c.name for c in group if c not in within]
    if outside:
        raise ScheduleError(f"{cmd}: {', '.join(outside)} touch {array.name} between its updates in loop "
                            f"{loop!r} but outside that loop")
    return group


def _loop_equal(source, sink, loop):
    """{ source[...] -> sink[...] : the two instances' `loop` are equal } (dimensions named by position, so
    that no name of one side stands for a dimension of the other)."""
    s = [f"s{k}" for k in range(len(source.vars))]
    t = [f"t{k}" for k in range(len(sink.vars))]
    at = [[v.name for v in c.vars].index(loop) for c in (source, sink)]
    return isl.Map(f"{{ {source.name}[{', '.join(s)}] -> {sink.name}[{', '.join(t)}] : s{at[0]} = t{at[1]} }}")


def _check_private(function, array, group, loop, context, sched, cmd):
    """Raise unless every read of `array` in `group` reads a value the group wrote in the same iteration
    of `loop`, and unless the iterations of `loop` write some element twice (else nothing is reused)."""
    writers = [array] + list(array.updates)
    must = isl.UnionMap.empty(isl.Space.params_alloc(isl.DEFAULT_CONTEXT, 0))
    may = must
    for w in writers:
        name, index = logical_write(w)
        m, exact = access_map(w, name, index, context)
        if exact and w.predicate is None:
            must = must.union(isl.UnionMap.from_map(m))
        else:
            may = may.union(isl.UnionMap.from_map(m))
    reads = isl.UnionMap.empty(must.get_space())
    for c in group:
        for node in _reads(c, array):
            name, index = logical_read(node.target, node.indices)
            reads = reads.union(isl.UnionMap.from_map(access_map(c, name, index, context)[0]))
    if reads.is_empty():
        raise ScheduleError(f"{cmd}: nothing in loop {loop!r} reads {array.name}: nothing to expand")
    flow = (isl.UnionAccessInfo.from_sink(reads).set_must_source(must).set_may_source(may)
            .set_schedule_map(sched).compute_flow())
    unsourced = flow.get_may_no_source()
    if not unsourced.is_empty():
        m = union_maps(unsourced)[0]
        raise ScheduleError(f"{cmd}: {m.get_tuple_name(isl.dim_type.in_)} reads elements of {array.name} that "
                            f"no update in loop {loop!r} wrote before ({m.domain().sample_point()}): they "
                            f"hold values from before the loop")
    by_name = {c.name: c for c in function.computations}
    for dep in union_maps(flow.get_may_dependence()):
        source = by_name[dep.get_tuple_name(isl.dim_type.in_)]
        sink = by_name[dep.get_tuple_name(isl.dim_type.out)]
        if source not in group:
            raise ScheduleError(f"{cmd}: {sink.name} reads values of {array.name} that {source.name} wrote "
                                f"outside loop {loop!r}")
        across = dep.subtract(_loop_equal(source, sink, loop).align_params(dep.get_space()))
        if not across.is_empty():
            raise ScheduleError(f"{cmd}: {sink.name} reads values of {array.name} that {source.name} wrote in "
                                f"another iteration of loop {loop!r} ({across.sample()}): "
                                f"they are not private to an iteration")
    # reuse: two iterations of the loop write one element
    cells = None
    for w in group:
        if w.updated is array:
            name, index = logical_write(w)
            m = access_map(w, name, index, context)[0]
            at = isl.Map(f"{{ {w.name}[{', '.join(v.name for v in w.vars)}] -> [{loop}] }}").align_params(m.get_space())
            m = at.reverse().apply_range(m.intersect_domain(w.domain))     # loop -> elements
            cells = m if cells is None else cells.union(m)
    shared = cells.apply_range(cells.reverse())
    if shared.subtract(isl.Map.identity(shared.get_space())).is_empty():
        raise ScheduleError(f"{cmd}: each iteration of loop {loop!r} writes other elements of {array.name}: "
                            f"there is nothing to expand")


def _as_size_expr(e, function):
    """An int64 expression of the sizes (pwaff_to_expr's) as Layer I writes one: Params, int32."""
    from .algorithm import Param
    from .types import index_type

    def repl(n):
        if isinstance(n, Sym) and not isinstance(n, Param) and n.name in function.param_names:
            return Param(n.name)
        if isinstance(n, Const) and n.dtype.is_int:
            return Const(n.value, index_type)
        return None
    return transform(e, repl)


def _extent(function, group, loop, context, cmd):
    """(lowest, highest) values `loop` takes in `group`, as expressions of the sizes."""
    values = None
    for c in group:
        k = [v.name for v in c.vars].index(loop)
        s = c.domain.project_out(isl.dim_type.set, k + 1, len(c.vars) - k - 1).project_out(isl.dim_type.set, 0, k)
        s = s.reset_tuple_id().intersect_params(context)
        values = s if values is None else values.union(s)
    values = values.coalesce()
    lo, hi = (_as_size_expr(pwaff_to_expr(pa, context), function) for pa in (values.dim_min(0), values.dim_max(0)))
    if affine_text(lo) is None or affine_text(hi) is None:
        raise ScheduleError(f"{cmd}: the range of loop {loop!r} is not affine in the sizes")
    return lo, hi


def _last_iteration(array, group, loop, context, sched, cmd):
    """(the elements of `array` the group writes, as an isl set of its coordinates; the iteration of
    `loop` that writes them last, an expression of the sizes)."""
    last = None
    for w in group:
        if w.updated is not array:
            continue
        name, index = logical_write(w)
        m = access_map(w, name, index, context)[0]
        dims = ", ".join(v.name for v in w.vars)
        mine = [s for s in union_maps(sched) if s.get_tuple_name(isl.dim_type.in_) == w.name][0]
        at = isl.Map(f"{{ {w.name}[{dims}] -> [{loop}] }}").align_params(mine.get_space())
        tagged = mine.flat_range_product(at)
        cell_times = m.reverse().apply_range(tagged)
        last = cell_times if last is None else last.union(cell_times)
    written = last.domain().coalesce()
    last = last.lexmax()
    n = last.dim(isl.dim_type.out)
    iterations = last.project_out(isl.dim_type.out, 0, n - 1).range().coalesce()
    lo, hi = iterations.dim_min(0), iterations.dim_max(0)
    if not lo.ne_set(hi).intersect_params(context).is_empty():
        raise ScheduleError(f"{cmd}: elements of {array.name} get their last value in different iterations of "
                            f"loop {loop!r}: copying them back is not supported")
    return written, _as_size_expr(pwaff_to_expr(hi, context), array.function)


def expand(array, loop, dim=None):
    """Give each iteration of the loop `loop` (a Var or its name) its own copy of `array` (see the module's doc);
    returns the expanded array, a computation of `array`'s variables with `loop` inserted as its
    dimension `dim` (default: the last, whose elements are adjacent in memory)."""
    from .algorithm import Computation, Var, _access
    function = array.function
    loop = loop_name(loop)
    dims = len(array.vars)
    dim = dims if dim is None else dim
    cmd = f"{array.name}.expand({loop})" if dim == dims else f"{array.name}.expand({loop}, dim={dim})"
    if isinstance(dim, bool) or not isinstance(dim, int) or not 0 <= dim <= dims:
        raise ScheduleError(f"{cmd}: dim must be an int from 0 to {dims} (where the new dimension goes)")
    if array.updated is not None:
        raise ScheduleError(f"{cmd}: {array.name} is an update; expand the array it updates, "
                            f"{array.updated.name}")
    scheduled = [h for h in function.history() if ".expand(" not in h]
    if scheduled:
        raise ScheduleError(f"{cmd}: expand arrays before scheduling commands (given: {scheduled[0]})")
    context = function._prepare()
    group = _group(function, array, loop, cmd)
    sched = original_schedule(function.computations, context)
    _check_private(function, array, group, loop, context, sched, cmd)
    lo, hi = _extent(function, group, loop, context, cmd)
    written, last = _last_iteration(array, group, loop, context, sched, cmd)

    taken = lambda: {x.name for x in function.inputs + function.computations + function.buffers}  # noqa: E731
    with function:
        iteration = Var(loop, lo, hi + 1)
        inserted = lambda seq, item: tuple(seq[:dim]) + (item,) + tuple(seq[dim:])     # noqa: E731
        expanded = Computation(fresh_name(f"{array.name}_{loop}", taken()), list(inserted(array.vars, iteration)),
                               Const(0, array.dtype), array.dtype, where=iteration < lo, output=False)
        for c in group:
            own = next(v for v in c.vars if v.name == loop)

            def redirect(n, own=own):
                if isinstance(n, Access) and getattr(n.target, "storage_owner", None) is array:
                    return _access(expanded, inserted(n.indices, own))
                return None
            c.expr = transform(c.expr, redirect)
            if c.predicate is not None:
                c.predicate = transform(c.predicate, redirect)
            if c.updated is array:
                array.updates.remove(c)
                c.updated, c.update_at = expanded, list(inserted(c.update_at, own))
                expanded.updates.append(c)
        back = array.update(list(array.vars), _access(expanded, inserted(array.vars, last)),
                            name=fresh_name(f"{array.name}_from_{expanded.name}", taken()))
        domain = written.set_tuple_name(back.name)
        for k, v in enumerate(back.vars):
            domain = domain.set_dim_name(isl.dim_type.set, k, v.name)
        back.domain = domain.intersect(back.domain.intersect_params(context)).coalesce()
    _place_after(function, back, group)
    function._record(cmd)
    return expanded


def _place_after(function, comp, group):
    """Put `comp` after the loop nest of `group` (right after the group in declaration order)."""
    entries = getattr(function, "original_ordering", None)
    if not entries:
        function.computations.remove(comp)
        function.computations.insert(function.computations.index(group[-1]) + 1, comp)
        return
    nests = source_nests(function)
    nest = nests[group[0]]
    members = {c for c, n in nests.items() if n == nest}
    last = max((k for k, e in enumerate(entries) if e[1] in members), default=None)
    anchor = group[0] if last is None else entries[last][1]
    entries[:] = [(e[0], e[1], comp, 0) if e[2] is anchor and e[1] is not comp else e for e in entries]
    entries.insert(0 if last is None else last + 1, ("after", comp, anchor, 0))
    function._ordering = list(entries)
