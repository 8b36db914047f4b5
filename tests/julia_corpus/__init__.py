"""Printed IR as users paste it: our own small functions, printed the way Julia 1.5 to 1.12, @code_warntype,
`debuginfo=:source`, Cthulhu and the pages that copy them show it (source-location lines, inlining
markers, a line-number column, ASCII gutters, Markdown indentation, REPL prompts and menus around the
code). Each case names the constructs it reproduces; `refused` cases must be refused by name.

`run_case(case)` translates, compiles and runs a case on random arguments against the reference
interpreter; tests/test_julia_corpus.py and benchmarks/julia_corpus.py use it.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent


@dataclass
class Case:
    file: str
    argtypes: dict
    shows: str                     # the constructs of real printed IR this text reproduces
    source: str                    # the Julia function printed
    ints: dict = field(default_factory=dict)     # values of Int64 (default 3) and Bool (default true) arguments
    static_parameters: list | None = None
    shapes: dict = field(default_factory=dict)   # array shapes other than n-vectors and n x (n+1) matrices
    refused: tuple | None = None   # (error class name, regex of the message) for cases that must be refused

    @property
    def text(self):
        return (HERE / self.file).read_text()


V, M = "Vector{Float64}", "Matrix{Float64}"

CASES = [
    Case("vsum.v1_6.lowered_source.txt", {"v": V},
         "@code_lowered debuginfo=:source of 1.6: `@ REPL[2]:2 within `vsum'` before block 1, after gutters and "
         "between blocks; `for e in v` over an array's elements (`%2 = v`); zero($(Expr(:static_parameter, 1))) "
         "from `where T`; a REPL prompt before the code",
         "function vsum(v::AbstractVector{T}) where T\n    acc = zero(T)\n    for e in v\n        acc += e\n"
         "    end\n    return acc\nend", static_parameters=["Float64"]),
    Case("vsum.v1_10.warntype.txt", {"v": "Vector{Int64}"},
         "@code_warntype of 1.10: `Static Parameters` (T = Int64), `from vsum(v::AbstractVector{T}) where T @ Main`, "
         "Arguments/Locals/Body header, no closing parenthesis, a trailing blank line",
         "the same vsum"),
    Case("dotp_rettype.v1_6.lowered.txt", {"x": "Vector{Int64}", "y": "Vector{Int64}"},
         "a return-type annotation `f(x, y)::Float64`: `%1 = Main.Float64`, `@_4 isa %1`, Base.convert and "
         "Core.typeassert on the return temporary; an Int64 local converted on return",
         "function dotp(x, y)::Float64\n    s = 0\n    for i in eachindex(x)\n        s += x[i] * y[i]\n"
         "    end\n    return s\nend"),
    Case("cumsum_inbounds.v1_6.lowered.txt", {"y": V, "x": V},
         "statement-level `@inbounds y[i] = (s += x[i])`: the SSA value %12 is assigned to s and then stored and "
         "assigned to `val` (kept, not re-read from s)",
         "function cumsum_to!(y, x)\n    s = 0.0\n    for i in eachindex(x)\n        @inbounds y[i] = (s += x[i])\n"
         "    end\n    return y\nend"),
    Case("asum_inbounds.v1_10.lowered_source.txt", {"a": V},
         "@code_lowered debuginfo=:source of 1.10 with a macro expansion: `┌ @ essentials.jl:694 within "
         "`macro expansion``, statements behind an inlining indent `│  │ %12 = ...`, `│  └`; `@inbounds s += a[i]`",
         "function asum(a)\n    s = 0.0\n    for i in 1:length(a)\n        @inbounds s += a[i]\n    end\n"
         "    return s\nend"),
    Case("sum_widen.v1_10.warntype.txt", {"x": V},
         "a local whose type widens: `s = 0` then `s = %10 + %11` with Float64 elements "
         "(`s::Union{Float64, Int64}`, `Body::Union{Float64, Int64}`)",
         "function sum_naive(x)\n    s = 0\n    for i in eachindex(x)\n        s += x[i]\n    end\n    return s\nend"),
    Case("leibniz_ascii.v1_7.warntype.txt", {"N": "Int64"},
         "@code_warntype of 1.7 as a book prints it: ASCII gutter (`1 -`, `|`, `--`, a block label whose `┄` was "
         "dropped), `from leibniz(N) in Main at REPL[33]:1`, Core.PartialStruct types, `(-1) ^ %11`, a widening local",
         "function leibniz(N)\n    s = 0\n    for n in 1:N\n        s += (-1)^(n+1) / (2n-1)\n    end\n"
         "    return 4.0s\nend", ints={"N": 200}),
    Case("wsum_enumerate.v1_6.lowered.txt", {"x": V},
         "`for (i, v) in enumerate(x)`: the element destructured by Base.indexed_iterate and the state slot @_6",
         "function wsum(x)\n    s = 0.0\n    for (i, v) in enumerate(x)\n        s += i * v\n    end\n"
         "    return s\nend"),
    Case("zipdot.v1_10.lowered.txt", {"a": V, "b": "Vector{Float64}"},
         "`for (p, q) in zip(a, b)` of two arrays (as many iterations as the shorter)",
         "function absdot(a, b)\n    acc = 0.0\n    for (p, q) in zip(a, b)\n        acc += abs(p) * abs(q)\n"
         "    end\n    return acc\nend"),
    Case("ramp_zip.v1_12.lowered.txt", {"y": V, "n": "Int64", "step": "Float64"},
         "@code_lowered of 1.12: outlined global and slot reads (`%1 = Main.zip`, `%20 = k`), call-kind labels "
         "(`dynamic`, `builtin`, `intrinsic`); `zip(0:n, y)` of a range and the array the loop writes",
         "function ramp!(y, n, step)\n    for (k, yk) in zip(0:n, y)\n        y[k + 1] = yk + step * k\n    end\n"
         "    return y\nend", ints={"n": 4}),
    Case("colsum_axes.v1_10.typed.txt", {"out": V, "A": M},
         "`code_typed(...; optimize=false)` printed in a `1-element Vector{Any}` (` CodeInfo(`); `axes(A, 2)`, "
         "`axes(A, 1)`; `(t = 0.0)::Core.Const(0.0)`",
         "function colsum!(out, A)\n    for j in axes(A, 2)\n        t = 0.0\n        for i in axes(A, 1)\n"
         "            t += A[i, j]\n        end\n        out[j] = t\n    end\n    return out\nend",
         shapes={"out": (8,)}),
    Case("scale_sizetuple.v1_6.lowered.txt", {"A": M, "w": V},
         "`m, n = size(A)`: size(A) destructured by indexed_iterate; loops over 1:n and 1:m",
         "function scale_rows!(A, w)\n    m, n = size(A)\n    for j in 1:n, i in 1:m\n        A[i, j] = A[i, j] * w[i]\n"
         "    end\nend"),
    Case("pluto_saxpy.v1_10.lowered.txt", {"a": "Float64", "x": V, "y": V},
         "a Pluto notebook's functions: `Main.var\"workspace#4\".length(x)` and `Main.var\"workspace#4\".nothing`",
         "function saxpy!(a, x, y)\n    for i in 1:length(x)\n        y[i] = a * x[i] + y[i]\n    end\nend"),
    Case("repeat_gensym.v1_6.lowered.txt", {"x": V, "reps": "Int64"},
         "generated slot names `#temp#` (the iterate slot) and `#s3` (the variable of `for _ in 1:reps`)",
         "function smooth!(x, reps)\n    for _ in 1:reps\n        for i in 2:length(x)\n"
         "            x[i] = (x[i] + x[i-1]) * 0.5\n        end\n    end\n    return x\nend"),
    Case("squares_vars.v1_5.warntype.txt", {"y": V, "x": V},
         "@code_warntype of 1.5 in a notebook export: the whole text indented by 4 spaces, `Variables`, "
         "`Core.Compiler.Const(Val{2}, false)`, the doubled annotation `@_4::Tuple{Int64,Int64}::Tuple{Int64,Int64}`",
         "function squares!(y, x)\n    for i in eachindex(x)\n        v = x[i]\n        y[i] = v^2\n    end\nend"),
    Case("clamp_cthulhu.v1_9.compact.txt", {"x": V},
         "Cthulhu's typed code with debuginfo=:compact: a line-number column left of the gutter, right-aligned "
         "inlining annotations (`│╻ getindex`), its header line and its menu after the code",
         "function clamp01!(x)\n    for i in eachindex(x)\n        x[i] = min(max(x[i], 0.0), 1.0)\n    end\n"
         "    return x\nend"),
    Case("hypot_inline.v1_12.typed_source.txt", {"r": V, "x": V, "y": V},
         "`@code_typed optimize=false debuginfo=:source` of 1.12: `┌ @ essentials.jl:916 within `macro expansion``, "
         "`│  │ %12 =   dynamic ...`, `(val = %19)::Float64`, `builtin (%4 === nothing)::Bool`",
         "function hyp!(r, x, y)\n    for i in 1:length(r)\n        @inbounds r[i] = sqrt(x[i]*x[i] + y[i]*y[i])\n"
         "    end\n    return r\nend"),
    Case("maybe_float.v1_6.lowered.txt", {"v": V, "c": "Int64"},
         "`c isa Main.Float64` in a condition, decided by the argument's type",
         "function scale_by!(v, c)\n    if c isa Float64\n        k = 2.0 * c\n    else\n        k = float(c)\n    end\n"
         "    for i in 1:length(v)\n        v[i] = k * v[i]\n    end\n    return v\nend", ints={"c": 3}),
    Case("halve_while.v1_12.lowered.txt", {"x": V},
         "a `while` loop in 1.12's printing (`(%5)(%2, %4)` with `%5 = Main.:<=`), `%18 = Main.nothing`",
         "function halve_odd!(x)\n    i = 1\n    while i <= length(x)\n        x[i] = x[i] / 2\n        i += 2\n"
         "    end\nend"),
    Case("first_two_inbounds.v1_10.lowered_source.txt", {"v": V},
         "a block that starts inside a macro expansion: `1 ─│` and `└──│` gutters with the inlining indent, "
         "`   ┌ @` and `   └` lines outside any block; `@inbounds` as the whole body (`return val`)",
         "first_two(v) = @inbounds v[1] + v[2]"),
    Case("axpy_broadcast.v1_6.lowered.txt", {"y": V, "a": "Float64", "x": V},
         "dotted operators fused by lowering: `Base.broadcasted` of `Main.:*` and `Main.:+`, `Base.materialize!`",
         "axpy!(y, a, x) = y .= a .* x .+ y"),
    Case("bcast_matrix.v1_10.lowered.txt", {"M": M, "v": V, "c": "Float64"},
         "a vector broadcast down a matrix's columns (`v` against `M`'s first dimension), a number, "
         "the result of `materialize!` returned",
         "scale_rows!(M, v, c) = M .= c .* M .+ v"),
    Case("bcast_pow_fill.v1_10.lowered.txt", {"y": V, "x": V},
         "`y .= 0.0` (`Base.broadcasted(Base.identity, 0.0)`), `x .^ 2` (`Base.literal_pow` with a `Val`), "
         "a `materialize!` whose value nobody uses",
         "function sq!(y, x)\n    y .= 0.0\n    y .= x .^ 2 .+ y\n    return y\nend"),
    Case("bcast_relax_loop.v1_6.lowered.txt", {"y": V, "x": V, "n": "Int64"},
         "a broadcast inside a `for` loop (the loop around the element loops it implies)",
         "function relax!(y, x, n)\n    for t in 1:n\n        y .= 0.5 .* (y .+ x)\n    end\n    return y\nend"),
    Case("bcast_when.v1_10.lowered.txt", {"y": V, "a": "Float64", "x": V, "n": "Int64"},
         "a broadcast under `if n > 0` (its size check applies only where it runs); the REPL's `julia>` line "
         "before the code",
         "function axpy_when!(y, a, x, n)\n    if n > 0\n        y .= a .* x .+ y\n    end\n    return y\nend"),
    Case("clip_when.v1_10.lowered.txt", {"y": V, "x": V, "clip": "Bool"},
         "a branch on a Bool argument inside a loop over eachindex (`goto #4 if not clip`), an if/else whose "
         "arms both store",
         "function clip_when!(y, x, clip::Bool)\n    for i in eachindex(x)\n        if clip\n"
         "            y[i] = min(x[i], 1.0)\n        else\n            y[i] = x[i]\n        end\n    end\n"
         "    return y\nend", ints={"clip": True}),
    Case("bcast_exp32.v1_10.lowered.txt", {"y": "Vector{Float32}", "x": V},
         "a type broadcast as a function (`Main.Float32`) over a math function (`Main.exp`)",
         "exps32!(y, x) = y .= Float32.(exp.(x))"),
    Case("matrix_max_elements.v1_6.lowered.txt", {"A": M},
         "`for a in A` over a matrix's elements (column-major: a loop per dimension, the first innermost); "
         "`m = -Main.Inf`, Base's constant read through Main",
         "function maxelt(A)\n    m = -Inf\n    for a in A\n        m = max(m, a)\n    end\n    return m\nend"),
    Case("sumsq_f32_elements.v1_10.lowered.txt", {"A": "Matrix{Float32}"},
         "a Float32 sum over a matrix's elements: `s = 0.0f0`, the local read into `%10 = s` before the call "
         "`a * a`, as 1.10 lowers `s += a * a`",
         "function sumsq(A)\n    s = 0.0f0\n    for a in A\n        s += a * a\n    end\n    return s\nend"),
    Case("count_above_3d.v1_10.lowered.txt", {"X": "Array{Float64, 3}", "t": "Float64"},
         "`for x in X` over a 3-d array's elements with an `if` in the body (`4 ┄` joins the skipped increment)",
         "function count_above(X, t)\n    n = 0\n    for x in X\n        if x > t\n            n += 1\n"
         "        end\n    end\n    return n\nend", shapes={"X": (4, 3, 5)}),
    Case("mean_eachindex.v1_10.lowered.txt", {"A": M},
         "`for i in eachindex(A)` over a matrix (IndexLinear: a loop per dimension, i read at its Cartesian index), "
         "`s / length(A)` with the length as a number after the loop",
         "function mean_all(A)\n    s = 0.0\n    for i in eachindex(A)\n        s += A[i]\n    end\n"
         "    return s / length(A)\nend"),
    Case("muladd_linear.v1_10.lowered.txt", {"C": M, "A": M, "B": M},
         "`for i in 1:length(A)` over a matrix's linear indices writing `C[i]` and reading `B[i]` of two other "
         "matrices (of A's sizes, checked at the call), `%13 = %12 + 1` of a Float64 and an Int64",
         "function mul1!(C, A, B)\n    for i in 1:length(A)\n        C[i] = A[i] * B[i] + 1\n    end\n"
         "    return C\nend"),
    Case("ramp_lastindex_3d.v1_10.lowered.txt", {"Y": "Array{Float64, 3}", "X": "Array{Float64, 3}"},
         "`n = lastindex(X)` then `for k in 1:n` over a 3-d array's linear indices, k and n used as numbers "
         "(`X[k] * k / n`, column-major positions)",
         "function ramp!(Y, X)\n    n = lastindex(X)\n    for k in 1:n\n        Y[k] = X[k] * k / n\n    end\n"
         "    return Y\nend", shapes={"Y": (4, 3, 5), "X": (4, 3, 5)}),
    Case("dot_eachindex_xy.v1_10.lowered.txt", {"x": V, "y": V},
         "`for i in eachindex(x, y)` of two arrays (`Main.eachindex(x, y)`: 1:length(x), a DimensionMismatch "
         "unless y has x's length, checked at the call), `s += x[i] * y[i]`",
         "function dot_each(x, y)\n    s = 0.0\n    for i in eachindex(x, y)\n        s += x[i] * y[i]\n"
         "    end\n    return s\nend"),
    # refused, by name
    Case("refuse_broadcast_new.v1_10.lowered.txt", {"x": V, "y": V}, "`x .+ y` into a new array (`materialize`)",
         "add(x, y) = x .+ y", refused=("JuliaNotSupportedError", r"statement %2 .*broadcasting into a new array")),
    Case("refuse_optimized.v1_10.typed.txt", {"x": V}, "optimized @code_typed with φ nodes",
         "function total(x) ... end", refused=("JuliaParseError", "optimized IR")),
    Case("refuse_julia06.lowered.txt", {"x": V}, "Julia 0.6 lowered code (`unless ... goto 13`, `4:` labels)",
         "function total(x) ... end", refused=("JuliaParseError", "Julia 0.x")),
    Case("refuse_userfunc.v1_6.lowered.txt", {"x": V}, "a call to the user's own function `Main.softclip`",
         "x[i] = softclip(x[i])", refused=("JuliaNotSupportedError", r"statement %10 .*Main\.softclip")),
    Case("refuse_nested.v1_6.lowered.txt", {"rows": "Vector{Vector{Float64}}"},
         "an array of arrays", "s += rows[i][1]", refused=("NotSupportedError", "Vector{Vector{Float64}}")),
    Case("refuse_trycatch.v1_6.lowered.txt", {"x": V}, "try/catch (`$(Expr(:enter, #3))`)",
         "try ... catch ... end", refused=("JuliaNotSupportedError", r"statement %1 .*try/catch")),
    Case("refuse_global_write.v1_10.lowered.txt", {"x": V}, "`global calls; calls += 1`",
         "global calls += 1", refused=("JuliaNotSupportedError", r"statement %2 .*global Main\.calls")),
]


def arguments(case, seed=0, n=7):
    """Julia-shaped random arguments for a case: n-vectors, n x (n+1) matrices (or `shapes`) of the element
    type the Julia type names, Int64 and Bool values from `ints`."""
    rng = np.random.default_rng(seed)
    out = []
    for name, t in case.argtypes.items():
        dtype = np.float32 if "Float32" in t else np.float64
        if name in case.shapes:
            out.append(np.asfortranarray(rng.random(case.shapes[name]).astype(dtype)))
        elif t.startswith("Vector{Int64"):
            out.append(rng.integers(-9, 10, n))
        elif t.startswith("Vector"):
            out.append((rng.random(n) * 2 - 0.5).astype(dtype))
        elif t.startswith("Matrix"):
            out.append(np.asfortranarray(rng.random((n, n + 1)).astype(dtype)))
        elif t == "Int64":
            out.append(case.ints.get(name, 3))
        elif t == "Bool":
            out.append(bool(case.ints.get(name, True)))
        else:
            out.append(float(rng.random()) + 0.25)
    return out


def same(a, b):
    """Equal numbers, NaN equal to NaN; arrays element by element."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.shape == b.shape and \
            np.allclose(a, b, rtol=1e-12, atol=1e-14, equal_nan=True)
    if a is None or b is None:
        return a is None and b is None
    return a == b or (a != a and b != b)


def run_case(case, seed=0):
    """(stage reached, detail): 'refused', 'translated', 'compiled' or 'matched'; raises what it does not expect."""
    from mascarpone.frontends.julia import from_julia, interpret
    from mascarpone.middleend.errors import MascarponeError
    text = case.text
    try:
        f = from_julia(text, case.argtypes, static_parameters=case.static_parameters)
    except MascarponeError as err:
        return "refused", f"{type(err).__name__}: {err}"
    kernel = f.compile()
    args = arguments(case, seed)
    ours = copy.deepcopy(args)
    ref = interpret(text, case.argtypes, *args, static_parameters=case.static_parameters)
    got = kernel(*ours)
    if not same(ref, got) or not all(same(a, b) for a, b in zip(args, ours) if isinstance(a, np.ndarray)):
        return "compiled", f"differs from the interpreter: {ref!r} / {got!r}"
    return "matched", ""
