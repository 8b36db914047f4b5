"""Tiles whose sizes the compiled kernel takes at call time (middleend/parametric_tiles.py)."""
import numpy as np
import pytest

import mascarpone as ms


def gemm(n_name="N"):
    N = ms.Param(n_name)
    i, j, k = ms.Var("i", 0, N), ms.Var("j", 0, N), ms.Var("k", 0, N)
    with ms.Function("mm") as f:
        A = ms.Input("A", [N, N], ms.float32)
        B = ms.Input("B", [N, N], ms.float32)
        C = ms.Computation("C", [i, j], ms.f32(0))
        U = C.update([i, k, j], C[i, j] + A[i, k] * B[k, j])
    return f, C, U


def skewed_recurrence():
    """X[i, j] = X[i - 1, j + 1] + 1: the dependence (1, -1) makes the band (i, j) non-permutable."""
    N = ms.Param("N")
    i, j = ms.Var("i", 0, N), ms.Var("j", 0, N)
    i1, j1 = ms.Var("i", 1, N), ms.Var("j", 0, N - 1)
    with ms.Function("rec") as f:
        X0 = ms.Input("X0", [N, N], ms.float64)
        X = ms.Computation("X", [i, j], X0[i, j])
        U = X.update([i1, j1], X[i1 - 1, j1 + 1] + 1.0)
    return f, U


SIZES = [(1, 1, 1), (7, 5, 16), (32, 64, 48), (13, 100, 33), (200, 300, 250)]


@pytest.mark.parametrize("target", ["cpu", "c"])
def test_one_kernel_runs_every_tile_size_and_matches_numpy_and_constant_tiles(target):
    f, C, U = gemm()
    Ti, Tk, Tj = ms.Param("Ti"), ms.Param("Tk"), ms.Param("Tj")
    assert [v.name for v in U.tile("i", "k", "j", Ti, Tk, Tj)] == ["i0", "k0", "j0", "i", "k", "j"]
    U.vectorize("j", 16)
    U.parallelize("i0")
    assert f.history()[-3:] == ["C_update0.tile(i, k, j, Ti, Tk, Tj)", "C_update0.vectorize(j, 16)",
                                "C_update0.parallelize(i0)"]
    kernel = f.compile(target)
    rng = np.random.default_rng(1)
    a, b = rng.random((100, 100), dtype=np.float32), rng.random((100, 100), dtype=np.float32)
    for ti, tk, tj in SIZES:
        got = kernel(A=a, B=b, Ti=ti, Tk=tk, Tj=tj)
        np.testing.assert_allclose(got, a @ b, rtol=1e-4, err_msg=f"tiles {ti}x{tk}x{tj}")
    # constant tiles of the same sizes (split by isl) give the same values
    for ti, tk, tj in SIZES[1:3]:
        g, _, V = gemm()
        V.tile("i", "k", "j", ti, tk, tj)
        expected = g.compile(target)(A=a, B=b)
        np.testing.assert_allclose(kernel(A=a, B=b, Ti=ti, Tk=tk, Tj=tj), expected, rtol=1e-5)


def test_the_generated_code_has_full_tiles_apart_and_the_tile_loop_parallel():
    f, C, U = gemm()
    U.tile("i", "k", ms.Param("Ti"), ms.Param("Tk"))
    U.parallelize("i0")
    text = str(f.lower())
    assert "int64 Ti, int64 Tk" in text
    assert "for (i0 = 0; i0 < ((N + (Ti - 1)) // Ti); i0++) {  // parallel" in text
    assert "if (((((i0 * Ti) + Ti) <= N) && (((k0 * Tk) + Tk) <= N))) {" in text
    assert "for (k = (k0 * Tk); k < min(((k0 * Tk) + Tk), N); k++) {" in text


def test_tile_loops_take_names_no_size_uses():
    """A size named like a tile loop (k0) stays the size in the bounds: the tile loop is renamed."""
    f, C, U = gemm("k0")
    U.tile("i", "k", ms.Param("Ti"), ms.Param("Tk"))
    assert "for (k0_1 = 0; k0_1 < ((k0 + (Tk - 1)) // Tk); k0_1++) {" in str(f.lower())
    rng = np.random.default_rng(6)
    a, b = rng.random((40, 40), dtype=np.float32), rng.random((40, 40), dtype=np.float32)
    np.testing.assert_allclose(f.compile("cpu")(A=a, B=b, Ti=7, Tk=9), a @ b, rtol=1e-4)


def test_a_parametric_split_and_fixed_sizes():
    f, C, U = gemm()
    assert [v.name for v in U.split("j", ms.Param("T"))] == ["j0", "j"]
    rng = np.random.default_rng(2)
    a, b = rng.random((40, 40), dtype=np.float32), rng.random((40, 40), dtype=np.float32)
    np.testing.assert_allclose(f.compile("cpu")(A=a, B=b, T=9), a @ b, rtol=1e-4)
    lowered = f.lower(fixed={"N": 40, "T": 8})
    assert "j0 < 5;" in str(lowered)


def test_a_band_that_is_not_permutable_is_refused_naming_the_command():
    f, U = skewed_recurrence()
    U.tile("i", "j", ms.Param("Ti"), ms.Param("Tj"))
    with pytest.raises(ms.IllegalScheduleError, match=r"band i, j of X_update0 is not permutable.*"
                                                      r"X_update0.tile\(i, j, Ti, Tj\)") as e:
        f.lower()
    assert e.value.command == "X_update0.tile(i, j, Ti, Tj)"
    # tiling the outer loop alone is legal, and the values are the recurrence's
    g, V = skewed_recurrence()
    V.split("i", ms.Param("T"))
    x0 = np.random.default_rng(3).random((9, 9))
    expected = x0.copy()
    for r in range(1, 9):
        expected[r, :8] = expected[r - 1, 1:] + 1.0
    np.testing.assert_allclose(g.compile("cpu")(X0=x0, T=2), expected)


def test_a_parallel_tile_loop_or_a_vector_point_loop_must_carry_no_dependence():
    f, C, U = gemm()
    U.tile("i", "k", "j", ms.Param("Ti"), ms.Param("Tk"), ms.Param("Tj"))
    U.parallelize("k0")
    with pytest.raises(ms.IllegalScheduleError, match=r"loop k of C_update0 is tagged parallel but carries a "
                                                      r"read-after-write.*broken by C_update0.parallelize\(k0\)"):
        f.lower()
    f, C, U = gemm()
    U.interchange("k", "j")
    U.tile("i", "j", "k", ms.Param("Ti"), ms.Param("Tj"), ms.Param("Tk"))
    U.vectorize("k", 8)
    with pytest.raises(ms.IllegalScheduleError, match="vectorizes point loop k"):
        f.lower()


def test_what_parametric_tiles_cannot_express_is_refused_by_name():
    f, C, U = gemm()
    U.vectorize("j", 16)                  # a remainder loop beside j0 when N is not known
    U.tile("k", "j0", ms.Param("Tk"), ms.Param("Tj"))
    with pytest.raises(ms.ScheduleError, match=r"loop j0 of C_update0 must be the only statement in loop k"):
        f.lower()
    f, C, U = gemm()
    U.tile("i", "k", ms.Param("Ti"), ms.Param("Tk"))
    with pytest.raises(ms.ScheduleError, match=r"must stay adjacent"):
        U.interchange("i", "j")
    with pytest.raises(ms.ScheduleError, match=r"i0 is a tile loop of C_update0.tile\(i, k, Ti, Tk\)"):
        U.unroll("i0", 2)
    with pytest.raises(ms.ScheduleError, match=r"N is a size of mm; a tile size needs a parameter of its own"):
        U.split("j", ms.Param("N"))
    with pytest.raises(ms.ScheduleError, match=r"loop\(s\) \['k'\] are tiled already"):
        U.split("k", ms.Param("Tk"))
    with pytest.raises(ms.ScheduleError, match=r"j names a loop of mm; give the tile size a name of its own"):
        gemm()[2].tile("i", "k", ms.Param("j"), ms.Param("Tk"))
    with pytest.raises(ms.ScheduleError, match=r"must be an ms.Param, got 4"):
        gemm()[2].tile("k", "j", ms.Param("Tk"), 4)
    kernel = f.compile("cpu")
    a = np.ones((4, 4), np.float32)
    with pytest.raises(ms.ArgumentError, match=r"parameter Tk: 0 is outside its range"):
        kernel(A=a, B=a, Ti=2, Tk=0)
    with pytest.raises(ms.ArgumentError, match=r"cannot tell the value of parameter\(s\) Ti"):
        kernel(A=a, B=a, Tk=2)


@pytest.mark.parametrize("target", ["opencl", "hls", "mpi"])
def test_the_other_targets_run_parametric_tiles_from_the_same_loops(target):
    from mascarpone.middleend.targets import get_target
    missing = get_target(target).missing()
    if missing is not None:
        pytest.skip(f"{target}: {missing}")
    f, C, U = gemm()
    U.tile("i", "k", ms.Param("Ti"), ms.Param("Tk"))
    rng = np.random.default_rng(4)
    a, b = rng.random((40, 40), dtype=np.float32), rng.random((40, 40), dtype=np.float32)
    kernel = f.compile(target, **({"ranks": 2} if target == "mpi" else {}))
    np.testing.assert_allclose(kernel(A=a, B=b, Ti=7, Tk=9), a @ b, rtol=1e-4)


def heat_1d():
    """A[t, i] = (A[t-1, i-1] + A[t-1, i] + A[t-1, i+1]) / 3: the band (t, i) is permutable once skewed."""
    T, N = ms.Param("T"), ms.Param("N")
    t, i = ms.Var("t", 1, T), ms.Var("i", 1, N - 1)
    with ms.Function("heat") as f:
        A0 = ms.Input("A0", [T, N], ms.float64)
        A = ms.Computation("A", [ms.Var("t", 0, T), ms.Var("i", 0, N)], A0[ms.Var("t", 0, T), ms.Var("i", 0, N)])
        U = A.update([t, i], (A[t - 1, i - 1] + A[t - 1, i] + A[t - 1, i + 1]) / 3.0)
    return f, U


def heat_reference(a0):
    a = a0.copy()
    for r in range(1, a.shape[0]):
        a[r, 1:-1] = (a[r - 1, :-2] + a[r - 1, 1:-1] + a[r - 1, 2:]) / 3.0
    return a


def test_a_skewed_band_takes_parametric_tiles_over_its_bounds_in_the_outer_tile():
    f, U = heat_1d()
    U.tile("t", "i", ms.Param("Tt"), ms.Param("Ti"))
    with pytest.raises(ms.IllegalScheduleError, match="not permutable"):
        f.lower()
    f, U = heat_1d()
    U.skew("t", "i", 1)                   # i' = i + t: every dependence now goes forward along t and i'
    U.tile("t", "i", ms.Param("Tt"), ms.Param("Ti"))
    text = str(f.lower())
    assert "max(" in text                 # point loops start at the larger of the tile and the skewed bound
    kernel = f.compile("cpu")
    a0 = np.random.default_rng(5).random((23, 37))
    for tt, ti in [(1, 1), (4, 8), (5, 3), (30, 100), (7, 64)]:
        np.testing.assert_allclose(kernel(A0=a0, Tt=tt, Ti=ti), heat_reference(a0), rtol=1e-12,
                                   err_msg=f"tiles {tt}x{ti}")
