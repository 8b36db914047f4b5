"""Julia functions through mascarpone: `ms.julia.compile(f, argtypes)` (needs Julia and juliacall),
`ms.from_julia(text, argtypes)` for printed lowered IR, `ms.julia.interpret` the reference interpreter."""


def compile(jl_function, argtypes, schedule=None, name=None, **options):
    """Compile a live Julia function (via juliacall): `schedule(f)` may schedule its computations first."""
    from mascarpone.frontends.julia.bridge import compile as _compile
    return _compile(jl_function, argtypes, schedule=schedule, name=name, **options)


def from_julia(text, argtypes, name=None, static_parameters=None):
    """An ms.Function from the printed lowered IR of a Julia function (`@code_lowered f(args...)`).

    `argtypes` maps argument names, in order, to Julia types ("Matrix{Float64}", "Int64", ...);
    `static_parameters` gives a `where` method's parameters (`["Float64"]`) when the text does not
    list them."""
    from mascarpone.frontends.julia import from_julia as _from_julia
    return _from_julia(text, argtypes, name=name, static_parameters=static_parameters)


def interpret(text, argtypes, *args, **kwargs):
    """Run printed lowered IR on numpy arrays with Julia's semantics (the tests' reference)."""
    from mascarpone.frontends.julia.interpreter import run
    static = kwargs.pop("static_parameters", None)
    return run(text, argtypes, *args, static_parameters_=static, **kwargs)
