"""Scheduled programs compiled for the CPU and compared with numpy."""

import re

import numpy as np
import pytest

import mascarpone as ms
from mascarpone.backends.common.evaluate import evaluate
from loopir_run import stored_points
from mascarpone import examples
from mascarpone.middleend import loopir as L

rng = np.random.default_rng(0)


def blur_reference(img):
    bx = (img[:, :-2] + img[:, 1:-1] + img[:, 2:]) / np.float32(3)
    return (bx[:-2] + bx[1:-1] + bx[2:]) / np.float32(3)


@pytest.mark.parametrize("schedule", ["none", "tiled", "classic"])
def test_blur(schedule):
    f, bx, by = examples.blur()
    if schedule == "tiled":
        y0, x0, y1, x1 = by.tile("y", "x", 32, 32)
        by.parallelize(y0)
        bx.compute_at(by, x0)
        by.vectorize(x1, 8)
    elif schedule == "classic":
        y0, x0, y1, x1 = by.tile("y", "x", 32, 64)
        by.vectorize(x1, 8)
        by.parallelize(y0)
        bx.compute_at(by, x0)
        bx.vectorize("x", 8)
    k = f.compile("cpu")
    # sizes below one tile, exact multiples and ragged edges reach the full and the partial pieces
    for H, W in ((73, 129), (5, 7), (64, 128), (32, 200)):
        img = rng.random((H + 2, W + 2), dtype=np.float32)
        out = k(img=img, H=H, W=W)
        np.testing.assert_allclose(out, blur_reference(img), rtol=1e-6)


def test_neighbouring_reads_are_carried_as_a_window_and_the_last_chunk_is_masked():
    """bx reads img at x, x + 1 and x + 2: in a vector loop of 8 lanes loaded one by one they would cost
    two loads (x and x + 2) and a shuffle (x + 1) a chunk; carried from chunk to chunk as a window they
    cost one load (x + 2, kept for the next chunk) and two shuffles with the vector the chunk before
    loaded, and loads outnumbered shuffles, so they are carried (by's three reads are rows apart: three
    loads). A row's last iterations, fewer than 8, run as one chunk under a lane mask where the CPU masks
    loads and stores (AVX-512), else one at a time. The values are numpy's at widths with every
    remainder, with the loops split by 8 and left whole."""
    from mascarpone.backends.cpu.machine import masked_memory
    for split in (True, False):
        f, bx, by = examples.blur()
        bx.vectorize("x", 8, split=split)
        by.vectorize("x", 8, split=split)
        if not split:
            assert f.history() == ["bx.vectorize(x, 8, split=False)", "by.vectorize(x, 8, split=False)"]
            with pytest.raises(ms.ScheduleError, match="split must be True or False"):
                bx.vectorize("x", 8, split="no")
            assert bx.loops == ["y", "x"] and "x0" not in str(f.lower())
        k = f.compile("cpu")
        code = k.source("llvm-unoptimized")
        # per piece of the loops (the split ones have two): bx's window, one load and a shuffle before its
        # loop (the first chunk's previous vector), one load and two shuffles in it; by's three loads
        pieces = len(re.findall(r"phi +<8 x float>", code))
        loads, shuffles = code.count("load <8 x float>"), code.count("shufflevector <8 x float>")
        assert pieces == (2 if split else 1) and (loads, shuffles) == (5 * pieces, 3 * pieces), (loads, shuffles)
        assert ("llvm.masked.load" in code) == masked_memory()
        for W in range(17, 25):
            img = rng.random((11, W + 2), dtype=np.float32)
            np.testing.assert_allclose(k(img=img, H=9, W=W), blur_reference(img), rtol=1e-6)


def _five_point(with_far=False):
    """s[y, x] = a[y + 1, x] + 2 a[y + 1, x + 1] - a[y + 1, x + 2] + a[y, x + 1] + a[y + 2, x + 1]
    (+ a[y + 1, x + 8] / 2)."""
    H, W = ms.Param("H"), ms.Param("W")
    y, x = ms.Var("y", 0, H), ms.Var("x", 0, W)
    with ms.Function("five") as f:
        a = ms.Input("a", [H + 2, W + 8], ms.float64)
        value = a[y + 1, x] + 2 * a[y + 1, x + 1] - a[y + 1, x + 2] + a[y, x + 1] + a[y + 2, x + 1]
        s = ms.Computation("s", [y, x], value + 0.5 * a[y + 1, x + 8] if with_far else value)
    return f, s


def test_a_stencil_bound_by_its_loads_carries_a_window_from_chunk_to_chunk():
    """A 5-point stencil along x, vectorized by 8: the three reads of row y + 1 cost two loads and a shuffle a
    chunk, the rows above and below a load each; four loads against one shuffle, so the middle row's
    reads are carried as a window: each chunk loads the vector at x + 2 only and shuffles the others
    out of it and the one the chunk before loaded (a phi; the first chunk's made from a load at x).
    So with a read at x + 8 too (a vector from x), in a loop of whole chunks and split by 8 (the outer loop
    carries it). A loop of whole chunks whose trip count is known at run time only is unrolled by
    WINDOW_UNROLL, the window passed from copy to copy (LLVM leaves such a loop as it is). The values are
    numpy's for every number of chunks from none to four, with every remainder."""
    from mascarpone.backends.cpu.vectorize import WINDOW_UNROLL
    for far in (False, True):
        for split in (False, True):
            f, s = _five_point(far)
            s.vectorize("x", 8, split=split)
            k = f.compile("cpu")
            code = k.source("llvm-unoptimized")
            assert f'!"llvm.loop.unroll.count", i32 {WINDOW_UNROLL}' in code
            assert len(re.findall(r"phi +<8 x double>", code)) == (2 if split else 1), (far, split)
            for W in range(0, 36, 5 if far else 1):
                a = rng.random((5, W + 8))
                ref = a[1:4, :W] + 2 * a[1:4, 1:W + 1] - a[1:4, 2:W + 2] + a[:3, 1:W + 1] + a[2:5, 1:W + 1]
                if far:
                    ref = ref + 0.5 * a[1:4, 8:W + 8]
                np.testing.assert_array_equal(k(a=a, H=3, W=W), ref)


def test_rows_unrolled_inside_the_vector_loop_share_their_windows():
    """Unroll and jam: `unroll(y, 2)` then `interchange(y1, x)` runs two rows of the 5-point stencil in
    each chunk of x. The copies are written out before the windows are chosen, so row y + 1 of `a`, the
    middle row of the first copy, is one window that also gives the second copy its row above (and row
    y + 2 the other way round): two windows in the loop of row pairs, and one in the last row's loop of
    an odd H (split by 8, the partial chunk of a row pair carries two more). So with the rows unrolled
    between the loop of chunks and the lanes (`vectorize(x, 8)` first: `for x0 { for y1 { for x1 } }`),
    which runs the same vector operations in the same order. The values are numpy's for every H up to 5
    and widths with every remainder."""
    for form in ("whole", "split", "around"):
        f, s = _five_point()
        if form == "around":
            s.vectorize("x", 8)
            s.unroll("y", 2)
            s.interchange("y1", "x0")
        else:
            s.unroll("y", 2)
            s.interchange("y1", "x")
            s.vectorize("x", 8, split=form == "split")
        k = f.compile("cpu")
        windows = len(re.findall(r"phi +<8 x double>", k.source("llvm-unoptimized")))
        # (split by 8, the loop of chunks and the partial chunk of a row pair carry two each)
        assert windows == {"whole": 2 + 1, "split": 2 + 2 + 1, "around": 2 + 2 + 1}[form], form
        for H in range(6):
            for W in (0, 5, 8, 13, 24, 29):
                a = rng.random((H + 2, W + 8))
                ref = (a[1:H + 1, :W] + 2 * a[1:H + 1, 1:W + 1] - a[1:H + 1, 2:W + 2] + a[:H, 1:W + 1]
                       + a[2:H + 2, 1:W + 1])
                np.testing.assert_array_equal(k(a=a, H=H, W=W), ref)


def test_no_window_is_carried_over_an_array_the_loop_writes():
    """An update of c's row y that reads row y - 1 at x - 1, x and x + 1 keeps its loads: the loop stores
    to c, and a window could hold what a store replaced. The three reads share two loads instead (at
    x - 1 and x + 1, the one at x shuffled out of them). Its values are numpy's."""
    N = ms.Param("N")
    y, x = ms.Var("y", 1, N), ms.Var("x", 1, N - 1)
    with ms.Function("rows") as g:
        a = ms.Input("a", [N, N], ms.float64)
        ya, xa = ms.Var("y", 0, N), ms.Var("x", 0, N)
        c = ms.Computation("c", [ya, xa], a[ya, xa])
        c.update([y, x], c[y, x] + c[y - 1, x - 1] + c[y - 1, x] - c[y - 1, x + 1] + a[y, x]
                 ).vectorize("x", 8, split=False)
    k = g.compile("cpu")
    code = k.source("llvm-unoptimized")
    assert not re.findall(r"phi +<8 x double>", code)
    # c[y, x], the two of row y - 1 and a[y, x]; a scalar tail (the loop updates c)
    assert (code.count("load <8 x double>"), code.count("shufflevector <8 x double>")) == (4, 1)
    av = rng.random((20, 20))
    ref = av.copy()
    for row in range(1, 20):
        ref[row, 1:19] = ref[row, 1:19] + ref[row - 1, 0:18] + ref[row - 1, 1:19] - ref[row - 1, 2:20] + av[row, 1:19]
    np.testing.assert_array_equal(k(a=av, N=20), ref)


def test_blur_with_shifted_tiles_anchored_per_tile():
    """by's rows in tiles of 8, the last one shifted back over the one before (its rows computed twice:
    a schedule that is not single-valued); bx computed per tile of by and split by 4 from the first
    row of each tile (a schedule relative to the tile's bounds), its last piece shifted back too."""
    f, bx, by = examples.blur()
    by.set_schedule("[H, W] -> { by[y, x] -> [yo, yi, x] : 0 <= yi < 8 and 0 <= 8*yo < H and "
                    "y = min(8*yo, H - 8) + yi }", names=["yo", "yi", "x"])
    by.vectorize("x", 8)
    bx.set_schedule("[lo, hi] -> { bx[y, x] -> [yo, yi, x] : 0 <= yi < 4 and 0 <= 4*yo <= hi - lo and "
                    "y = lo + min(4*yo, hi - lo + 1 - 4) + yi }", names=["yo", "yi", "x"],
                    bounds={"y": ("lo", "hi")})
    assert f.history()[-1].endswith(", bounds={y: (lo, hi)})")    # the line says the whole command
    bx.compute_at(by, "yo")
    f.assume("H >= 8")   # the code may rely on it: every tile is whole
    text = str(f.lower())
    assert "by[(yi + min((H - 8), (8 * yo)))" in text    # one expression for the steady and the last tile
    assert "bx_tile[10, W]" in text                       # 10 rows of bx per tile: 0..3, 4..7, 6..9
    k = f.compile("cpu")
    for H, W in ((29, 37), (8, 9), (64, 16)):
        img = rng.random((H + 2, W + 2), dtype=np.float32)
        np.testing.assert_allclose(k(img=img, H=H, W=W), blur_reference(img), rtol=1e-6)


def test_relative_schedule_bounds_must_be_parameters_of_the_map():
    f, bx, by = examples.blur()
    with pytest.raises(ms.ScheduleError, match="lo2"):
        bx.set_schedule("[lo, hi] -> { bx[y, x] -> [y, x] : lo <= y <= hi }", bounds={"y": ("lo2", "hi")})
    with pytest.raises(ms.ScheduleError, match="z"):
        bx.set_schedule("[lo, hi] -> { bx[y, x] -> [y, x] : lo <= y <= hi }", bounds={"z": ("lo", "hi")})


def test_blur_params_inferred_from_shapes():
    f, bx, by = examples.blur()
    img = rng.random((20, 30), dtype=np.float32)
    out = f.compile("cpu")(img=img)
    assert out.shape == (18, 28)
    np.testing.assert_allclose(out, blur_reference(img), rtol=1e-6)


@pytest.mark.parametrize("schedule", ["none", "tiled", "register-tiled"])
def test_gemm(schedule):
    f, C, acc = examples.gemm()
    if schedule == "tiled":
        i0, j0, i1, j1 = acc.tile("i", "j", 16, 32)
        acc.interchange("k", j1)
        acc.interchange("k", i1)
        acc.parallelize(i0)
        acc.vectorize(j1, 8)
        C.parallelize("i")
    elif schedule == "register-tiled":
        i0, j0, i1, j1 = acc.tile("i", "j", 8, 16)
        acc.reorder(i0, j0, "k", i1, j1)
        acc.unroll(i1, 8)
        acc.vectorize(j1, 16)
        acc.parallelize(i0)
    k = f.compile("cpu")
    A = rng.random((37, 29), dtype=np.float32)
    B = rng.random((29, 45), dtype=np.float32)
    np.testing.assert_allclose(k(A=A, B=B), A @ B, rtol=1e-5)


def test_gemm_with_packed_b():
    """B copied into 16-column panels (Bp[j / 16, k, j % 16]) so the inner loop reads contiguously."""
    N, M, K = ms.Param("N"), ms.Param("M"), ms.Param("K")
    i, j, k = ms.Var("i", 0, N), ms.Var("j", 0, M), ms.Var("k", 0, K)
    with ms.Function("gemm_packed") as f:
        A = ms.Input("A", [N, K], ms.float32)
        B = ms.Input("B", [K, M], ms.float32)
        Bp = ms.Computation("Bp", [k, j], B[k, j])
        panels = ms.Buffer("panels", [(M + 15) // 16, K, 16], ms.float32)
        Bp.store_in(panels, [j // 16, k, j % 16])
        C = ms.Computation("C", [i, j], ms.f32(0))
        acc = C.update([i, j, k], C[i, j] + A[i, k] * Bp[k, j])
    i0, j0, i1, j1 = acc.tile("i", "j", 4, 16)
    acc.reorder(j0, i0, "k", i1, j1)
    acc.unroll(i1, 4)
    acc.vectorize(j1, 16)
    acc.parallelize(j0)
    assert "panels[" in str(f.lower())
    a = rng.random((19, 23), dtype=np.float32)
    b = rng.random((23, 37), dtype=np.float32)
    np.testing.assert_allclose(f.compile("cpu")(A=a, B=b), a @ b, rtol=1e-5)


def test_partial_tiles_inside_unrolled_copies_stay_loops():
    """8x8 tiles with both inner loops unrolled: the full tile is 64 copies; in the partial tile along j
    (its trip count is M % 8) neither loop is unrolled: one body, not 8 copies of i each holding a plain
    j loop, nor the 8 + 1 bodies of a version for a whole tile, which could never run there."""
    N, M = ms.Param("N"), ms.Param("M")
    i, j = ms.Var("i", 0, N), ms.Var("j", 0, M)
    with ms.Function("scaled") as f:
        A = ms.Input("A", [N, M], ms.float32)
        C = ms.Computation("C", [i, j], A[i, j] * ms.f32(2) + ms.f32(1))
    i0, j0, i1, j1 = C.tile("i", "j", 8, 8)
    C.unroll(i1, 8)
    C.unroll(j1, 8)
    k = f.compile("cpu")
    # the full tile, j's tail, then i's tail (its trip count N % 8, versioned: 8 copies of a plain j
    # loop, and a plain i loop around j's two versions)
    assert k.source("llvm-unoptimized").count("store float") == 64 + 1 + (8 + (8 + 1))
    for n, m in ((19, 23), (8, 8), (3, 5), (64, 17)):
        a = rng.random((n, m), dtype=np.float32)
        np.testing.assert_allclose(k(A=a), a * 2 + 1, rtol=1e-6)


def test_an_unrolled_loop_around_a_loop_of_run_time_trips_is_one_loop():
    """Rows of 8 unrolled around a whole row each: the copies would run their rows one after another,
    nothing interleaved, so the back-end emits one plain loop (the code of one row, not 8 + 9)."""
    N, M = ms.Param("N"), ms.Param("M")
    i, j = ms.Var("i", 0, N), ms.Var("j", 0, M)
    with ms.Function("rows") as f:
        A = ms.Input("A", [N, M], ms.float32)
        C = ms.Computation("C", [i, j], A[i, j] * ms.f32(2) + ms.f32(1))
    i0, i1 = C.split("i", 8)
    C.unroll(i1, 8)
    k = f.compile("cpu")
    assert k.source("llvm-unoptimized").count("store float") == 1 + 1     # whole tiles, then i's tail
    for n, m in ((19, 23), (8, 8), (3, 5)):
        a = rng.random((n, m), dtype=np.float32)
        np.testing.assert_allclose(k(A=a), a * 2 + 1, rtol=1e-6)


def test_conv2d():
    N, H, W, CI, CO = (ms.Param(p) for p in ("N", "H", "W", "CI", "CO"))
    n, co, y, x = ms.Var("n", 0, N), ms.Var("co", 0, CO), ms.Var("y", 0, H), ms.Var("x", 0, W)
    ci, ky, kx = ms.Var("ci", 0, CI), ms.Var("ky", 0, 3), ms.Var("kx", 0, 3)
    with ms.Function("conv2d") as f:
        inp = ms.Input("inp", [N, CI, H + 2, W + 2], ms.float32)
        w = ms.Input("w", [CO, CI, 3, 3], ms.float32)
        bias = ms.Input("bias", [CO], ms.float32)
        out = ms.Computation("out", [n, co, y, x], bias[co])
        acc = out.update([n, co, y, x, ci, ky, kx],
                         out[n, co, y, x] + inp[n, ci, y + ky, x + kx] * w[co, ci, ky, kx])
    acc.reorder("n", "co", "ci", "ky", "kx", "y", "x")
    acc.parallelize("co")
    acc.vectorize("x", 8)
    k = f.compile("cpu")
    I = rng.random((2, 3, 12, 21), dtype=np.float32)
    Wt = rng.random((4, 3, 3, 3), dtype=np.float32)
    b = rng.random(4, dtype=np.float32)
    ref = np.zeros((2, 4, 10, 19), np.float32) + b[None, :, None, None]
    for dy in range(3):
        for dx in range(3):
            ref += np.einsum("nchw,oc->nohw", I[:, :, dy:dy + 10, dx:dx + 19], Wt[:, :, dy, dx])
    np.testing.assert_allclose(k(inp=I, w=Wt, bias=b, H=10, W=19), ref, rtol=1e-5)


def test_heat2d_time_loop_skewed():
    """Heat-2d: a time loop whose cycle (u at t reads u at t-1 in the same storage) Halide cannot express."""
    f, u, step = examples.heat2d()
    step.skew("t", "y", 1)
    step.skew("t", "x", 1)
    step.parallelize("y")
    step.vectorize("x", 4)
    a = rng.random((12, 14))[:, :12].copy()
    ref = a.copy()
    for _ in range(5):
        nxt = ref.copy()
        nxt[1:-1, 1:-1] = 0.25 * (ref[:-2, 1:-1] + ref[2:, 1:-1] + ref[1:-1, :-2] + ref[1:-1, 2:])
        ref = nxt
    out = f.compile("cpu")(A=a, T=5)
    np.testing.assert_allclose(out[5 % 2], ref, rtol=1e-12)
    step.parallelize("t")
    with pytest.raises(ms.IllegalScheduleError, match="parallel"):
        f.compile("cpu")


def seidel():
    N = ms.Param("N")
    i, j = ms.Var("i", 1, N), ms.Var("j", 1, N)
    ia, ja = ms.Var("i", 0, N), ms.Var("j", 0, N)
    with ms.Function("seidel") as f:
        A = ms.Input("A", [N, N], ms.float64)
        s = ms.Computation("s", [ia, ja], A[ia, ja])
        upd = s.update([i, j], 0.5 * (s[i - 1, j] + s[i, j - 1]))
    return f, upd


def test_wavefront_after_skew():
    """An in-place 2-D recurrence: no loop is parallel until skewing exposes the anti-diagonals."""
    f, upd = seidel()
    upd.parallelize("j")
    with pytest.raises(ms.IllegalScheduleError):
        f.compile("cpu")
    f, upd = seidel()
    upd.skew("i", "j", 1)
    upd.interchange("i", "j")
    upd.parallelize("i")
    a = rng.random((9, 9))
    ref = a.copy()
    for r in range(1, 9):
        for c in range(1, 9):
            ref[r, c] = 0.5 * (ref[r - 1, c] + ref[r, c - 1])
    np.testing.assert_allclose(f.compile("cpu")(A=a), ref, rtol=1e-12)


def test_triangular_domain():
    N = ms.Param("N")
    i = ms.Var("i", 0, N)
    j = ms.Var("j", 0, N)
    with ms.Function("tri") as f:
        A = ms.Input("A", [N, N], ms.float64)
        L = ms.Computation("L", [i, j], A[i, j] * 2.0, where=(j <= i))
    L.vectorize("j", 4)
    out = f.compile("cpu")(A=np.arange(36.0).reshape(6, 6))
    ref = np.tril(np.arange(36.0).reshape(6, 6) * 2)
    np.testing.assert_array_equal(out, ref)


def test_a_size_no_loop_bound_involves_still_reaches_the_indices():
    """Code generation drops the sizes no loop bound involves from isl's problem (the loops do not need
    them); an index that reads one still gets its value."""
    N, M = ms.Param("N"), ms.Param("M")
    i = ms.Var("i", 0, N)
    with ms.Function("last_column") as f:
        A = ms.Input("A", [N, M], ms.float64)
        ms.Computation("last", [i], A[i, M - 1] + A[i, M - 2])
    a = np.arange(35.0).reshape(7, 5)
    np.testing.assert_array_equal(f.compile("cpu")(A=a), a[:, -1] + a[:, -2])


def _row_scan(step):
    """out[y, x] = img[y, x], then out[y, x] = step(out[y, x - 1], img[y, x]) along each row."""
    H, W = ms.Param("H"), ms.Param("W")
    y, x = ms.Var("y", 0, H), ms.Var("x", 0, W)
    x1 = ms.Var("x", 1, W)
    with ms.Function("iir") as f:
        img = ms.Input("img", [H, W], ms.float32)
        out = ms.Computation("out", [y, x], img[y, x])
        upd = out.update([y, x1], step(out[y, x1 - 1], img[y, x1]))
    return f, out, upd


def test_iir_recurrence():
    f, out, _ = _row_scan(lambda prev, here: ms.f32(0.5) * prev + ms.f32(0.5) * here)
    out.parallelize("y")
    out.updates[0].parallelize("y")
    im = rng.random((7, 33), dtype=np.float32)
    ref = im.copy()
    for c in range(1, 33):
        ref[:, c] = np.float32(0.5) * ref[:, c - 1] + np.float32(0.5) * im[:, c]
    np.testing.assert_allclose(f.compile("cpu")(img=im), ref, rtol=1e-6)
    out.updates[0].interchange("y", "x")   # x outer is still legal: rows are independent
    np.testing.assert_allclose(f.compile("cpu")(img=im), ref, rtol=1e-6)


def test_iir_illegal_parallel_and_interchange():
    f, out, upd = _row_scan(lambda prev, here: prev + here)
    upd.parallelize("x")
    with pytest.raises(ms.IllegalScheduleError, match=r"parallelize\(x\)"):
        f.compile("cpu")


def test_illegal_interchange():
    N = ms.Param("N")
    i, j = ms.Var("i", 1, N), ms.Var("j", 0, N - 1)
    with ms.Function("diag") as f:
        A = ms.Input("A", [N, N], ms.float64)
        c = ms.Computation("c", [ms.Var("i", 0, N), ms.Var("j", 0, N)], A[ms.Var("i", 0, N), ms.Var("j", 0, N)])
        upd = c.update([i, j], c[i - 1, j + 1] + 1.0)
    upd.interchange(i, j)
    with pytest.raises(ms.IllegalScheduleError) as err:
        f.compile("cpu")
    assert err.value.command == "c_update0.interchange(i, j)"
    assert err.value.source == "c_update0" and err.value.sink == "c_update0"
    # the expert escape hatch compiles it anyway
    f.compile("cpu", check=False)


def nb_fused():
    """g feeding two outputs h and k, all three fused in one loop with `after`."""
    N = ms.Param("N")
    i = ms.Var("i", 0, N)
    with ms.Function("nb") as f:
        a = ms.Input("a", [N], ms.float32)
        g = ms.Computation("g", [i], a[i] * 2)
        h = ms.Computation("h", [i], g[i] + 1, output=True)
        k = ms.Computation("k", [i], g[i] - 1, output=True)
    h.after(g, "i")
    k.after(h, "i")
    return f


def test_fusion_with_after():
    f = nb_fused()
    text = str(f.lower())
    assert text.count("for (") == 1, text
    x = rng.random(50, dtype=np.float32)
    hh, kk = f.compile("cpu")(a=x)
    np.testing.assert_allclose(hh, x * 2 + 1, rtol=1e-6)
    np.testing.assert_allclose(kk, x * 2 - 1, rtol=1e-6)


def test_fusion_that_breaks_a_dependence_raises():
    N = ms.Param("N")
    i = ms.Var("i", 0, N)
    with ms.Function("bad") as f:
        a = ms.Input("a", [N + 1], ms.float32)
        g = ms.Computation("g", [ms.Var("i", 0, N + 1)], a[ms.Var("i", 0, N + 1)] * 2)
        h = ms.Computation("h", [i], g[i + 1] + 1)
    h.after(g, "i")
    with pytest.raises(ms.IllegalScheduleError, match="after"):
        f.compile("cpu")
    g.shift("i", -1)   # g runs one iteration ahead: the fused loop is legal again
    x = rng.random(11, dtype=np.float32)
    np.testing.assert_allclose(f.compile("cpu")(a=x), x[1:] * 2 + 1, rtol=1e-6)


def fibonacci():
    """fib[i] = fib[i - 1] + fib[i - 2] from fib[0] = fib[1] = 1; `last` reads fib[N - 1]."""
    N = ms.Param("N")
    i2 = ms.Var("i", 2, N)
    with ms.Function("fib") as f:
        fib = ms.Computation("fib", [ms.Var("i", 0, 2)], ms.i64(1))
        fib.update([i2], fib[i2 - 1] + fib[i2 - 2])
        ms.Computation("last", [ms.Var("z", 0, 1)], fib[N - 1])
    return f, fib


def test_storage_folding_fibonacci():
    f, fib = fibonacci()
    fib.storage_fold("i", 3)
    assert "fib[3]" in str(f.lower()).replace(" ", "") or "fib[3" in str(f.lower())
    res = f.compile("cpu")(N=40)
    assert res[0] == 102334155


def test_storage_folding_too_small_raises():
    f, fib = fibonacci()
    fib.storage_fold("i", 1)
    with pytest.raises(ms.IllegalScheduleError):
        f.compile("cpu")


def _box_sum_then_average():
    """P[y, x] = sum of img[y, x..x+2] as an initialisation and a reduction update; out averages rows of P."""
    H, W = ms.Param("H"), ms.Param("W")
    y, x, r = ms.Var("y", 0, H), ms.Var("x", 0, W), ms.Var("r", 0, 3)
    yp = ms.Var("y", 0, H + 1)
    with ms.Function("boxsum") as f:
        img = ms.Input("img", [H + 1, W + 2], ms.float32)
        P = ms.Computation("P", [yp, x], ms.f32(0))
        acc = P.update([yp, x, r], P[yp, x] + img[yp, x + r])
        out = ms.Computation("out", [y, x], (P[y, x] + P[y + 1, x]) * ms.f32(0.5))
    return f, P, acc, out


def _box_sum_reference(img):
    P = img[:, :-2] + img[:, 1:-1] + img[:, 2:]
    return (P[:-1] + P[1:]) * np.float32(0.5)


def test_compute_at_of_a_computation_with_updates():
    f, P, acc, out = _box_sum_then_average()
    y0, x0, y1, x1 = out.tile("y", "x", 8, 16)
    out.parallelize(y0)
    out.vectorize(x1, 8)
    P.compute_at(out, x0)           # P's update comes along, into the same 9x16 tile
    acc.vectorize("x", 8)
    text = str(f.lower())
    assert "P_tile" in text and "img[" not in text.split("P_tile")[0]
    k = f.compile("cpu")
    for H, W in ((20, 37), (8, 16), (3, 5)):
        img = rng.random((H + 1, W + 2), dtype=np.float32)
        np.testing.assert_allclose(k(img=img, H=H, W=W), _box_sum_reference(img), rtol=1e-6)


def _stencil_then_scan():
    """p doubles img; c adds three rows of p; c's update scans each row of c from the left; q, another
    output, reads img alone."""
    H, W = ms.Param("H"), ms.Param("W")
    y, x, yb, x1 = ms.Var("y", 0, H), ms.Var("x", 0, W), ms.Var("y", 0, H + 2), ms.Var("x", 1, W)
    with ms.Function("stencil_scan") as f:
        img = ms.Input("img", [H + 2, W], ms.float32)
        p = ms.Computation("p", [yb, x], img[yb, x] * 2)
        q = ms.Computation("q", [y, x], img[y, x] + 1)
        c = ms.Computation("c", [y, x], p[y, x] + p[y + 1, x] + p[y + 2, x])
        scan = c.update([y, x1], c[y, x1 - 1] * ms.f32(0.5) + c[y, x1])
    return f, p, q, c, scan


@pytest.mark.parametrize("move", ["split", "reverse", "between"])
def test_a_producer_computed_at_a_consumer_moves_with_it(move):
    """A producer computed at a consumer's loop stays in that loop when a later placement moves the
    consumer (beside its scan in their loop over rows, its loop over columns split or reversed so that
    the scan can follow it) or puts another nest between them: its tile is computed and read in one
    nest, just before what holds the consumer in each iteration of that loop."""
    f, p, q, c, scan = _stencil_then_scan()
    if move == "split":
        c.split("x", 3)
    elif move == "reverse":
        c.reverse("x")
    p.compute_at(c, "y")
    if move == "between":
        q.before(c, ms.root)
    else:
        c.after(scan, "x")
    nests = [n for n in re.split(r"\n  for ", str(f.lower())) if "p_tile[" in n]
    assert len(nests) == 1 and "c[y, " in nests[0], nests
    img = rng.random((9, 7), dtype=np.float32)
    got_q, got_c = f.compile("cpu")(img=img)
    np.testing.assert_allclose(got_q, img[:7] + 1, rtol=1e-6)
    c_ref = 2 * (img[:-2] + img[1:-1] + img[2:])
    for x in range(1, c_ref.shape[1]):
        c_ref[:, x] = c_ref[:, x - 1] * np.float32(0.5) + c_ref[:, x]
    np.testing.assert_allclose(got_c, c_ref, rtol=1e-5)


def test_two_tiles_of_one_loop_share_their_loops_when_placed_after_each_other():
    """Two running sums computed per strip of their consumer, the second reading the first: `after`, made
    for placing nests, places one next to the other in their tile too, sharing their loops (as a Halide
    Tuple's elements run); the history replays it, and `after` between a tile and a computation outside
    it is still refused by name."""
    N = ms.Param("N")

    def build(name):
        with ms.Function(name) as f:
            a = ms.Input("a", [N + 8], ms.float32)
            i, k, k1 = ms.Var("i", 0, N), ms.Var("k", 0, 8), ms.Var("k", 1, 8)
            s = ms.Computation("s", [i, k], a[i + k])
            t = ms.Computation("t", [i, k], a[i + k] * 2)
            s.update([i, k1], s[i, k1 - 1] * ms.f32(0.5) + s[i, k1])
            t.update([i, k1], t[i, k1 - 1] - s[i, k1 - 1] * ms.f32(0.25))
            ms.Computation("out", [i, k], s[i, k] + t[i, k], output=True)
        return f

    f = build("twin_scans")
    s, t, out = (f.computation(n) for n in ("s", "t", "out"))
    io, ii = out.split("i", 4)
    s.compute_at(out, io)
    t.compute_at(out, io)
    t.after(s, "k")
    t.updates[0].after(s.updates[0], "k")
    with pytest.raises(ms.ScheduleError, match="s is computed at out's loop"):
        out.after(s, ms.root)
    lines = [line.strip() for line in str(f.lower()).splitlines()]
    together = [k for k in range(len(lines) - 1) if lines[k].startswith("s_tile[") and lines[k + 1].startswith("t_tile[")]
    assert len(together) == 2, "\n".join(lines)     # each stage's two tiles in one loop body
    values = rng.random(13, dtype=np.float32)
    ref_s, ref_t = np.stack([values[j:j + 8] for j in range(5)]), 2 * np.stack([values[j:j + 8] for j in range(5)])
    for kk in range(1, 8):
        ref_t[:, kk] = ref_t[:, kk - 1] - ref_s[:, kk - 1] * np.float32(0.25)
        ref_s[:, kk] = ref_s[:, kk - 1] * np.float32(0.5) + ref_s[:, kk]
    want = ref_s + ref_t
    np.testing.assert_allclose(f.compile("cpu")(a=values), want, rtol=1e-5)
    again = build("twin_scans_again")
    again.replay(f.history())
    assert str(again.lower()).replace("twin_scans_again", "twin_scans") == str(f.lower())


def test_compute_at_with_updates_checks_the_reduction_inside_the_tile():
    f, P, acc, out = _box_sum_then_average()
    y0, x0, y1, x1 = out.tile("y", "x", 8, 16)
    P.compute_at(out, x0)
    acc.interchange("x", "r")
    acc.parallelize("r")            # the reduction over r carries a dependence in every tile
    with pytest.raises(ms.IllegalScheduleError, match="P_update0"):
        f.lower()


def test_compute_at_of_an_update_or_before_updates_is_refused():
    f, P, acc, out = _box_sum_then_average()
    with pytest.raises(ms.ScheduleError, match="call P.compute_at"):
        acc.compute_at(out, "y")
    P.compute_at(out, "y")
    with pytest.raises(ms.ScheduleError, match="define updates before scheduling"):
        P.update([ms.Var("y", 0, 4), ms.Var("x", 0, 4)], ms.f32(1))


def test_compute_at_with_a_scan_across_the_tile_raises():
    """An update that reads its left neighbour would read outside a recomputed tile."""
    W = ms.Param("W")
    x, x1 = ms.Var("x", 0, W), ms.Var("x", 1, W)
    with ms.Function("scan") as f:
        a = ms.Input("a", [W], ms.float32)
        s = ms.Computation("s", [x], a[x])
        s.update([x1], s[x1 - 1] + s[x1])
        out = ms.Computation("out", [x], s[x] * 2)
    x0, xi = out.split("x", 8)
    s.compute_at(out, x0)
    with pytest.raises(ms.IllegalScheduleError, match=r"s\.compute_at\(out, x0\)"):
        f.lower()


def test_assume_relates_sizes_and_is_checked_at_each_call():
    """Two outputs fused with `after` over sizes N and M: promising N = M removes the guards, and
    the kernel refuses a call that breaks the promise."""
    with ms.Function("twin") as f:
        N, M = ms.Param("N"), ms.Param("M")
        a = ms.Input("a", [N], ms.float32)
        i, j = ms.Var("i", 0, N), ms.Var("j", 0, M)
        p = ms.Computation("p", [i], a[i] * 2.0, output=True)
        q = ms.Computation("q", [j], a[j] + 1.0, output=True)
    q.after(p, "i")
    guarded = str(f.lower())
    f.assume("N = M")
    kernel = f.compile("cpu")
    assert "if (" in guarded and "if (" not in str(f.lower())
    x = np.arange(7, dtype=np.float32)
    out_p, out_q = kernel(a=x, N=7, M=7)
    np.testing.assert_array_equal(out_p, x * 2)
    np.testing.assert_array_equal(out_q, x + 1)
    with pytest.raises(ms.ArgumentError, match="assuming N = M"):
        kernel(a=x, N=7, M=5)
    with pytest.raises(ms.DomainError, match="not a constraint"):
        f.assume("N === M")
    with pytest.raises(ms.DomainError, match="no sizes"):
        f.assume("N < 0")


def test_clamped_reads_get_a_steady_state_without_clamps():
    """A 3-point blur with edges clamped: its vector loop over the interior indexes the input with
    plain affine indices; the edges keep the clamps, and every size gives numpy's values."""
    with ms.Function("edge_blur") as f:
        H, W = ms.Param("H"), ms.Param("W")
        a = ms.Input("a", [H, W], ms.float32)
        y, x = ms.Var("y", 0, H), ms.Var("x", 0, W)
        at = lambda yy, xx: a[ms.clamp(yy, 0, H - 1), ms.clamp(xx, 0, W - 1)]
        b = ms.Computation("b", [y, x], at(y, x - 1) + at(y, x) + at(y, x + 1) + at(y - 1, x), output=True)
    b.vectorize("x", 8)
    text = str(f.lower())
    steady = _clamp_free(text, "b", "a")
    assert steady, text
    kernel = f.compile("cpu")
    for h, w in ((1, 1), (3, 2), (5, 8), (9, 37)):
        img = rng.random((h, w), dtype=np.float32)
        p = np.pad(img, 1, mode="edge")
        want = p[1:-1, :-2] + p[1:-1, 1:-1] + p[1:-1, 2:] + p[:-2, 1:-1]
        np.testing.assert_allclose(kernel(a=img), want, rtol=1e-6)


def test_clamped_reads_of_a_sliding_window_get_a_steady_state_too():
    """The blur of Halide's app under Adams2019: the edge-clamped rows are a sliding window stored per
    strip of the output; each part of the window (the strip's first rows, then each later row) reads
    the interior of the input with a plain index along its vector loop, and every size gives numpy's
    values."""
    with ms.Function("window_blur") as f:
        H, W = ms.Param("H"), ms.Param("W")
        a = ms.Input("a", [H, W], ms.float32)
        y, x, ye = ms.Var("y", 0, H), ms.Var("x", 0, W), ms.Var("y", 0, H + 2)
        edge = ms.Computation("edge", [ye, x], a[ms.clamp(ye - 1, 0, H - 1), ms.clamp(x - 1, 0, W - 1)])
        rows = ms.Computation("rows", [y, x], edge[y, x] + edge[y + 1, x] + edge[y + 2, x], output=True)
    yo, yi = rows.split("y", 8)
    edge.compute_at(rows, yi)
    edge.store_at(yo)
    edge.vectorize("x", 8)
    text = str(f.lower())
    plain = _clamp_free(text, "edge_tile", "a")
    assert plain, text
    kernel = f.compile("cpu")
    for h, w in ((1, 1), (3, 2), (9, 8), (21, 37)):
        img = rng.random((h, w), dtype=np.float32)
        p = np.pad(img, ((1, 1), (1, 0)), mode="edge")[:, :w]     # p[y, x] = edge[y, x]
        np.testing.assert_allclose(kernel(a=img), p[:-2] + p[1:-1] + p[2:], rtol=1e-6)


def test_clamped_reads_along_a_vector_loop_outside_the_innermost_get_a_steady_state():
    """Interpolate's finest level in Halide's schedule: channels innermost and unrolled, x vectorized
    outside them, the input read with its edges clamped. Along the vector loop the clamp made a gather
    (lane by lane loads); the interior now reads plain indices there too, and every size gives numpy's
    values."""
    with ms.Function("premultiply") as f:
        H, W = ms.Param("H"), ms.Param("W")
        a = ms.Input("a", [4, H, W], ms.float32)
        c, y, x = ms.Var("c", 0, 4), ms.Var("y", 0, H), ms.Var("x", 0, W)
        at = lambda cc, xx: a[cc, y, ms.clamp(xx, 0, W - 1)]
        p = ms.Computation("p", [y, x, c], at(c, x - 1) * at(3, x - 1), output=True)
    p.vectorize("x", 8)
    p.unroll("c", 4)
    text = str(f.lower())
    plain = _clamp_free(text, "p", "a")
    assert plain, text
    kernel = f.compile("cpu")
    for h, w in ((1, 1), (2, 7), (3, 8), (5, 37)):
        img = rng.random((4, h, w), dtype=np.float32)
        shifted = np.concatenate([img[:, :, :1], img[:, :, :-1]], axis=2)    # x - 1, clamped at 0
        np.testing.assert_allclose(kernel(a=img), (shifted * shifted[3]).transpose(1, 2, 0), rtol=1e-6)


@pytest.mark.parametrize("own_width", [True, False])
def test_a_tile_of_clamped_reads_keeps_its_steady_state_where_the_consumer_has_partial_tiles(own_width):
    """Erode's rows under Mullapudi2016: a clamped row stage computed per 64-column strip of its
    consumer, whose strip is one vector. isl generated the consumer's partial last strip after the strip
    loop, away from the tile, and (where the input's width is the output's) the rows of an input of at
    most 3 columns, all edge, before it. Both stages were then generated again with no split at all, and
    every vector read the input lane by lane. Now the split is given up a step at a time (the full and
    partial tiles, then the cut of the edges): the tile keeps a clamp-free steady state, and every size
    (partial strips, an output wider than the input) gives numpy's values."""
    with ms.Function("strip_min") as f:
        H, W = ms.Param("H"), ms.Param("W")
        WA = ms.Param("WA") if own_width else W
        a = ms.Input("a", [H, WA], ms.uint8)
        y, x = ms.Var("y", 0, H), ms.Var("x", 0, W)
        at = lambda xx: a[y, ms.clamp(xx, 0, WA - 1)]
        rows = ms.Computation("rows", [y, x], ms.min(ms.min(at(x - 1), at(x)), at(x + 1)))
        out = ms.Computation("out", [y, x], rows[y, x] + ms.u8(1), output=True)
    xo, xi = out.split("x", 64)
    out.interchange("y", xo)
    out.vectorize(xi, 64)
    rows.compute_at(out, xo)
    rows.vectorize("x", 16)
    out.parallelize(xo)
    text = str(f.lower())
    assert _clamp_free(text, "rows_tile", "a"), text
    kernel = f.compile("cpu")
    sizes = [(1, 1, 1), (3, 2, 2), (4, 64, 64), (5, 130, 130), (2, 200, 200)] + [(3, 70, 150)] * own_width
    for h, wa, w in sizes:
        img = rng.integers(0, 256, (h, wa), dtype=np.uint8)
        p = np.pad(img, ((0, 0), (1, w - wa + 1)), mode="edge")
        want = np.minimum(np.minimum(p[:, :-2], p[:, 1:-1]), p[:, 2:]) + np.uint8(1)
        np.testing.assert_array_equal(kernel(a=img, W=w), want)


def _clamp_free(text, stored, read):
    """The printed statements storing into `stored` whose every read of `read` has a clamp-free last
    index (no select, no max): a steady state's."""
    return [line for line in text.splitlines() if line.lstrip().startswith(stored + "[")
            and all("?" not in last and "max(" not in last for last in _last_indices(line, read))]


def _last_indices(line, buffer):
    """The last index of each access `buffer[...]` in a printed statement."""
    out, start = [], 0
    while (k := line.find(buffer + "[", start)) >= 0:
        depth, parts, cur = 0, [], ""
        for ch in line[k + len(buffer) + 1:]:
            if ch == "]" and depth == 0:
                break
            if ch in "([":
                depth += 1
            elif ch in ")]":
                depth -= 1
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
            else:
                cur += ch
        out.append(cur)
        start = k + 1
    return out


def test_sliding_window_computes_each_row_once():
    f, bx, by = examples.blur()
    bx.compute_at(by, "y")
    bx.store_root()
    bx.storage_fold("y", 3)
    text = str(f.lower())
    # three rows of storage; rows 0-2 before the first output row, then one new row per output row
    assert "float32 bx[3, W]" in text and "for (y = 0; y < 3; y++)" in text and "bx_tile" not in text, text
    img = rng.random((40, 29), dtype=np.float32)
    rows = (img[:, :-2] + img[:, 1:-1] + img[:, 2:]) / 3
    np.testing.assert_allclose(f.compile("cpu")(img=img), (rows[:-2] + rows[1:-1] + rows[2:]) / 3, rtol=1e-6)
    by.parallelize("y")
    with pytest.raises(ms.IllegalScheduleError, match="parallel"):
        f.lower()


def test_bitwise_operators_and_shifted_indices():
    """`^ & | ~ << >>` on integer expressions; the indices `x >> 1` and `x & 3` are a floor division
    and a modulo for isl, so the producer's footprint under compute_at is exact."""
    N = ms.Param("N")
    x = ms.Var("x", 0, N)
    with ms.Function("bits") as f:
        img = ms.Input("img", [N], ms.uint8)
        p = ms.Computation("p", [x], img[x] ^ 0x5A)
        c = ms.Computation("c", [x], ((p[x >> 1] << 1) | (p[x & 3] >> 2)) & ~p[x])
    x0, x1 = c.split("x", 16)
    c.vectorize(x1, 16)
    p.compute_at(c, x0)
    assert "floormod" in str(f.lower())
    k = f.compile("cpu")
    for n in (100, 5):
        a = rng.integers(0, 256, n, dtype=np.uint8)
        pv, idx = a ^ 0x5A, np.arange(n)
        np.testing.assert_array_equal(k(img=a), ((pv[idx >> 1] << 1) | (pv[idx & 3] >> 2)) & ~pv)


def test_derived_size_keeps_a_piecewise_bound_in_one_piece():
    """A computation over [0, max(N, M)) read by two outputs: with the max as a derived size, its
    domain and loops are affine in it (no case per piece); the kernel computes it on entry."""
    import islpy as isl
    with ms.Function("widest") as f:
        N, M = ms.Param("N"), ms.Param("M")
        a = ms.Input("a", [N], ms.float32)
        b = ms.Input("b", [M], ms.float32)
        W = f.derived_size("W", isl.PwAff("[N, M] -> { [max(N, M)] }"))
        i = ms.Var("i", 0, W)
        s = ms.Computation("s", [i], ms.cast(ms.float32, i) * 0.5)
        n, m = ms.Var("n", 0, N), ms.Var("m", 0, M)
        ms.Computation("p", [n], a[n] + s[n], output=True)
        ms.Computation("q", [m], b[m] - s[m], output=True)
    lowered = f.lower()
    assert lowered.params == ["M", "N"] and [name for name, _ in lowered.derived] == ["W"]
    assert "max" not in str(lowered).split("\n", 2)[2]   # only in W's definition
    kernel = f.compile("cpu")
    for sizes in ((5, 9), (9, 5)):
        x, y = np.arange(sizes[0], dtype=np.float32), np.ones(sizes[1], dtype=np.float32)
        out_p, out_q = kernel(a=x, b=y)
        np.testing.assert_array_equal(out_p, x + np.arange(sizes[0]) * 0.5)
        np.testing.assert_array_equal(out_q, y - np.arange(sizes[1]) * 0.5)


def test_store_at_slides_within_each_strip():
    """store_at an outer loop, compute_at an inner one: within each strip of 8 rows, every row of bx
    is computed once (10 per strip: 8 plus the 2 the next strip recomputes), in a buffer of the
    strip's rows; strips may run in parallel."""
    f, bx, by = examples.blur()
    yo, yi = by.split("y", 8)
    bx.compute_at(by, yi)
    bx.store_at(yo)
    by.parallelize(yo)
    lowered = f.lower()
    tile = next(s.buffer for s in L.walk_stmts(lowered.body) if isinstance(s, L.Allocate))
    assert tile.name == "bx_tile" and [evaluate(d, {"H": 20, "W": 3}) for d in tile.shape] == [10, 3]
    img = rng.random((37, 29), dtype=np.float32)
    rows = (img[:, :-2] + img[:, 1:-1] + img[:, 2:]) / 3
    np.testing.assert_allclose(f.compile("cpu")(img=img), (rows[:-2] + rows[1:-1] + rows[2:]) / 3, rtol=1e-6)
    stores = stored_points(lowered, {"H": 20, "W": 3}, "bx_tile")
    assert sum(stores.values()) == 3 * (10 + 10 + 6)   # strips of 8, 8 and 4 rows


def test_tiles_of_many_pieces_take_a_hull_box_with_the_same_values(monkeypatch):
    """A tile with more pieces than MAX_EXACT_BOX_PIECES gets the box of its simple hull (a dimension
    the hull leaves unbounded spans the whole domain), and a statement domain of many pieces has its
    bounds simplified before they are checked: the paths autoscheduled pipelines of many split tails
    take. Forced here on a sliding window, they hold every tile and give the same values."""
    from mascarpone.middleend import layout_check, statements
    monkeypatch.setattr(statements, "MAX_EXACT_BOX_PIECES", 0)
    monkeypatch.setattr(layout_check, "MAX_PLAIN_DOMAIN_PIECES", 0)
    f, bx, by = examples.blur()
    yo, yi = by.split("y", 8)
    bx.compute_at(by, yi)
    bx.store_at(yo)
    img = rng.random((37, 29), dtype=np.float32)
    rows = (img[:, :-2] + img[:, 1:-1] + img[:, 2:]) / 3
    np.testing.assert_allclose(f.compile("cpu")(img=img), (rows[:-2] + rows[1:-1] + rows[2:]) / 3, rtol=1e-6)
    tile = next(s.buffer for s in L.walk_stmts(f.lower().body) if isinstance(s, L.Allocate))
    assert [evaluate(d, {"H": 20, "W": 3}) for d in tile.shape][1] == 3   # the hull keeps the tile's width


def test_store_at_refuses_a_loop_inside_the_compute_level():
    f, bx, by = examples.blur()
    yo, yi = by.split("y", 8)
    bx.compute_at(by, yo)
    bx.store_at(yi)
    with pytest.raises(ms.ScheduleError, match="storage loop"):
        f.lower()


def test_store_at_needs_the_loops_inside_the_storage_loop_in_order():
    f, bx, by = examples.blur()
    yo, yi = by.split("y", 8)
    bx.compute_at(by, yi)
    bx.store_at(yo)
    by.parallelize(yi)
    with pytest.raises(ms.IllegalScheduleError, match="parallel"):
        f.lower()


def test_derived_size_refuses_what_it_cannot_compute():
    """Isl text of the sizes is taken; a non-affine text, a value that is not a function of the sizes
    or that uses another derived size is refused by name, and the function stays usable."""
    import islpy as isl
    f, bx, by = examples.blur()
    assert f.derived_size("W2", "max(H, W)").name == "W2"
    with pytest.raises(ms.DomainError, match="not an affine expression"):
        f.derived_size("W3", "max(H,, W)")
    with pytest.raises(ms.DomainError, match="must be an isl PwAff"):
        f.derived_size("W3", 5)
    with pytest.raises(ms.DomainError, match="uses the derived size"):
        f.derived_size("W3", isl.PwAff("[W2] -> { [(W2 + 1)] }"))
    with pytest.raises(ms.DomainError, match="already has a parameter"):
        f.derived_size("H", "W")
    assert [name for name, _ in f.lower().derived] == ["W2"]


def test_code_generation_beyond_the_isl_operation_limit_is_refused(monkeypatch):
    """A schedule whose code generation would run on is refused by name, not left hanging."""
    from mascarpone.middleend import codegen
    monkeypatch.setattr(codegen, "MAX_OPERATIONS", 50)
    N = ms.Param("N")
    i = ms.Var("i", 0, N)
    with ms.Function("tiny") as f:
        a = ms.Input("a", [N], ms.float32)
        b = ms.Computation("b", [i], a[i] * 2)
    b.split("i", 8)
    with pytest.raises(ms.ScheduleError, match=r"code generation for b did not finish within 50 isl operations"):
        f.compile("cpu")
