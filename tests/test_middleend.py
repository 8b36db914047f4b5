"""The middle-end on its own: domains, commands and their errors, dependences, lowering."""
import islpy as isl
import numpy as np
import pytest

import mascarpone as ms
from mascarpone import examples
from mascarpone.middleend.expr import binop, simplify


def test_domain_is_an_isl_set_with_where_constraints():
    N = ms.Param("N")
    i, j = ms.Var("i", 0, N), ms.Var("j", 0, N)
    with ms.Function("tri"):
        A = ms.Input("A", [N, N], ms.float32)
        L = ms.Computation("L", [i, j], A[i, j], where=(j <= i))
    expected = isl.Set("[N] -> { L[i, j] : 0 <= j <= i < N }")
    assert L.domain.is_equal(expected)
    assert L.predicate is None


def test_non_affine_condition_becomes_a_predicate():
    N = ms.Param("N")
    i = ms.Var("i", 0, N)
    with ms.Function("pred") as f:
        A = ms.Input("A", [N], ms.float32)
        c = ms.Computation("c", [i], A[i] * 2, where=(A[i] > 0) & (i >= 1))
    assert c.domain.is_equal(isl.Set("[N] -> { c[i] : 1 <= i < N }"))
    assert c.predicate is not None
    assert "if (" in str(f.lower())


def test_types_are_never_promoted_implicitly():
    N = ms.Param("N")
    i = ms.Var("i", 0, N)
    with ms.Function("t"):
        a = ms.Input("a", [N], ms.uint8)
        b = ms.Input("b", [N], ms.float32)
        with pytest.raises(ms.ExprTypeError, match="different types"):
            a[i] + b[i]
        with pytest.raises(ms.ExprTypeError, match="float"):
            a[i] + 0.5
        assert (a[i] + a[i]).dtype == ms.uint8
        assert (ms.f32(a[i]) + b[i]).dtype == ms.float32


def test_commands_name_their_mistakes():
    f, bx, by = examples.blur()
    with pytest.raises(ms.ScheduleError, match="no loop named 'z'"):
        by.split("z", 4)
    with pytest.raises(ms.ScheduleError, match="positive integer"):
        by.split("x", 0)
    with pytest.raises(ms.ScheduleError, match="adjacent"):
        by.tile("x", "y", 4, 4)
    with pytest.raises(ms.ScheduleError, match="no loop named"):
        bx.compute_at(by, "q")
    y0, x0, y1, x1 = by.tile("y", "x", 8, 8)
    assert [v.name for v in (y0, x0, y1, x1)] == ["y0", "x0", "y1", "x1"]
    assert by.loops == ["y0", "x0", "y1", "x1"]
    assert f.history() == ["by.tile(y, x, 8, 8)"]


def test_blur_dependences_are_exact():
    f, bx, by = examples.blur()
    deps = f.dependences()
    expected = isl.Map("[H, W] -> { bx[y, x] -> by[y', x] : 0 <= x < W and 0 <= y' < H and y' <= y <= y' + 2 }")
    raw = isl.Map.from_union_map(deps.raw)
    assert raw.is_equal(expected.intersect_params(f.context()))
    assert deps.war.is_empty() and deps.waw.is_empty()


def _enclosing_loops_of_allocations(stmt, buffer_name, loops=()):
    """For each Allocate of `buffer_name`: the names of the loops around it, outermost first."""
    from mascarpone.middleend import loopir as L
    if isinstance(stmt, L.Allocate):
        found = [list(loops)] if stmt.buffer.name == buffer_name else []
        return found + _enclosing_loops_of_allocations(stmt.body, buffer_name, loops)
    if isinstance(stmt, L.For):
        return _enclosing_loops_of_allocations(stmt.body, buffer_name, loops + (stmt.var,))
    if isinstance(stmt, L.If):
        return (_enclosing_loops_of_allocations(stmt.then, buffer_name, loops)
                + (_enclosing_loops_of_allocations(stmt.else_, buffer_name, loops) if stmt.else_ else []))
    if isinstance(stmt, L.Block):
        return [a for s in stmt.body for a in _enclosing_loops_of_allocations(s, buffer_name, loops)]
    return []


def test_lowered_blur_shows_tiles_and_tags():
    f, bx, by = examples.blur()
    y0, x0, y1, x1 = by.tile("y", "x", 32, 32)
    by.parallelize(y0)
    bx.compute_at(by, x0)
    lowered = f.lower()
    assert "// parallel" in str(lowered)
    # the producer tile lives inside the consumer's tile loops: inside x0, or inside y0 in the
    # version generated for images at most one tile wide
    placements = _enclosing_loops_of_allocations(lowered.body, "bx_tile")
    assert placements
    for loops in placements:
        assert loops[-1] in ("x0", "y0"), loops
    # with both sizes large, the tile is 34 x 32
    shape = lowered_tile_shape(lowered, "bx_tile", H=100, W=100)
    assert shape == [34, 32]


def lowered_tile_shape(lowered, name, **params):
    from mascarpone.backends.common.evaluate import compile_int
    from mascarpone.middleend import loopir as L
    alloc = next(s for s in L.walk_stmts(lowered.body) if isinstance(s, L.Allocate) and s.buffer.name == name)
    return [compile_int(d)(params) for d in alloc.buffer.shape]


def test_compute_at_footprint_is_computed_by_isl():
    f, bx, by = examples.blur()
    y0, x0, y1, x1 = by.tile("y", "x", 32, 32)
    bx.compute_at(by, x0)
    lowered = f.lower()
    from mascarpone.middleend.loopir import Allocate, walk_stmts
    tile = next(s.buffer for s in walk_stmts(lowered.body) if isinstance(s, Allocate) and s.buffer.name == "bx_tile")
    # 32 output rows need 34 rows of bx, and 32 columns need 32 (no tile is larger, whatever the sizes)
    rows, cols = tile.shape
    assert (rows.value, cols.value) == (34, 32)


def test_parallel_loop_carrying_a_dependence_is_rejected_with_the_command():
    f, C, acc = examples.gemm()
    acc.parallelize("k")
    with pytest.raises(ms.IllegalScheduleError) as err:
        f.lower()
    assert err.value.command == "C_update0.parallelize(k)"
    assert "C_update0" in str(err.value)


def test_reduction_loop_interchange_is_legal_but_reversal_of_order_with_init_is_not():
    f, C, acc = examples.gemm()
    acc.interchange("i", "k")
    f.lower()
    C.after(acc, ms.root)
    with pytest.raises(ms.IllegalScheduleError, match="C.after"):
        f.lower()


def _violations(f):
    from mascarpone.middleend import legality
    from mascarpone.middleend.dependences import compute_dependences
    from mascarpone.middleend.statements import build_statements
    context = f._prepare()
    deps = compute_dependences(f.computations, context)
    stmts = build_statements(f, context)
    checked = legality.checked_pairs(stmts, deps, f, context)
    splits = [legality._fixed_split(ts, tk) for _, _, ts, tk, _ in checked]
    ordering = sorted((kind, str(m)) for kind, m, _ in legality.ordering_violations(stmts, deps, f, context, checked))
    tags = sorted((s.name, loop) for s, loop, *_ in legality.tag_violations(stmts, deps, f, context, checked))
    return splits, ordering, tags


def test_pairs_decided_without_composing_maps_get_isls_verdict(monkeypatch):
    """Pairs ordered by their sequence positions, and pairs a check before found to hold, skip isl's
    composition; the verdicts are those of the full check."""
    from mascarpone.middleend import legality
    from mascarpone.middleend.recent import Recent
    f, bx, by = examples.blur()
    by.parallelize("y")
    g, C, acc = examples.gemm()
    acc.parallelize("i")
    for fn in (f, g):
        splits, ordering, tags = _violations(fn)
        assert _violations(fn)[1:] == (ordering, tags)      # (the second time from what the first kept)
        assert any(s is not None for s in splits)
        monkeypatch.setattr(legality, "_fixed_split", lambda ts, tk: None)
        monkeypatch.setattr(legality, "_HOLDS", Recent(0))
        assert _violations(fn)[1:] == (ordering, tags)
        monkeypatch.undo()
    assert not _violations(f)[1] and not _violations(g)[2]
    C.after(acc, ms.root)     # the initialization after the update: a dependence runs backwards
    acc.parallelize("k")      # and a parallel loop carries one
    _, ordering, tags = _violations(g)
    assert ordering and tags
    assert _violations(g)[1:] == (ordering, tags)       # a violation found is found again


def test_dependences_kept_between_checks_follow_inlining_and_sizes():
    f, bx, by = examples.blur()
    first = f.dependences()
    assert f.dependences() is first                 # kept while nothing they depend on changes
    assert "bx" in str(first.raw)
    assert f.dependences({"H": 8, "W": 8}) is not first
    bx.inline()
    assert "bx" not in str(f.dependences().raw)     # by reads img itself now


def test_inline_substitutes_the_producer():
    f, bx, by = examples.blur()
    bx.inline()
    text = str(f.lower())
    assert "bx" not in text
    assert text.count("img[") == 9


def _read_before_an_update():
    """t reads a before a's update overwrites it; out reads t and the updated a."""
    N = ms.Param("N")
    i = ms.Var("i", 0, N)
    with ms.Function("reads_before_update") as f:
        x = ms.Input("x", [N], ms.float32)
        a = ms.Computation("a", [i], x[i] + 1)
        t = ms.Computation("t", [i], a[i] * 2)
        a.update([i], a[i] * 3)
        ms.Computation("out", [i], t[i] + a[i])
    return f, t


def test_inlining_a_read_an_update_overwrites_is_refused():
    """Inlined, t's read of a would run where out runs, after a's update: out would read 3(x+1) where
    t read x+1. A dependence of an inlined computation is checked at the computations that evaluate it
    (here t's read before the update becomes out's), and the command is named; without it, the values
    are the program's, and the autoscheduler, whose model inlines producers read once, leaves t stored."""
    f, t = _read_before_an_update()
    x = np.arange(5, dtype=np.float32)
    want = 5 * (x + 1)
    np.testing.assert_array_equal(f.compile("cpu")(x=x), want)
    t.inline()
    with pytest.raises(ms.IllegalScheduleError, match=r"write-after-read dependence from out to a_update0.*t\.inline\(\)"):
        f.compile("cpu")
    g, _ = _read_before_an_update()
    report = g.autoschedule(sizes=dict(N=64), measure=False, cache=False)
    assert "t.inline()" not in report.commands
    np.testing.assert_array_equal(g.compile("cpu")(x=x), want)


def test_set_schedule_takes_a_raw_isl_map():
    f, bx, by = examples.blur()
    by.set_schedule("[H, W] -> { by[y, x] -> [x, y] }", names=["xx", "yy"])
    assert by.loops == ["xx", "yy"]
    assert "for (xx" in str(f.lower())
    # the history line says the names the map does not (isl prints an output equal to an input by its
    # value), so that a user reading it can write the command again
    assert f.history()[-1] == "by.set_schedule([H, W] -> { by[y, x] -> [x, y] }, names=[xx, yy])"
    by.set_schedule("[H, W] -> { by[y, x] -> [yy = y, xx = x] }")
    assert f.history()[-1] == "by.set_schedule([H, W] -> { by[y, x] -> [yy = y, xx = x] })"
    with pytest.raises(ms.ScheduleError, match="distinct times"):
        by.set_schedule("[H, W] -> { by[y, x] -> [x] }")


def test_gpu_distribute_and_pipeline_tags_are_kept():
    f, bx, by = examples.blur()
    by.gpu(["y"], ["x"])
    assert by.tags == {"y": ("gpu_block", 1), "x": ("gpu_thread", 1)}
    bx.distribute("y")
    bx.pipeline("x", 2)
    assert bx.tags["x"] == ("pipeline", 2)


def test_full_piece_of_a_tiled_loop_nest():
    from mascarpone.middleend.separation import full_piece
    # [beta, x0, beta, x1, beta]: x split by 8, x < W
    tiled = isl.Set("[W] -> { [0, x0, 0, x1, 0] : x0 >= 0 and 0 <= x1 < 8 and 8x0 + x1 < W }")
    full = full_piece(tiled, {3: 8})
    assert full.is_equal(isl.Set("[W] -> { [0, x0, 0, x1, 0] : x0 >= 0 and 0 <= x1 < 8 and 8x0 + 8 <= W }"))
    # nothing to separate when the size is known to be a multiple of the tile
    assert full_piece(tiled.intersect_params(isl.Set("[W] -> { : W = 64 }")), {3: 8}) is None
    # nor when no tile can be full
    assert full_piece(tiled.intersect_params(isl.Set("[W] -> { : W < 8 }")), {3: 8}) is None


def test_full_piece_of_a_triangle_is_whole_tiles():
    """Tiles of 8 x 8 over j >= i, the j-rows unrolled and the i-columns vectors: on a diagonal tile the
    unrolled loop runs all 8 rows but its last row alone has 8 lanes. The full piece is the tiles below
    the diagonal, not those plus the diagonal tiles' last rows, so each of its loops has constant bounds."""
    from mascarpone.middleend.separation import full_piece
    # [beta, j0, beta, i0, beta, j1, beta, i1, beta]
    triangle = isl.Set("[N] -> { [0, j0, 0, i0, 0, j1, 0, i1, 0] : 0 <= i0 <= j0 and 0 <= j1 < 8 and 0 <= i1 < 8 "
                       "and 8i0 + i1 <= 8j0 + j1 and 8j0 + j1 < N }")
    full = full_piece(triangle, {5: 8, 7: 8})
    assert full.is_equal(triangle.intersect(isl.Set("[N] -> { [0, j0, 0, i0, 0, j1, 0, i1, 0] : i0 < j0 and "
                                                    "8j0 + 8 <= N }"))), full


def _tiled_blur_vector_trip_counts(tile_y, tile_x):
    """The blur with by tiled and vectorized by 8, bx computed per tile: the function and the trip counts of
    its vector loops as text."""
    from mascarpone.middleend import loopir as L
    f, bx, by = examples.blur()
    y0, x0, y1, x1 = by.tile("y", "x", tile_y, tile_x)
    by.vectorize(x1, 8)
    bx.compute_at(by, x0)
    vector_loops = [s for s in L.walk_stmts(f.lower().body) if isinstance(s, L.For) and s.kind == "vector"]
    return f, {str(simplify(binop("sub", s.hi, s.lo))) for s in vector_loops}


def test_vector_loops_of_full_tiles_have_constant_trip_counts():
    _, trips = _tiled_blur_vector_trip_counts(32, 256)
    assert "8" in trips                      # the full tiles
    assert any(not t.isdigit() for t in trips)   # and a guarded partial tile


def test_separation_over_its_isl_budget_keeps_one_guarded_loop_nest_with_the_same_values(monkeypatch):
    """A statement whose full tiles need more than MAX_SEPARATION_OPERATIONS isl operations to separate
    (the time maps of autoscheduled pipelines with many split tails) is generated as one loop nest whose
    vector loop is guarded at the edges; the values are the same."""
    from mascarpone.middleend import codegen
    monkeypatch.setattr(codegen, "MAX_SEPARATION_OPERATIONS", 1)
    f, trips = _tiled_blur_vector_trip_counts(8, 16)
    assert trips and not any(t.isdigit() for t in trips)   # no loop of full tiles apart
    img = np.random.default_rng(0).random((37, 29), dtype=np.float32)
    rows = (img[:, :-2] + img[:, 1:-1] + img[:, 2:]) / 3
    np.testing.assert_allclose(f.compile("cpu")(img=img), (rows[:-2] + rows[1:-1] + rows[2:]) / 3, rtol=1e-6)


def test_isl_budgets_nest_the_tighter_limit_holding_and_the_outer_one_coming_back():
    from mascarpone.middleend.isl_budget import OutOfOperations, operations_at_most
    ctx = isl.DEFAULT_CONTEXT
    with operations_at_most(ctx, 1000):
        with operations_at_most(ctx, 50):
            assert ctx.get_max_operations() == 50
        assert ctx.get_max_operations() == 1000
        with operations_at_most(ctx, 0):      # no limit of its own: the outer one holds
            assert ctx.get_max_operations() == 1000
        with pytest.raises(OutOfOperations, match="1 isl operations"):
            with operations_at_most(ctx, 1):
                isl.Set("[N] -> { [i, j] : 0 <= i < N and 0 <= j < i }").coalesce().lexmax()
        assert ctx.get_max_operations() == 1000
    assert ctx.get_max_operations() == 0


def test_a_producer_too_intricate_to_expand_is_computed_at_the_root_before_its_readers(monkeypatch):
    """A computation computed at a consumer's loop whose expansion runs out of isl operations
    (statements.EXPANSION_OPERATIONS) is computed at the root just before the consumer's nest; a
    computation at the same loop that it reads leaves the loop too and runs before it. Same values."""
    from mascarpone.middleend import statements
    from mascarpone.middleend.isl_budget import operations_at_most
    N = ms.Param("N")
    i, j, k = ms.Var("i", 0, N), ms.Var("j", 0, N), ms.Var("k", 0, N + 1)
    with ms.Function("chain") as f:
        a = ms.Input("a", [N, N + 2], ms.float32)
        p = ms.Computation("p", [i, k], a[i, k] + a[i, k + 1])
        q = ms.Computation("q", [i, j], p[i, j] * 2 + p[i, j + 1])
        out = ms.Computation("out", [i, j], q[i, j] * 3 + p[i, j])
    p.compute_at(out, "i")
    q.compute_at(out, "i")
    img = np.random.default_rng(1).random((10, 12), dtype=np.float32)
    expected = f.compile("cpu")(a=img)
    real = statements._expand

    def expand(comp, *args):      # q's tiles run out of operations (the budget of one)
        with operations_at_most(isl.DEFAULT_CONTEXT, 1 if comp is q else 0):
            return real(comp, *args)
    monkeypatch.setattr(statements, "_expand", expand)
    with pytest.warns(UserWarning) as got:
        kernel = f.compile("cpu")
    said = sorted(str(w.message) for w in got)
    assert said[0].startswith("p: q, which reads it, no longer runs inside out's loop i")
    assert said[1].startswith("q: the points each iteration of out's loop i needs are too intricate for isl")
    assert p.compute_at_target is None and q.compute_at_target is None
    np.testing.assert_array_equal(kernel(a=img), expected)


def test_bitwise_expressions_print_and_check_types():
    N = ms.Param("N")
    i = ms.Var("i", 0, N)
    with ms.Function("bitexprs"):
        a = ms.Input("a", [N], ms.int16)
        f = ms.Input("f", [N], ms.float32)
        assert str((a[i] & 7) | ~a[i] ^ (a[i] << ms.u8(a[i]))) == "((a[i] & 7) | (~a[i] ^ (a[i] << (uint8)a[i])))"
        assert str(a[i] >> -1) == "(a[i] >> -1)" and (a[i] >> -1).b.dtype == ms.int32   # the sign is kept
        assert str(ms.reinterpret(ms.int32, f[i])) == "reinterpret<int32>(f[i])"
        assert str(ms.call("popcount", a[i])) == "popcount(a[i])"
        with pytest.raises(ms.ExprTypeError, match="integer"):
            f[i] & f[i]
        with pytest.raises(ms.ExprTypeError, match="integer"):
            f[i] << 1
        with pytest.raises(ms.ExprTypeError, match="one width"):
            ms.reinterpret(ms.int64, f[i])


def test_declared_param_ranges_allow_empty_domains():
    """A size declared with a range of its own may be zero or negative: domains it bounds are then
    empty (loops run zero times, an output sized by it is empty), and the kernel checks the range."""
    import numpy as np
    N = ms.Param("N")
    with ms.Function("prefix") as f:
        n = f.declare_param("n", lo=-50, hi=50)
        i, r = ms.Var("i", 0, N), ms.Var("r", 0, n)
        a = ms.Input("a", [N], ms.int32)
        s = ms.Computation("s", [i], a[i] * 0, output=True)
        s.update([i, r], s[i] + a[ms.min(i + r, N - 1)])
        head = ms.Computation("head", [r], a[ms.min(r, N - 1)] + 1, output=True)
    assert f.context().is_equal(isl.Set("[N, n] -> { : N >= 1 and -50 <= n <= 50 }"))
    head.vectorize(r, 4)
    k = f.compile("cpu")
    x = np.arange(10, dtype=np.int32)
    for nv in (-7, 0, 1, 6, 13):
        sums, heads = k(a=x, n=nv)
        expected = [sum(int(x[min(j + q, 9)]) for q in range(max(nv, 0))) for j in range(10)]
        np.testing.assert_array_equal(sums, expected)
        np.testing.assert_array_equal(heads, x[np.minimum(np.arange(max(nv, 0)), 9)] + 1)
    with pytest.raises(ms.ArgumentError, match=r"parameter n: 51 is outside its range \[-50, 50\]"):
        k(a=x, n=51)
    with pytest.raises(ms.DomainError, match=r"fixed parameter n must be an integer in \[-50, 50\]"):
        f.lower(fixed={"n": -60})
    assert f.param_range("N") == (1, None) and f.param_range("n") == (-50, 50)


def test_loop_kinds_are_one_enumeration_equal_to_their_names():
    """Tags and the loop IR's `For.kind` are LoopKind members, which compare equal to their names."""
    from mascarpone.middleend import loopir as L
    f, bx, by = examples.blur()
    y0, x0, y1, x1 = by.tile("y", "x", 8, 8)
    by.parallelize(y0)
    by.vectorize(x1, 8)
    kinds = [s.kind for s in L.walk_stmts(f.lower().body) if isinstance(s, L.For)]
    assert all(isinstance(k, L.LoopKind) for k in kinds)
    assert L.LoopKind.PARALLEL in kinds and "vector" in kinds and "serial" in kinds
    assert by.tags["y0"] == ("parallel", 1) and f"{L.LoopKind.VECTOR}" == "vector"


def test_fixed_sizes_do_not_outlive_the_lowering():
    """lower(fixed=...) specializes that lowering only: the context and dependences stay general."""
    f, bx, by = examples.blur()
    assert "for (y = 0; y < 7;" in str(f.lower(fixed={"H": 7}))
    assert f.context().is_equal(isl.Set("[H, W] -> { : H >= 1 and W >= 1 }"))
    assert f.context(fixed={"H": 7}).is_equal(isl.Set("[H, W] -> { : H = 7 and W >= 1 }"))
    raw = isl.Map.from_union_map(f.dependences().raw)
    assert not raw.intersect_params(isl.Set("[H, W] -> { : H = 9 }")).is_empty()
    assert isl.Map.from_union_map(f.dependences(fixed={"H": 7}).raw).params().is_subset(
        isl.Set("[H, W] -> { : H = 7 }"))


def test_affine_function_at_a_leaf_is_written_from_its_formula():
    from mascarpone.middleend.affine import linear_expr
    from mascarpone.middleend.expr import Const, Sym, substitute
    from mascarpone.middleend.types import int64
    aff = isl.Aff("[N, M] -> { [a, b, c] -> [(2N - 3b + a - 7)] }")
    loops = [Sym(n, int64) for n in ("a", "b", "c")]
    e = linear_expr(aff, loops)
    assert str(e) == "((((2 * N) + a) - (3 * b)) - 7)"   # sizes, then loops, then the constant, as isl prints
    for a, b, c, N, M in [(0, 0, 0, 1, 1), (5, -2, 9, 4, 3), (-3, 7, 1, 10, 0)]:
        value = simplify(substitute(e, {"a": Const(a, int64), "b": Const(b, int64), "c": Const(c, int64),
                                        "N": Const(N, int64), "M": Const(M, int64)}))
        assert value.value == 2 * N - 3 * b + a - 7
    # a division or a rational coefficient is left to isl's printer
    assert linear_expr(isl.Aff("{ [a] -> [(floor(a/2))] }"), loops) is None


def test_context_on_an_object_keeps_what_its_own_sizes_imply():
    from mascarpone.middleend.affine import context_on
    context = isl.Set("[N, M, K] -> { : N >= 8 and M = 2N and K >= M }")
    tile = isl.Set("[N, M, K] -> { A[i] : 0 <= i < M }")
    assert context_on(tile, context).is_equal(isl.Set("[M] -> { : M >= 16 and M mod 2 = 0 }"))
    assert context_on(tile, context) is context_on(tile, context)   # projected once


def test_root_loop_nests_are_generated_apart_each_with_its_own_sizes(monkeypatch):
    from mascarpone.middleend import codegen
    seen = []
    generate = codegen._node_from_schedule

    def record(build, schedule, stmts):
        seen.append([schedule.get_space().get_dim_name(isl.dim_type.param, i)
                     for i in range(schedule.dim(isl.dim_type.param))])
        return generate(build, schedule, stmts)
    monkeypatch.setattr(codegen, "_node_from_schedule", record)
    N, M = ms.Param("N"), ms.Param("M")
    i, j = ms.Var("i", 0, N), ms.Var("j", 0, M)
    with ms.Function("two_nests") as f:
        A = ms.Input("A", [N], ms.float32)
        B = ms.Input("B", [M], ms.float32)
        ms.Computation("a", [i], A[i] * 2)
        ms.Computation("b", [j], B[j] + 1)
    a, b = f.compile("cpu")(A=np.arange(5, dtype=np.float32), B=np.arange(3, dtype=np.float32))
    # (each compilation, and the C one that the suite compares it with, generates both nests)
    assert seen[:2] == [["N"], ["M"]] and all(s in (["N"], ["M"]) for s in seen)
    np.testing.assert_array_equal(a, np.arange(5) * 2)
    np.testing.assert_array_equal(b, np.arange(3) + 1)


def test_a_tile_used_outside_the_loop_that_allocates_it_is_found():
    """The lowering's last check: a statement that reads a tile outside every Allocate of it (a placement
    that separated a consumer from its producer's tile) is reported, with the buffer it uses."""
    from mascarpone.middleend import loopir as L
    from mascarpone.middleend.expr import Access, Const, Sym
    tile = ms.Buffer("p_tile", [4], ms.float32)
    out = ms.Buffer("c", [4], ms.float32, "output")
    x = Sym("x", ms.int64)
    fill = L.Store(tile, (x,), Const(1.0, ms.float32))
    read = L.Store(out, (x,), Access(tile, (x,)))
    inside = L.For("y", Const(0, ms.int64), Const(2, ms.int64),
                   L.Allocate(tile, L.Block([L.For("x", Const(0, ms.int64), Const(4, ms.int64), fill),
                                             L.For("x", Const(0, ms.int64), Const(4, ms.int64), read)])))
    assert L.uses_outside_allocation(inside) == []
    apart = L.Block([L.For("y", Const(0, ms.int64), Const(2, ms.int64),
                           L.Allocate(tile, L.For("x", Const(0, ms.int64), Const(4, ms.int64), fill))),
                     L.For("x", Const(0, ms.int64), Const(4, ms.int64), read)])
    assert L.uses_outside_allocation(apart) == [("p_tile", read)]
