"""Layer III is checked as strictly as the schedule: a layout either keeps the program's results or is
refused, naming the computation, the buffer and an instance.

* Bounds: every write and read of a computation's storage stays inside its buffer, for all sizes the
  context allows (isl proves it; an index computed from data is bounded by its type, clamps and
  modulos, or refused).
* Live values: where a layout may put two of the program's values in one element (a `store_in`
  index that is not one-to-one or a buffer shared by computations, a `storage_fold`), each read must
  find the value it reads in the program's meaning: the last write to that element before the read,
  in the schedule's order, is a write of that value; and no loop whose iterations run at once
  (parallel, vector...) has two of its iterations touch one element for different values.
* What the caller receives: an output stored with `store_in` keeps every value at an element of its
  own; an output folded by `storage_fold` is folded only along a time dimension (see `check_rings`).

The accesses checked are those code generation makes (accesses.statement_accesses): one rule for both.
"""
from __future__ import annotations

import islpy as isl

from .accesses import IslAff, lower_reads, statement_accesses, tile_instance
from .affine import affine_text, free_pwaff, on_sizes, param_names
from .buffer import as_index_expr
from .errors import LayoutError, OutOfBoundsError, OverwriteError
from .expr import Access, walk
from .index_bounds import guard_facts, index_range
from .layout import inline_reads, write_box
from .legality import carried_at
from .loopir import CONCURRENT_KINDS


def check(stmts, function, context):
    """Raise a LayoutError for the first layout that would change results or access out of bounds.

    Returns the size requirements ([(text, isl set of the sizes)]) under which the program's own
    accesses stay inside storage sized by what is written (a read beyond what a computation writes,
    for some sizes: Julia's BoundsError); the kernel checks them on each call."""
    check_rings(function, context)
    check_output_layouts(function, context)
    locals_by_comp = {s.comp: s.local for s in stmts if s.local is not None}
    accesses = [a for s in stmts for a in statement_accesses(s, locals_by_comp)]
    facts = {s.name: guard_facts(s, lower_reads(s, s.comp.predicate, locals_by_comp))
             for s in stmts if s.comp.predicate is not None}
    requirements = check_bounds(accesses, function, context, facts)
    check_live_values(stmts, accesses, function, context, facts)
    return requirements


def _facts(a, facts):
    """The bounds the statement's predicate gives, for an access it guards."""
    return facts.get(a.stmt.name) if a.guarded else None


# what the caller receives --------------------------------------------------------------------

def check_rings(function, context):
    """A fold of an output is a ring the caller receives: along a time dimension (one along which its
    updates read it only at earlier coordinates: `u[t]` from `u[t - 1]`) that is the last `depth`
    steps, the value of step t at (t - first step) mod depth. Along any other dimension the caller
    would receive values it cannot tell apart: refused."""
    for comp in function.computations:
        if not comp.is_output or comp.updated is not None or comp.user_buffer is not None:
            continue
        for var, depth in comp.folds.items():
            if not _is_time_dimension(comp, [v.name for v in comp.vars].index(var), context):
                raise LayoutError(
                    f"{comp.name}.storage_fold({var}, {depth}): {comp.name} is an output, and the caller would "
                    f"receive only {depth} of its values along {var}, each at {var} mod {depth}. An output may be "
                    f"folded along a time dimension only (one along which its updates read it at earlier "
                    f"coordinates, as u[t] from u[t - 1]), and the caller then receives the last {depth} steps; "
                    f"fold a temporary instead, or drop the fold",
                    computation=comp.name, buffer=comp.name, command=f"{comp.name}.storage_fold({var}, {depth})")


def _is_time_dimension(comp, d, context):
    """Whether comp's updates read comp, and every such read is at a smaller coordinate d than the
    update writes (proved by isl for all sizes)."""
    found = False
    params = sorted(comp.function.param_names)
    for u in comp.updates:
        exprs = [u.expr] + ([u.predicate] if u.predicate is not None else [])
        reads = [n for e in exprs for n in walk(inline_reads(e)) if isinstance(n, Access) and n.target is comp]
        written = affine_text(as_index_expr(u.update_at[d]))
        for n in reads:
            read = affine_text(as_index_expr(n.indices[d]))
            if read is None or written is None:
                return False
            later = isl.Set(f"[{', '.join(params)}] -> {{ {u.name}[{', '.join(v.name for v in u.vars)}] : "
                            f"{read} >= {written} }}")
            if not later.intersect(u.domain).intersect_params(context).is_empty():
                return False
            found = True
    return found


def check_output_layouts(function, context):
    """Every value written to an output buffer declared with `store_in` lands at an element of its
    own: the caller reads them all at the end."""
    for buffer in function.buffers:
        if buffer.kind != "output":
            continue
        owners = [c for c in function.computations if c.updated is None and c.user_buffer is buffer]
        if not owners:
            continue
        placed = _placement(owners, buffer, context)
        if placed is None:
            raise LayoutError(
                f"output buffer {buffer.name}: the index of {', '.join(c.name for c in owners)}.store_in(...) "
                f"depends on data, so mascarpone cannot prove that every value reaches the caller; "
                f"store outputs at affine indices", computation=owners[0].name, buffer=buffer.name)
        if not placed.is_injective():
            shared = placed.apply_range(placed.reverse()).subtract(
                placed.domain().identity()).intersect_params(context)
            m = _first_map(shared)
            pair = _witness(m)
            raise LayoutError(
                f"output buffer {buffer.name} receives two values in one element ({pair}): the caller would "
                f"see only the last one written. Give {buffer.name} an element per value (an index that is "
                f"one-to-one over what is written)", computation=m.get_tuple_name(isl.dim_type.in_),
                buffer=buffer.name, instance=pair, command=_layout_commands(function, owners))


def _placement(owners, buffer, context):
    """The union map from each owner's written elements (in its own coordinates) to the elements of
    `buffer` its store_in index puts them at, or None when an index is not affine."""
    out = None
    for c in owners:
        texts = [affine_text(i) for i in c.store_index]
        if any(t is None for t in texts):
            return None
        written, _ = write_box(c, context)
        params = sorted(c.function.param_names)
        m = isl.Map(f"[{', '.join(params)}] -> {{ {c.name}[{', '.join(v.name for v in c.vars)}] -> "
                    f"{buffer.name}[{', '.join(texts)}] }}").intersect_domain(written)
        out = isl.UnionMap.from_map(m) if out is None else out.union(isl.UnionMap.from_map(m))
    return out


def _first_map(umap):
    maps = []
    umap.foreach_map(maps.append)
    return maps[0]


# bounds -------------------------------------------------------------------------------------

#: statements whose domain has more pieces than this get their bounds simplified before comparing
MAX_PLAIN_DOMAIN_PIECES = 1


def check_bounds(accesses, function, context, facts):
    """Every write and read of a computation's storage lies inside its buffer: for all sizes where a
    layout chose the buffer (store_in, storage_fold), else (storage sized by what is written) for the
    sizes of the requirements returned ([(text, isl set of the sizes)]). Reads of the caller's arrays
    at indices bounded without data lie inside their shapes for the sizes of the requirements too."""
    seen, unsafe = set(), []
    checked_at_call = function.checks_input_reads_at_call
    for a in accesses:
        caller_array = a.buffer.kind == "input"
        if caller_array and (a.is_write or checked_at_call):
            continue
        stmt = a.stmt
        key = (stmt.name, a.buffer.name, a.is_write, tuple(_key(i) for i in a.index))
        if key in seen:
            continue
        seen.add(key)
        domain = stmt.domain.intersect_params(context)
        for d, index in enumerate(a.index):
            exact = _unrestricted(stmt, index)
            lo, hi = (exact, exact) if exact is not None else index_range(stmt, index, _facts(a, facts))
            if caller_array and (lo is None or hi is None):
                break     # (an index computed from data: as in the program, not checked)
            if lo is None or hi is None:
                raise OutOfBoundsError(
                    f"{_who(a)} {a.buffer.name} at an index whose range mascarpone cannot bound ({_show(index)} in "
                    f"dimension {d}: computed from data, or not affine); clamp it to the buffer "
                    f"(ms.clamp(index, 0, extent - 1)){_layout_hint(function, a)}",
                    computation=stmt.comp.name, buffer=a.buffer.name, command=_layout_commands(function, [a.owner]))
            extent = _unrestricted(stmt, a.buffer.shape[d])
            extent = _extent(stmt, a.buffer.shape[d]) if extent is None else extent
            if extent is None:
                raise OutOfBoundsError(
                    f"buffer {a.buffer.name}: its extent {a.buffer.shape[d]} in dimension {d} is not affine in the "
                    f"sizes, so its accesses cannot be proved inside it", computation=stmt.comp.name,
                    buffer=a.buffer.name)
            if stmt.domain.n_basic_set() > MAX_PLAIN_DOMAIN_PIECES and not (exact is not None and extent.n_piece() == 1):
                # (each bound simplified on the domain first: comparing two functions defined on the
                # same n pieces takes n * n steps, minutes for a window of many pieces; unrestricted
                # functions of one piece each compare at once)
                lo, hi, extent = (f.gist(stmt.domain) for f in (lo, hi, extent))
            zero = isl.PwAff.val_on_domain(isl.Set.universe(stmt.domain.get_space()), isl.Val(0))
            outside = lo.lt_set(zero).union(hi.ge_set(extent)).intersect(domain)
            if outside.is_empty():
                continue
            # a copy of a whole input holds each of its elements inside the buffer (its writes are checked
            # as any others), so a read outside the buffer is a read outside the input
            source = a.buffer if caller_array else getattr(a.owner, "copies_input", None)
            if source is not None and not a.is_write:
                if not checked_at_call:
                    what = a.buffer.name if caller_array else f"{source.name} (through its copy in {a.buffer.name})"
                    unsafe += _outside_the_callers_array(function, a, what, outside)
                continue
            if not _chosen_layout(a.buffer, function):
                unsafe.append((outside.params(), f"{_who(a)} {a.buffer.name} outside what it holds, "
                                                 f"as at {_instance(stmt, outside)}"))
                continue
            outside = function.with_exact_sizes(outside, f"{_who(a)} {a.buffer.name} outside the buffer "
                                                         f"(index {d}, outside [0, {a.buffer.shape[d]}))")
            if outside.is_empty():
                continue
            instance = _instance(stmt, outside)
            raise OutOfBoundsError(
                f"{_who(a)} {a.buffer.name} outside the buffer: at {instance}, index {d} is "
                f"{_value_at(lo, hi, outside)}, outside [0, {a.buffer.shape[d]}) (buffer {a.buffer!r})"
                f"{_layout_hint(function, a)}",
                computation=stmt.comp.name, buffer=a.buffer.name, instance=instance,
                command=_layout_commands(function, [a.owner]))
    return _requirements(unsafe, function, context)


def _unrestricted(stmt, e):
    """An affine index or extent as an isl function defined beyond the statement's instances (which
    the test intersects afterwards), or None: on the instances of a tiled statement, it would carry all
    their constraints into every comparison."""
    if isinstance(e, IslAff):
        return e.formula()
    e = as_index_expr(e)
    text = affine_text(e)
    return None if text is None else free_pwaff(stmt.domain, text, stmt.params)


def _outside_the_callers_array(function, a, what, outside):
    """[(sizes, description)]: the sizes at which `a` reads the caller's array `what` outside its shape,
    for its call to refuse, where a derived size takes its value (a stage's extent the larger of its
    input's and its output's); none where relating the derived sizes takes too long."""
    where = function.at_exact_sizes(outside.params())
    if where is None or where.is_empty():
        return []
    return [(where, f"{_who(a)} {what} outside its shape, as at {_instance(a.stmt, outside.intersect_params(where))}")]


def _chosen_layout(buffer, function):
    """Whether a layout command chose `buffer`'s shape or index (store_in, storage_fold)."""
    return bool(buffer.folds) or any(c.user_buffer is buffer for c in function.computations)


def _requirements(unsafe, function, context):
    """[(text, set of the sizes)]: the sizes for which none of the `unsafe` accesses ([(parameter set
    where it falls outside, description)]) happens; refused when no sizes remain."""
    if not unsafe:
        return []
    sizes = function.sizes()
    allowed = on_sizes(context, sizes)
    bad = None
    for where, _ in unsafe:
        part = on_sizes(where.intersect(context), sizes)
        bad = part if bad is None else bad.union(part)
    required = allowed.subtract(bad).coalesce()
    if required.is_empty():
        raise OutOfBoundsError(f"for every size, {unsafe[0][1]}: the program reads or writes beyond what its "
                               f"computations hold", buffer=None)
    condition = _inside_braces(str(required.gist(allowed))).lstrip(":").strip() or "true"
    why = list(dict.fromkeys(text for _, text in unsafe))
    more = f", and {len(why) - 1} other access(es)" if len(why) > 1 else ""
    return [(f"{condition} (else {why[0]}{more})", required)]


def _who(a):
    return f"{a.stmt.comp.name} {'writes' if a.is_write else 'reads'}"


def _key(index):
    return str(index.pwaff) if isinstance(index, IslAff) else id(index)


def _show(index):
    from .expr import pseudo_c
    try:
        return pseudo_c(index)
    except Exception:   # an index holding isl functions prints through them
        return str(index)


def _extent(stmt, shape):
    """A lower bound of a buffer's extent (exact when affine) on the statement's instances, or None."""
    return index_range(stmt, shape)[0]


def _layout_hint(function, a):
    commands = _layout_commands(function, [a.owner])
    return f"; the layout comes from {commands}" if commands else ""


def _layout_commands(function, owners):
    """The commands that chose the owners' storage (store_in, storage_fold), as the history shows them."""
    names = {getattr(o, "name", None) for o in owners}
    found = [text for text in function.history()
             if text.split(".")[0] in names and (".store_in(" in text or ".storage_fold(" in text)]
    return ", ".join(found) or None


# live values ----------------------------------------------------------------------------------

def checked_buffers(accesses, context):
    """The buffers whose layout may put two of the program's values in one element: folded ones, and
    those of store_in whose owners share them or whose index is not one-to-one."""
    owners = {}
    for a in accesses:
        if a.is_write:
            owners.setdefault(a.buffer, set()).add(a.owner)
    out = set()
    for buffer, comps in owners.items():
        if buffer.folds:
            out.add(buffer)
        elif any(c.user_buffer is buffer for c in comps):
            placed = _placement(sorted(comps, key=lambda c: c.name), buffer, context)
            if len(comps) > 1 or placed is None or not placed.is_injective():
                out.add(buffer)
    return out


class _Relations:
    """The accesses to one buffer as maps from times to [element, value]: the element (the tile's
    storage loops first, for a tile buffer) and the program's value, [owner number, coordinates]."""

    def __init__(self, buffer, accesses, function, context, facts):
        self.buffer = buffer
        self.function = function
        self.context = context
        self.facts = facts
        mine = [a for a in accesses if a.buffer is buffer]
        self.owners = sorted({a.owner for a in mine}, key=lambda o: o.name)
        self.width = max(len(a.logical) for a in mine)
        self.reads = self.writes = None
        for a in mine:
            m = self._map(a)
            if a.is_write:
                self.writes = m if self.writes is None else self.writes.union(m)
            else:
                self.reads = m if self.reads is None else self.reads.union(m)
        self.n_time = mine[0].stmt.time.dim(isl.dim_type.out)
        self.n_value = 1 + self.width
        self.n_cell = self.writes.dim(isl.dim_type.out) - self.n_value

    def _map(self, a):
        stmt = a.stmt
        cell = None
        if a.local is not None:
            cell = tile_instance(stmt, a.local)
        for index in a.index:
            m = _range_map(stmt, *index_range(stmt, index, _facts(a, self.facts)))
            cell = m if cell is None else cell.flat_range_product(m)
        value = stmt.to_original.apply_range(self._value_map(a))
        both = _anonymous(cell.flat_range_product(value).intersect_domain(stmt.domain))
        time = stmt.time.intersect_domain(stmt.domain)
        return _anonymous(time.reverse().apply_range(both)).intersect_params(self.context)

    def _value_map(self, a):
        comp = a.stmt.comp
        k = self.owners.index(a.owner)
        outs, free = [str(k)], []
        for d, e in enumerate(a.logical):
            text = affine_text(e)
            if text is None:
                free.append(f"v{d}_")
                text = free[-1]
            outs.append(text)
        outs += ["0"] * (self.width - len(a.logical))
        params = sorted(self.function.param_names)
        return isl.Map(f"[{', '.join(params)}] -> {{ {comp.name}[{', '.join(v.name for v in comp.vars)}] -> "
                       f"[{', '.join(outs)}] }}")

    def value_text(self, value):
        """`owner[coordinates]` of a value [owner number, coordinates...]."""
        owner = self.owners[value[0]]
        n = len(owner.vars) if hasattr(owner, "vars") else len(owner.shape)
        return f"{owner.name}[{', '.join(str(v) for v in value[1:1 + n])}]"

    def by_element(self, m):
        """`m` (time -> [element, value]) as element -> [time, value]."""
        flat = m.wrap().flatten()
        return isl.Map.from_range(flat).move_dims(isl.dim_type.in_, 0, isl.dim_type.out, self.n_time, self.n_cell)

    def same_value(self, space):
        """The pairs [time, value] -> [time', value'] of `space` with value = value'."""
        m = isl.Map.universe(space)
        for i in range(self.n_value):
            m = m.equate(isl.dim_type.in_, self.n_time + i, isl.dim_type.out, self.n_time + i)
        return m


def check_live_values(stmts, accesses, function, context, facts):
    """For the buffers that may hold two values in one element: each read finds its value (the last
    write before it to its element writes that value), and no concurrent loop has two iterations
    touch one element for different values."""
    for buffer in sorted(checked_buffers(accesses, context), key=lambda b: b.name):
        rel = _Relations(buffer, accesses, function, context, facts)
        writes = rel.by_element(rel.writes)
        if rel.reads is not None:
            _check_last_writes(rel, stmts, writes)
        _check_concurrent(rel, stmts, writes)


def _check_last_writes(rel, stmts, writes):
    reads = rel.by_element(rel.reads)
    pairs = reads.reverse().apply_range(writes)          # [t_read, value] -> [t_write, value'] of one element
    before = isl.Map.lex_gt_first(pairs.get_space(), rel.n_time)
    last = pairs.intersect(before).lexmax()
    wrong = last.subtract(rel.same_value(last.get_space())).intersect_params(rel.context)
    what = f"a read of buffer {rel.buffer.name} finds a value other than the one it needs, overwritten by its layout"
    if wrong.is_empty() or (wrong := rel.function.with_exact_sizes(wrong, what)).is_empty():
        return
    point = _point(wrong)
    n_t, n_v = rel.n_time, rel.n_value
    t_read, value = point[0][:n_t], point[0][n_t:n_t + n_v]
    t_write, other = point[0][n_t + n_v:2 * n_t + n_v], point[0][2 * n_t + n_v:]
    reader, writer = _statement_at(stmts, t_read, point[1]), _statement_at(stmts, t_write, point[1])
    commands = _layout_commands(rel.function, rel.owners)
    read, layout = f"{reader[1]} reads {rel.value_text(value)} from buffer {rel.buffer.name}", \
        f" ({commands})" if commands else ""
    if not _written(rel, value, point[1]):
        message = (f"{read}, but no statement writes that value ({_sizes(point[1])}): the element holds what "
                   f"{writer[1]} wrote there for {rel.value_text(other)}, which only the layout{layout} makes the "
                   f"same element. Compute every value the program reads (for a time loop over a folded grid: "
                   f"each step writes its whole grid, the border too)")
    else:
        message = (f"{read}, but {writer[1]} writes {rel.value_text(other)} to the same element after that value "
                   f"is written and before this read ({_sizes(point[1])}): the layout holds two live values in "
                   f"one element{layout}. Give {rel.buffer.name} more room (a larger or one-to-one store_in "
                   f"index, a deeper storage_fold) or schedule the read before the overwrite")
    raise OverwriteError(message, computation=reader[0], buffer=rel.buffer.name, instance=writer[1],
                         command=commands, source=writer[0], sink=reader[0])


def _written(rel, value, point):
    """Whether some statement writes the program's value `value` for the sizes of `point`."""
    written = rel.writes.range().project_out(isl.dim_type.set, 0, rel.n_cell).intersect_params(_fixed_sizes(point))
    for i, v in enumerate(value):
        written = written.fix_val(isl.dim_type.set, i, isl.Val(str(v)))
    return not written.is_empty()


def _check_concurrent(rel, stmts, writes):
    touches = writes if rel.reads is None else writes.union(rel.by_element(rel.reads))
    pairs = writes.reverse().apply_range(touches)        # [t, value] -> [t', value'] of one element
    pairs = pairs.subtract(rel.same_value(pairs.get_space()))
    n = rel.n_value
    times = pairs.project_out(isl.dim_type.in_, rel.n_time, n).project_out(isl.dim_type.out, rel.n_time, n)
    times = times.intersect_params(rel.context)
    if times.is_empty():
        return
    for s in stmts:
        for k, loop in enumerate(s.loops):
            tag = s.tags.get(loop)
            if not tag or tag[0] not in CONCURRENT_KINDS:
                continue
            clash = times.intersect(carried_at(times.get_space().domain(), 2 * k + 1, s.betas[:k + 1]))
            what = (f"different iterations of loop {loop} of {s.name} ({tag[0]}) use one element of buffer "
                    f"{rel.buffer.name} for different values")
            if clash.is_empty() or (clash := rel.function.with_exact_sizes(clash, what)).is_empty():
                continue
            coords, sizes = _point(clash)
            a = _statement_at(stmts, coords[:rel.n_time], sizes)
            b = _statement_at(stmts, coords[rel.n_time:], sizes)
            commands = _layout_commands(rel.function, rel.owners)
            raise OverwriteError(
                f"loop {loop} of {s.name} is tagged {tag[0]}, but {a[1]} and {b[1]} run in different iterations "
                f"of it and use one element of buffer {rel.buffer.name} for different values ({_sizes(sizes)})"
                + (f"; the layout comes from {commands}" if commands else "")
                + ". Give each iteration its own elements, or run the loop in order",
                computation=s.name, buffer=rel.buffer.name, instance=a[1], command=commands)


# small isl helpers -------------------------------------------------------------------------------

def _range_map(stmt, lo, hi):
    """The map from the statement's instances to the values between lo and hi (None: no bound)."""
    if lo is not None and lo is hi:
        return _anonymous(isl.Map.from_pw_aff(lo))
    one = isl.Space.set_alloc(isl.DEFAULT_CONTEXT, 0, 1)
    m = isl.Map.from_domain_and_range(stmt.domain, isl.Set.universe(one))
    for bound, order in ((lo, isl.Map.lex_le), (hi, isl.Map.lex_ge)):
        if bound is not None:
            m = m.intersect(_anonymous(isl.Map.from_pw_aff(bound)).apply_range(order(one)))
    return _anonymous(m)


def _anonymous(m):
    """`m` with its output tuple unnamed (maps of several statements share one space)."""
    return m.reset_tuple_id(isl.dim_type.out)


def _point(m):
    """(the coordinates of a point of `m`, domain then range; the point, for its sizes)."""
    p = m.wrap().flatten().sample_point() if isinstance(m, isl.Map) else m.sample_point()
    n = p.get_space().dim(isl.dim_type.set)
    return [p.get_coordinate_val(isl.dim_type.set, i).to_python() for i in range(n)], p


def _sizes(point):
    space = point.get_space()
    names = param_names(space)
    values = [point.get_coordinate_val(isl.dim_type.param, i).to_python() for i in range(len(names))]
    return ", ".join(f"{n} = {v}" for n, v in zip(names, values)) or "for any sizes"


def _fixed_sizes(point):
    """The set of parameter values of `point`."""
    space = point.get_space()
    s = isl.Set.universe(space.params())
    for i in range(space.dim(isl.dim_type.param)):
        s = s.fix_val(isl.dim_type.param, i, point.get_coordinate_val(isl.dim_type.param, i))
    return s


def _statement_at(stmts, time, point):
    """(computation name, its original instance as text) of what runs at `time` for the sizes of `point`."""
    sizes = _fixed_sizes(point)
    for s in stmts:
        t = s.time.intersect_domain(s.domain)
        at = isl.Set.universe(t.get_space().range())
        for i, v in enumerate(time):
            at = at.fix_val(isl.dim_type.set, i, isl.Val(str(v)))
        runs = t.intersect_range(at).intersect_params(sizes)
        if not runs.is_empty():
            original = runs.domain().apply(s.to_original).sample_point()
            return s.comp.name, _point_text(original)
    return None, f"the instance at time {time}"


def _point_text(p):
    """`name[1, 2]` for an isl point."""
    space = p.get_space()
    n = space.dim(isl.dim_type.set)
    coords = ", ".join(str(p.get_coordinate_val(isl.dim_type.set, i).to_python()) for i in range(n))
    return f"{space.get_tuple_name(isl.dim_type.set) or ''}[{coords}]"


def _instance(stmt, where):
    """The original instance of a statement instance in `where`, with the sizes, as text."""
    p = where.sample_point()
    original = isl.Set.from_point(p).apply(stmt.to_original).sample_point()
    return f"{_point_text(original)} ({_sizes(p)})"


def _value_at(lo, hi, where):
    """The value (or range) of an index at a point of `where`."""
    p = where.sample_point()
    a, b = lo.eval(p).to_python(), hi.eval(p).to_python()
    return str(a) if a == b else f"between {a} and {b}"


def _witness(m):
    coords, p = _point(m)
    n = m.dim(isl.dim_type.in_)
    return (f"{m.get_tuple_name(isl.dim_type.in_)}{coords[:n]} and {m.get_tuple_name(isl.dim_type.out)}"
            f"{coords[n:]} ({_sizes(p)})")


def _inside_braces(text):
    start, end = text.find("{"), text.rfind("}")
    return text[start + 1:end].strip() if start >= 0 else text
