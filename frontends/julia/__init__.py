"""Julia front-end: Julia's printed lowered IR -> CFG (networkx) -> loops -> Layer I computations.

    f = from_julia(text, argtypes={"A": "Matrix{Float64}", "x": "Vector{Float64}", "y": "Vector{Float64}"})
    f["s12"].interchange("i", "j")
    kernel = f.compile()
    kernel(A, x, y)          # updates y in place, as the Julia function does

`interpret(text, argtypes, *args)` runs the same IR statement by statement on numpy arrays
with Julia's semantics; it is the reference the tests compare compiled kernels with.
"""
from .api import JuliaFunction, JuliaKernel, from_julia
from .interpreter import StepLimitError, run
from .ir import JuliaBoundsError, JuliaNotSupportedError, JuliaParseError, JuliaRuntimeError
from .parser import parse

__all__ = ["from_julia", "JuliaFunction", "JuliaKernel", "JuliaParseError", "JuliaNotSupportedError",
           "JuliaRuntimeError", "JuliaBoundsError", "StepLimitError", "parse", "interpret"]


def interpret(text_or_code, argtypes, *args, static_parameters=None, max_steps=50_000_000, **kwargs):
    """Run the lowered IR on numpy arrays (Julia-shaped, updated in place); returns the function's value.

    What Julia would throw raises JuliaRuntimeError; `static_parameters` gives the values of a `where`
    method's parameters when the text does not list them."""
    return run(text_or_code, argtypes, *args, max_steps=max_steps, static_parameters_=static_parameters, **kwargs)
