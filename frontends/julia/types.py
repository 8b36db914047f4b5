"""Julia argument types the front-end accepts, and their element types in the IR."""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

import mascarpone.middleend.types as T
from mascarpone.middleend.errors import ArgumentError, NotSupportedError

SCALARS = {"Float64": T.float64, "Float32": T.float32, "Int64": T.int64, "Int": T.int64, "Bool": T.bool_}
JULIA_NAME = {T.float64: "Float64", T.float32: "Float32", T.int64: "Int64", T.bool_: "Bool", T.int32: "Int32"}


@dataclass(frozen=True)
class JuliaType:
    """`Matrix{Float64}` is JuliaType(float64, 2); `Int64` is JuliaType(int64, 0)."""
    dtype: T.DType
    ndim: int

    @property
    def is_array(self):
        return self.ndim > 0

    def __str__(self):
        if self.ndim == 0:
            return JULIA_NAME[self.dtype]
        return f"Array{{{JULIA_NAME[self.dtype]}, {self.ndim}}}"


def parse_type(text) -> JuliaType:
    """Read `Vector{Float64}`, `Matrix{Float32}`, `Array{Float64, 3}`, `Int64`, `Float64`..."""
    if isinstance(text, JuliaType):
        return text
    t = str(text).replace(" ", "")
    if t in SCALARS:
        return JuliaType(SCALARS[t], 0)
    m = re.fullmatch(r"(Vector|Matrix)\{(\w+)\}", t)
    if m and m.group(2) in SCALARS:
        return JuliaType(SCALARS[m.group(2)], 1 if m.group(1) == "Vector" else 2)
    m = re.fullmatch(r"Array\{(\w+),(\d+)\}", t)
    if m and m.group(1) in SCALARS:
        return JuliaType(SCALARS[m.group(1)], int(m.group(2)))
    raise NotSupportedError(f"argument type {text!r} is not supported; use Int64, Float64, Float32, Bool, "
                            "Vector{T}, Matrix{T} or Array{T, N} with T one of Float64, Float32, Int64")


def check_array(name, value, jtype: JuliaType):
    """A numpy array for a Julia array argument: right rank and element type, else ArgumentError."""
    if not isinstance(value, np.ndarray):
        raise ArgumentError(f"argument {name}::{jtype} must be a numpy array, got {type(value).__name__}")
    if value.ndim != jtype.ndim or value.dtype != jtype.dtype.numpy:
        raise ArgumentError(f"argument {name}::{jtype} needs a {jtype.ndim}-d array of {jtype.dtype.numpy}, "
                            f"got shape {value.shape} of {value.dtype}")
    return value


# Julia types used as values (`x isa T`, `convert(T, x)`, `zero(T)`, static parameters) -----------------

ABSTRACT_SCALARS = {
    "Any": None,              # every value
    "Number": {T.float64, T.float32, T.int64, T.int32, T.bool_},
    "Real": {T.float64, T.float32, T.int64, T.int32, T.bool_},
    "AbstractFloat": {T.float64, T.float32},
    "Integer": {T.int64, T.int32, T.bool_},
    "Signed": {T.int64, T.int32},
}
ARRAY_KINDS = {"Array": None, "Vector": 1, "Matrix": 2, "DenseArray": None, "DenseVector": 1, "DenseMatrix": 2,
               "AbstractArray": None, "AbstractVector": 1, "AbstractMatrix": 2}


@dataclass(frozen=True)
class TypeValue:
    """A Julia type other than a concrete number type: abstract (`Real`), an array type with its element
    type and rank when given (`Vector{Float64}`, `AbstractArray{T, 2}`), or `Nothing`."""
    name: str
    eltype: object = None        # a DType or None (any)
    ndim: int | None = None

    def apply(self, params):
        """`Array{Float64, 2}`, `Vector{Float32}`: params are DTypes or ints; None when it makes no sense."""
        if self.name not in ARRAY_KINDS or self.eltype is not None or not 1 <= len(params) <= 2:
            return None
        elt, nd = params[0], ARRAY_KINDS[self.name]
        if not isinstance(elt, T.DType):
            return None
        if len(params) == 2:
            if not isinstance(params[1], int) or isinstance(params[1], bool) or (nd is not None and nd != params[1]):
                return None
            nd = params[1]
        return TypeValue(self.name, elt, nd)

    def __str__(self):
        if self.eltype is None:
            return self.name
        return f"{self.name}{{{JULIA_NAME.get(self.eltype, self.eltype)}" + \
            (f", {self.ndim}}}" if self.name in ("Array", "DenseArray", "AbstractArray") else "}")


def type_value(name):
    """The type a bare Julia name denotes: a DType (Float64, Int, ...), a TypeValue, or None."""
    if name in SCALARS or name == "Int32":
        return SCALARS.get(name, T.int32)
    if name in ABSTRACT_SCALARS or name in ARRAY_KINDS or name == "Nothing":
        return TypeValue(name, None, ARRAY_KINDS.get(name))
    return None


def isa(value_type, t):
    """Julia's `x isa t` for a value of type `value_type` (a JuliaType, or 'Nothing') and a type `t`
    (a DType or TypeValue). One rule for the interpreter and the translator."""
    if isinstance(t, T.DType):
        return isinstance(value_type, JuliaType) and value_type.ndim == 0 and value_type.dtype == t
    if t.name == "Any":
        return True
    if t.name == "Nothing":
        return value_type == "Nothing"
    if not isinstance(value_type, JuliaType):
        return False
    if t.name in ABSTRACT_SCALARS:
        return value_type.ndim == 0 and value_type.dtype in ABSTRACT_SCALARS[t.name]
    return value_type.ndim > 0 and (t.ndim is None or t.ndim == value_type.ndim) and \
        (t.eltype is None or t.eltype == value_type.dtype)


def type_from_text(text):
    """A static parameter's value as the translator and interpreter use it: an int, a DType or a TypeValue."""
    if isinstance(text, int):
        return text
    t = type_value(str(text).replace(" ", ""))
    if t is not None:
        return t
    try:
        jt = parse_type(text)
    except NotSupportedError:
        raise NotSupportedError(f"the static parameter value {text!r} is not a type the front-end knows "
                                "(Int64, Float64, Float32, Bool, Vector{T}, Matrix{T}, Array{T, N})") from None
    return TypeValue("Array", jt.dtype, jt.ndim) if jt.is_array else jt.dtype


_RANK = {T.bool_: 0, T.int32: 1, T.int64: 2, T.float32: 3, T.float64: 4}


def promote_dtype(ta, tb):
    """Julia's promote_type of two number types: Bool < Int32 < Int64 < Float32 < Float64, and an
    integer with a float gives the float (Int64 with Float32 is Float32). None for other types."""
    if ta not in _RANK or tb not in _RANK:
        return None
    if ta == tb:
        return ta
    if ta.is_float != tb.is_float and not (ta.is_bool or tb.is_bool):
        return ta if ta.is_float else tb
    return ta if _RANK[ta] > _RANK[tb] else tb
