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
