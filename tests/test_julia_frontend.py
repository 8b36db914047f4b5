"""The Julia front-end: printed lowered IR of 15 kernels in four printing styles, compiled and compared
with the reference interpreter; schedules keep the results, illegal ones are refused."""
import copy
import shutil
import sys

import numpy as np
import pytest

import mascarpone as ms
from mascarpone.frontends.julia import JuliaNotSupportedError, JuliaParseError, from_julia, interpret, parse
from mascarpone.backends.common import pyentry
from mascarpone.frontends.julia.ir import JuliaRuntimeError
from julia_fixtures import KERNELS, STYLES, fixture, random_args


def run_both(text, argtypes, function=None, seed=0, n=9, **compile_options):
    """Arguments after the interpreter ran and after the compiled kernel ran, and both return values."""
    f = function or from_julia(text, argtypes)
    kernel = f.compile(**compile_options)
    ref_args = random_args(argtypes, seed, n)
    our_args = copy.deepcopy(ref_args)
    for a in our_args:
        if isinstance(a, np.ndarray):
            assert a.flags.f_contiguous
    ref = interpret(text, argtypes, *ref_args)
    ours = kernel(*our_args)
    return ref_args, our_args, ref, ours


def assert_same(ref_args, our_args, ref, ours):
    for r, o in zip(ref_args, our_args):
        if isinstance(r, np.ndarray):
            np.testing.assert_allclose(o, r, rtol=1e-12, atol=1e-14)
    assert (ref is None and ours is None) or ref == ours


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("kernel", KERNELS)
def test_compiled_equals_interpreter(kernel, style):
    text, argtypes = fixture(kernel, style)
    assert_same(*run_both(text, argtypes))


def test_styles_parse_to_the_same_statements():
    """1.11+ outlines reads into statements of their own; the kernels' computations are the same."""
    for kernel in KERNELS:
        loops = []
        for style in STYLES:
            text, argtypes = fixture(kernel, style)
            f = from_julia(text, argtypes)
            loops.append([c.loops for c in f.computations])
        assert all(l == loops[0] for l in loops), kernel


def test_loops_keep_julia_names_and_computations_name_statements():
    text, argtypes = fixture("gemm")
    f = from_julia(text, argtypes)
    assert f["s49"].loops == ["i", "k", "j"]
    assert "C[...]" in f.statements["s49"]
    assert f.name == "julia_kernel"
    text, argtypes = fixture("gemm", "v1_10.warntype")
    assert from_julia(text, argtypes).name == "kernel_gemm"


# schedules ------------------------------------------------------------------------------------

def sched_gemm(f):
    f["s49"].after(f["s22"], ms.root)      # scale all of C first, so s49's loops are its own
    f["s49"].interchange("k", "j")
    i0, j0, i1, j1 = f["s49"].tile("i", "j", 4, 4)
    f["s49"].parallelize(i0)


def sched_bicg(f):
    f["s45"].after(f["s39"], "i")          # fission of the j loop into two
    f["s39"].interchange("i", "j")         # then s[j] accumulates with i innermost


def sched_mm2(f):
    f["s69"].after(f["s35"], "i")          # fuse the two nests: row i of D right after row i of tmp
    f["s21"].parallelize("i")


def sched_gesummv(f):
    for name in ("s10", "s11", "s23", "s27", "s36"):
        f[name].parallelize("i")


def sched_jacobi1d(f):
    f["s26"].parallelize("i")
    f["s48"].parallelize("i")


def sched_jacobi2d(f):
    f["s39"].interchange("j", "i")
    f["s79"].interchange("j", "i")
    f["s39"].parallelize("i")
    f["s79"].parallelize("i")


def sched_seidel(f):
    f["s51"].skew("i", "j", 1)
    f["s51"].skew("t", "i", 2)


def sched_mttkrp(f):
    f["s44"].after(f["s21"], "i")
    f["s44"].reorder("i", "k", "l", "j")
    f["s44"].parallelize("i")
    f["s21"].parallelize("i")


def sched_covariance(f):
    f["s57"].interchange("i", "j")
    f["s98"].parallelize("i")


def sched_doitgen(f):
    f["s42"].after(f["s28"], "q")          # zero acc, then accumulate with p innermost
    f["s62"].after(f["s42"], "q")
    f["s42"].interchange("p", "s")


def sched_trmv(f):
    f["s24"].parallelize("i")
    f["s10"].parallelize("i")


def sched_atax(f):
    f["s12"].parallelize("j")
    f["s60"].parallelize("j")      # y[j] += A[i, j] * t: the j are independent, i carries y


SCHEDULES = {"gemm": sched_gemm, "bicg": sched_bicg, "mm2": sched_mm2, "gesummv": sched_gesummv,
             "jacobi1d": sched_jacobi1d, "jacobi2d": sched_jacobi2d, "seidel2d": sched_seidel,
             "mttkrp": sched_mttkrp, "covariance": sched_covariance, "doitgen": sched_doitgen,
             "trmv": sched_trmv, "atax_inbounds": sched_atax}


@pytest.mark.parametrize("kernel", sorted(SCHEDULES))
def test_schedules_keep_results(kernel):
    text, argtypes = fixture(kernel)
    f = from_julia(text, argtypes)
    SCHEDULES[kernel](f)
    assert_same(*run_both(text, argtypes, function=f, num_threads=2))


@pytest.mark.parametrize("kernel, schedule, match", [
    ("seidel2d", lambda f: f["s51"].parallelize("j"), "parallel"),
    ("jacobi1d", lambda f: f["s26"].interchange("t", "i"), "backwards"),
    ("gemm", lambda f: f["s49"].parallelize("k"), "parallel"),
    ("gesummv", lambda f: f["s23"].after(f["s36"], "i"), "backwards"),
    ("breakloop", lambda f: f["s21"].parallelize("i"), "parallel"),
    ("mm2", lambda f: f["s35"].after(f["s69"], "i"), "backwards"),
])
def test_illegal_schedules_are_refused(kernel, schedule, match):
    text, argtypes = fixture(kernel)
    f = from_julia(text, argtypes)
    schedule(f)
    with pytest.raises(ms.IllegalScheduleError, match=match):
        f.compile()


def test_a_reduction_over_two_loops_keeps_its_split_tile_in_registers():
    """mttkrp's A[i, j] adds over k, then l. With i split into 2 vectors of 8 lanes (an unrolled loop
    around a vector loop, one dimension of A) and 6 columns j unrolled, the 6 x 2 x 8 accumulators are
    kept in a local tile around the k loop, so neither the k nor the l loop loads or stores A; the
    values stay Julia's, bit for bit, with partial tiles in i and j."""
    from mascarpone.backends.common.promote import promote_accumulators
    from mascarpone.middleend import loopir as L
    text, argtypes = fixture("mttkrp")
    f = from_julia(text, argtypes)
    init, acc = f["s21"], f["s44"]
    acc.after(init, ms.root)
    acc.set_schedule("{ s44[i, j, k, l] -> [j0, i0, k1, l1, j1, i1, i2] : j0 = floor((j - 1)/6) and "
                     "i0 = floor((i - 1)/16) and k1 = k - 1 and l1 = l - 1 and j1 = (j - 1) mod 6 and "
                     "i1 = floor(((i - 1) mod 16)/8) and i2 = (i - 1) mod 8 }",
                     ["j0", "i0", "k1", "l1", "j1", "i1", "i2"])
    acc.unroll("j1", 6)
    acc.unroll("i1", 2)
    acc.vectorize("i2", 8)
    acc.parallelize("j0")
    kernel = f.compile()

    def tiles(stmt, loops=()):
        if isinstance(stmt, L.Allocate):
            found = [(stmt.buffer, loops)] if ".acc" in stmt.buffer.name else []
            return found + tiles(stmt.body, loops)
        if isinstance(stmt, L.For):
            return tiles(stmt.body, loops + (stmt.var,))
        if isinstance(stmt, L.If):
            return tiles(stmt.then, loops) + (tiles(stmt.else_, loops) if stmt.else_ else [])
        if isinstance(stmt, L.Block):
            return [t for s in stmt.body for t in tiles(s, loops)]
        return []
    full = [(b, loops) for b, loops in tiles(promote_accumulators(kernel.kernel.lowered.body))
            if [str(d) for d in b.shape] == ["6", "2", "8"]]
    assert full and all(loops == ("j0", "i0") for _, loops in full)
    rng = np.random.default_rng(5)
    for ni, nj, nk, nl in [(32, 12, 3, 4), (21, 7, 2, 5), (16, 6, 1, 1)]:
        args = [np.asfortranarray(rng.random(shape)) for shape in ((ni, nj), (ni, nk, nl), (nk, nj), (nl, nj))]
        want = copy.deepcopy(args)
        kernel(*args)
        interpret(text, argtypes, *want)
        np.testing.assert_array_equal(args[0], want[0])


def test_privatized_scalar_lets_loops_run_in_parallel():
    """gesummv's `t` and `u` are expanded over i, so i is parallel; the j loops are reductions."""
    text, argtypes = fixture("gesummv")
    f = from_julia(text, argtypes)
    f["s23"].parallelize("i")
    f.compile()
    f["s23"].parallelize("j")
    with pytest.raises(ms.IllegalScheduleError):
        f.compile()


# data, arguments, bounds -------------------------------------------------------------------------

def test_column_major_numbers_and_in_place_update():
    text, argtypes = fixture("trmv")
    kernel = from_julia(text, argtypes).compile()
    L = np.asfortranarray(np.arange(1.0, 17.0).reshape(4, 4))
    x = np.array([1.0, 2.0, 3.0, 4.0])
    y = np.zeros(4)
    assert kernel(L, x, y) is None
    np.testing.assert_array_equal(y, np.tril(L) @ x)
    y2 = np.zeros(4)
    kernel(L=np.ascontiguousarray(L), x=x, y=y2[::1])     # C-ordered arrays work too (copied)
    np.testing.assert_array_equal(y2, y)


def test_return_value_and_break():
    text, argtypes = fixture("breakloop", "v1_12.lowered")
    kernel = from_julia(text, argtypes).compile()
    x = np.array([0.1, 0.2, 0.9, 0.3])
    y = np.zeros(4)
    assert kernel(x, y, 0.5) == 2
    np.testing.assert_allclose(y, [np.sqrt(0.01 + 1), np.sqrt(0.04 + 1), 0, 0])
    assert interpret(text, argtypes, x, np.zeros(4), 0.5) == 2


def test_repeated_calls_launch_directly_with_julias_results():
    """After a call whose arrays bound as given, calls of the same signature launch at once (the checks
    passed once); new arrays, new sizes, numbers and return values still give Julia's results, and
    arrays that share memory still take the general path, which refuses outputs that overlap."""
    text, argtypes = fixture("jacobi2d")
    kernel = from_julia(text, argtypes).compile()
    rng = np.random.default_rng(3)
    for tsteps in (2, 2, 3, 2):
        args = [tsteps] + [np.asfortranarray(rng.random((11, 11))) for _ in range(2)]
        want = copy.deepcopy(args)
        kernel(*args)
        interpret(text, argtypes, *want)
        for got, ref in zip(args[1:], want[1:]):
            np.testing.assert_allclose(got, ref, rtol=1e-12)
    assert len(kernel._direct) == 2      # one per value of tsteps
    shared = np.asfortranarray(rng.random((11, 11)))
    with pytest.raises(ms.ArgumentError, match="share memory"):
        kernel(2, shared, shared)
    text, argtypes = fixture("breakloop", "v1_12.lowered")
    kernel = from_julia(text, argtypes).compile()
    x = np.array([0.1, 0.2, 0.9, 0.3])
    for limit in (0.5, 0.15, 0.95):
        y, y_ref = np.zeros(4), np.zeros(4)
        assert kernel(x, y, limit) == interpret(text, argtypes, x, y_ref, limit)
        np.testing.assert_array_equal(y, y_ref)
    assert kernel._direct


native_entries = pytest.mark.skipif(pyentry.LAYOUT is None, reason="this Python's objects are not read natively")


@native_entries
@pytest.mark.parametrize("target", ["cpu", "c"])
def test_native_entry_gives_the_same_bits_and_leaves_other_calls_to_the_general_path(target):
    """Calls of a signature that has run directly a few times go through the kernel's native entry
    (numbers included): the same bits as the general path, arrays updated in place. A call of another
    signature (sizes, a number's type, array order, arrays that share memory) or with keywords goes
    the general way and gets its results or its error, and the entry stays for its own signature."""
    text, argtypes = fixture("gemm")
    kernel = from_julia(text, argtypes).compile(target)
    rng = np.random.default_rng(5)

    def args(m=6, n=7, k=5, alpha=1.5, beta=0.5, order="F"):
        return [np.array(rng.random(s), order=order) for s in ((m, n), (m, k), (k, n))] + [alpha, beta]

    def check(call_args, **kw):
        want = copy.deepcopy(call_args)
        interpret(text, argtypes, *want, **kw)
        assert kernel(*call_args, **kw) is None
        np.testing.assert_allclose(call_args[0], want[0], rtol=1e-13)

    for _ in range(6):
        check(args())
    native = kernel._native
    assert native is not None
    # the entry itself, on arrays the general path also gets: bit for bit
    a, b = args(alpha=0.25), None
    b = copy.deepcopy(a)
    assert native(*a) is None
    kernel._call(b, {})
    np.testing.assert_array_equal(a[0], b[0])
    for other in (args(m=4), args(alpha=2), args(order="C"), args(k=3)):
        assert native(*other) is kernel.kernel.ENTRY_MISMATCH
        check(other)
    a = args()
    check(a[:3], alpha=a[3], beta=a[4])
    assert native(*args()[:4]) is kernel.kernel.ENTRY_MISMATCH
    with pytest.raises(ms.ArgumentError, match="missing"):
        kernel(*args()[:4])
    assert kernel._native is native
    check(args())
    for _ in range(5):          # another signature in a row gets its own entry; the first one's comes back
        check(args(m=3))
    assert kernel._native is not native
    check(args())
    assert kernel._native is native

    text, argtypes = fixture("jacobi2d")
    kernel = from_julia(text, argtypes).compile(target)
    for _ in range(5):
        check_arrays = [2] + [np.asfortranarray(rng.random((11, 11))) for _ in range(2)]
        want = copy.deepcopy(check_arrays)
        kernel(*check_arrays)
        interpret(text, argtypes, *want)
        np.testing.assert_allclose(check_arrays[2], want[2], rtol=1e-12)
    assert kernel._native is not None
    shared = np.asfortranarray(rng.random((11, 11)))
    assert kernel._native(2, shared, shared) is kernel.kernel.ENTRY_MISMATCH
    with pytest.raises(ms.ArgumentError, match="share memory"):
        kernel(2, shared, shared)


@native_entries
def test_native_entry_returns_the_array_and_bools_and_threads_as_the_general_path():
    """A function that returns its array returns that very object through the native entry (with one
    more reference, given back by the caller: the count stays the same over many calls); a Bool
    argument is part of the signature; the kernel's thread count follows `num_threads` and
    `ms.set_num_threads` as on the general path."""
    from julia_corpus import CASES
    case = next(c for c in CASES if c.file.startswith("clip_when"))
    kernel = from_julia(case.text, case.argtypes).compile()
    x = np.random.default_rng(2).random(9) * 2
    y = np.zeros(9)
    for _ in range(5):
        assert kernel(y, x, True) is y
    assert kernel._native is not None
    before = sys.getrefcount(y)
    for _ in range(100):
        assert kernel(y, x, True) is y
    assert sys.getrefcount(y) == before
    np.testing.assert_array_equal(y, np.minimum(x, 1.0))
    assert kernel._native(y, x, False) is kernel.kernel.ENTRY_MISMATCH
    assert kernel(y, x, False) is y
    np.testing.assert_array_equal(y, x)

    threads = kernel.kernel._threads
    try:
        kernel.kernel.num_threads = 3
        kernel(y, x, True)
        assert threads.value == 3
        kernel.kernel.num_threads = None
        ms.set_num_threads(2)
        kernel(y, x, True)
        assert threads.value == 2
        ms.set_num_threads(None)
        kernel(y, x, True)
        assert threads.value == ms.get_num_threads()
    finally:
        ms.set_num_threads(None)
        kernel.kernel.num_threads = None


def test_bounds_error_instead_of_out_of_bounds_access():
    text, argtypes = fixture("gemm")
    kernel = from_julia(text, argtypes).compile()
    C, A, B = (np.asfortranarray(np.ones(s)) for s in ((4, 5), (4, 3), (2, 5)))
    with pytest.raises(ms.ArgumentError, match="BoundsError"):
        kernel(C, A, B, 1.0, 1.0)


def test_a_read_whose_value_nobody_uses_is_bounds_checked_as_in_julia():
    """Julia checks the bounds of every getindex, used or not. In edge's loop, `%49 = %30 / 8` leaves the
    sum %48 and six of its reads unused: the kernel keeps none of them, but a call where one would fall
    outside img (`img[i, ny + 2, c]`) is refused with a BoundsError naming that statement, where the
    interpreter throws; with the reads inside img, the kernel runs and gives the interpreter's values."""
    text, argtypes = fixture("edge")
    unused = text.replace("%49  = %48 / 8.0f0", "%49  = %30 / 8.0f0")
    outside = unused.replace("%40  = j + 2", "%40  = ny + 2")
    assert outside.count("ny + 2") == 1 and unused != text
    for source, bad in ((unused, False), (outside, True)):
        _bounds_error_as_in_julia(source, argtypes, random_args(argtypes, seed=4),
                                  r"BoundsError: .*statement %41 .*accesses img outside" if bad else None)


def _bounds_error_as_in_julia(source, argtypes, args, error=None):
    """Where `error` (a pattern), the interpreter throws a BoundsError and the kernel refuses the call with
    an ArgumentError matching it; else both run and leave the same values in the arrays."""
    kernel = from_julia(source, argtypes).compile()
    ours = copy.deepcopy(args)
    if error is not None:
        with pytest.raises(JuliaRuntimeError, match="BoundsError"):
            interpret(source, argtypes, *args)
        with pytest.raises(ms.ArgumentError, match=error):
            kernel(*ours)
        return
    interpret(source, argtypes, *args)
    kernel(*ours)
    for a, b in zip(args, ours):
        np.testing.assert_array_equal(a, b)


def test_a_write_below_the_first_element_is_a_bounds_error_only_where_it_runs():
    """heat3d with its first sweep over `0:nz-1`: B[i, j, 0] is outside B. With tsteps = 0 the loop runs
    no iteration, and the kernel, as Julia, returns with the arrays as they were (it used to shift B's
    storage by one and refuse B's shape); with tsteps = 1 both refuse: Julia's BoundsError."""
    text, argtypes = fixture("heat3d")
    below = text.replace("%13  = 2:%12", "%13  = 0:%12")
    assert below != text
    for steps, bad in ((0, False), (1, True)):
        args = random_args(argtypes, seed=5)
        args[0] = steps
        _bounds_error_as_in_julia(below, argtypes, args, "BoundsError" if bad else None)


def test_wrong_argument_types():
    text, argtypes = fixture("trmv")
    kernel = from_julia(text, argtypes).compile()
    with pytest.raises(ms.ArgumentError, match="Float64"):
        kernel(np.ones((3, 3), np.float32), np.ones(3), np.ones(3))
    with pytest.raises(ms.ArgumentError, match="missing"):
        kernel(np.ones((3, 3)))


def test_an_integer_argument_takes_any_value_as_in_julia():
    """An Int64 argument may be zero or negative, as in Julia: `for t in 1:tsteps` then runs no
    iteration, and the arrays are left as the interpreter leaves them."""
    text, argtypes = fixture("seidel2d")
    kernel = from_julia(text, argtypes).compile()
    a = np.asfortranarray(np.random.default_rng(1).random((12, 12)))
    for tsteps in (0, -3, 2):
        got, want = a.copy(order="F"), a.copy(order="F")
        kernel(tsteps, got)
        interpret(text, argtypes, tsteps, want)
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_an_empty_array_is_refused_by_name():
    """Array extents run from 1: an empty array is refused naming its extent (not as a broken assumption
    about the other sizes, which the kernel also carries)."""
    text, argtypes = fixture("seidel2d")
    kernel = from_julia(text, argtypes).compile()
    with pytest.raises(ms.ArgumentError, match=r"compiled for sizes within their ranges .*; called with A_1 = 0$"):
        kernel(2, np.asfortranarray(np.ones((0, 5))))


# bad input -----------------------------------------------------------------------------------------

def test_truncated_text_is_a_parse_error_with_its_line():
    text, _ = fixture("gemm")
    lines = text.splitlines()
    with pytest.raises(JuliaParseError) as err:
        parse("\n".join(lines[:20]))
    assert err.value.line is not None and "truncated" in str(err.value)


def test_unknown_statement_is_a_parse_error_with_its_line():
    text, _ = fixture("trmv")
    lines = text.splitlines()
    lines[5] = lines[5].split("=")[0] + "= @@@ ??"
    with pytest.raises(JuliaParseError, match=r"^line 6:"):
        parse("\n".join(lines))


def test_goto_to_a_missing_block():
    text, _ = fixture("trmv")
    bad = text.replace("goto #2\n", "goto #42\n")
    with pytest.raises(JuliaParseError, match=r"block #42") as err:
        parse(bad)
    assert err.value.line == next(i for i, l in enumerate(bad.splitlines(), 1) if "goto #42" in l)


def test_missing_statement_number_is_detected():
    text, _ = fixture("bicg")
    lines = [l for l in text.splitlines() if "%5 " not in l]
    with pytest.raises(JuliaParseError, match="missing or repeated"):
        parse("\n".join(lines))


def test_optimized_ir_is_refused_with_the_command_to_run():
    optimized = """CodeInfo(
1 ─ %1 = Base.arraysize(A, 1)::Int64
2 ┄ %2 = φ (#1 => 1, #3 => %4)::Int64
│   %3 = Base.add_int(%2, 1)::Int64
└──      goto #3
3 ─      return nothing
) => Nothing"""
    with pytest.raises(JuliaParseError, match="optimize=false"):
        parse(optimized)


def test_julia_0x_output_is_refused():
    old = """CodeInfo(:(begin
        nothing
        SSAValue(0) = (Main.colon)(1, n)
        4:
        unless (Base.not_int)(#temp# === nothing) goto 12
    end))"""
    with pytest.raises(JuliaParseError, match="0.x"):
        parse(old)


def test_irreducible_control_flow_is_refused():
    text = """CodeInfo(
1 ─ %1 = x > 0
└──      goto #3 if not %1
2 ┄      y = 1
└──      goto #3
3 ┄      y = 2
└──      goto #2
)"""
    with pytest.raises(JuliaNotSupportedError, match="irreducible"):
        from_julia(text, {"x": "Int64"})


def test_unsupported_call_names_the_statement():
    text, argtypes = fixture("trmv")
    bad = text.replace("Base.setindex!(y, 0.0, i)", "Main.println(i)")
    with pytest.raises(ms.NotSupportedError, match=r"statement %10 .*println"):
        from_julia(bad, argtypes)


def test_unsupported_argument_type():
    text, argtypes = fixture("trmv")
    with pytest.raises(ms.NotSupportedError, match="Dict"):
        from_julia(text, dict(argtypes, x="Dict{Int64, Float64}"))


def test_ms_from_julia_facade():
    text, argtypes = fixture("gesummv", "v1_10.warntype")
    f = ms.from_julia(text, argtypes)
    assert isinstance(f, ms.Function)


@pytest.mark.skipif(shutil.which("julia") is None,
                    reason="Julia is not installed here (no package, and juliacall downloads it from the internet)")
def test_juliacall_bridge():
    from juliacall import Main as jl
    jl.seval("function axpy!(y, a, x); for i in 1:length(x); y[i] = y[i] + a * x[i]; end; return nothing; end")
    kernel = ms.julia.compile(jl.seval("axpy!"), {"y": "Vector{Float64}", "a": "Float64", "x": "Vector{Float64}"})
    y, x = np.zeros(5), np.arange(5.0)
    kernel(y, 2.0, x)
    np.testing.assert_array_equal(y, 2 * x)


# `@code_lowered` (1.6) of
#     function bits(y, x, s)
#         for i in 1:length(x)
#             y[i] = ((x[i] & 255) | (x[i] << s)) ⊻ ((~x[i] >> 3) + (x[i] >>> s))
#             y[i] = y[i] + Core.Intrinsics.ashr_int(x[i], s) - Base.and_int(x[i], 7)
#         end
#         return nothing
#     end
BITS_LOWERED = """CodeInfo(
1 ─ %1  = Main.length(x)
│   %2  = 1:%1
│         @_5 = Base.iterate(%2)
│   %4  = @_5 === nothing
│   %5  = Base.not_int(%4)
└──       goto #4 if not %5
2 ┄ %7  = @_5
│         i = Core.getfield(%7, 1)
│   %9  = Core.getfield(%7, 2)
│   %10 = Base.getindex(x, i)
│   %11 = %10 & 255
│   %12 = Base.getindex(x, i)
│   %13 = %12 << s
│   %14 = %11 | %13
│   %15 = Base.getindex(x, i)
│   %16 = ~%15
│   %17 = %16 >> 3
│   %18 = Base.getindex(x, i)
│   %19 = %18 >>> s
│   %20 = %17 + %19
│   %21 = %14 ⊻ %20
│         Base.setindex!(y, %21, i)
│   %23 = Base.getindex(y, i)
│   %24 = Base.getindex(x, i)
│   %25 = Core.Intrinsics.ashr_int(%24, s)
│   %26 = %23 + %25
│   %27 = Base.getindex(x, i)
│   %28 = Base.and_int(%27, 7)
│   %29 = %26 - %28
│         Base.setindex!(y, %29, i)
│         @_5 = Base.iterate(%2, %9)
│   %32 = @_5 === nothing
│   %33 = Base.not_int(%32)
└──       goto #4 if not %33
3 ─       goto #2
4 ┄       return nothing
)"""


@pytest.mark.parametrize("s", [0, 3, 63, 64, 70, -2, -64])
def test_bitwise_operators_and_intrinsics(s):
    """& | ⊻ ~ on Int64, << >> >>> with Julia's counts (negative: the other way; 64 or more: 0, or -1
    for >> of a negative value) and the intrinsics and_int, ashr_int (an unsigned count)."""
    argtypes = {"y": "Vector{Int64}", "x": "Vector{Int64}", "s": "Int64"}
    kernel = from_julia(BITS_LOWERED, argtypes).compile()
    x = np.random.default_rng(s % 7).integers(-(1 << 62), 1 << 62, 37)
    x[:4] = [0, -1, -(1 << 63), (1 << 63) - 1]
    ref, ours = np.zeros(37, np.int64), np.zeros(37, np.int64)
    interpret(BITS_LOWERED, argtypes, ref, x, s)
    kernel(ours, x, s)
    np.testing.assert_array_equal(ours, ref)
    if 0 <= s < 64:   # numpy agrees where the count is in range
        with np.errstate(over="ignore"):
            first = ((x & 255) | (x << s)) ^ ((~x >> 3) + (x.view(np.uint64) >> np.uint64(s)).view(np.int64))
            np.testing.assert_array_equal(ref, first + (x >> s) - (x & 7))


AXPY = """CodeInfo(
1 ─ %1 = Base.broadcasted(Main.:*, a, x)
│   %2 = Base.broadcasted(Main.:+, %1, y)
│   %3 = Base.materialize!(y, %2)
└──      return %3
)"""


BCAST_MATRIX = """CodeInfo(
1 ─ %1 = Base.broadcasted(Main.:*, c, M)
│   %2 = Base.broadcasted(Main.:+, %1, v)
│   %3 = Base.materialize!(M, %2)
└──      return %3
)"""


def _broadcast_both(text, argtypes, *args):
    """The arguments after the kernel (compiled for "cpu") and after the interpreter ran on copies of args."""
    ours, ref = copy.deepcopy(list(args)), copy.deepcopy(list(args))
    from_julia(text, argtypes).compile("cpu")(*ours)
    interpret(text, argtypes, *ref)
    return ours, ref


@pytest.mark.parametrize("vshape", [(1, 6), (5, 1), (1, 1), (5, 6)], ids=["row", "column", "1x1", "full"])
def test_broadcast_expands_a_size_of_1_as_julia_does(vshape):
    """`M .= c .* M .+ v` with v a 1 x n row (down every row of M), an m x 1 column (across every column),
    a 1 x 1 matrix, or M's size: the kernel, the interpreter and numpy's broadcasting agree."""
    argtypes = {"M": "Matrix{Float64}", "v": "Matrix{Float64}", "c": "Float64"}
    rng = np.random.default_rng(1)
    M, v = np.asfortranarray(rng.random((5, 6))), np.asfortranarray(rng.random(vshape))
    (ours, _, _), (ref, _, _) = _broadcast_both(BCAST_MATRIX, argtypes, M, v, 1.5)
    np.testing.assert_array_equal(ours, ref)
    np.testing.assert_array_equal(ours, 1.5 * M + v)


@pytest.mark.parametrize("xshape", [(5, 1), (1, 1), (1,)])
def test_broadcast_of_size_1_dimensions_into_a_vector(xshape):
    """`y .= a .* x .+ y` with x a 5 x 1 or 1 x 1 matrix (Julia allows dimensions past y's rank when their
    size is 1) or a vector of length 1 (expanded)."""
    argtypes = {"y": "Vector{Float64}", "a": "Float64", "x": "Matrix{Float64}" if len(xshape) == 2 else
                "Vector{Float64}"}
    y, x = np.arange(5.0), np.asfortranarray(np.arange(1.0, 6.0)[:xshape[0]].reshape(xshape))
    (ours, _, _), (ref, _, _) = _broadcast_both(AXPY, argtypes, y, 2.0, x)
    np.testing.assert_array_equal(ours, ref)
    np.testing.assert_array_equal(ours, 2.0 * x.reshape(-1) + y)


def test_broadcast_sizes_other_than_the_destinations_or_1_raise_dimension_mismatch():
    """Sizes that differ from the destination's and are not 1 are Julia's DimensionMismatch: the kernel
    raises it at the call, naming the statement, and so does the interpreter."""
    argtypes = {"y": "Vector{Float64}", "a": "Float64", "x": "Vector{Float64}"}
    kernel = from_julia(AXPY, argtypes).compile("cpu")
    y, x = np.arange(5.0), np.arange(5.0) + 10
    np.testing.assert_array_equal(kernel(y, 2.0, x), 2.0 * (np.arange(5.0) + 10) + np.arange(5.0))
    for n in (0, 4, 6):
        with pytest.raises(ms.ArgumentError, match=r"DimensionMismatch: statement %3 .* broadcasts x into y along "
                                                   rf"dimension 1, of sizes {n} and 5"):
            kernel(np.zeros(5), 2.0, np.ones(n))
        with pytest.raises(JuliaRuntimeError, match="DimensionMismatch: array could not be broadcast"):
            interpret(AXPY, argtypes, np.zeros(5), 2.0, np.ones(n))
    kernel(np.zeros(0), 2.0, np.ones(1))          # a size of 1 expands to an empty destination too
    matrices = {"M": "Matrix{Float64}", "v": "Matrix{Float64}", "c": "Float64"}
    kernel = from_julia(BCAST_MATRIX, matrices).compile("cpu")
    with pytest.raises(ms.ArgumentError, match=r"broadcasts v into M along dimension 2, of sizes 3 and 6"):
        kernel(np.zeros((5, 6), order="F"), np.ones((1, 3), order="F"), 1.0)
    into_vector = {**argtypes, "x": "Matrix{Float64}"}
    kernel = from_julia(AXPY, into_vector).compile("cpu")
    with pytest.raises(ms.ArgumentError, match=r"broadcasts x into y along dimension 2, of sizes 2 and 1"):
        kernel(np.zeros(5), 2.0, np.ones((5, 2), order="F"))
    with pytest.raises(JuliaRuntimeError, match="DimensionMismatch: cannot broadcast array to have fewer "
                                                "non-singleton dimensions"):
        interpret(AXPY, into_vector, np.zeros(5), 2.0, np.ones((5, 2), order="F"))


def test_broadcast_into_what_is_no_array_argument_is_refused_by_name():
    text = AXPY.replace("Base.materialize!(y, %2)", "Base.materialize!(a, %2)")
    with pytest.raises(JuliaNotSupportedError, match=r"statement %3 .*`.=` into a Float64 value, which is not an array argument"):
        from_julia(text, {"y": "Vector{Float64}", "a": "Float64", "x": "Vector{Float64}"})


# `@code_lowered` (1.10) of
#     function count_to_negative(A)
#         k = 0
#         for a in A
#             k += 1
#             a < 0 && break
#         end
#         return k
#     end
COUNT_TO_NEGATIVE = """CodeInfo(
1 ─       k = 0
│   %2  = A
│         @_3 = Base.iterate(%2)
│   %4  = @_3 === nothing
│   %5  = Base.not_int(%4)
└──       goto #6 if not %5
2 ┄ %7  = @_3
│         a = Core.getfield(%7, 1)
│   %9  = Core.getfield(%7, 2)
│         k = k + 1
│   %11 = a < 0
└──       goto #4 if not %11
3 ─       goto #6
4 ─       @_3 = Base.iterate(%2, %9)
│   %15 = @_3 === nothing
│   %16 = Base.not_int(%15)
└──       goto #6 if not %16
5 ─       goto #2
6 ┄       return k
)"""


@pytest.mark.parametrize("shape", [(4, 5), (3, 4, 2)])
def test_break_in_a_loop_over_an_arrays_elements_stops_the_whole_nest(shape):
    """`for a in A` over a matrix or a 3-d array is a loop per dimension; `break` ends all of them at the
    element Julia stops at (column-major order)."""
    argtypes = {"A": "Matrix{Float64}" if len(shape) == 2 else f"Array{{Float64, {len(shape)}}}"}
    kernel = from_julia(COUNT_TO_NEGATIVE, argtypes).compile("cpu")
    A = np.asfortranarray(np.arange(1.0, np.prod(shape) + 1).reshape(shape, order="F"))
    for at in [(1,) * len(shape), (2,) + (0,) * (len(shape) - 1), tuple(n - 1 for n in shape)]:
        B = A.copy(order="F")
        B[at] = -1.0
        expected = np.ravel_multi_index(at, shape, order="F") + 1
        assert kernel(B) == interpret(COUNT_TO_NEGATIVE, argtypes, B) == expected
    assert kernel(A) == interpret(COUNT_TO_NEGATIVE, argtypes, A) == A.size
    assert kernel(np.zeros((0,) + shape[1:], order="F")) == 0


@pytest.mark.parametrize("argtype, shape", [("Matrix{Float64}", (4, 6)), ("Array{Float64, 3}", (3, 4, 2))])
def test_enumerate_of_an_arrays_elements_gives_linear_indices(argtype, shape):
    """`for (i, v) in enumerate(x)` (the corpus's wsum) over an N-d array: i is Julia's linear index."""
    from julia_corpus import HERE
    text = (HERE / "wsum_enumerate.v1_6.lowered.txt").read_text()
    x = np.asfortranarray(np.random.default_rng(2).random(shape))
    ours = from_julia(text, {"x": argtype}).compile("cpu")(x)
    ref = interpret(text, {"x": argtype}, x)
    assert ours == ref
    np.testing.assert_allclose(ours, np.arange(1, x.size + 1) @ x.ravel(order="F"), rtol=1e-12)


def test_zip_of_a_matrix_is_refused_by_name():
    from julia_corpus import HERE
    text = (HERE / "zipdot.v1_10.lowered.txt").read_text()
    with pytest.raises(JuliaNotSupportedError, match=r"statement %7 .*`zip` of the array a, whose elements are those of a 2-d array"):
        from_julia(text, {"a": "Matrix{Float64}", "b": "Vector{Float64}"})


def test_a_test_against_typemax_int_is_decided_as_julia_decides_it():
    """`n > 9223372036854775807` (the corpus's bcast_when with its test mutated) never holds for an Int64
    n: isl writes the guard as `n >= 2^63`, a constant beyond Int64, which the loops decide rather than
    wrap around to -2^63 (where the kernel once ran the body). An offset that large anywhere else is
    refused by name."""
    from julia_corpus import HERE
    text = (HERE / "bcast_when.v1_10.lowered.txt").read_text()
    argtypes = {"y": "Vector{Float64}", "a": "Float64", "x": "Vector{Float64}", "n": "Int64"}
    never = text.replace("%1 = n > 0", "%1 = n > 9223372036854775807")
    assert never != text
    rng = np.random.default_rng(5)
    for n in (1, 2 ** 62, 9223372036854775807):
        y, x = rng.random(6), rng.random(6)
        ours, ref = y.copy(), y.copy()
        from_julia(never, argtypes).compile("cpu")(ours, 2.0, x, n)
        interpret(never, argtypes, ref, 2.0, x, n)
        np.testing.assert_array_equal(ours, y)
        np.testing.assert_array_equal(ref, y)


def test_a_local_number_that_becomes_a_tuple_is_refused():
    """`m = tuple(m, a)` in the loop of the corpus's matrix_max_elements (mutated from `max(m, a)`): m
    holds a number before the loop and a tuple in it, which no array of numbers can hold; the kernel once
    returned the number. Refused, naming the statement."""
    from julia_corpus import HERE
    text = (HERE / "matrix_max_elements.v1_6.lowered.txt").read_text().replace("Main.max(m, a)", "Main.tuple(m, a)")
    assert "Main.tuple(m, a)" in text
    with pytest.raises(JuliaNotSupportedError, match=r"statement %10 .*m holds a number, then a 2-tuple"):
        from_julia(text, {"A": "Matrix{Float64}"})


# linear indices of N-d arrays ---------------------------------------------------------------------

def _corpus_text(name):
    from julia_corpus import HERE
    return (HERE / name).read_text()


def _both_on(text, argtypes, *args):
    """(kernel's return, arguments after it) and (interpreter's return, arguments after it), on copies."""
    ours, ref = copy.deepcopy(list(args)), copy.deepcopy(list(args))
    got = from_julia(text, argtypes).compile("cpu")(*ours)
    want = interpret(text, argtypes, *ref)
    return (got, ours), (want, ref)


MATRICES3 = {"C": "Matrix{Float64}", "A": "Matrix{Float64}", "B": "Matrix{Float64}"}


@pytest.mark.parametrize("old, new", [
    ("", ""),                                                            # 1:length(A)
    ("%1  = Main.length(A)", "%1  = Main.lastindex(A)"),                 # 1:lastindex(A)
    ("%2  = 1:%1", "%2  = Base.OneTo(%1)"),                              # Base.OneTo(length(A))
    ("%2  = 1:%1", "%2  = Main.eachindex(A)"),
    ("%2  = 1:%1", "%2  = Main.LinearIndices(A)"),
    ("%2  = 1:%1", "%2  = Main.eachindex(A, B)"),
    ("%2  = 1:%1", "%2  = Main.eachindex(C, A, B)"),
], ids=["colon_length", "colon_lastindex", "oneto", "eachindex", "linearindices", "eachindex_ab", "eachindex_cab"])
def test_a_loop_over_a_matrixs_linear_indices_is_a_loop_per_dimension(old, new):
    """`C[i] = A[i] * B[i] + 1` for i in A's linear indices, however written: one loop per dimension of A
    (the first innermost, as Julia's column-major order visits them), each array read and written at
    i's Cartesian index; the kernel, the interpreter and numpy agree."""
    text = _corpus_text("muladd_linear.v1_10.lowered.txt")
    assert old in text
    text = text.replace(old, new)
    f = from_julia(text, MATRICES3)
    assert [c.loops for c in f.computations if c.name == "s14"] == [["i_2", "i_1"]]
    rng = np.random.default_rng(3)
    A, B = (np.asfortranarray(rng.random((5, 7))) for _ in range(2))
    (got, ours), (want, ref) = _both_on(text, MATRICES3, np.zeros((5, 7), order="F"), A, B)
    assert got is ours[0] and want is ref[0]
    np.testing.assert_array_equal(ours[0], ref[0])
    np.testing.assert_array_equal(ours[0], A * B + 1)


@pytest.mark.parametrize("argtype, shape", [("Matrix{Float64}", (6, 5)), ("Array{Float64, 3}", (3, 4, 2)),
                                            ("Array{Float64, 4}", (2, 3, 1, 2)), ("Matrix{Float64}", (0, 4))])
def test_mean_over_eachindex_and_length(argtype, shape):
    """`s += A[i]` over eachindex(A) then `s / length(A)` (the length as a number): A's mean, NaN when A is
    empty, as in Julia."""
    text = _corpus_text("mean_eachindex.v1_10.lowered.txt")
    A = np.asfortranarray(np.random.default_rng(4).random(shape))
    (got, _), (want, _) = _both_on(text, {"A": argtype}, A)
    assert got == want or (np.isnan(got) and np.isnan(want))
    if A.size:
        np.testing.assert_allclose(got, A.mean(), rtol=1e-12)


def test_linear_indexing_of_an_array_of_other_sizes_raises_at_the_call():
    """B[i] with i a linear index of A reads B at i's Cartesian index in A, Julia's element when B has A's
    sizes: other sizes raise ArgumentError at the call, naming the statement (BoundsError when B has fewer
    elements, as Julia throws one when the loop reaches them)."""
    text = _corpus_text("muladd_linear.v1_10.lowered.txt")
    kernel = from_julia(text, MATRICES3).compile("cpu")
    A = np.asfortranarray(np.arange(35.0).reshape(5, 7))
    with pytest.raises(ms.ArgumentError, match=r"^statement %11 \(line 12: `Base.getindex\(B, i\)`\) indexes B with "
                                               r"a linear index of A: B has sizes \(7, 5\) and A \(5, 7\); .*"
                                               r"reshape\(B, size\(A\)\)"):
        kernel(np.zeros((5, 7), order="F"), A, np.ones((7, 5), order="F"))
    with pytest.raises(ms.ArgumentError, match=r"^BoundsError: statement %11 .* indexes B with a linear index of A, "
                                               r"of sizes \(3, 7\) and A \(5, 7\): .* linear index 22 of B"):
        kernel(np.zeros((5, 7), order="F"), A, np.ones((3, 7), order="F"))
    with pytest.raises(JuliaRuntimeError, match=r"statement %11 .*BoundsError"):
        interpret(text, MATRICES3, np.zeros((5, 7), order="F"), A, np.ones((3, 7), order="F"))
    with pytest.raises(ms.ArgumentError, match=r"^statement %14 .* indexes C with a linear index of A: C has sizes "
                                               r"\(5, 8\) and A \(5, 7\); .* equal sizes$"):
        kernel(np.zeros((5, 8), order="F"), A, np.ones((5, 7), order="F"))
    # the interpreter, as Julia, reads a B of A's length in its own column-major order
    C, B = np.zeros((5, 7), order="F"), np.asfortranarray(np.arange(35.0).reshape(7, 5))
    interpret(text, MATRICES3, C, A, B)
    np.testing.assert_array_equal(C.ravel(order="F"), A.ravel(order="F") * B.ravel(order="F") + 1)


# `@code_lowered` (1.10) of
#     function argmax_lin(A)
#         best = 1
#         m = A[1]
#         for i in eachindex(A)
#             if A[i] > m
#                 m = A[i]
#                 best = i
#             end
#         end
#         return best
#     end
ARGMAX = """CodeInfo(
1 ─       best = 1
│         m = Base.getindex(A, 1)
│   %3  = Main.eachindex(A)
│         @_4 = Base.iterate(%3)
│   %5  = @_4 === nothing
│   %6  = Base.not_int(%5)
└──       goto #6 if not %6
2 ┄ %8  = @_4
│         i = Core.getfield(%8, 1)
│   %10 = Core.getfield(%8, 2)
│   %11 = Base.getindex(A, i)
│   %12 = %11 > m
└──       goto #4 if not %12
3 ─       m = Base.getindex(A, i)
└──       best = i
4 ┄       @_4 = Base.iterate(%3, %10)
│   %17 = @_4 === nothing
│   %18 = Base.not_int(%17)
└──       goto #6 if not %18
5 ─       goto #2
6 ┄       return best
)"""

# `@code_lowered` (1.6) of
#     function scaled_copy!(B, A)
#         for (k, a) in enumerate(A)
#             B[k] = a * k
#         end
#         return B
#     end
ENUMERATE_COPY = """CodeInfo(
1 ─ %1  = Main.enumerate(A)
│         @_4 = Base.iterate(%1)
│   %3  = @_4 === nothing
│   %4  = Base.not_int(%3)
└──       goto #4 if not %4
2 ┄ %6  = @_4
│   %7  = Core.getfield(%6, 1)
│   %8  = Base.indexed_iterate(%7, 1)
│         k = Core.getfield(%8, 1)
│         @_6 = Core.getfield(%8, 2)
│   %11 = Base.indexed_iterate(%7, 2, @_6)
│         a = Core.getfield(%11, 1)
│   %13 = Core.getfield(%6, 2)
│   %14 = a * k
│         Base.setindex!(B, %14, k)
│         @_4 = Base.iterate(%1, %13)
│   %17 = @_4 === nothing
│   %18 = Base.not_int(%17)
└──       goto #4 if not %18
3 ─       goto #2
4 ┄       return B
)"""


def test_a_linear_index_used_as_a_number_is_julias():
    """The linear index as a number is i1 + (i2 - 1) * size(A, 1) + ...: stored in a local (argmax, with
    `A[1]` the first element), multiplied (`X[k] * k / n`, `a * k` of enumerate) or used as a vector's index
    (checked while running: BoundsError past its end)."""
    A = np.asfortranarray(np.random.default_rng(5).random((4, 6)))
    (got, _), (want, _) = _both_on(ARGMAX, {"A": "Matrix{Float64}"}, A)
    assert got == want == np.argmax(A.ravel(order="F")) + 1
    X = np.asfortranarray(np.random.default_rng(6).random((4, 3, 5)))
    types = {"Y": "Array{Float64, 3}", "X": "Array{Float64, 3}"}
    (_, ours), (_, ref) = _both_on(_corpus_text("ramp_lastindex_3d.v1_10.lowered.txt"), types,
                                   np.zeros(X.shape, order="F"), X)
    np.testing.assert_array_equal(ours[0], ref[0])
    positions = np.arange(1, X.size + 1).reshape(X.shape, order="F")
    np.testing.assert_allclose(ours[0], X * positions / X.size, rtol=1e-15)
    for btype, b in (("Matrix{Float64}", np.zeros((4, 6), order="F")), ("Vector{Float64}", np.zeros(24))):
        types = {"B": btype, "A": "Matrix{Float64}"}
        (_, ours), (_, ref) = _both_on(ENUMERATE_COPY, types, b, A)
        np.testing.assert_array_equal(ours[0], ref[0])
        np.testing.assert_array_equal(ours[0].ravel(order="F"), A.ravel(order="F") * np.arange(1, 25))
    kernel = from_julia(ENUMERATE_COPY, {"B": "Vector{Float64}", "A": "Matrix{Float64}"}).compile("cpu")
    with pytest.raises(ms.ArgumentError, match=r"BoundsError: statement %15 .*writes B at an index outside it"):
        kernel(np.zeros(23), A)


# `@code_lowered` (1.10) of
#     function triangle_sums(A)
#         s = 0.0
#         for i in eachindex(A)
#             for j in 1:i
#                 s += A[j]
#             end
#         end
#         return s
#     end
TRIANGLE = """CodeInfo(
1 ─       s = 0.0
│   %2  = Main.eachindex(A)
│         @_3 = Base.iterate(%2)
│   %4  = @_3 === nothing
│   %5  = Base.not_int(%4)
└──       goto #7 if not %5
2 ┄ %7  = @_3
│         i = Core.getfield(%7, 1)
│   %9  = Core.getfield(%7, 2)
│   %10 = 1:i
│         @_6 = Base.iterate(%10)
│   %12 = @_6 === nothing
│   %13 = Base.not_int(%12)
└──       goto #5 if not %13
3 ┄ %15 = @_6
│         j = Core.getfield(%15, 1)
│   %17 = Core.getfield(%15, 2)
│   %18 = Base.getindex(A, j)
│         s = s + %18
│         @_6 = Base.iterate(%10, %17)
│   %21 = @_6 === nothing
│   %22 = Base.not_int(%21)
└──       goto #5 if not %22
4 ─       goto #3
5 ┄       @_3 = Base.iterate(%2, %9)
│   %26 = @_3 === nothing
│   %27 = Base.not_int(%26)
└──       goto #7 if not %27
6 ─       goto #2
7 ┄       return s
)"""


def test_a_linear_index_where_an_affine_one_is_needed_is_refused_by_name():
    """Where the linear index (not affine) would be a loop bound, a matrix's index other than A[i] with i
    itself, or the index of an array of another rank, the refusal names the statement and what to write."""
    shifted = _corpus_text("mean_eachindex.v1_10.lowered.txt").replace(
        "%10 = Base.getindex(A, i)", "%10 = i + 1").replace("s = s + %10", "Base.setindex!(A, 1.0, %10)")
    with pytest.raises(JuliaNotSupportedError, match=r"statement %11 .*linear indexing A\[k\] of the 2-d array A "
                                                     r"with a Int64 value: .*write A\[i, j\] with Cartesian indices"):
        from_julia(shifted, {"A": "Matrix{Float64}"})
    with pytest.raises(JuliaNotSupportedError, match=r"statement %15 .*B\[k\] with k a linear index of the 2-d "
                                                     r"array A: B is 3-d"):
        from_julia(ENUMERATE_COPY, {"B": "Array{Float64, 3}", "A": "Matrix{Float64}"})
    text = _corpus_text("muladd_linear.v1_10.lowered.txt").replace("%2  = 1:%1", "%2  = 2:%1")
    with pytest.raises(JuliaNotSupportedError, match=r"the bounds of loop i are not affine .* the length of the "
                                                     r"array A \(the product of its sizes\) is not affine: loop over "
                                                     r"`eachindex\(A\)` or `1:length\(A\)` itself"):
        from_julia(text, MATRICES3)
    with pytest.raises(JuliaNotSupportedError, match=r"statement %15 .*the bounds of loop j are not affine .*; a "
                                                     r"linear index of the array A \(i1 \+ \(i2 - 1\) \* size\(A, 1\) "
                                                     r"\+ \.\.\.\) is not affine: .*`for j in axes\(A, 2\), i in "
                                                     r"axes\(A, 1\)`"):
        from_julia(TRIANGLE, {"A": "Matrix{Float64}"})
    (got, _), (want, _) = _both_on(TRIANGLE, {"A": "Vector{Float64}"}, np.arange(1.0, 6.0))   # a vector's: affine
    assert got == want == 35.0


# eachindex of several arrays ----------------------------------------------------------------------

DOT_EACH = "dot_eachindex_xy.v1_10.lowered.txt"
A3 = "Array{Float64, 3}"


@pytest.mark.parametrize("xtype, xshape, ytype, yshape", [
    ("Matrix{Float64}", (5, 7), "Matrix{Float64}", (5, 7)),
    (A3, (3, 4, 2), A3, (3, 4, 2)),
    ("Matrix{Float64}", (5, 7), "Vector{Float64}", (35,)),
    ("Vector{Float64}", (35,), "Matrix{Float64}", (5, 7)),
    ("Vector{Float64}", (0,), "Vector{Float64}", (0,)),
], ids=["matrices", "3d", "matrix_vector", "vector_matrix", "empty"])
def test_eachindex_of_several_arrays_is_the_linear_indices(xtype, xshape, ytype, yshape):
    """`s += x[i] * y[i]` over eachindex(x, y): Julia's 1:length(x), a loop per dimension of the first array
    of the highest rank (its elements read at their Cartesian index, a vector's at the linear index as a
    number); the kernel (cpu), the interpreter and numpy agree."""
    text = _corpus_text(DOT_EACH)
    types = {"x": xtype, "y": ytype}
    f = from_julia(text, types)
    rank = max(len(xshape), len(yshape))
    assert [c.loops for c in f.computations if c.name == "s13"] == [[f"i_{d}" for d in range(rank, 0, -1)]
                                                                     if rank > 1 else ["i"]]
    rng = np.random.default_rng(7)
    x, y = (np.asfortranarray(rng.random(shape)) for shape in (xshape, yshape))
    (got, _), (want, _) = _both_on(text, types, x, y)
    assert got == want
    np.testing.assert_allclose(got, x.ravel(order="F") @ y.ravel(order="F"), rtol=1e-12)


def test_eachindex_of_arrays_of_other_lengths_is_a_dimension_mismatch():
    """Julia's eachindex(A, B, ...) throws DimensionMismatch unless the arrays have A's length: the kernel
    raises it at the call (ms.ArgumentError naming the statement, before any other check), the
    interpreter when it runs the statement; arrays of A's length but other sizes are Julia's same indices
    (the interpreter runs them), and only an array the kernel reads at A's Cartesian indices needs A's sizes."""
    text = _corpus_text(DOT_EACH)
    for xshape, yshape in [((5, 7), (5, 6)), ((7,), (6,))]:
        types = {"x": "Matrix{Float64}" if len(xshape) == 2 else "Vector{Float64}",
                 "y": "Matrix{Float64}" if len(yshape) == 2 else "Vector{Float64}"}
        x, y = np.ones(xshape, order="F"), np.ones(yshape, order="F")
        got = rf"got Base\.OneTo\({x.size}\) and Base\.OneTo\({y.size}\)"
        with pytest.raises(ms.ArgumentError, match=r"^DimensionMismatch: statement %2 \(line 3: `Main\.eachindex\(x, "
                                                   rf"y\)`\): all inputs to eachindex must have the same indices, "
                                                   rf"{got} \(sizes x \(.*\), y \(.*\)\): pass arrays of x's length$"):
            from_julia(text, types).compile("cpu")(x, y)
        with pytest.raises(JuliaRuntimeError, match=r"^statement %2 .*: DimensionMismatch: all inputs to eachindex "
                                                     rf"must have the same indices, {got}$") as err:
            interpret(text, types, x, y)
        assert err.value.kind == "DimensionMismatch"
    # three arrays, as Julia joins them
    muladd = _corpus_text("muladd_linear.v1_10.lowered.txt").replace("%2  = 1:%1", "%2  = Main.eachindex(C, A, B)")
    A = np.ones((5, 7), order="F")
    with pytest.raises(ms.ArgumentError, match=r"^DimensionMismatch: statement %2 .*got Base\.OneTo\(35\), "
                                               r"Base\.OneTo\(35\) and Base\.OneTo\(28\) "):
        from_julia(muladd, MATRICES3).compile("cpu")(np.zeros((5, 7), order="F"), A, np.ones((4, 7), order="F"))
    with pytest.raises(JuliaRuntimeError, match=r"got Base\.OneTo\(35\), Base\.OneTo\(35\) and Base\.OneTo\(28\)$"):
        interpret(muladd, MATRICES3, np.zeros((5, 7), order="F"), A, np.ones((4, 7), order="F"))
    # a 5x7 and a 7x5 matrix: Julia's same indices 1:35, y read in its own column-major order
    types = {"x": "Matrix{Float64}", "y": "Matrix{Float64}"}
    x, y = (np.asfortranarray(np.arange(35.0).reshape(shape)) for shape in ((5, 7), (7, 5)))
    assert interpret(text, types, x, y) == x.ravel(order="F") @ y.ravel(order="F")
    with pytest.raises(ms.ArgumentError, match=r"^statement %11 .* indexes y with a linear index of x: y has sizes "
                                               r"\(7, 5\) and x \(5, 7\); .*reshape\(y, size\(x\)\)"):
        from_julia(text, types).compile("cpu")(x, y)


# `@code_lowered` (1.10) of
#     function axpy_when!(y, a, x, n)
#         if n > 0
#             y .= a .* x .+ y
#         end
#         return y
#     end
AXPY_WHEN = """CodeInfo(
1 ─ %1 = n > 0
└──      goto #3 if not %1
2 ─ %3 = Base.broadcasted(Main.:*, a, x)
│   %4 = Base.broadcasted(Main.:+, %3, y)
└──      Base.materialize!(y, %4)
3 ┄      return y
)"""

# `@code_lowered` (1.10) of
#     function dot_when(x, y, n)
#         s = 0.0
#         if n > 1
#             for i in eachindex(x, y)
#                 s += x[i] * y[i]
#             end
#         end
#         return s
#     end
DOT_WHEN = """CodeInfo(
1 ─       s = 0.0
│   %2  = n > 1
└──       goto #5 if not %2
2 ─ %4  = Main.eachindex(x, y)
│         @_5 = Base.iterate(%4)
│   %6  = @_5 === nothing
│   %7  = Base.not_int(%6)
└──       goto #5 if not %7
3 ┄ %9  = @_5
│         i = Core.getfield(%9, 1)
│   %11 = Core.getfield(%9, 2)
│   %12 = Base.getindex(x, i)
│   %13 = Base.getindex(y, i)
│   %14 = %12 * %13
│         s = s + %14
│         @_5 = Base.iterate(%4, %11)
│   %17 = @_5 === nothing
│   %18 = Base.not_int(%17)
└──       goto #5 if not %18
4 ─       goto #3
5 ┄       return s
)"""


def test_size_checks_apply_only_where_their_statement_runs():
    """Julia checks a broadcast's or eachindex's sizes when the statement runs: in a branch not taken
    (n <= 0), any sizes pass and give the interpreter's values; where it runs, the check raises as
    before. The sizes the middle-end assumes hold only where the statement runs."""
    types = {"y": "Vector{Float64}", "a": "Float64", "x": "Vector{Float64}", "n": "Int64"}
    kernel = from_julia(AXPY_WHEN, types).compile("cpu")
    for n, x in [(1, np.ones(5)), (0, np.ones(3)), (-2, np.ones(7)), (3, np.ones(1))]:
        (got, ours), (want, ref) = _both_on(AXPY_WHEN, types, np.arange(5.0), 2.0, x, n)
        np.testing.assert_array_equal(ours[0], ref[0])
        np.testing.assert_array_equal(got, want)
    with pytest.raises(ms.ArgumentError, match=r"^DimensionMismatch: statement %5 .* of sizes 3 and 5 \(Julia "
                                               r"broadcasts an argument whose size is the destination's or 1\)$"):
        kernel(np.zeros(5), 2.0, np.ones(3), 1)
    # eachindex(x, y) in a branch taken for n > 1, and y read at x's Cartesian indices in the loop under it
    types = {"x": "Matrix{Float64}", "y": "Matrix{Float64}", "n": "Int64"}
    kernel = from_julia(DOT_WHEN, types).compile("cpu")
    x = np.asfortranarray(np.arange(12.0).reshape(3, 4))
    for y, n in [(x, 2), (np.ones((4, 2), order="F"), 1), (np.asfortranarray(x.T), 0)]:
        assert kernel(x, y, n) == interpret(DOT_WHEN, types, x, y, n)
    assert kernel(x, x, 2) == x.ravel() @ x.ravel()
    with pytest.raises(ms.ArgumentError, match=r"^DimensionMismatch: statement %4 .*got Base\.OneTo\(12\) and "
                                               r"Base\.OneTo\(8\) .*: pass arrays of x's length$"):
        kernel(x, np.ones((4, 2), order="F"), 2)
    with pytest.raises(ms.ArgumentError, match=r"^statement %13 .* indexes y with a linear index of x: y has sizes "
                                               r"\(4, 3\) and x \(3, 4\)"):
        kernel(x, np.asfortranarray(x.T), 2)


def test_a_size_check_under_a_bool_argument_applies_only_where_it_is_true():
    """A Bool argument is a size that is 0 or 1: a branch on it is affine, so a broadcast under
    `if flag` is checked only when flag is true, as Julia checks it only when it runs."""
    text = """CodeInfo(
1 ─      goto #3 if not flag
2 ─ %2 = Base.broadcasted(Main.:*, a, x)
│   %3 = Base.broadcasted(Main.:+, %2, y)
└──      Base.materialize!(y, %3)
3 ┄      return y
)"""     # (`if flag` in place of `if n > 0`)
    types = {"y": "Vector{Float64}", "a": "Float64", "x": "Vector{Float64}", "flag": "Bool"}
    kernel = from_julia(text, types).compile("cpu")
    for x, flag in [(np.ones(5), True), (np.ones(3), False), (np.ones(1), True), (np.ones(9), np.bool_(False))]:
        (got, ours), (want, ref) = _both_on(text, types, np.arange(5.0), 2.0, x, flag)
        np.testing.assert_array_equal(ours[0], ref[0])
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(kernel(np.arange(5.0), 2.0, np.ones(3), False), np.arange(5.0))
    with pytest.raises(ms.ArgumentError, match=r"^DimensionMismatch: statement %4 .* of sizes 3 and 5 \(Julia "
                                               r"broadcasts an argument whose size is the destination's or 1\)$"):
        kernel(np.arange(5.0), 2.0, np.ones(3), True)
    with pytest.raises(ms.ArgumentError, match=r"^argument flag::Bool must be true or false, got 1$"):
        kernel(np.arange(5.0), 2.0, np.ones(5), 1)


def test_a_size_check_under_a_condition_on_data_runs_at_every_call_and_says_so():
    """A branch on a value the call cannot see (a Float64 argument's sign): the size check runs
    whenever the sizes let the statement run, and its message says why, where Julia would run a call
    that skips the statement."""
    text = AXPY_WHEN.replace("%1 = n > 0", "%1 = a > 0.0")     # (`if a > 0.0`, n gone)
    types = {"y": "Vector{Float64}", "a": "Float64", "x": "Vector{Float64}"}
    kernel = from_julia(text, types).compile("cpu")
    (got, ours), (want, ref) = _both_on(text, types, np.arange(5.0), 2.0, np.ones(5))
    np.testing.assert_array_equal(ours[0], ref[0])
    np.testing.assert_array_equal(got, 2.0 + np.arange(5.0))
    np.testing.assert_array_equal(interpret(text, types, np.arange(5.0), -2.0, np.ones(3)), np.arange(5.0))
    with pytest.raises(ms.ArgumentError, match=r"^DimensionMismatch: statement %5 .* of sizes 3 and 5 .*\(checked "
                                               r"whenever the sizes let the statement run: its condition reads values "
                                               r"the call cannot see\)$"):
        kernel(np.arange(5.0), -2.0, np.ones(3))


def test_eachindex_of_several_arguments_refused_by_name():
    """Arrays of two ranks above 1 (each read at the other's Cartesian index) and a non-array argument are
    refused at translation, naming the statement and what to write."""
    text = _corpus_text(DOT_EACH)
    with pytest.raises(JuliaNotSupportedError, match=r"statement %10 .*x\[k\] with k a linear index of the 3-d "
                                                     r"array y: x is 2-d"):
        from_julia(text, {"x": "Matrix{Float64}", "y": A3})
    with pytest.raises(JuliaNotSupportedError, match=r"statement %2 .*`eachindex` of several arguments, one of them "
                                                     r"a Float64 value: the front-end takes arrays there"):
        from_julia(text.replace("Main.eachindex(x, y)", "Main.eachindex(x, s)"), {"x": "Vector{Float64}",
                                                                                   "y": "Vector{Float64}"})


@pytest.mark.parametrize("name", ["max", "min"])
@pytest.mark.parametrize("target", ["cpu", "c"])
def test_a_float_max_of_many_values_in_one_call_is_julias_max(name, target):
    """Julia's max/min of floats (NaN wins, -0.0 below 0.0) of 8 reads in one call compiles to one IEEE
    maximum/minimum per step, not a selection that repeats its operands (which compiled for minutes), and
    gives the interpreter's bits with NaNs and zeros of both signs among the values."""
    text, argtypes = fixture("edge", "v1_12.lowered")
    many = text.replace("%48  = Main.:+", f"%48  = Main.:{name}")
    assert many != text
    kernel = from_julia(many, argtypes).compile(target)
    img, out = random_args(argtypes, 3, 9)
    rng = np.random.default_rng(3)
    img[...] = rng.standard_normal(img.shape)
    img[..., 0] = np.where(rng.random(img.shape[:2]) < 0.5, -0.0, 0.0)   # zeros of both signs
    img[..., 1][rng.random(img.shape[:2]) < 0.1] = np.nan
    ref = [img.copy(), out.copy()]
    interpret(many, argtypes, *ref)
    ours = [img.copy(), out.copy()]
    kernel(*ours)
    assert np.isnan(ref[1]).any() and (ref[1] == 0).any() and (ref[1] < 0).any()
    np.testing.assert_array_equal(ours[1], ref[1])   # (NaN equal to NaN)
    np.testing.assert_array_equal(np.signbit(ours[1]), np.signbit(ref[1]))


def test_float32_functions_are_correctly_rounded_in_the_interpreter_and_the_kernel():
    """`y .= Float32.(exp.(x))` at x = 0.44310803f0: exp is 1.55754057... exactly, so 1.5575405f0 (numpy's
    float32 exp gives the next float up). The interpreter rounds the Float64 value, the kernel calls the C
    library's expf: the same bits."""
    from julia_corpus import HERE
    text = (HERE / "bcast_exp32.v1_10.lowered.txt").read_text()
    argtypes = {"y": "Vector{Float32}", "x": "Float32"}
    x = np.float32(0.44310803)
    assert np.exp(x) != np.float32(np.exp(np.float64(x)))   # the argument where numpy's exp is off
    ref, ours = np.zeros(5, np.float32), np.zeros(5, np.float32)
    interpret(text, argtypes, ref, x)
    from_julia(text, argtypes).compile()(ours, x)
    np.testing.assert_array_equal(ref, np.float32(1.5575405))
    np.testing.assert_array_equal(ours, ref)


def test_a_function_whose_every_loop_runs_no_iteration_compiles_to_nothing():
    """jacobi-1d reading `size(A, 64)` of a vector (1 in Julia, a dimension past the last): both sweeps
    run over `2:0`, so no statement runs at any size. Its code is empty (generation failed on no
    statements at all) and the arrays keep the interpreter's values."""
    text, argtypes = fixture("jacobi1d", "v1_6.typed")
    mutated = text.replace("Main.size(A, 1)", "Main.size(A, 64)")
    assert mutated != text
    ref, ours = random_args(argtypes, 3, 7), random_args(argtypes, 3, 7)
    interpret(mutated, argtypes, *ref)
    from_julia(mutated, argtypes).compile()(*ours)
    for r, o in zip(ref, ours):
        np.testing.assert_array_equal(o, r)


@pytest.mark.parametrize("first", ["1", "0", "1000000"])
def test_a_loop_that_runs_no_iteration_compiles_and_runs_as_in_julia(first):
    """gesummv with its row loop over `first:n`: over `1:0` no iteration runs at any size, and over
    `1000000:n` none at the sizes a kernel is specialized for (`fixed`) or autoscheduled at. Julia runs
    such loops as no-ops: the kernel computes nothing there and gives the interpreter's values."""
    text, argtypes = fixture("gesummv", "v1_6.typed")
    rows = "1:0" if first == "0" else f"{first}:n"
    mutated = text.replace("%2  = (1:n)::UnitRange{Int64}", f"%2  = ({rows})::UnitRange{{Int64}}")
    assert mutated != text or first == "1"
    f = from_julia(mutated, argtypes)
    sizes = {p: 6 for p in f.sizes()}
    for kernel in (f.compile(), f.compile(fixed=sizes)):
        ref, ours = random_args(argtypes, 5, 6), random_args(argtypes, 5, 6)
        interpret(mutated, argtypes, *ref)
        kernel(*ours)
        for r, o in zip(ref, ours):
            np.testing.assert_array_equal(o, r)
    f.autoschedule(sizes=sizes, measure=False, cache=False)
    ref, ours = random_args(argtypes, 6, 6), random_args(argtypes, 6, 6)
    interpret(mutated, argtypes, *ref)
    f.compile()(*ours)
    for r, o in zip(ref, ours):
        np.testing.assert_array_equal(o, r)
