"""Bridges between expressions and isl: affine expressions to isl text, isl AST expressions back.

An expression is affine when it is built from integer constants, loop variables
and parameters with +, -, negation, multiplication by a constant, min/max, and
Euclidean division or modulo by a positive constant (also written as a shift by a
constant, or `& (2**k - 1)`). isl reads those exactly.
"""
from __future__ import annotations

import functools

import islpy as isl

from .errors import NotSupportedError
from .expr import BinOp, Cast, Const, Expr, Sym, UnOp, binop, simplify, transform
from .types import bool_, int64

ISL_KEYWORDS = {"and", "or", "not", "mod", "floor", "ceil", "min", "max", "exists", "true", "false",
                "infty", "NaN", "implies", "xor", "domain", "range", "div"}


class IslAff(Expr):
    """An isl piecewise affine function of a statement's instance, kept symbolic until
    code generation turns it into an expression of the loop iterators.

    `pwaff` is defined on the statement's instances; `free`, where known, is the same function
    without that restriction (defined wherever its formula is). Where every use lies inside the
    instances (code at a leaf, a check intersected with them afterwards), `free` is the cheaper one:
    a statement's instances under an autoscheduler's tiles can take tens of kilobytes of constraints,
    which every pullback and gist of the restricted function drags along."""

    __slots__ = ("pwaff", "source", "free")

    def __init__(self, pwaff: isl.PwAff, source: Expr | None = None, free: isl.PwAff | None = None):
        self.pwaff = pwaff
        self.source = source   # the index expression it was made from, over the computation's variables
        self.free = free
        self.dtype = int64

    def formula(self) -> isl.PwAff | None:
        """The function without the restriction: `free`, or the formula of a function of one piece;
        None where neither is known."""
        if self.free is None and self.pwaff.n_piece() == 1:
            self.free = isl.PwAff.from_aff(self.pwaff.get_pieces()[0][1])
        return self.free

    @property
    def unrestricted(self) -> isl.PwAff:
        """`formula()` where known, else `pwaff`."""
        free = self.formula()
        return self.pwaff if free is None else free

    @property
    def name(self):
        return f"<{self.pwaff}>"


def const_value(e) -> int | None:
    """The integer value of a constant expression, else None."""
    if isinstance(e, Const) and e.dtype.is_int:
        return e.value
    if isinstance(e, Cast) and e.dtype.is_int:
        return const_value(e.a)
    return None


def affine_text(e: Expr) -> str | None:
    """isl syntax for an affine integer expression, or None when it is not affine."""
    if isinstance(e, Const):
        return str(e.value) if e.dtype.is_int else None
    if isinstance(e, Sym):
        return e.name if e.dtype.is_int else None
    if isinstance(e, Cast):
        # integer casts of index arithmetic keep the value (indices stay far from overflow)
        return affine_text(e.a) if e.dtype.is_int and e.a.dtype.is_int else None
    if isinstance(e, UnOp) and e.op == "neg":
        a = affine_text(e.a)
        return None if a is None else f"(-({a}))"
    if isinstance(e, BinOp):
        a, b = affine_text(e.a), affine_text(e.b)
        if a is None or b is None:
            return None
        if e.op in ("add", "sub"):
            return f"({a} {'+' if e.op == 'add' else '-'} {b})"
        if e.op == "mul":
            if const_value(e.a) is not None or const_value(e.b) is not None:
                return f"({a} * {b})"
            return None
        if e.op in ("min", "max"):
            return f"{e.op}({a}, {b})"
        if e.op in ("shl", "shr"):
            k = const_value(e.b)
            if k is None or abs(k) >= e.dtype.bits:
                return None   # beyond the width a shift saturates
            if (e.op == "shl") == (k >= 0):
                return f"({a} * {1 << abs(k)})"
            return f"floor(({a}) / {1 << abs(k)})"
        if e.op == "bitand":
            for value, mask in ((a, const_value(e.b)), (b, const_value(e.a))):
                if mask is not None and mask >= 0 and mask & (mask + 1) == 0:
                    return f"(({value}) mod {mask + 1})"   # two's complement: x & (2**k - 1) == x mod 2**k
            return None
        divisor = const_value(e.b)
        if divisor is not None and divisor > 0:
            if e.op == "ediv":
                return f"floor(({a}) / {divisor})"
            if e.op == "emod":
                return f"(({a}) mod {divisor})"
    return None


def constraint_text(e: Expr) -> str | None:
    """isl syntax for a boolean combination of affine comparisons, or None."""
    if isinstance(e, Const) and e.dtype.is_bool:
        return "true" if e.value else "false"
    if isinstance(e, BinOp):
        if e.op in ("and", "or"):
            a, b = constraint_text(e.a), constraint_text(e.b)
            if a is None or b is None:
                return None
            return f"(({a}) {e.op} ({b}))"
        ops = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "="}
        if e.op in ops:
            a, b = affine_text(e.a), affine_text(e.b)
            if a is None or b is None:
                return None
            return f"{a} {ops[e.op]} {b}"
        if e.op == "ne":
            a, b = affine_text(e.a), affine_text(e.b)
            if a is None or b is None:
                return None
            return f"({a} < {b} or {a} > {b})"
    if isinstance(e, UnOp) and e.op == "not":
        inner = constraint_text(e.a)
        return None if inner is None else f"not ({inner})"
    return None


def space_text(params, tuple_name, dims) -> str:
    """The `[params] -> { name[dims]` prefix of an isl object."""
    return f"[{', '.join(params)}] -> {{ {tuple_name}[{', '.join(dims)}]"


def pwaff_on(domain: isl.Set, text: str, params) -> isl.PwAff:
    """The affine function `text` of the domain's variables and `params`, restricted to the domain."""
    return free_pwaff(domain, text, params).intersect_domain(domain)


def free_pwaff(domain: isl.Set, text: str, params) -> isl.PwAff:
    """The affine function `text` of the domain's variables and `params`, wherever it is defined."""
    dims = tuple(domain.get_dim_name(isl.dim_type.set, i) for i in range(domain.dim(isl.dim_type.set)))
    return _parsed_pwaff(tuple(params), domain.get_tuple_name(), dims, text)


@functools.lru_cache(maxsize=16384)
def _parsed_pwaff(params, tuple_name, dims, text):
    # (the checks of a schedule read the same index expressions again at every command a search gives)
    return isl.PwAff(f"{space_text(params, tuple_name, dims)} -> [({text})] }}")


_AST_BINOPS = {
    isl.ast_expr_op_type.add: "add", isl.ast_expr_op_type.sub: "sub", isl.ast_expr_op_type.mul: "mul",
    isl.ast_expr_op_type.min: "min", isl.ast_expr_op_type.max: "max",
    isl.ast_expr_op_type.fdiv_q: "ediv", isl.ast_expr_op_type.pdiv_q: "div",
    isl.ast_expr_op_type.div: "div", isl.ast_expr_op_type.pdiv_r: "emod",
    isl.ast_expr_op_type.zdiv_r: "mod",
    isl.ast_expr_op_type.lt: "lt", isl.ast_expr_op_type.le: "le", isl.ast_expr_op_type.gt: "gt",
    isl.ast_expr_op_type.ge: "ge", isl.ast_expr_op_type.eq: "eq",
    isl.ast_expr_op_type.and_: "and", isl.ast_expr_op_type.and_then: "and",
    isl.ast_expr_op_type.or_: "or", isl.ast_expr_op_type.or_else: "or",
}


def from_ast_expr(e: isl.AstExpr, names: dict | None = None) -> Expr:
    """Convert an isl AST expression to an int64 expression; `names` renames identifiers. isl computes
    with unbounded integers: a comparison of a variable with a constant beyond Int64 (`n >= 2^63`, from a
    program's `n > typemax(Int)`) is decided here, as no Int64 value reaches it; any other use of such a
    constant is refused (NotSupportedError), since the code would compute with it wrapped around."""
    out = _from_ast(e, names or {})
    if isinstance(out, _BeyondInt64):
        _refuse_beyond(out, e)
    return simplify(out)


class _BeyondInt64:
    """An integer of an isl AST expression that Int64 cannot hold."""

    def __init__(self, value):
        self.value = value


def _refuse_beyond(big, e):
    raise NotSupportedError(f"the loops need the constant {big.value}, beyond Int64, in `{e.to_C_str()}` "
                            f"(sizes or offsets near typemax(Int))")


#: each comparison with its operands swapped
_MIRRORED = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq"}


def _beyond_int64(kind, a, b):
    """`a kind b` decided where one side is a variable and the other a constant beyond Int64 (which no
    variable's value reaches), else None."""
    if isinstance(a, _BeyondInt64) and isinstance(b, Sym):
        a, b, kind = b, a, _MIRRORED[kind]
    if not (isinstance(a, Sym) and isinstance(b, _BeyondInt64)):
        return None
    above = b.value > 0        # every value of `a` lies below the constant
    return Const(kind in ("lt", "le") if above else kind in ("gt", "ge"), bool_)


def _from_ast(e, names):
    t = e.get_type()
    if t == isl.ast_expr_type.int:
        value = e.get_val().to_python()
        return Const(value, int64) if int64.min_value() <= value <= int64.max_value() else _BeyondInt64(value)
    if t == isl.ast_expr_type.id:
        name = e.get_id().name
        return names.get(name) or Sym(name, int64)
    if t != isl.ast_expr_type.op:
        raise TypeError(f"unexpected isl AST expression {e.to_C_str()}")
    op = e.get_op_type()
    args = [_from_ast(e.get_op_arg(i), names) for i in range(e.get_op_n_arg())]
    kind = _AST_BINOPS.get(op)
    if kind in _MIRRORED:
        decided = _beyond_int64(kind, args[0], args[1])
        if decided is not None:
            return decided
    big = next((a for a in args if isinstance(a, _BeyondInt64)), None)
    if big is not None:
        _refuse_beyond(big, e)
    if op == isl.ast_expr_op_type.minus:
        return UnOp("neg", args[0])
    if op == isl.ast_expr_op_type.select or op == isl.ast_expr_op_type.cond:
        from .expr import Select
        return Select(*args)
    if op in (isl.ast_expr_op_type.min, isl.ast_expr_op_type.max):
        out = args[0]
        for a in args[1:]:
            out = binop(_AST_BINOPS[op], out, a)
        return out
    if op in _AST_BINOPS:
        kind = _AST_BINOPS[op]
        if kind in ("and", "or"):   # isl writes a constant condition as an integer (`c || 1`)
            args = [_truth(a) for a in args]
        return binop(kind, args[0], args[1])
    raise TypeError(f"unexpected isl AST operation in {e.to_C_str()}")


def linear_expr(aff: isl.Aff, inputs) -> Expr | None:
    """`aff` as an int64 expression when it has no division and integer coefficients, written as isl
    writes it (sizes, then input dimensions, then the constant): `inputs[i]` is the expression of input
    dimension i, parameters are sizes by name. None otherwise."""
    if aff.dim(isl.dim_type.div):
        return None
    terms = []
    for kind in (isl.dim_type.param, isl.dim_type.in_):
        for d in range(aff.dim(kind)):
            c = aff.get_coefficient_val(kind, d)
            if c.is_zero():
                continue
            if not c.is_int():
                return None
            size = None if kind == isl.dim_type.in_ else Sym(aff.get_dim_name(kind, d), int64)
            terms.append((c.to_python(), inputs[d] if size is None else size))
    constant = aff.get_constant_val()
    if not constant.is_int():
        return None
    if constant.to_python() or not terms:
        terms.append((constant.to_python(), None))
    out = _term(*terms[0])
    for c, term in terms[1:]:
        out = binop("add" if c > 0 else "sub", out, _term(abs(c), term))
    return simplify(out)


def _term(c, term):
    """`c * term` as isl prints it (`term`, `-term`, `c * term`; the constant `c` where term is None)."""
    if term is None:
        return Const(c, int64)
    return term if c == 1 else UnOp("neg", term) if c == -1 else binop("mul", Const(c, int64), term)


def _truth(e):
    if isinstance(e, Const) and e.dtype != bool_:
        return Const(bool(e.value), bool_)
    return e


def pwaff_to_expr(pa: isl.PwAff, context: isl.Set) -> Expr:
    """An expression of the parameters for a piecewise affine function of parameters only.

    A function that is the min or the max of its pieces (`min(0, N - 8)`) is written so, where
    isl would write a select, and isl's divisions (of non-negative or exactly divisible numbers) as
    floor divisions: both keep index expressions affine (exact dependences). Only the part of `context`
    on the sizes `pa` involves is used (see context_on)."""
    return transform(_pwaff_to_expr(pa, context_on(pa, context)), _floor_division)


def _floor_division(n):
    if isinstance(n, BinOp) and n.op == "div" and const_value(n.b) is not None and const_value(n.b) > 0:
        return binop("ediv", n.a, n.b)
    return None


def _pwaff_to_expr(pa: isl.PwAff, context: isl.Set) -> Expr:
    build = isl.AstBuild.from_context(context)
    combined = min_max_pieces(pa, context)
    if combined is not None:
        op, affs = combined
        out = None
        for a in affs:
            e = from_ast_expr(build.expr_from_pw_aff(isl.PwAff.from_aff(a)))
            out = e if out is None else binop(op, out, e)
        return simplify(out)
    return from_ast_expr(build.expr_from_pw_aff(pa))


def min_max_pieces(pa: isl.PwAff, context: isl.Set | None = None, ops=("min", "max")):
    """(op, its distinct affine pieces) when `pa` is the min or the max (tried in the order of `ops`)
    of those pieces, on `context` or, without one, wherever `pa` is defined; else None. Such a
    function reads as one min or max, where isl writes a select over the pieces."""
    affs = list({str(aff): aff for _, aff in pa.get_pieces()}.values())
    if len(affs) < 2:
        return None
    target = pa if context is None else pa.intersect_params(context)
    for op in ops:
        total = isl.PwAff.from_aff(affs[0])
        for a in affs[1:]:
            total = getattr(total, op)(isl.PwAff.from_aff(a))
        total = total.intersect_domain(pa.domain()) if context is None else total.intersect_params(context)
        if total.is_equal(target):
            return op, affs
    return None


def coalesced(obj):
    """`obj.coalesce()`, or `obj` itself where isl's coalescing fails: it only simplifies, and one of its
    internal checks trips on some unions of hundreds of pieces ("original tableau does not correspond to
    original basic map")."""
    try:
        return obj.coalesce()
    except isl.Error:
        return obj


def without_empty_pieces(m: isl.Map, sizes: isl.Set) -> isl.Map:
    """`m` without its basic maps that no sizes satisfying `sizes` reach, the others as they are (without
    `sizes`' constraints, which would slow every later operation on them). A map built with its size
    constraints set aside (`without_size_constraints`) can hold thousands of such pieces, which isl's
    coalescing then weighs pairwise (a tile-relative schedule of Halide's interpolate under Adams2019:
    7033 basic maps, 252 of them reachable; coalesced as they were, over 3 minutes, after this 10 s)."""
    out = isl.Map.empty(m.get_space())
    # (tested outside isl's callback, which would swallow an error such as running out of operations)
    for b in m.get_basic_maps():
        piece = isl.Map.from_basic_map(b)
        if not piece.intersect_params(sizes).is_empty():
            out = out.union(piece)
    return out


def without_size_constraints(m: isl.Map) -> tuple[isl.Map, isl.Set]:
    """`m` with the constraints among its parameters alone set aside, and those constraints: `m` is the
    first intersected with the second. Kept in every piece of a map, they make each isl operation
    many times slower (seconds per bound on the tiles of an autoscheduled pipeline with 30 sizes)."""
    sizes = m.params().coalesce()
    return m.gist_params(sizes).coalesce(), sizes


def param_names(obj) -> list:
    """The names of the parameters of an isl object (set, map, PwAff, space), in order."""
    return [obj.get_dim_name(isl.dim_type.param, k) for k in range(obj.dim(isl.dim_type.param))]


def on_sizes(s, names):
    """`s` (an isl set or map) with every parameter not in `names` projected out: what it says of those
    sizes alone."""
    for k in reversed(range(s.dim(isl.dim_type.param))):
        if s.get_dim_name(isl.dim_type.param, k) not in names:
            s = s.project_out(isl.dim_type.param, k, 1)
    return s


#: contexts projected onto a set of sizes, by (the context, the sizes); the entry keeps its context alive,
#: so an id is not reused while it is cached
_context_cache: dict = {}


def context_on(obj, context: isl.Set) -> isl.Set:
    """`context` (constraints among the sizes) projected onto the sizes `obj` (an isl set, map or
    piecewise function in the same sizes) involves: all an operation on `obj` can use of it.

    A pipeline's context relates every derived size (the bounds of each Func, tens of them in a
    pyramid) to the input's; intersected whole, it made each isl operation on an object of two or
    three sizes carry all of them (Halide's interpolate app with 10 levels: 2 s per Func's bounds)."""
    involved = frozenset(name for name in param_names(context) if _involves_size(obj, name))
    key = (id(context), involved)
    hit = _context_cache.get(key)
    if hit is not None and hit[0] is context:
        return hit[1]
    out = on_sizes(context, involved).coalesce()
    if len(_context_cache) > 256:
        _context_cache.clear()
    _context_cache[key] = (context, out)
    return out


def _involves_size(obj, name):
    k = obj.find_dim_by_name(isl.dim_type.param, name)
    return k >= 0 and obj.involves_dims(isl.dim_type.param, k, 1)
