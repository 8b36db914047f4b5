"""Exact bounds inference with isl: the region of every Func a pipeline touches for a requested output.

Accesses are turned into isl relations. An index that is affine in loop
variables and parameters (with min/max clamps and floor division by
constants, as boundary conditions write them) is exact; a sub-expression
that depends on data (a loaded value, a float converted to int) becomes an
unknown ranging over its type's values, so a clamp around it still gives a
tight region, as in Halide.
"""
from __future__ import annotations

import zlib

import islpy as isl

import mascarpone.middleend.expr as E
from mascarpone.middleend.affine import affine_text, from_ast_expr, min_max_pieces, param_names
from mascarpone.middleend.errors import NotSupportedError
from mascarpone.middleend.types import int64

#: Regions wider than this along one dimension come from data-dependent indices nobody clamped.
MAX_EXTENT = 1 << 28

#: A box with more pieces than this is left as the product of its dimensions' coalesced pieces.
MAX_COALESCED_BOX = 8


class IndexText:
    """isl text for index expressions, with fresh unknowns (and their constraints) for data-dependent
    parts. `runtime(cast)` gives the isl text of the (min, max) of an integer cast of floats when the
    floats' range is known (sizes computed on each call where it depends on Params), else None."""

    def __init__(self, runtime=None):
        self.runtime = runtime
        self.extra_params = set()   # sizes the runtime ranges introduced
        self.unknowns = []
        self.constraints = []
        self._memo = {}   # id(expr) -> (expr, text): a shared sub-expression (a Let value) is one unknown

    def text(self, e) -> str:
        """isl text of integer expression `e`, with unknowns where it is not affine."""
        hit = self._memo.get(id(e))
        if hit is not None and hit[0] is e:
            return hit[1]
        out = self._text(e)
        self._memo[id(e)] = (e, out)
        return out

    def _unknown(self, lo, hi):
        name = f"u_{len(self.unknowns)}"
        self.unknowns.append(name)
        self.constraints.append(f"{lo} <= {name} <= {hi}")
        return name

    def _of_type(self, dtype):
        if dtype.is_bool:
            return self._unknown(0, 1)
        if not dtype.is_int:
            raise TypeError(dtype)
        return self._unknown(dtype.min_value(), dtype.max_value())

    def _text(self, e) -> str:
        exact = affine_text(e)
        if exact is not None:
            return exact
        if e.dtype.is_int and self.runtime is not None:
            ends = self.runtime(e)   # (an index computed from floats of a known range, as a whole)
            if ends is not None:
                self.extra_params.update(x for x in ends if x.isidentifier())
                return self._unknown(*ends)
        if isinstance(e, E.Cast) and e.a.dtype.is_int and e.dtype.is_int:
            # like Halide's bounds inference, index arithmetic of 32 bits or more is taken not to wrap
            if e.dtype.bits >= 32 or (e.dtype.bits >= e.a.dtype.bits and (e.dtype.is_signed or not e.a.dtype.is_signed)):
                return self.text(e.a)
            return self._of_type(e.dtype)
        if isinstance(e, E.BinOp) and e.dtype.is_int:
            if e.op in ("add", "sub", "min", "max"):
                a, b = self.text(e.a), self.text(e.b)
                if e.op in ("min", "max"):
                    return f"{e.op}({a}, {b})"
                return f"(({a}) {'+' if e.op == 'add' else '-'} ({b}))"
            divisor = _const(e.b)
            if e.op == "mul" and (divisor is not None or _const(e.a) is not None):
                c = divisor if divisor is not None else _const(e.a)
                other = e.a if divisor is not None else e.b
                return f"({c} * ({self.text(other)}))"
            if e.op == "ediv" and divisor is not None and divisor > 0:
                return f"floor(({self.text(e.a)}) / {divisor})"
            if e.op == "emod" and divisor is not None and divisor > 0:
                return f"(({self.text(e.a)}) mod {divisor})"
            shift = _const(e.b) if e.op in ("shl", "shr") else None
            if shift is not None and abs(shift) < e.dtype.bits:
                a = self.text(e.a)
                if (e.op == "shl") == (shift >= 0):
                    return f"({1 << abs(shift)} * ({a}))"
                return f"floor(({a}) / {1 << abs(shift)})"
            if e.op == "bitand":
                mask = next((c for c in (_const(e.b), _const(e.a)) if c is not None and c >= 0), None)
                if mask is not None:
                    return self._unknown(0, mask)   # x & c lies in [0, c] when c >= 0
            if e.op == "emod":
                # Halide's modulo lies in [0, |b| - 1] (and is 0 when b is 0)
                b = self.text(e.b)
                return self._unknown(0, f"max(max(({b}) - 1, -({b}) - 1), 0)")
        if isinstance(e, E.Select) and e.dtype.is_int:
            a, b = self.text(e.t), self.text(e.f)
            name = f"u_{len(self.unknowns)}"
            self.unknowns.append(name)
            cond = self.condition(e.cond)
            if cond is None:
                self.constraints.append(f"({name} = {a} or {name} = {b})")
            else:
                self.constraints.append(f"((({cond}) and {name} = {a}) or (not ({cond}) and {name} = {b}))")
            return name
        if isinstance(e, E.UnOp) and e.op == "neg" and e.dtype.is_int:
            return f"(-({self.text(e.a)}))"
        return self._of_type(e.dtype)


    _CMP = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "="}

    def condition(self, e):
        """isl text of a condition on integers (with unknowns), or None when it is not one."""
        if isinstance(e, E.BinOp) and e.op in ("and", "or"):
            a, b = self.condition(e.a), self.condition(e.b)
            return None if a is None or b is None else f"(({a}) {e.op} ({b}))"
        if isinstance(e, E.UnOp) and e.op == "not":
            a = self.condition(e.a)
            return None if a is None else f"not ({a})"
        if isinstance(e, E.BinOp) and e.op in self._CMP and e.a.dtype.is_int:
            return f"({self.text(e.a)}) {self._CMP[e.op]} ({self.text(e.b)})"
        if isinstance(e, E.BinOp) and e.op == "ne" and e.a.dtype.is_int:
            return f"not (({self.text(e.a)}) = ({self.text(e.b)}))"
        if isinstance(e, E.Const) and e.dtype.is_bool:
            return "true" if e.value else "false"
        return None


def _const(e):
    if isinstance(e, E.Const) and e.dtype.is_int:
        return e.value
    return None


class Intervals:
    """The (min, max) PwAffs of the sizes that an index takes over a box of variables, by interval
    arithmetic (as Halide's bounds inference does), for indices where that is exact: each variable
    appears once, through operations monotone in it (+, -, * and floor division by constants,
    min, max, integer casts), and data-dependent parts range over their type. isl computes the same
    bounds from the access relation, but slowly once inlined Funcs make indices of many clamps and
    divisions; other indices (a variable twice, modulo, a select) take that route (`bounds` gives None).

    `ranges` ({variable name: (min, max)}) bound the variables; the results are defined where every
    variable's range is not empty (where the stage has instances)."""

    def __init__(self, params, ranges, runtime=None):
        self.params = list(params)
        self.ranges = ranges
        self.runtime = runtime
        self.space = isl.Set(f"[{', '.join(self.params)}] -> {{ : }}").get_space()
        nonempty = isl.Set.universe(self.space)
        for lo, hi in ranges.values():
            nonempty = nonempty.intersect(lo.le_set(hi))
        self.nonempty = nonempty.coalesce()

    def bounds(self, e):
        """(min, max) of the integer index `e`, or None where interval arithmetic is not exact."""
        counts = {}
        for n in E.walk(e):
            if type(n) is E.Sym and n.name in self.ranges:
                counts[n.name] = counts.get(n.name, 0) + 1
        if any(c > 1 for c in counts.values()):
            return None
        out = self._of(e)
        if out is None:
            return None
        return tuple(pa.intersect_domain(self.nonempty).coalesce() for pa in out)

    def _pw(self, value):
        value = str(value)
        params = self.params + ([value] if value.isidentifier() and value not in self.params else [])
        return isl.PwAff(f"[{', '.join(params)}] -> {{ [({value})] }}")

    def _type_range(self, dtype):
        if not dtype.is_int:
            return None
        return self._pw(dtype.min_value()), self._pw(dtype.max_value())

    def _of(self, e):
        if self.runtime is not None and e.dtype.is_int and not isinstance(e, (E.Const, E.Sym)):
            ends = self.runtime(e)   # (an index computed from floats of a known range, as a whole)
            if ends is not None:
                return tuple(self._pw(x) for x in ends)
        if isinstance(e, E.Const):
            return (self._pw(e.value),) * 2 if e.dtype.is_int else None
        if isinstance(e, E.Sym):
            if e.name in self.ranges:
                return self.ranges[e.name]
            text = affine_text(e)
            return None if text is None else (self._pw(text),) * 2
        if isinstance(e, E.Access):
            return self._type_range(e.dtype)   # data: any value of its type
        if isinstance(e, E.Cast) and e.dtype.is_int:
            if not e.a.dtype.is_int:
                return self._type_range(e.dtype)
            if e.dtype.bits >= 32 or (e.dtype.bits >= e.a.dtype.bits and (e.dtype.is_signed or not e.a.dtype.is_signed)) \
                    or affine_text(e) is not None:
                # (index arithmetic of 32 bits or more is taken not to wrap, as in Halide; affine index
                # arithmetic keeps its value through casts, as affine_text reads it)
                return self._of(e.a)
            return self._type_range(e.dtype)
        if isinstance(e, E.UnOp) and e.op == "neg" and e.dtype.is_int:
            a = self._of(e.a)
            return None if a is None else (a[1].neg(), a[0].neg())
        if not (isinstance(e, E.BinOp) and e.dtype.is_int):
            return None
        if e.op in ("add", "sub", "min", "max"):
            a, b = self._of(e.a), self._of(e.b)
            if a is None or b is None:
                return None
            if e.op == "add":
                return a[0].add(b[0]), a[1].add(b[1])
            if e.op == "sub":
                return a[0].sub(b[1]), a[1].sub(b[0])
            return (a[0].min(b[0]), a[1].min(b[1])) if e.op == "min" else (a[0].max(b[0]), a[1].max(b[1]))
        c = _const(e.b)
        if e.op == "mul" and (c is not None or _const(e.a) is not None):
            factor, other = (c, e.a) if c is not None else (_const(e.a), e.b)
            a = self._of(other)
            if a is None:
                return None
            lo, hi = (pa.scale_val(isl.Val(factor)) for pa in a)
            return (lo, hi) if factor >= 0 else (hi, lo)
        if e.op == "ediv" and c is not None and c > 0:
            a = self._of(e.a)
            return None if a is None else tuple(pa.scale_down_val(isl.Val(c)).floor() for pa in a)
        if e.op in ("shl", "shr") and c is not None and abs(c) < e.dtype.bits:
            a = self._of(e.a)
            if a is None:
                return None
            if (e.op == "shl") == (c >= 0):
                return tuple(pa.scale_val(isl.Val(1 << abs(c))) for pa in a)
            return tuple(pa.scale_down_val(isl.Val(1 << abs(c))).floor() for pa in a)
        return None


def access_region(domain: isl.Set, params, stage, dims, indices, target, runtime=None) -> isl.Set:
    """The elements of `target` that `target[indices]` reads (or writes) over the stage's instances
    `domain` (`runtime`: see IndexText)."""
    it = IndexText(runtime)
    outs = [it.text(i) for i in indices]
    cons = it.constraints
    params = list(params) + sorted(it.extra_params - set(params))
    text = (f"[{', '.join(params)}] -> {{ {stage}[{', '.join(list(dims) + it.unknowns)}] -> "
            f"{target}[{', '.join(outs)}]" + (f" : {' and '.join(cons)}" if cons else "") + " }")
    extended = domain.add_dims(isl.dim_type.set, len(it.unknowns)).set_tuple_name(stage)
    return isl.Map(text).intersect_domain(extended).range()


def box_bounds(region: isl.Set, context: isl.Set, what):
    """Per dimension, the exact (piecewise) min and max of `region` as PwAffs of the parameters."""
    region = region.intersect_params(context)
    out = []
    for d in range(region.dim(isl.dim_type.set)):
        try:
            out.append((region.dim_min(d).coalesce(), region.dim_max(d).coalesce()))
        except isl.Error:
            raise NotSupportedError(
                f"{what}: the region it must compute is unbounded in dimension {d}; a data-dependent index "
                f"reaches it without a clamp (add hl.clamp or a boundary condition)") from None
    return out


def merge_bounds(a, b):
    """The bounding box of two boxes given as per-dimension (min, max) PwAffs. A box is defined
    for the sizes where it is not empty (a reduction over [0, n) for n >= 1): elsewhere the other
    box alone is the bounding box."""
    if a is None:
        return b
    return [(_combined(lo1, lo2, isl.PwAff.min, isl.PwAff.union_min),
             _combined(hi1, hi2, isl.PwAff.max, isl.PwAff.union_max)) for (lo1, hi1), (lo2, hi2) in zip(a, b)]


def _combined(a, b, both, either):
    """`both(a, b)`, isl's plain min or max, where both are defined for the same sizes. A bound in one
    affine piece defined for fewer sizes (an update's reduction domain, empty for some) counts at
    its nominal value everywhere, as Halide's boxes do, so the result stays in few pieces (one
    derived size); otherwise `either` takes each where the other is not defined."""
    a, b = _nominal(a), _nominal(b)
    if a.domain().is_equal(b.domain()):
        # one bound that is always the larger (smaller) is the result: isl's max of `floor(n/4)` and
        # `floor((n+2)/4)` is a piece per residue of n, and pieces multiply through a pyramid
        upper = both is isl.PwAff.max
        for first, second in ((a, b), (b, a)):
            if (second.le_set(first) if upper else first.le_set(second)).is_equal(first.domain()):
                return first
        return both(a, b).coalesce()
    return either(a, b).coalesce()


def _nominal(pa):
    pieces = pa.get_pieces()
    if len(pieces) == 1:
        return isl.PwAff.from_aff(pieces[0][1])
    return pa


def probe_values(pa: isl.PwAff, ranges) -> tuple:
    """The values of `pa` (a PwAff of the sizes) at two fixed assignments of the sizes inside their
    `ranges` (name -> (lo, hi), None: unbounded; absent: at least 1), None where it is undefined. Each
    size takes the same value in every probe of every PwAff, so PwAffs that differ there are different
    functions: a cheap test before isl's is_equal."""
    sizes = pa.get_domain_space().params()
    used = [(i, sizes.get_dim_name(isl.dim_type.param, i)) for i in range(sizes.dim(isl.dim_type.param))
            if pa.involves_dims(isl.dim_type.param, i, 1)]
    out = []
    for k in range(2):
        point = isl.Set.universe(sizes)
        for i, name in used:
            point = point.fix_val(isl.dim_type.param, i, _probe(name, *ranges.get(name, (1, None)), k))
        at = pa.intersect_params(point)
        out.append(None if at.domain().is_empty() else at.max_val().to_python())
    return tuple(out)


def _probe(name, lo, hi, k):
    """Probe k's value of the size `name`, within [lo, hi] (None: unbounded) and fixed by its name."""
    lo = lo if lo is not None else (hi - 999 if hi is not None else -500)
    span = (hi - lo + 1) if hi is not None else 1000
    return lo + zlib.crc32(f"{name}/{k}".encode()) % span


def box_set(bnds, space: isl.Space, context: isl.Set | None = None) -> isl.Set:
    """The box with per-dimension (min, max) PwAffs as a set in `space` (a named tuple over the
    parameters), on the sizes of `context` where one is given."""
    n = space.dim(isl.dim_type.set)
    ls = isl.LocalSpace.from_space(space)
    zero = isl.PwAff.from_aff(isl.Aff.zero_on_domain(ls))
    tuple_id = space.get_tuple_id(isl.dim_type.set)
    out = isl.Set.universe(space)
    for d, (lo, hi) in enumerate(bnds):
        v = isl.PwAff.var_on_domain(ls, isl.dim_type.set, d)
        lo, hi = (zero.add(pa.add_dims(isl.dim_type.in_, n).set_tuple_id(isl.dim_type.in_, tuple_id))
                  for pa in (lo, hi))
        along = v.ge_set(lo).intersect(v.le_set(hi))
        if context is not None:
            along = along.intersect_params(context)
        out = out.intersect(along.coalesce())
    # Each dimension's pieces are coalesced: their product seldom merges further, and coalescing a
    # product of many pieces (a pyramid level's box, 3 x 19 pieces) takes seconds for nothing.
    return out.coalesce() if out.n_basic_set() <= MAX_COALESCED_BOX else out


def restrict_to_box(domain: isl.Set, box_set: isl.Set, positions) -> isl.Set:
    """`domain` (a stage's instances) with its variables at `positions` (var index -> box dimension)
    limited to the exact box."""
    n_dom = domain.dim(isl.dim_type.set)
    n_box = box_set.dim(isl.dim_type.set)
    ins = [f"v{i}" for i in range(n_dom)]
    outs = [f"o{j}" for j in range(n_box)]
    cons = [f"o{j} = v{i}" for i, j in positions.items()]
    m = isl.Map(f"{{ {domain.get_tuple_name()}[{', '.join(ins)}] -> {box_set.get_tuple_name()}[{', '.join(outs)}]"
                + (f" : {' and '.join(cons)}" if cons else "") + " }")
    return domain.intersect(m.intersect_range(box_set).domain())


def aff_expr(aff: isl.Aff, params) -> E.Expr:
    """An expression of the parameters (int64, as ms Params cast up) for one affine piece."""
    build = isl.AstBuild.from_context(isl.Set.universe(aff.get_domain_space().params()))
    e = from_ast_expr(build.expr_from_pw_aff(isl.PwAff.from_aff(aff)))
    return E.transform(e, lambda n: E.cast(int64, params[n.name]) if type(n) is E.Sym and n.name in params else None)


def pwaff_expr(pa: isl.PwAff, context: isl.Set, params, what, side="hi") -> E.Expr:
    """An affine expression (with min/max) of the parameters equal to `pa` on `context`.

    When no single max or min of the pieces equals `pa` (a piece that holds only
    for some sizes, such as an empty reduction domain), the max (side='hi') or the
    min (side='lo') of all pieces bounds it safely from outside.
    """
    pa = pa.gist(context)
    pieces = pa.get_pieces()
    if not pieces:      # defined nowhere: what it bounds is empty (an RDom of no points), [0, -1]
        return E.Const(0 if side == "lo" else -1, int64)
    if len(pieces) == 1:
        return aff_expr(pieces[0][1], params)
    combined = min_max_pieces(pa, context, ops=("max", "min"))
    op, affs = combined if combined is not None else ("max" if side == "hi" else "min",
                                                      [aff for _, aff in pieces])
    out = aff_expr(affs[0], params)
    for a in affs[1:]:
        out = E.binop(op, out, aff_expr(a, params))
    return out


def box(bnds, context: isl.Set, params, what):
    """Per dimension, (lo, hi) expressions of the parameters for a box of (min, max) PwAffs (hi exclusive)."""
    out = []
    for lo, hi in bnds:
        lo_e = pwaff_expr(lo, context, params, what, "lo")
        hi_e = pwaff_expr(hi, context, params, what, "hi")
        out.append((lo_e, E.simplify(hi_e + 1)))
    return out


def check_extent(region: isl.Set, what, ranges=None, size=4096):
    """Refuse regions so wide (with every size parameter at `size`) that only an unclamped
    data-dependent index explains them. Parameters with a range of their own (`ranges`: integer
    Params, which may be negative) are set to a small value where the region is not empty."""
    ranges = ranges or {}
    names = param_names(region)
    ranged = any(n in ranges for n in names)
    for small in ((16, 1, 0, -16) if ranged else (0,)):
        fixed = region
        for k, name in enumerate(names):
            fixed = fixed.fix_val(isl.dim_type.param, k, isl.Val(small if name in ranges else size))
        if not fixed.is_empty():
            break
    else:
        return   # empty at every value tried: nothing to measure
    for d in range(fixed.dim(isl.dim_type.set)):
        lo, hi = fixed.dim_min_val(d), fixed.dim_max_val(d)
        lo, hi = (lo.to_python() if lo.is_int() else None), (hi.to_python() if hi.is_int() else None)
        if lo is None or hi is None or hi - lo >= MAX_EXTENT:
            raise NotSupportedError(
                f"{what}: the region it must compute is unbounded or spans 2^28 elements or more in dimension "
                f"{d}; a data-dependent index reaches it without a clamp (add hl.clamp or a boundary condition)")
