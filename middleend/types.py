"""Element types of the IR. Every expression carries one; nothing is promoted implicitly."""
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class DType:
    """A scalar element type: its name, width in bits and kind ('int', 'uint', 'float', 'bool')."""

    name: str
    bits: int
    kind: str

    @property
    def is_float(self):
        return self.kind == "float"

    @property
    def is_int(self):
        return self.kind in ("int", "uint")

    @property
    def is_signed(self):
        return self.kind == "int"

    @property
    def is_bool(self):
        return self.kind == "bool"

    @property
    def numpy(self):
        return np.dtype(self.name if self.kind != "bool" else np.bool_)

    @property
    def bytes(self):
        return max(1, self.bits // 8)

    def __repr__(self):
        return self.name

    def min_value(self):
        if self.is_float:
            return -np.inf
        return 0 if self.kind in ("uint", "bool") else -(1 << (self.bits - 1))

    def max_value(self):
        if self.is_float:
            return np.inf
        if self.is_bool:
            return 1
        return (1 << self.bits) - 1 if self.kind == "uint" else (1 << (self.bits - 1)) - 1


int8, int16, int32, int64 = (DType(f"int{b}", b, "int") for b in (8, 16, 32, 64))
uint8, uint16, uint32, uint64 = (DType(f"uint{b}", b, "uint") for b in (8, 16, 32, 64))
float32, float64 = DType("float32", 32, "float"), DType("float64", 64, "float")
bool_ = DType("bool", 1, "bool")

ALL_TYPES = (int8, int16, int32, int64, uint8, uint16, uint32, uint64, float32, float64, bool_)
_BY_NAME = {t.name: t for t in ALL_TYPES}
_BY_NAME.update({"bool_": bool_, "f32": float32, "f64": float64})

#: Loop variables and size parameters are int32 in value context, as in Halide.
index_type = int32


def as_dtype(t):
    """Accept a DType, a numpy dtype, a numpy scalar type or a name like 'float32'."""
    if isinstance(t, DType):
        return t
    if isinstance(t, str) and t in _BY_NAME:
        return _BY_NAME[t]
    try:
        npt = np.dtype(t)
    except TypeError:
        raise TypeError(f"not an element type: {t!r}") from None
    if npt == np.bool_:
        return bool_
    if npt.name in _BY_NAME:
        return _BY_NAME[npt.name]
    raise TypeError(f"unsupported element type: {t!r}")
