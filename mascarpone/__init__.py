"""mascarpone: a polyhedral middle-end for array and image DSLs.

    import mascarpone as ms
    with ms.Function("blur") as f:
        ...
    kernel = f.compile("cpu")                # ms.targets() lists the targets

    f = ms.from_halide(halide_pipeline)     # a Halide pipeline, algorithm and schedule
    out = f.compile("cpu").realize([width, height], input=array)
"""
from mascarpone.backends.common.threads import get_num_threads, set_num_threads
from mascarpone.frontends.halide import HalideFormatError, HalideVersionError, from_halide
from mascarpone.middleend.algorithm import Computation, Input, Param, Var
from mascarpone.middleend.buffer import Buffer
from mascarpone.middleend.errors import (ArgumentError, DomainError, ExprTypeError, IllegalScheduleError,
                                         LayoutError, MascarponeError, NotSupportedError, OutOfBoundsError,
                                         OverwriteError, RankError, ScheduleError, TargetError)
from mascarpone.middleend.expr import (Expr, abs_ as abs, call, cast, clamp, floordiv, floormod, max_ as max,
                                       min_ as min, reinterpret, select)
from mascarpone.middleend.function import Function
from mascarpone.middleend.schedule import LoopVar, root
from mascarpone.middleend.targets import Target, targets
from mascarpone.middleend.types import (DType, bool_, float32, float64, int8, int16, int32, int64, uint8, uint16,
                                        uint32, uint64)

__version__ = "0.1.0"

from . import julia  # noqa: E402  (ms.julia.compile; the front-end loads on first use)
from .julia import from_julia  # noqa: E402


def _math(name):
    def fn(*args):
        return call(name, *args)
    fn.__name__ = name
    fn.__doc__ = f"{name} of floating-point expressions (IEEE, as in C's libm)."
    return fn


sqrt, exp, log, sin, cos, tan, tanh, floor, ceil, pow, atan2 = (
    _math(n) for n in ("sqrt", "exp", "log", "sin", "cos", "tan", "tanh", "floor", "ceil", "pow", "atan2"))


def _caster(dtype):
    def fn(e):
        return cast(dtype, e)
    fn.__name__ = dtype.name
    fn.__doc__ = f"Convert an expression to {dtype.name}."
    return fn


f32, f64 = _caster(float32), _caster(float64)
i8, i16, i32, i64 = (_caster(t) for t in (int8, int16, int32, int64))
u8, u16, u32, u64 = (_caster(t) for t in (uint8, uint16, uint32, uint64))
