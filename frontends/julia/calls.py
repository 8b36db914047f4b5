"""The Julia functions the translation supports: each checks its number and kinds of arguments and
builds the expression of its value with Julia's semantics, or raises JuliaNotSupportedError naming
the call. `tr` is the Translator (arrays, sizes, conversions)."""
from __future__ import annotations

import mascarpone.middleend.types as T
from mascarpone.middleend.expr import BinOp, Const, Expr, call, cast, floordiv, max_, min_, reinterpret, \
    select

from .ir import JuliaNotSupportedError
from .types import JULIA_NAME, TypeValue, isa, promote_dtype
from .values import (ArrayLength, ArrayRef, BroadcastValue, EnumerateValue, FunctionRef, ITERABLE, LinearIndex,
                     NothingValue, RangeValue, TupleValue, TypeRef, ZipValue, number)

MATH = {"sqrt", "exp", "log", "sin", "cos", "tan", "tanh", "floor", "ceil", "trunc", "round"}
_COMPARE = {"<": "lt", "<=": "le", ">": "gt", ">=": "ge", "==": "eq", "!=": "ne", "≤": "le", "≥": "ge",
            "≠": "ne", "slt_int": "lt", "sle_int": "le"}
_BITWISE = {"&": "and", "and_int": "and", "|": "or", "or_int": "or", "⊻": "xor", "xor": "xor", "xor_int": "xor"}
#: `>>` is arithmetic on signed integers, `>>>` logical; counts of the width or more saturate, as in the IR
_SHIFTS = {"<<": "shl", "shl_int": "shl", ">>": "shr", "ashr_int": "shr", ">>>": "lshr", "lshr_int": "lshr"}
_MANY = range(2, 64)

# name -> the numbers of arguments Julia's methods take (others are a MethodError in Julia)
ARITY = {
    **{n: _MANY for n in ("+", "*", "add_int", "mul_int", "min", "max")},
    **{n: (1, 2) for n in ("-", "sub_int", "size", "axes", "firstindex", "lastindex")},
    **{n: (2,) for n in ("/", "÷", "div", "%", "rem", "^", "oftype", "convert", "typeassert", "isa", "getfield",
                         "===", "!==", *_COMPARE, *_BITWISE, *_SHIFTS)},
    **{n: (1,) for n in ("!", "not_int", "~", "abs", "√", "zero", "one", "float", "eltype", "length", "OneTo",
                         "LinearIndices", "first", "last", "enumerate", "ndims", *MATH)},
    **{n: (3,) for n in ("literal_pow", "muladd", "fma", "ifelse")},
    ":": (2, 3), "indexed_iterate": (2, 3), "apply_type": range(1, 4), "tuple": range(0, 16),
    "zip": range(1, 8), "getindex": range(1, 8), "setindex!": range(2, 9), "iterate": (1, 2), "Val": (0, 1),
    "identity": (1,), "broadcasted": range(1, 16), "materialize!": (2,), "eachindex": range(1, 64),
}
KNOWN = set(ARITY)
#: the calls that read a length(A) or a linear index of an N-d array as such (`1:length(A)`, `B[i]`); the
#: others get the number they stand for
_TAGGED_ARGUMENTS = {":", "OneTo", "getindex"}


def apply_function(tr, name, args, s):
    """The value of the supported Julia call `name(args...)`, or JuliaNotSupportedError naming it."""
    counts = ARITY.get(name)
    if counts is None:
        raise JuliaNotSupportedError(f"the function {name}: supported calls are arithmetic on Int64/Float64/"
                                     "Float32, comparisons, getindex, setindex!, size, length, min, max, abs, "
                                     "sqrt, exp, zero, one and conversions (calls to other functions, including "
                                     "your own, are not translated: inline them by hand)", s)
    if len(args) not in counts:
        raise JuliaNotSupportedError(f"`{name}` with {len(args)} argument(s): Julia has no such method "
                                     f"(it takes {_counts(counts)}) and would throw a MethodError", s)
    handler = _HANDLERS.get(name)
    if handler is None:
        raise JuliaNotSupportedError(f"{name} outside the loop protocol the front-end recognises", s)
    if name not in _TAGGED_ARGUMENTS:
        args = [number(a) for a in args]
    return handler(tr, name, args, s)


def _counts(counts):
    counts = list(counts)
    if len(counts) > 3:
        return f"{counts[0]} or more arguments"
    return " or ".join(map(str, counts)) + " argument(s)"


def _numbers(args, s, name):
    for a in args:
        if not isinstance(a, Expr):
            raise JuliaNotSupportedError(f"{name} of {describe(a)}", s)
    return args


def describe(v):
    """A short description of a translation value for messages."""
    if isinstance(v, ArrayRef):
        return f"the array {v.name}"
    if isinstance(v, RangeValue):
        return f"the linear indices of the array {v.of}" if v.of else "a range"
    if isinstance(v, LinearIndex):
        return "a linear index"
    if isinstance(v, ArrayLength):
        return "the length"
    if isinstance(v, TupleValue):
        return f"a {len(v.items)}-tuple"
    if isinstance(v, (EnumerateValue, ZipValue)):
        return "an enumerate/zip iterator"
    if isinstance(v, NothingValue):
        return "nothing"
    if isinstance(v, TypeRef):
        return "a type"
    if isinstance(v, FunctionRef):
        return f"the function {v.name}"
    if isinstance(v, Expr):
        return f"a {JULIA_NAME.get(v.dtype, v.dtype)} value"
    return repr(v)


def promote(a, b, s):
    """Julia's promotion of two numbers (types.promote_dtype) as casts."""
    t = promote_dtype(a.dtype, b.dtype)
    if t is None:
        raise JuliaNotSupportedError(f"arithmetic on {a.dtype} and {b.dtype}", s)
    return cast(t, a), cast(t, b)


def _const_int(v):
    return v.value if isinstance(v, Const) and v.dtype.is_int else None


# arithmetic -----------------------------------------------------------------------------------

def _sum_product(tr, name, args, s):
    _numbers(args, s, name)
    out = args[0]
    for b in args[1:]:
        x, y = promote(out, b, s)
        if x.dtype.is_bool:
            x, y = cast(T.int64, x), cast(T.int64, y)
        out = x + y if name in ("+", "add_int") else x * y
    return out


def _minus(tr, name, args, s):
    _numbers(args, s, name)
    if len(args) == 1:
        a = args[0]
        return -(cast(T.int64, a) if a.dtype.is_bool else a)
    a, b = promote(*args, s)
    if a.dtype.is_bool:
        a, b = cast(T.int64, a), cast(T.int64, b)
    return a - b


def _divide(tr, name, args, s):
    a, b = promote(*_numbers(args, s, name), s)
    if not a.dtype.is_float:
        a, b = cast(T.float64, a), cast(T.float64, b)
    return a / b


def _int_divide(tr, name, args, s):
    a, b = promote(*_numbers(args, s, name), s)
    if not a.dtype.is_int:
        raise JuliaNotSupportedError(f"{name} of {JULIA_NAME.get(a.dtype, a.dtype)} numbers (only integers)", s)
    if _const_int(b) == 0:
        raise JuliaNotSupportedError(f"{name} by the constant 0: Julia throws DivideError", s)
    return a / b if name in ("÷", "div") else a % b


def _egal(a, b):
    """Julia's `===` of two numbers: the same type and the same bits."""
    if a.dtype != b.dtype:
        return Const(False, T.bool_)
    if a.dtype.is_float:
        bits = T.int64 if a.dtype.bits == 64 else T.int32
        return BinOp("eq", reinterpret(bits, a), reinterpret(bits, b))
    return BinOp("eq", a, b)


def _compare(tr, name, args, s):
    a, b = args
    if isinstance(a, NothingValue) or isinstance(b, NothingValue):
        same = isinstance(a, NothingValue) and isinstance(b, NothingValue)
        if name in ("===", "=="):
            return Const(same, T.bool_)
        if name in ("!==", "!=", "≠"):
            return Const(not same, T.bool_)
        raise JuliaNotSupportedError(f"{name} with `nothing`: Julia has no such method", s)
    _numbers(args, s, name)
    if name in ("===", "!=="):
        e = _egal(a, b)
        return e if name == "===" else ~e
    a, b = promote(a, b, s)
    return BinOp(_COMPARE[name], a, b)


def _not(tr, name, args, s):
    (a,) = _numbers(args, s, name)
    if not a.dtype.is_bool and (name == "!" or not a.dtype.is_int):
        raise JuliaNotSupportedError(f"{name} of a {a.dtype}", s)
    return ~a   # logical on Bool, bitwise on integers


def _bitwise(tr, name, args, s):
    a, b = promote(*_numbers(args, s, name), s)
    if a.dtype.is_float:
        raise JuliaNotSupportedError(f"{name} of floating-point numbers", s)
    op = _BITWISE[name]
    return a & b if op == "and" else (a | b if op == "or" else a ^ b)


def _unsigned(dtype):
    return T.as_dtype("u" + dtype.name) if dtype.is_signed else dtype


def _shift(tr, name, args, s):
    a, n = _numbers(args, s, name)
    if not (a.dtype.is_int and n.dtype.is_int):
        raise JuliaNotSupportedError(f"{name} of {a.dtype} by {n.dtype}", s)
    if name.endswith("_int"):   # the intrinsics read the count as unsigned (a negative one is too large)
        n = cast(_unsigned(n.dtype), n)
    if _SHIFTS[name] == "lshr" and a.dtype.is_signed:
        return cast(a.dtype, cast(_unsigned(a.dtype), a) >> n)
    return a << n if _SHIFTS[name] == "shl" else a >> n


def _minmax(tr, name, args, s):
    _numbers(args, s, name)
    out = args[0]
    for b in args[1:]:
        x, y = promote(out, b, s)
        if x.dtype.is_float:   # Julia's min/max of floats: NaN wins, and -0.0 is below 0.0
            out = call("minimum" if name == "min" else "maximum", x, y)
        else:
            out = min_(x, y) if name == "min" else max_(x, y)
    return out


def _abs(tr, name, args, s):
    (a,) = _numbers(args, s, name)
    if a.dtype.is_bool:
        return a
    return select(a < Const(0, a.dtype), -a, a) if not a.dtype.is_float else call("fabs", a)


def _math(tr, name, args, s):
    (a,) = _numbers(args, s, name)
    name = "sqrt" if name == "√" else name
    if name in ("floor", "ceil", "trunc", "round") and not a.dtype.is_float:
        return a                      # of an integer: the integer itself
    if not a.dtype.is_float:
        a = cast(T.float64, a)
    return call(name, a)


def _power(tr, name, args, s):
    a, b = _numbers(args, s, name)
    if a.dtype.is_int and b.dtype.is_int and _const_int(a) in (1, -1):
        # (-1)^n, 1^n: Julia's power of an integer is exact here for every n, negative ones included
        if a.value == 1:
            return Const(1, a.dtype)
        odd = BinOp("ne", cast(a.dtype, b) & Const(1, a.dtype), Const(0, a.dtype))
        return select(odd, Const(-1, a.dtype), Const(1, a.dtype))
    x, y = promote(a, b, s)
    if not x.dtype.is_float:
        raise JuliaNotSupportedError("integer powers with a non-literal exponent (other than of 1 and -1)", s)
    return call("pow", x, y)


def _literal_pow(tr, name, args, s):
    if not isinstance(args[2], TypeRef) or not isinstance(args[2].dtype, tuple):
        raise JuliaNotSupportedError("literal_pow with an unexpected exponent", s)
    base, p = args[1], args[2].dtype[1]
    if not isinstance(base, Expr) or not isinstance(p, int) or isinstance(p, bool):
        raise JuliaNotSupportedError(f"x^{p} of {describe(base)}", s)
    if base.dtype.is_bool:
        base = cast(T.int64, base)
    # Julia's literal_pow: one(x), x, x*x, x*x*x, inv(x), inv(x)^2; other powers go through `^`
    if p == 0:
        return Const(1, base.dtype)
    if p in (-1, -2):
        one = Const(1, base.dtype if base.dtype.is_float else T.float64)
        inv = one / (base if base.dtype.is_float else cast(T.float64, base))
        return inv if p == -1 else inv * inv
    if p > 3 and not (base.dtype.is_int and p <= 16) or p < -2:
        raise JuliaNotSupportedError(f"x^{p}: literal exponents -2 to 3 are supported (and up to 16 for "
                                     "integers); Julia computes other powers with its own pow", s)
    out = base
    for _ in range(p - 1):
        out = out * base
    return out


def _apply_type(tr, name, args, s):
    head = args[0]
    if isinstance(head, FunctionRef) and head.name == "Val" and len(args) == 2 and isinstance(args[1], Const):
        return TypeRef(("Val", args[1].value))
    if isinstance(head, TypeRef) and isinstance(head.dtype, TypeValue):
        params = []
        for a in args[1:]:
            if isinstance(a, TypeRef) and isinstance(a.dtype, T.DType):
                params.append(a.dtype)
            elif _const_int(a) is not None:
                params.append(_const_int(a))
            else:
                params.append(None)
        t = head.dtype.apply(params)
        if t is not None:
            return TypeRef(t)
    raise JuliaNotSupportedError("Core.apply_type other than Val{n} and array types such as Vector{Float64}", s)


def _muladd(tr, name, args, s):
    a, b, c = _numbers(args, s, name)
    x, y = promote(a, b, s)
    p, z = promote(x * y, c, s)
    return p + z


def _fma(tr, name, args, s):
    raise JuliaNotSupportedError("fma (a multiply-add rounded once) is not supported; muladd is (computed as "
                                 "a*b + c, which Julia allows)", s)


def _ifelse(tr, name, args, s):
    c, a, b = _numbers(args, s, name)
    if not c.dtype.is_bool:
        raise JuliaNotSupportedError(f"ifelse with a {c.dtype} condition (Julia needs a Bool)", s)
    a, b = promote(a, b, s)
    return select(c, a, b)


def _zero_one(tr, name, args, s):
    (a,) = args
    t = a.dtype if isinstance(a, (TypeRef, Expr)) else None
    if not isinstance(t, T.DType):
        raise JuliaNotSupportedError(f"{name} of {describe(a)}", s)
    return Const(0 if name == "zero" else 1, t)


def _oftype(tr, name, args, s):
    a, v = _numbers(args, s, name)
    return tr.convert(v, a.dtype, s, explicit=True)


def _float(tr, name, args, s):
    (a,) = _numbers(args, s, name)
    return a if a.dtype.is_float else cast(T.float64, a)


def _convert(tr, name, args, s):
    t, v = args
    if not isinstance(t, TypeRef) or isinstance(t.dtype, tuple):
        raise JuliaNotSupportedError(f"convert to {describe(t)}", s)
    return tr.convert_to(t.dtype, v, s)


def _typeassert(tr, name, args, s):
    v, t = args
    if not _isa_static(tr, v, t, s):
        raise JuliaNotSupportedError(f"typeassert of {describe(v)} to {_type_text(t)}: Julia throws a TypeError", s)
    return v


def _isa(tr, name, args, s):
    return Const(_isa_static(tr, args[0], args[1], s), T.bool_)


def _type_text(t):
    if isinstance(t, TypeRef):
        return JULIA_NAME.get(t.dtype, str(t.dtype)) if not isinstance(t.dtype, tuple) else "Val"
    return describe(t)


def _isa_static(tr, v, t, s):
    """`v isa t`, known from the types of the translation (every value has one concrete type)."""
    if not isinstance(t, TypeRef) or isinstance(t.dtype, tuple):
        raise JuliaNotSupportedError(f"isa with {describe(t)} as the type", s)
    vt = tr.value_type(v)
    if vt is None:
        if isinstance(t.dtype, TypeValue) and t.dtype.name == "Any":
            return True
        raise JuliaNotSupportedError(f"isa on {describe(v)}", s)
    return isa(vt, t.dtype)


def _eltype(tr, name, args, s):
    (a,) = args
    if isinstance(a, ArrayRef):
        return TypeRef(tr.argtypes[a.name].dtype)
    raise JuliaNotSupportedError(f"eltype of {describe(a)}", s)


def _ndims(tr, name, args, s):
    (a,) = args
    if isinstance(a, ArrayRef):
        return Const(tr.argtypes[a.name].ndim, T.int64)
    raise JuliaNotSupportedError(f"ndims of {describe(a)}", s)


# arrays, ranges, tuples ------------------------------------------------------------------------------

def _getindex(tr, name, args, s):
    a = args[0]
    if isinstance(a, TupleValue) and len(args) == 2:
        return _tuple_item(a, args[1], s, "getindex")
    if not isinstance(a, ArrayRef):
        raise JuliaNotSupportedError(f"getindex on {describe(a)}", s)
    return tr.read_array(a.name, args[1:], s)


def _setindex(tr, name, args, s):
    raise JuliaNotSupportedError("the value of setindex! used as an expression", s)


def dimension(tr, a, d, s, name):
    """The checked constant dimension d of `size(A, d)` / `axes(A, d)`: an integer literal from 1."""
    if not isinstance(a, ArrayRef):
        raise JuliaNotSupportedError(f"{name} of {describe(a)}", s)
    if not isinstance(d, Const) or not d.dtype.is_int:
        what = "a floating-point" if isinstance(d, Expr) and d.dtype.is_float else "a non-constant"
        raise JuliaNotSupportedError(f"`{name}(A, d)` with {what} dimension d: the front-end needs an integer "
                                     "literal (and Julia has no method for a non-integer d)", s)
    if d.value < 1:
        raise JuliaNotSupportedError(f"`{name}({a.name}, {d.value})`: dimensions are numbered from 1; Julia "
                                     "throws a BoundsError", s)
    return d.value


def _size(tr, name, args, s):
    a = args[0]
    if not isinstance(a, ArrayRef):
        raise JuliaNotSupportedError(f"size of {describe(a)}", s)
    if len(args) == 1:
        return TupleValue(tuple(tr.size(a.name, d) for d in range(1, tr.argtypes[a.name].ndim + 1)))
    return tr.size(a.name, dimension(tr, a, args[1], s, "size"))


def length_of(tr, a, s):
    """The number of elements of an array or a range."""
    if isinstance(a, ArrayRef):
        out = tr.size(a.name, 1)
        for d in range(2, tr.argtypes[a.name].ndim + 1):
            out = out * tr.size(a.name, d)
        return out
    if isinstance(a, RangeValue):
        return range_count(a)
    raise JuliaNotSupportedError(f"length of {describe(a)}", s)


def range_count(r):
    """The number of elements of lo:step:hi (0 when empty)."""
    if r.step == 1:
        n = r.hi - r.lo + 1
    elif r.step > 0:
        n = floordiv(r.hi - r.lo, Const(r.step, T.int64)) + 1
    else:
        n = floordiv(r.lo - r.hi, Const(-r.step, T.int64)) + 1
    return max_(n, Const(0, T.int64))


def _length(tr, name, args, s):
    return linear_length(tr, args[0], s)


def linear_length(tr, a, s):
    """`length(a)`, or `lastindex(a)` of an array: for an N-d array (N >= 2) the number remembers a
    (ArrayLength), so that `1:length(A)` is A's linear indices (`linear_indices`)."""
    n = length_of(tr, a, s)
    return ArrayLength(a.name, n) if isinstance(a, ArrayRef) and tr.argtypes[a.name].ndim >= 2 else n


def linear_indices(tr, a, n):
    """The range 1:n of the linear indices of the array named by `a` (None: a plain range), n its length."""
    nd = tr.argtypes[a].ndim if a is not None else 1
    return RangeValue(Const(1, T.int64), 1, cast(T.int64, n), a if nd >= 2 else None)


def _ranges(tr, name, args, s):
    if name == "OneTo":
        of = args[0].array if isinstance(args[0], ArrayLength) else None
        (n,) = _numbers([number(args[0])], s, name)
        if not n.dtype.is_int:
            raise JuliaNotSupportedError("Base.OneTo of a non-integer", s)
        return linear_indices(tr, of, n)
    if name == "eachindex" and len(args) > 1:
        return _eachindex_of_several(tr, args, s)
    a = args[0]
    if not isinstance(a, ArrayRef):
        raise JuliaNotSupportedError(f"{name} of {describe(a)}", s)
    if name == "axes":
        if len(args) == 1:
            return TupleValue(tuple(RangeValue(Const(1, T.int64), 1, tr.size(a.name, d))
                                    for d in range(1, tr.argtypes[a.name].ndim + 1)))
        return RangeValue(Const(1, T.int64), 1, tr.size(a.name, dimension(tr, a, args[1], s, "axes")))
    return linear_indices(tr, a.name, length_of(tr, a, s))     # eachindex, LinearIndices (IndexLinear arrays)


def _eachindex_of_several(tr, args, s):
    """`eachindex(A, B, ...)` of arrays: Julia's 1:length(A) (IndexLinear arrays), which throws a
    DimensionMismatch unless every array has A's length (checked at the call: `eachindex_lengths`)."""
    for a in args:
        if not isinstance(a, ArrayRef):
            raise JuliaNotSupportedError(
                f"`eachindex` of several arguments, one of them {describe(a)}: the front-end takes arrays there "
                "(Julia's method takes AbstractArrays); loop over `eachindex` of one array", s)
    names = [a.name for a in args]
    sizes = [tr.size_names(n) for n in names]
    reached = tr.reached()
    # Julia compares Base.OneTo(length(X)), not the shapes: a 2x3 and a 3x2 matrix, or a matrix and a vector
    # of its length, pass. Two vectors' lengths are sizes, an equality the middle-end can use.
    for n, size in zip(names[1:], sizes[1:]):
        if len(size) == 1 and len(sizes[0]) == 1 and size != sizes[0]:
            tr.assume_where_reached(f"{size[0]} = {sizes[0][0]}", reached)
    tr.eachindex_lengths.append((tuple(names), tuple(sizes), f"statement %{s.number} (line {s.line}: `{s.text}`)", reached))
    # The indices are 1:length(X) for every X: the loops follow the first array of the highest rank, so that
    # its X[i] is affine (a loop per dimension) and a vector's v[i] is the linear index as a number.
    of = max(args, key=lambda a: tr.argtypes[a.name].ndim)
    return linear_indices(tr, of.name, length_of(tr, of, s))


def _colon(tr, name, args, s):
    if len(args) == 2 and _const_int(args[0]) == 1 and isinstance(args[1], ArrayLength):
        return linear_indices(tr, args[1].array, args[1].number)     # 1:length(A), 1:lastindex(A)
    args = _numbers([number(a) for a in args], s, name)
    if len(args) == 2:
        lo, hi = args
        step = 1
    else:
        lo, st, hi = args
        if not isinstance(st, Const) or not st.dtype.is_int or st.value == 0:
            raise JuliaNotSupportedError("a range a:s:b whose step s is not a nonzero integer literal", s)
        step = st.value
    for x in (lo, hi):
        if not x.dtype.is_int:
            raise JuliaNotSupportedError("a range of non-integers", s)
    return RangeValue(cast(T.int64, lo), step, cast(T.int64, hi))


def _first_last_index(tr, name, args, s):
    a = args[0]
    if not isinstance(a, ArrayRef):
        raise JuliaNotSupportedError(f"{name} of {describe(a)}", s)
    if name == "firstindex":
        if len(args) == 2:
            dimension(tr, a, args[1], s, name)
        return Const(1, T.int64)
    if len(args) == 1:
        return linear_length(tr, a, s)       # lastindex(A) is the last linear index
    return tr.size(a.name, dimension(tr, a, args[1], s, name))


def _first_last(tr, name, args, s):
    (r,) = args
    if isinstance(r, RangeValue) and name == "first":
        return r.lo
    if isinstance(r, RangeValue) and r.step == 1:
        return r.hi
    raise JuliaNotSupportedError(f"{name} of {describe(r)}", s)


def _tuple_item(t, i, s, name):
    k = _const_int(i)
    if k is None:
        raise JuliaNotSupportedError(f"{name} of a tuple with a non-constant index", s)
    if not 1 <= k <= len(t.items):
        raise JuliaNotSupportedError(f"{name}: a {len(t.items)}-tuple has no element {k}; Julia throws a "
                                     "BoundsError", s)
    return t.items[k - 1]


def _tuple(tr, name, args, s):
    return TupleValue(tuple(args))


def _indexed_iterate(tr, name, args, s):
    t, i = args[0], args[1]
    if not isinstance(t, TupleValue):
        raise JuliaNotSupportedError(f"destructuring {describe(t)} (`a, b = ...` of a tuple is supported)", s)
    return TupleValue((_tuple_item(t, i, s, "indexed_iterate"), Const(_const_int(i) + 1, T.int64)))


def _getfield(tr, name, args, s):
    t, k = args
    if not isinstance(t, TupleValue):
        raise JuliaNotSupportedError(f"Core.getfield of {describe(t)} (fields of structs are not supported)", s)
    return _tuple_item(t, k, s, "getfield")


def _enumerate_zip(tr, name, args, s):
    for a in args:
        if not isinstance(a, ITERABLE):
            raise JuliaNotSupportedError(f"{name} of {describe(a)}", s)
    return EnumerateValue(args[0]) if name == "enumerate" else ZipValue(tuple(args))


def _iterate(tr, name, args, s):
    raise JuliaNotSupportedError("a call of iterate outside the `for` loops the front-end recognises", s)


def _val(tr, name, args, s):
    raise JuliaNotSupportedError("Val other than in x^n (literal_pow)", s)


def _identity(tr, name, args, s):
    return args[0]


def _broadcasted(tr, name, args, s):
    """`f.(args...)`, kept lazy until `materialize!` writes it element by element (Translator._broadcast)."""
    if not isinstance(args[0], (FunctionRef, TypeRef)):
        raise JuliaNotSupportedError(f"broadcasting {describe(args[0])}, which is no function or type", s)
    for a in args[1:]:
        if not isinstance(a, (Expr, ArrayRef, BroadcastValue, FunctionRef, TypeRef)):
            raise JuliaNotSupportedError(f"broadcasting over {describe(a)} (arrays and numbers are supported)", s)
    return BroadcastValue(args[0], tuple(args[1:]))


def _materialize_into(tr, name, args, s):
    raise JuliaNotSupportedError("the value of `.=` (materialize!) used in an assignment or a call: write the "
                                 "`.=` as a statement of its own", s)


_HANDLERS = {
    **{n: _sum_product for n in ("+", "*", "add_int", "mul_int")},
    **{n: _minus for n in ("-", "sub_int")},
    "/": _divide,
    **{n: _int_divide for n in ("÷", "div", "%", "rem")},
    **{n: _compare for n in ("===", "!==", *_COMPARE)},
    **{n: _not for n in ("!", "not_int", "~")},
    **{n: _bitwise for n in _BITWISE},
    **{n: _shift for n in _SHIFTS},
    "min": _minmax, "max": _minmax, "abs": _abs,
    **{n: _math for n in (*MATH, "√")},
    "^": _power, "literal_pow": _literal_pow, "apply_type": _apply_type, "muladd": _muladd, "fma": _fma,
    "ifelse": _ifelse, "zero": _zero_one, "one": _zero_one, "oftype": _oftype, "float": _float,
    "convert": _convert, "typeassert": _typeassert, "isa": _isa, "eltype": _eltype, "ndims": _ndims,
    "getindex": _getindex, "setindex!": _setindex, "size": _size, "length": _length,
    "eachindex": _ranges, "axes": _ranges, "OneTo": _ranges, "LinearIndices": _ranges, ":": _colon,
    "firstindex": _first_last_index, "lastindex": _first_last_index, "first": _first_last, "last": _first_last,
    "tuple": _tuple, "indexed_iterate": _indexed_iterate, "getfield": _getfield,
    "enumerate": _enumerate_zip, "zip": _enumerate_zip, "iterate": _iterate, "Val": _val,
    "identity": _identity, "broadcasted": _broadcasted, "materialize!": _materialize_into,
}
