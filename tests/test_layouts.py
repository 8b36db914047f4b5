"""Layer III is checked: a layout runs with the program's results or is refused, naming what breaks."""
import islpy as isl
import numpy as np
import pytest

import mascarpone as ms
from mascarpone import examples
from mascarpone.middleend import loopir as L

rng = np.random.default_rng(11)
H, W, N = ms.Param("H"), ms.Param("W"), ms.Param("N")


def blur_reference(img):
    rows = (img[:, :-2] + img[:, 1:-1] + img[:, 2:]) / 3
    return (rows[:-2] + rows[1:-1] + rows[2:]) / 3


def doubled():
    """s[i] = 2 a[i], o[i] = s[i] + 1."""
    i = ms.Var("i", 0, N)
    with ms.Function("doubled") as f:
        a = ms.Input("a", [N], ms.float32)
        s = ms.Computation("s", [i], a[i] * 2)
        ms.Computation("o", [i], s[i] + 1)
    return f, s


def rows(read_below):
    """p[y, x] = 2 img[y, x] over H + 2 rows; c reads p at its row and the row two below (or the mirrored
    column of its own row)."""
    y, x = ms.Var("y", 0, H), ms.Var("x", 0, W)
    yb = ms.Var("y", 0, H + 2)
    with ms.Function("rows") as f:
        img = ms.Input("img", [H + 2, W], ms.float32)
        p = ms.Computation("p", [yb, x], img[yb, x] * 2)
        other = p[y + 2, x] if read_below else p[y, W - 1 - x]
        c = ms.Computation("c", [y, x], p[y, x] + other)
    return f, p, c


def row_sums():
    """s[i] = sum over k of a[i, k] (an initialisation and an update), o[i] = 2 s[i]."""
    i, k = ms.Var("i", 0, N), ms.Var("k", 0, 4)
    with ms.Function("row_sums") as f:
        a = ms.Input("a", [N, 4], ms.float32)
        s = ms.Computation("s", [i], ms.f32(0))
        u = s.update([i, k], s[i] + a[i, k])
        o = ms.Computation("o", [i], s[i] * 2)
    return f, s, u, o


# bounds ----------------------------------------------------------------------------------------

def test_a_buffer_follows_an_update_given_after_its_box_was_found():
    """The box a computation writes is kept between preparations while nothing it depends on changes:
    an update added later, or other sizes, give a new one."""
    i, j = ms.Var("i", 0, N), ms.Var("j", 0, 3)
    with ms.Function("grows") as f:
        a = ms.Input("a", [N], ms.float32)
        t = ms.Computation("t", [i], a[i] * 2)
        ms.Computation("o", [i], t[i] + 1, output=True)
        f._prepare()
        assert str(t.buffer.shape[0]) == "N"
        t.update([j], ms.f32(0), at=[N + j])    # three more elements, past what t's definition writes
        f._prepare()
        assert str(t.buffer.shape[0]) == "(N + 3)"
    f._prepare({"N": 5})
    assert str(t.buffer.shape[0]) in ("8", "(N + 3)")
    x = rng.random(6, dtype=np.float32)
    np.testing.assert_allclose(f.compile("cpu")(a=x), x * 2 + 1)


def test_a_buffer_smaller_than_what_is_written_is_refused():
    f, s = doubled()
    s.store_in(ms.Buffer("small", [3], ms.float32), [s.vars[0]])
    with pytest.raises(ms.OutOfBoundsError, match=r"s writes small outside the buffer: at s\[3\]") as err:
        f.lower()
    assert (err.value.computation, err.value.buffer) == ("s", "small") and err.value.instance.startswith("s[3]")
    assert err.value.command == "s.store_in(Buffer(small, [3], float32))"


def test_a_producer_of_more_rows_than_its_buffer_is_refused():
    f, p, c = rows(read_below=True)
    y, x = p.vars
    p.store_in(ms.Buffer("pb", [H, W], ms.float32), [y, x])
    with pytest.raises(ms.OutOfBoundsError, match=r"p writes pb outside the buffer") as err:
        f.compile("cpu")
    assert err.value.buffer == "pb" and err.value.instance.startswith("p[")


def test_transposed_and_padded_buffers_run_with_the_program_results():
    img = rng.random((9, 7), dtype=np.float32)
    expected = img[:-2] * 2 + img[2:] * 2
    f, p, c = rows(read_below=True)
    y, x = p.vars
    p.store_in(ms.Buffer("pt", [W, H + 2], ms.float32), [x, y])
    np.testing.assert_allclose(f.compile("cpu")(img=img), expected, rtol=1e-6)
    f, p, c = rows(read_below=True)
    y, x = p.vars
    p.store_in(ms.Buffer("padded", [H + 6, W + 3], ms.float32), [y + 3, x + 1])
    np.testing.assert_allclose(f.compile("cpu")(img=img), expected, rtol=1e-6)


def test_an_index_computed_from_data_is_bounded_by_its_type_clamps_and_guards():
    x = ms.Var("x", 0, N)
    b = ms.Var("b", 0, 16)

    def histogram(bounded):
        with ms.Function("hist") as f:
            v = ms.Input("v", [N], ms.int32)
            h = ms.Computation("h", [b], ms.i32(0))
            if bounded == "clamped":
                at = ms.clamp(v[x], 0, 15)
                h.update([x], h[at] + 1, at=[at])
            else:        # unbounded, or counted only where the predicate keeps it inside
                guard = (v[x] >= 0) & (v[x] < 16) if bounded == "guarded" else None
                h.update([x], h[v[x]] + 1, at=[v[x]], where=guard)
        return f
    with pytest.raises(ms.OutOfBoundsError, match="cannot bound|outside"):
        histogram(None).lower()
    data = rng.integers(-5, 25, 50).astype(np.int32)
    expected = np.bincount(np.clip(data, 0, 15), minlength=16)
    np.testing.assert_array_equal(histogram("clamped").compile("cpu")(v=data), expected)
    inside = data[(data >= 0) & (data < 16)]
    np.testing.assert_array_equal(histogram("guarded").compile("cpu")(v=data), np.bincount(inside, minlength=16))


def test_a_read_beyond_what_is_computed_becomes_a_size_requirement():
    """c reads p one element further than p is defined for some sizes (M > N - 1): the kernel refuses
    those sizes on each call instead of reading outside p's storage."""
    M = ms.Param("M")
    i, j = ms.Var("i", 0, N), ms.Var("j", 0, M)
    with ms.Function("shifted") as f:
        a = ms.Input("a", [N], ms.float32)
        p = ms.Computation("p", [i], a[i] * 2)
        ms.Computation("c", [j], p[j + 1])
    lowered = f.lower()
    assert any("M" in text and "c reads p outside what it holds" in text for text, _ in lowered.assumptions)
    k = f.compile("cpu")
    x = rng.random(10, dtype=np.float32)
    np.testing.assert_allclose(k(a=x, M=9), x[1:] * 2, rtol=1e-6)
    with pytest.raises(ms.ArgumentError, match="c reads p outside"):
        k(a=x, M=10)


# values overwritten ----------------------------------------------------------------------------

def test_a_row_buffer_for_a_producer_read_by_later_rows_is_refused():
    f, p, c = rows(read_below=True)
    p.store_in(ms.Buffer("r", [W], ms.float32), [p.vars[1]])
    with pytest.raises(ms.OverwriteError, match=r"reads p\[\d+, \d+\] from buffer r, but p\[") as err:
        f.lower()
    assert err.value.buffer == "r" and err.value.command == "p.store_in(Buffer(r, [W], float32), index=[x])"


def test_a_row_buffer_holds_the_row_being_read_when_the_loops_are_fused():
    f, p, c = rows(read_below=False)
    p.store_in(ms.Buffer("r", [W], ms.float32), [p.vars[1]])
    with pytest.raises(ms.OverwriteError):     # all of p first: one row survives
        f.lower()
    c.after(p, "y")
    img = rng.random((9, 7), dtype=np.float32)
    np.testing.assert_allclose(f.compile("cpu")(img=img), img[:-2] * 2 + img[:-2, ::-1] * 2, rtol=1e-6)
    c.parallelize("y")       # rows at once would share r
    with pytest.raises(ms.OverwriteError, match="tagged parallel.*one element of buffer r"):
        f.lower()


def test_one_element_for_a_reduction_read_per_row():
    f, s, u, o = row_sums()
    s.store_in(ms.Buffer("acc", [1], ms.float32), [s.vars[0] * 0])
    with pytest.raises(ms.OverwriteError, match=r"o\[\d+\] reads s\[\d+\] from buffer acc"):
        f.lower()
    u.after(s, "i")
    o.after(u, "i")
    a = rng.random((7, 4), dtype=np.float32)
    np.testing.assert_allclose(f.compile("cpu")(a=a), a.sum(1) * 2, rtol=1e-6)
    # the dependences are the program's, whatever the layout: o[i] reads the sum of row i only
    raw = isl.Map.from_union_map(f.dependences().raw.extract_map(
        isl.Space.create_from_names(isl.DEFAULT_CONTEXT, in_=["i", "k"], out=["i"], params=["N"])
        .set_tuple_name(isl.dim_type.in_, "s_update0").set_tuple_name(isl.dim_type.out, "o")))
    assert raw.is_equal(isl.Map("[N] -> { s_update0[i, 3] -> o[i] : 0 <= i < N }").intersect_params(f.context()))


# folds -----------------------------------------------------------------------------------------

def test_a_fold_applies_to_the_storage_the_values_live_in():
    """With compute_at the values live in a tile buffer: the fold makes that tile a ring, and the check
    reads the same accesses as the generated code."""
    f, bx, by = examples.blur()
    y0, x0, y1, x1 = by.tile("y", "x", 8, 8)
    bx.compute_at(by, x0)
    bx.storage_fold("y", 3)
    assert "float32 bx_tile[3, 8]" in str(f.lower(check=False))   # (no tile is wider than 8)
    with pytest.raises(ms.OverwriteError, match="bx_tile") as err:   # a tile's ten rows do not fit in three
        f.lower()
    assert err.value.command == "bx.storage_fold(y, 3)"
    # a window slid within strips of 8 rows: three rows are enough
    f, bx, by = examples.blur()
    yo, yi = by.split("y", 8)
    bx.compute_at(by, yi)
    bx.store_at(yo)
    bx.storage_fold("y", 3)
    allocated = [s.buffer for s in L.walk_stmts(f.lower().body) if isinstance(s, L.Allocate)]
    assert [str(d) for d in allocated[0].shape] == ["3", "W"]
    img = rng.random((37, 29), dtype=np.float32)
    np.testing.assert_allclose(f.compile("cpu")(img=img), blur_reference(img), rtol=1e-6)
    bx.storage_fold("y", 2)
    with pytest.raises(ms.OverwriteError):
        f.lower()


def test_a_fold_no_longer_than_the_tile_changes_nothing():
    f, bx, by = examples.blur()
    yo, yi = by.split("y", 8)
    bx.compute_at(by, yi)      # three rows of bx per row of by
    bx.storage_fold("y", 3)
    text = str(f.lower())
    assert "float32 bx_tile[3, W]" in text and "floormod" not in text, text
    img = rng.random((20, 11), dtype=np.float32)
    np.testing.assert_allclose(f.compile("cpu")(img=img), blur_reference(img), rtol=1e-6)


def test_folding_a_spatial_dimension_of_an_output_is_refused():
    f, bx, by = examples.blur()
    by.storage_fold("x", 3)
    with pytest.raises(ms.LayoutError, match=r"by is an output.* only 3 of its values along x"):
        f.lower()


def test_an_output_ring_along_time_is_the_last_steps_and_the_signature_says_so():
    T = ms.Param("T")
    t0, x = ms.Var("t", 0, T + 1), ms.Var("x", 0, N)
    t = ms.Var("t", 1, T + 1)
    with ms.Function("smooth") as f:
        a = ms.Input("a", [N], ms.float64)
        u = ms.Computation("u", [t0, x], a[x], where=(t0 == 0))
        u.update([t, x], 0.5 * (u[t - 1, x] + u[t - 1, ms.max(x - 1, 0)]))
    u.storage_fold("t", 2)
    assert "float64 *u /* a ring: the last 2 values along t, at t mod 2 */" in str(f.lower())
    x0 = rng.random(12)
    steps = [x0]
    for _ in range(5):
        prev = steps[-1]
        steps.append(0.5 * (prev + np.concatenate([prev[:1], prev[:-1]])))
    out = f.compile("cpu")(a=x0, T=5)
    assert out.shape == (2, 12)
    np.testing.assert_allclose(out[5 % 2], steps[5], rtol=1e-12)
    np.testing.assert_allclose(out[4 % 2], steps[4], rtol=1e-12)


def test_a_read_of_a_value_no_statement_writes_is_refused_even_where_a_fold_would_alias_it():
    """A time loop whose steps write only the inside of their grid reads a border nobody computed for
    that step: the fold would hand it the border two steps back. Refused, naming the unwritten value."""
    T, N = ms.Param("T"), ms.Param("N")
    t, x = ms.Var("t", 0, T + 1), ms.Var("x", 0, N)
    t1, x1 = ms.Var("t", 1, T + 1), ms.Var("x", 1, N - 1)
    with ms.Function("border_left_out"):
        a = ms.Input("a", [N], ms.float32)
        u = ms.Computation("u", [t, x], a[x], where=(t < 2))
        u.update([t1, x1], u[t1 - 1, x1 - 1] + u[t1 - 1, x1 + 1])
    u.storage_fold("t", 2)
    with pytest.raises(ms.OverwriteError, match=r"reads u\[\d+, \d+\] from buffer u, but no statement writes that "
                                                r"value.*u.storage_fold\(t, 2\)"):
        u.function.compile("cpu")


def test_a_fold_and_a_store_in_do_not_combine():
    f, s = doubled()
    s.storage_fold("i", 2)
    with pytest.raises(ms.ScheduleError, match="folded"):
        s.store_in(ms.Buffer("b", [N], ms.float32))
    f, s = doubled()
    s.store_in(ms.Buffer("b", [N], ms.float32))
    with pytest.raises(ms.ScheduleError, match="floormod"):
        s.storage_fold("i", 2)


# outputs ---------------------------------------------------------------------------------------

def test_an_output_buffer_holds_every_value_the_caller_receives():
    f, p, c = rows(read_below=True)
    y, x = c.vars
    c.store_in(ms.Buffer("out", [W], ms.float32, "output"), [x])
    with pytest.raises(ms.LayoutError, match="output buffer out receives two values in one element"):
        f.lower()
    f, p, c = rows(read_below=True)
    y, x = c.vars
    c.store_in(ms.Buffer("out", [W, H], ms.float32, "output"), [x, y])
    img = rng.random((9, 7), dtype=np.float32)
    np.testing.assert_allclose(f.compile("cpu")(img=img), (img[:-2] * 2 + img[2:] * 2).T, rtol=1e-6)


def test_index_bounds_of_data_follow_types_clamps_masks_and_modulos():
    from types import SimpleNamespace
    from mascarpone.middleend.buffer import as_index_expr
    from mascarpone.middleend.index_bounds import index_range
    stmt = SimpleNamespace(domain=isl.Set("[N] -> { c[i] : 0 <= i < N }"), params=["N"])
    i = ms.Var("i", 0, N)
    with ms.Function("bounds"):
        small = ms.Input("small", [N], ms.uint8)
        wide = ms.Input("wide", [N], ms.int64)

    def bounds(e):
        lo, hi = index_range(stmt, as_index_expr(e))
        text = [None if b is None else str(b.coalesce()).split("->", 2)[-1] for b in (lo, hi)]
        return text, lo is hi and lo is not None

    assert bounds(i % 16) == ([" [((i) mod 16)] : 0 <= i < N }"] * 2, True)     # C's modulo of a natural
    assert bounds((i - 3) % 4)[0] == [" [(-3)] : 0 <= i < N }", " [(3)] : 0 <= i < N }"]
    assert bounds(ms.cast(ms.int32, small[i]))[0] == [" [(0)] : 0 <= i < N }", " [(255)] : 0 <= i < N }"]
    assert bounds(wide[i] & 7)[0] == [" [(0)] : 0 <= i < N }", " [(7)] : 0 <= i < N }"]
    clamped = ms.clamp(wide[i], 0, ms.cast(ms.int64, N) - 1)
    (lo, hi), _ = bounds(clamped)
    assert lo == " [(0)] : 0 <= i < N }" and "c[i] -> [(-1 + N)] : N <= 9223372036854775807" in hi
    assert bounds(wide[i]) == ([" [(-9223372036854775808)] : 0 <= i < N }",
                                " [(9223372036854775807)] : 0 <= i < N }"], False)
    assert bounds(wide[i] * wide[i]) == ([None, None], False)
    assert bounds(ms.select(i < 5, i, N + i))[1]        # an affine condition picks a branch exactly


def test_a_derived_size_bounded_only_through_its_pieces_is_not_refused_by_its_hull():
    """W = max(N, M) with N and M at most 4 never exceeds 4, though the convex hull the context keeps
    of that max (W >= N, W >= M) has no upper bound: the bounds check refines its counterexample with
    the exact value before refusing, so a 4-element buffer is accepted, and a 3-element one is still
    refused at a call that happens (W = 4)."""
    import islpy as isl

    def widest(extent):
        with ms.Function("widest") as f:
            N, M = f.declare_param("N", 1, 4), f.declare_param("M", 1, 4)
            a, b = ms.Input("a", [N], ms.float32), ms.Input("b", [M], ms.float32)
            W = f.derived_size("W", isl.PwAff("[N, M] -> { [max(N, M)] }"))
            i = ms.Var("i", 0, W)
            s = ms.Computation("s", [i], ms.cast(ms.float32, i) + 1)
            s.store_in(ms.Buffer("held", [extent], ms.float32), [i])
            n, m = ms.Var("n", 0, N), ms.Var("m", 0, M)
            ms.Computation("p", [n], a[n] * s[n], output=True)
            ms.Computation("q", [m], b[m] - s[m], output=True)
        return f

    kernel = widest(4).compile("cpu")
    for n, m in ((4, 1), (2, 3), (1, 1)):
        x, y = np.full(n, 2, np.float32), np.zeros(m, np.float32)
        p, q = kernel(a=x, b=y)
        np.testing.assert_array_equal(p, 2 * (np.arange(n) + 1))
        np.testing.assert_array_equal(q, -(np.arange(m) + 1.0))
    with pytest.raises(ms.OutOfBoundsError, match=r"s writes held outside the buffer: at s\[3\] .*W = 4"):
        widest(3).lower()


def test_a_check_undecided_within_its_limits_is_made_at_each_call(monkeypatch):
    """Where relating the computed sizes to the others would take more than the refinement's limits
    (here 1 isl operation), the bounds check leaves the question to each call rather than refuse on a
    counterexample no call may make: the 3-element buffer of the test above compiles, with a warning,
    runs where W <= 3, and a call with W = 4 raises ArgumentError naming the access."""
    import islpy as isl
    from mascarpone.middleend import function as function_module
    monkeypatch.setattr(function_module, "REFINE_OPERATIONS", 1)
    with ms.Function("widest") as f:
        N, M = f.declare_param("N", 1, 4), f.declare_param("M", 1, 4)
        a, b = ms.Input("a", [N], ms.float32), ms.Input("b", [M], ms.float32)
        W = f.derived_size("W", isl.PwAff("[N, M] -> { [max(N, M)] }"))
        i = ms.Var("i", 0, W)
        s = ms.Computation("s", [i], ms.cast(ms.float32, i) + 1)
        s.store_in(ms.Buffer("held", [3], ms.float32), [i])
        n, m = ms.Var("n", 0, N), ms.Var("m", 0, M)
        ms.Computation("p", [n], a[n] * s[n], output=True)
        ms.Computation("q", [m], b[m] - s[m], output=True)
    with pytest.warns(UserWarning, match=r"whether s writes held outside the buffer .*\(and 2 other check\(s\)\) "
                                         r".* each call checks") as caught:
        kernel = f.compile("cpu")
    # (one warning for the 3 accesses, per lowering: the test harness also compiles for the "c" target)
    assert len({str(w.message) for w in caught if "each call checks" in str(w.message)}) == 1
    for n, m in ((3, 1), (2, 3), (1, 1)):
        p, q = kernel(a=np.full(n, 2, np.float32), b=np.zeros(m, np.float32))
        np.testing.assert_array_equal(p, 2 * (np.arange(n) + 1))
        np.testing.assert_array_equal(q, -(np.arange(m) + 1.0))
    with pytest.raises(ms.ArgumentError, match="widest cannot run with M = 4, N = 2: at these sizes s writes held "
                                               r"outside the buffer \(index 0, outside \[0, 3\)\)"):
        kernel(a=np.zeros(2, np.float32), b=np.zeros(4, np.float32))
    np.testing.assert_array_equal(kernel(a=np.ones(1, np.float32), b=np.ones(2, np.float32))[1], [0, -1])


def test_a_known_size_is_used_by_the_checks_and_checked_at_each_call():
    """K is passed by the caller and promised equal to max(N, M) (as the Halide front-end names a
    Func's bounds): the context keeps only its range, yet a buffer of N + M elements holds
    [0, K), since the bounds check discards counterexamples where K is not max(N, M); a call that
    breaks the promise is refused."""
    import islpy as isl
    with ms.Function("promised") as f:
        N, M, K = ms.Param("N"), ms.Param("M"), ms.Param("K")
        a = ms.Input("a", [N], ms.float32)
        b = ms.Input("b", [M], ms.float32)
        i = ms.Var("i", 0, K)
        s = ms.Computation("s", [i], ms.cast(ms.float32, i) + 1)
        s.store_in(ms.Buffer("held", [N + M], ms.float32), [i])
        n, m = ms.Var("n", 0, N), ms.Var("m", 0, M)
        ms.Computation("p", [n], a[n] * s[n], output=True)
        ms.Computation("q", [m], b[m] - s[m], output=True)
    with pytest.raises(ms.OutOfBoundsError, match="s writes held outside the buffer"):
        f.lower()
    f.known_size("K", isl.PwAff("[N, M] -> { [max(N, M)] }"))
    kernel = f.compile("cpu")
    x, y = np.full(5, 2, np.float32), np.zeros(3, np.float32)
    p, q = kernel(a=x, b=y, K=5)
    np.testing.assert_array_equal(p, 2 * (np.arange(5) + 1))
    np.testing.assert_array_equal(q, -(np.arange(3) + 1.0))
    with pytest.raises(ms.ArgumentError, match=r"assuming K = max\(N, M\); called with K = 9"):
        kernel(a=x, b=y, K=9)
