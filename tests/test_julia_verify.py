"""The Julia front-end checks every pattern it recognises exactly and refuses the rest by name; the
reference interpreter is as robust as the translator and raises what Julia would throw."""
import numpy as np
import pytest

import mascarpone as ms
from mascarpone.frontends.julia import (JuliaBoundsError, JuliaNotSupportedError, JuliaRuntimeError, from_julia,
                                        interpret)
from julia_corpus import HERE as CORPUS
from julia_fixtures import fixture

TRMV, TRMV_TYPES = fixture("trmv")


def trmv_args():
    return [np.asfortranarray(np.tril(np.ones((4, 4)))), np.arange(1.0, 5.0), np.zeros(4)]


def edit(text, old, new):
    assert old in text, old
    return text.replace(old, new, 1)


# loop recognition: each part of the iterate protocol ------------------------------------------------

@pytest.mark.parametrize("old, new, match", [
    ("%26 = @_6 === nothing", "%26 = @_6 !== nothing", r"statement %26 .*not `@_6 === nothing`"),
    ("%4  = @_5 === nothing", "%4  = @_5 == nothing", r"statement %4 .*not `@_5 === nothing`"),
    ("@_6 = Base.iterate(%11, %18)", "@_6 = Base.iterate(%11, %21)", r"statement %25 .*state operand .* is %21"),
    ("@_6 = Base.iterate(%11, %18)", "@_6 = Base.iterate(%2, %18)", r"statement %25 .*iterates %2"),
    ("goto #6 if not %27", "goto #6 if not %14", r"statement %28 .*exit test"),
    ("goto #8 if not %32", "goto #8 if not %27", r"statement %33 .*"),
    ("%27 = Base.not_int(%26)", "%27 = Base.abs(%26)", r"statement %28 .*not_int"),
    ("j = Core.getfield(%16, 1)", "j = Core.getfield(%16, 2)", r"iterate"),
    ("@_6 = Base.iterate(%11)\n", "@_6 = Base.iterate(%11, 1)\n", r"statement %12 .*not `Base.iterate\(X\)`"),
])
def test_iterate_protocol_is_checked_exactly(old, new, match):
    bad = edit(TRMV, old, new)
    with pytest.raises(JuliaNotSupportedError, match=match):
        from_julia(bad, TRMV_TYPES)


def test_exit_test_with_not_identical_is_not_taken_for_the_usual_one():
    """`!== nothing` would end the loop at once in Julia: the interpreter does so, the translator refuses."""
    bad = edit(TRMV, "%31 = @_5 === nothing", "%31 = @_5 !== nothing")
    args = trmv_args()
    interpret(bad, TRMV_TYPES, *args)
    np.testing.assert_array_equal(args[2], [1.0, 0, 0, 0])      # only the first iteration of i ran
    with pytest.raises(JuliaNotSupportedError, match=r"statement %31 "):
        from_julia(bad, TRMV_TYPES)


# size, length and arity ----------------------------------------------------------------------------

@pytest.mark.parametrize("d, translator, julia", [
    ("0", r"size\(L, 0\).*BoundsError", JuliaBoundsError),
    ("-1", r"size\(L, -1\).*BoundsError", JuliaBoundsError),
    ("1.5", r"floating-point dimension", JuliaRuntimeError),
    ("Main.length(x)", r"non-constant dimension", None),
])
def test_size_dimension_is_checked(d, translator, julia):
    bad = edit(TRMV, "n = Main.size(L, 1)", f"n = Main.size(L, {d})")
    with pytest.raises(JuliaNotSupportedError, match=r"statement %1 .*" + translator):
        from_julia(bad, TRMV_TYPES)
    if julia is not None:
        with pytest.raises(julia, match=r"statement %1 "):
            interpret(bad, TRMV_TYPES, *trmv_args())


def test_size_beyond_the_rank_is_one():
    text = edit(TRMV, "n = Main.size(L, 1)", "n = Main.size(x, 3)")
    args = trmv_args()
    interpret(text, TRMV_TYPES, *args)
    ours = trmv_args()
    from_julia(text, TRMV_TYPES).compile()(*ours)
    np.testing.assert_array_equal(ours[2], args[2])
    assert args[2][0] == 1.0 and args[2][1] == 0.0


@pytest.mark.parametrize("old, new, match", [
    ("n = Main.size(L, 1)", "n = Main.length(L, 1)", r"`length` with 2 argument\(s\).*MethodError"),
    ("n = Main.size(L, 1)", "n = Main.size(L, 1, 2)", r"`size` with 3 argument\(s\)"),
    ("%22 = %20 * %21", "%22 = Main.abs(%20, %21)", r"`abs` with 2 argument\(s\)"),
    ("%22 = %20 * %21", "%22 = Main.sqrt()", r"`sqrt` with 0 argument\(s\)"),
])
def test_wrong_number_of_arguments_is_refused_by_name(old, new, match):
    bad = edit(TRMV, old, new)
    with pytest.raises(JuliaNotSupportedError, match=match):
        from_julia(bad, TRMV_TYPES)
    with pytest.raises(JuliaRuntimeError, match="MethodError"):
        interpret(bad, TRMV_TYPES, *trmv_args())


def test_argument_missing_from_argtypes_is_named():
    types = {k: v for k, v in TRMV_TYPES.items() if k != "x"}
    with pytest.raises(ms.ArgumentError, match=r"`x` is read by statement %21 .*argtypes has no entry"):
        from_julia(TRMV, types)
    with pytest.raises(ms.ArgumentError, match=r"`x` is read"):
        interpret(TRMV, types, *trmv_args()[:1], np.zeros(4))
    text, argtypes = fixture("gemm", "v1_10.warntype")      # a header that lists the arguments
    with pytest.raises(ms.ArgumentError, match=r"no entry for the argument\(s\) \['B'\]"):
        from_julia(text, {k: v for k, v in argtypes.items() if k != "B"})


# the interpreter ------------------------------------------------------------------------------------

def test_interpreter_works_on_every_call_and_over_elements():
    text = """CodeInfo(
1 ─       s = 0.0
│   %2  = v
│         @_3 = Base.iterate(%2)
│   %4  = @_3 === nothing
│   %5  = Base.not_int(%4)
└──       goto #4 if not %5
2 ┄ %7  = @_3
│         e = Core.getfield(%7, 1)
│   %9  = Core.getfield(%7, 2)
│         s = s + e
│         @_3 = Base.iterate(%2, %9)
│   %12 = @_3 === nothing
│   %13 = Base.not_int(%12)
└──       goto #4 if not %13
3 ─       goto #2
4 ┄       return s
)"""
    v = np.array([1.0, 2.5, 4.0])
    for _ in range(3):
        assert ms.julia.interpret(text, {"v": "Vector{Float64}"}, v) == 7.5
        assert interpret(text, {"v": "Vector{Float64}"}, v) == 7.5
    assert from_julia(text, {"v": "Vector{Float64}"}).compile()(v) == 7.5


def test_interpreter_raises_what_julia_throws():
    text = """CodeInfo(
1 ─ %1 = Base.getindex(x, 1)
│   %2 = Main.Int64(%1)
│   %3 = %2 ÷ k
└──      return %3
)"""
    types = {"x": "Vector{Float64}", "k": "Int64"}
    assert interpret(text, types, np.array([7.0]), 2) == 3
    with pytest.raises(JuliaRuntimeError, match="InexactError"):
        interpret(text, types, np.array([7.5]), 2)
    with pytest.raises(JuliaRuntimeError, match="DivideError"):
        interpret(text, types, np.array([7.0]), 0)
    with pytest.raises(JuliaBoundsError, match=r"statement %1 "):
        interpret(text, types, np.zeros(0), 2)


# types of locals ----------------------------------------------------------------------------------

WIDEN = """CodeInfo(
1 ─       s = 0
│   %2  = Main.eachindex(x)
│         @_3 = Base.iterate(%2)
│   %4  = @_3 === nothing
│   %5  = Base.not_int(%4)
└──       goto #4 if not %5
2 ┄ %7  = @_3
│         i = Core.getfield(%7, 1)
│   %9  = Core.getfield(%7, 2)
│   %10 = Base.getindex(x, i)
│         s = s + %10
│         @_3 = Base.iterate(%2, %9)
│   %13 = @_3 === nothing
│   %14 = Base.not_int(%13)
└──       goto #4 if not %14
3 ─       goto #2
4 ┄       return s
)"""


def test_local_widening_to_float64_matches_julia():
    x = np.random.default_rng(1).random(9)
    kernel = from_julia(WIDEN, {"x": "Vector{Float64}"}).compile()
    assert kernel(x) == interpret(WIDEN, {"x": "Vector{Float64}"}, x)
    assert interpret(WIDEN, {"x": "Vector{Float64}"}, np.zeros(0)) == 0    # Julia returns the Int 0
    assert kernel(np.zeros(0)) == 0.0


def test_a_true_union_is_refused_with_its_reason():
    """`s = s * 3` is integer arithmetic (wrapping) while s holds an Int64, then s holds a Float64: the
    results depend on the type, so the front-end refuses, naming both statements (not InexactError)."""
    text = WIDEN.replace("│         s = s + %10\n", "│         s = s * 3\n").replace(
        "4 ┄       return s", "4 ┄       s = 0.5 * s\n└──       return s")
    with pytest.raises(JuliaNotSupportedError, match=r"statement %11 .*s holds Int64 values computed with Int64 "
                                                     r"arithmetic here and Float64 values at statement %17") as err:
        from_julia(text, {"x": "Vector{Float64}"})
    assert "InexactError" not in str(err.value)


def test_value_kept_after_its_storage_is_written():
    """`@inbounds y[i] = (s += x[i])`: the stored value is the new s, read once (not re-read after s changes)."""
    text = (CORPUS / "cumsum_inbounds.v1_6.lowered.txt").read_text()
    x = np.array([1.0, 2.0, 3.0, 4.0])
    y = np.zeros(4)
    from_julia(text, {"y": "Vector{Float64}", "x": "Vector{Float64}"}).compile()(y, x)
    np.testing.assert_array_equal(y, np.cumsum(x))


GATHER = """CodeInfo(
1 ─ %1  = Main.eachindex(y)
│         @_4 = Base.iterate(%1)
│   %3  = @_4 === nothing
│   %4  = Base.not_int(%3)
└──       goto #4 if not %4
2 ┄ %6  = @_4
│         i = Core.getfield(%6, 1)
│   %8  = Core.getfield(%6, 2)
│   %9  = Base.getindex(idx, i)
│   %10 = Base.getindex(x, %9)
│   %11 = Base.getindex(idx, i)
│         Base.setindex!(y, %10, %11)
│         @_4 = Base.iterate(%1, %8)
│   %14 = @_4 === nothing
│   %15 = Base.not_int(%14)
└──       goto #4 if not %15
3 ─       goto #2
4 ┄       return y
)"""


def test_data_dependent_indices_are_checked_while_running():
    """`y[idx[i]] = x[idx[i]]`: indices no sizes bound are checked by the kernel; outside, Julia's BoundsError."""
    types = {"y": "Vector{Float64}", "x": "Vector{Float64}", "idx": "Vector{Int64}"}
    kernel = from_julia(GATHER, types).compile()
    x = np.arange(10.0, 15.0)
    for idx in (np.array([5, 1, 3, 2, 4]), np.array([1, 1, 1, 1, 1])):
        y, ref = np.zeros(5), np.zeros(5)
        interpret(GATHER, types, ref, x, idx)
        kernel(y, x, idx)
        np.testing.assert_array_equal(y, ref)
    for bad in (np.array([1, 2, 6, 3, 4]), np.array([1, 0, 2, 3, 4]), np.array([1, 2, 3, 4, -(2**62)])):
        with pytest.raises(JuliaBoundsError):
            interpret(GATHER, types, np.zeros(5), x, bad)
        with pytest.raises(ms.ArgumentError, match=r"BoundsError: statement %10 .*reads x"):
            kernel(np.zeros(5), x, bad)
