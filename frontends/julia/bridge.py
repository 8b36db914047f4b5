"""The juliacall bridge: the lowered IR of a live Julia function, printed by Julia, read by the parser."""
from __future__ import annotations

import numpy as np

from mascarpone.middleend.errors import NotSupportedError

from .api import JuliaKernel, from_julia


def lowered_text(jl_function, argtypes) -> str:
    """`code_lowered(f, types)` printed by Julia itself (through juliacall)."""
    try:
        from juliacall import Main as jl
    except ImportError as err:
        raise NotSupportedError("ms.julia.compile needs juliacall and a Julia installation "
                                "(pip install juliacall); without them, print `@code_lowered f(args...)` in "
                                "Julia and pass the text to ms.from_julia") from err
    types = "Tuple{" + ", ".join(argtypes.values()) + "}"
    show = jl.seval("(f, T) -> sprint(show, only(code_lowered(f, T)))")
    return str(show(jl_function, jl.seval(types)))


class _JuliaArrayKernel:
    """A JuliaKernel that also accepts Julia arrays (juliacall's ArrayValue), without copies."""

    def __init__(self, kernel: JuliaKernel):
        self.kernel = kernel
        self.function = kernel.function

    def __call__(self, *args, **kwargs):
        conv = [_as_numpy(a) for a in args]
        kw = {k: _as_numpy(v) for k, v in kwargs.items()}
        return self.kernel(*conv, **kw)


def _as_numpy(v):
    if isinstance(v, np.ndarray) or isinstance(v, (int, float, np.number)):
        return v
    to_numpy = getattr(v, "to_numpy", None)
    if to_numpy is not None:
        return to_numpy(copy=False)     # a Julia Array: column-major, seen by numpy as Fortran-ordered
    return v


def compile(jl_function, argtypes, schedule=None, name=None, **options):
    """Compile a Julia function through mascarpone: its lowered IR, an optional schedule(f), compile(**options)."""
    text = lowered_text(jl_function, argtypes)
    f = from_julia(text, argtypes, name=name or str(getattr(jl_function, "__name__", "julia_kernel")).replace("!", "_bang"))
    if schedule is not None:
        schedule(f)
    return _JuliaArrayKernel(f.compile(**options))
