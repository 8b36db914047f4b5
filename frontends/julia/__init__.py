"""Julia front-end: Julia's printed lowered IR -> CFG (networkx) -> loops -> Layer I computations.

    f = from_julia(text, argtypes={"A": "Matrix{Float64}", "x": "Vector{Float64}", "y": "Vector{Float64}"})
    f["s12"].interchange("i", "j")
    kernel = f.compile()
    kernel(A, x, y)          # updates y in place, as the Julia function does

`interpret(text, argtypes, *args)` runs the same IR statement by statement on numpy arrays
with Julia's semantics; it is the reference the tests compare compiled kernels with.
"""
from .api import JuliaFunction, JuliaKernel, from_julia
from .ir import JuliaNotSupportedError, JuliaParseError
from .parser import parse

__all__ = ["from_julia", "JuliaFunction", "JuliaKernel", "JuliaParseError", "JuliaNotSupportedError", "parse",
           "interpret"]


def interpret(text_or_code, argtypes, *args, **kwargs):
    """Run the lowered IR on numpy arrays (Julia-shaped, updated in place); returns the function's value."""
    from .interpret import run
    return run(text_or_code, argtypes, *args, **kwargs)
