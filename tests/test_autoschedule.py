"""The automatic scheduler: on the suite's programs (examples, end-to-end programs, Julia fixtures,
Halide pipelines without a schedule) it gives a legal schedule, as ordinary commands, with the
values of the unscheduled program; it is deterministic for a seed, and its disk cache is reused."""
import math
import time
from pathlib import Path

import numpy as np
import pytest

import mascarpone as ms
from halide_check import hl
from julia_fixtures import fixture, random_args
from mascarpone import examples
from mascarpone.bench.suite import halide_pipelines as pipelines
from mascarpone.middleend.autoschedule import cache, complete_sizes, machine, model
from mascarpone.middleend.autoschedule.analysis import analyze
from mascarpone.middleend.autoschedule.apply import Applier
from mascarpone.middleend.autoschedule.legal import Checker
from mascarpone.backends.common.affine import constant_difference
from mascarpone.middleend.loopir import For, LoopKind, walk_stmts
from test_cpu_gemm_speed import X86, _loops_with
from test_end_to_end import _row_scan, blur_reference, fibonacci, nb_fused, seidel

rng = np.random.default_rng(3)


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    """Each test gets an empty cache folder of its own."""
    monkeypatch.setenv(cache.ENV, str(tmp_path / "autoschedule"))


def _commands(report, *kinds):
    return [c for c in report.commands if any(f".{k}(" in c for k in kinds)]


def test_gemm_gets_register_tiles_vector_and_parallel_loops_with_numpy_values():
    f, C, acc = examples.gemm()
    report = f.autoschedule(sizes=dict(N=200, M=200, K=200), measure=False)
    assert report.commands == f.history() and report.measured == 0
    rows, vectors = model.register_tile()
    lanes = vectors * machine.vector_lanes(ms.float32)
    # the stride-one loop j innermost; `rows` rows of C by `vectors` vectors of j kept in registers across k
    assert report.commands[report.commands.index("C_update0.reorder(i, k, j)"):] == [
        "C_update0.reorder(i, k, j)", f"C_update0.split(j, {lanes})", f"C_update0.split(i, {rows})",
        "C_update0.reorder(i0, j0, k, i1, j1)", f"C_update0.unroll(i1, {rows})", f"C_update0.vectorize(j1, {lanes})",
        "C_update0.parallelize(i0)"]
    a = rng.random((150, 160), dtype=np.float32)
    b = rng.random((160, 170), dtype=np.float32)
    np.testing.assert_allclose(f.compile("cpu")(A=a, B=b), a @ b, rtol=1e-4)


def _julia_model(kernel, sizes):
    """(function, report) of a Julia fixture given the model's schedule (nothing measured) at `sizes`."""
    from mascarpone.frontends.julia import from_julia
    text, argtypes = fixture(kernel)
    f = from_julia(text, argtypes)
    return f, f.autoschedule(sizes=sizes, measure=False)


def _julia_model_unexpanded(kernel, sizes):
    """(function, commands) of a Julia fixture given the model's schedule at `sizes` with its scratch
    arrays left as they are (the model alone, without the expansion autoschedule gives first)."""
    from mascarpone.frontends.julia import from_julia
    text, argtypes = fixture(kernel)
    f = from_julia(text, argtypes)
    Applier(f, analyze(f, f.context(sizes)), Checker(f)).apply({})
    return f, f.history()


def _same_as_interpreter(kernel, f, shapes, seed=0):
    from mascarpone.frontends.julia import interpret
    text, argtypes = fixture(kernel)
    kernel_ = f.compile()
    rng_ = np.random.default_rng(seed)
    args = [np.asfortranarray(rng_.random(s)) for s in shapes]
    want = [a.copy(order="F") for a in args]
    kernel_(*args)
    interpret(text, argtypes, *want)
    for got, ref in zip(args, want):
        np.testing.assert_array_equal(got, ref)


def test_a_register_tile_spans_several_reduction_loops():
    """mttkrp's A[i, j] adds over k, then l: the register tile (columns j unrolled, vectors of i) is
    kept across both loops, which stay in the source's order; values bit for bit the interpreter's."""
    f, report = _julia_model("mttkrp", dict(B_1=80, B_2=30, B_3=32, C_2=60))
    rows, vectors = model.register_tile()
    lanes = vectors * machine.vector_lanes(ms.float64)
    assert f"s44.split(i, {lanes})" in report.commands and f"s44.split(j, {rows})" in report.commands
    assert "s44.reorder(j0, i0, k, l, j1, i1)" in report.commands, report.commands
    _same_as_interpreter("mttkrp", f, [(37, 19), (37, 5, 6), (5, 19), (6, 19)])


def test_a_register_tile_whose_other_reads_outgrow_l2_streams_its_sums_through_l1():
    """mttkrp at 400x300x150x160: B[i, k, l] over a block of i and all (k, l) is 1.5 MB, so a tile of a few
    columns j would read it from memory again for each block of j; the reductions go outside the columns
    (blocks of model.STREAM_COLUMNS), and A's block of all j stays in L1 across k and l, each A[i, j] in a
    register over model.STREAM_JAM values of l unrolled inside the columns. C[k, j] and D[l, j],
    the same in every lane, step along j by whole columns: they are copied transposed, so that the loop
    over j reads consecutive elements. Values bit for bit the interpreter's, at a size where B's block
    fits L2 too (the schedule is the same commands); without the copies where the search turns them off."""
    f, report = _julia_model("mttkrp", dict(B_1=400, B_2=150, B_3=160, C_2=300))
    columns, lanes = model.STREAM_COLUMNS, machine.vector_lanes(ms.float64)
    jam = model.STREAM_JAM
    assert {f"s44.split(i, {lanes})", f"s44.split(j, {columns})", f"s44.split(l, {jam})",
            "s44.reorder(i0, k, l0, j0, j1, l1, i1)", f"s44.unroll(l1, {jam})",
            f"s44.unroll(j1, {columns})", f"s44.vectorize(i1, {lanes})", "s44.cache_read(C, at=root)",
            "s44.cache_read(D, at=root)"} <= set(report.commands), report.commands
    for array in ("C", "D"):    # each copy in a new array, its dimensions swapped
        assert any(c.startswith(f"{array}_copy.store_in(Buffer({array}_T, ") and
                   c.endswith(f"index=[{array}_copy_d1, {array}_copy_d0])") for c in report.commands), report.commands
    _same_as_interpreter("mttkrp", f, [(37, 19), (37, 5, 6), (5, 19), (6, 19)])
    from mascarpone.frontends.julia import from_julia
    g = from_julia(*fixture("mttkrp"))
    sizes = complete_sizes(g, dict(B_1=400, B_2=150, B_3=160, C_2=300))
    Applier(g, analyze(g, g.context(sizes)), Checker(g)).apply({"transpose": {"s44": False}})
    assert "s44.reorder(i0, k, l0, j0, j1, l1, i1)" in g.history() and \
        not any(".cache_read(" in c for c in g.history())
    _same_as_interpreter("mttkrp", g, [(37, 19), (37, 5, 6), (5, 19), (6, 19)])
    # at 80x60x30x32, B's block fits L2: the tile stays in registers and reads C and D in place
    _, small = _julia_model("mttkrp", dict(B_1=80, B_2=30, B_3=32, C_2=60))
    assert not any(".cache_read(" in c for c in small.commands), small.commands


def test_column_sums_read_blocks_of_rows_transposed_in_registers():
    """bicg's s[j] += r[i] * A[i, j]: the lanes of a vector of j read A a column apart, stride-one along
    i. The model unrolls as many values of i as there are lanes inside each vector of j, and the CPU
    back-end loads those reads as one block of columns, transposed in registers (no load per lane in
    the loop that adds them). Each s[j] still adds its i in order: bit for bit the interpreter's, with
    tails in both loops. With the search's `transpose` off, the reads stay one per lane."""
    from mascarpone.frontends.julia import from_julia
    f, report = _julia_model("bicg", dict(A_1=420, A_2=380))
    lanes = machine.vector_lanes(ms.float64)
    assert {f"s39.split(i, {lanes})", "s39.reorder(j0, i0, j1, i1)", f"s39.unroll(i1, {lanes})",
            f"s39.vectorize(j1, {lanes})"} <= set(report.commands), report.commands
    _same_as_interpreter("bicg", f, [(37, 29), (29,), (37,), (29,), (37,)])
    if machine.simd_bytes() >= 64 and X86:
        asm = f.compile().kernel.source("asm")
        adding = [b for b in _loops_with(asm, "vmulpd") if sum(x.startswith("vunpck") for x in b) >= lanes // 2]
        assert adding and not any(x.startswith(("vmovhpd", "vmovsd", "vpinsrq")) for b in adding for x in b)
    g = from_julia(*fixture("bicg"))
    sizes = complete_sizes(g, dict(A_1=420, A_2=380))
    Applier(g, analyze(g, g.context(sizes)), Checker(g)).apply({"transpose": {"s39": False}})
    assert "s39.reorder(j0, i, j1)" in g.history() and f"s39.unroll(i1, {lanes})" not in g.history()
    _same_as_interpreter("bicg", g, [(37, 29), (29,), (37,), (29,), (37,)])


def test_a_vector_accumulator_moves_inside_its_reduction_loop():
    """doitgen's acc[p] adds A[r, q, s] * C4[s, p] over s, whose reads of C4 are stride-one along s: C4
    is copied transposed, so that vectors of p load contiguous elements, and the vectors of p go inside
    the s loop, so that their sums stay in registers over all of s. One vector: acc's zeroing, fused with
    the sums at p's vectors, refuses a wider block. (The model alone: autoschedule first expands acc,
    see the next test.)"""
    f, commands = _julia_model_unexpanded("doitgen", dict(A_1=30, A_2=28, A_3=32))
    lanes = machine.vector_lanes(ms.float64)
    accumulate = [c for c in commands if c.startswith("s42.")]
    assert accumulate[:2] == ["s42.cache_read(C4, at=root)", "s42.reorder(r, q, s, p)"], commands
    assert accumulate[-3:] == [f"s42.split(p, {lanes})", "s42.reorder(p0, s, p1)", f"s42.vectorize(p1, {lanes})"], \
        commands
    _same_as_interpreter("doitgen", f, [(7, 6, 19), (19, 19), (19,)])


def test_a_scratch_array_is_expanded_so_that_its_nest_is_a_parallel_product():
    """doitgen's acc[p] is zeroed and summed anew for every (r, q): autoschedule gives each (r, q) a copy of
    its own (acc.expand), r's the stride-one dimension as in A, and the nest becomes a product the model
    tiles as gemm's (vectors of r, columns of p in registers across s), q's iterations in parallel. The
    zeroing, the product and the copy into A, distributed to be scheduled, are fused back at their parallel
    q: one parallel region. The values, acc's last sums included, are bit for bit the interpreter's."""
    f, report = _julia_model("doitgen", dict(A_1=30, A_2=28, A_3=32))
    lanes = machine.vector_lanes(ms.float64)
    assert report.commands[:2] == ["acc.expand(r)", "acc_r.expand(q, dim=1)"], report.commands
    assert {"s42.reorder(q, p, s, r)", f"s42.vectorize(r1, {lanes})", "s42.parallelize(q)"} <= set(report.commands)
    assert report.commands[-2:] == ["s42.after(s28, q)", "s62.after(s42, q)"], report.commands
    _same_as_interpreter("doitgen", f, [(7, 6, 19), (19, 19), (19,)])
    _same_as_interpreter("doitgen", f, [(17, 3, 9), (9, 9), (12,)], seed=1)    # acc longer than a row


def test_a_transposed_copy_of_an_input_read_outside_its_shape_is_refused_at_the_call():
    """The copy of all of C4 the model reads instead of C4 holds exactly C4's elements: sizes where doitgen
    reads C4 outside its shape are refused when called (Julia's BoundsError), not at compile time; so
    are they where acc is expanded."""
    f, commands = _julia_model_unexpanded("doitgen", dict(A_1=30, A_2=28, A_3=32))
    assert any(c.startswith("C4_copy.store_in(Buffer(C4_T, ") for c in commands), commands
    kernels = [f.compile(), _julia_model("doitgen", dict(A_1=30, A_2=28, A_3=32))[0].compile()]
    for kernel in kernels:
        rng_ = np.random.default_rng(1)
        with pytest.raises(ms.ArgumentError, match="BoundsError"):
            kernel(np.asfortranarray(rng_.random((4, 5, 6))), np.asfortranarray(rng_.random((3, 6))), np.zeros(6))


def test_a_long_reduction_is_blocked_and_its_transposed_copy_laid_out_in_panels():
    """covariance's cov[i, j] adds data[k, i] * data[k, j] over 1400 values of k: the register tile takes
    k in blocks of model.REDUCTION_BLOCK outside its vectors, and the transposed copy of data is laid out
    as the tile reads it, in panels of that many rows by one vector. Each element still adds in k's
    order: bit for bit the interpreter's, with k in three blocks."""
    f, report = _julia_model("covariance", dict(data_1=1400, data_2=1200))
    depth, lanes = model.REDUCTION_BLOCK, machine.vector_lanes(ms.float64)
    assert {f"s98.split(k, {depth})", "s98.reorder(j0, k0, i0, k1, j1, i1)"} <= set(report.commands), report.commands
    assert any(c.startswith("data_copy.store_in(Buffer(data_T, ") for c in report.commands), report.commands
    panels = next(b for b in f.buffers if b.name == "data_T")
    assert len(panels.shape) == 4 and [int(str(d)) for d in panels.shape[2:]] == [depth, lanes]
    _same_as_interpreter("covariance", f, [(530, 11), (11, 11), (11,)])
    short, report = _julia_model("covariance", dict(data_1=280, data_2=240))
    assert "s98.split(k, 256)" not in report.commands, report.commands
    # the centring (s57) and cov's zeroing (s84) ran in nests of their own in the source: not fused
    assert [c for c in report.commands if c.startswith("s84.after(")] == ["s84.after(s57, root)"]


def test_a_transposed_copy_runs_in_blocks_transposed_in_registers():
    """covariance's copy of data, transposed for its register tile, runs in square blocks of one vector
    a side (lanes along data's rows, its columns unrolled inside them), its rows of blocks in parallel
    where it is long enough to share out; the back-end loads each block's rows whole and transposes them
    in registers. Values bit for bit the interpreter's at sizes with partial blocks on both sides, in
    parallel and not."""
    lanes = machine.vector_lanes(ms.float64)
    f, report = _julia_model("covariance", dict(data_1=280, data_2=240))
    copy = [c for c in report.commands if c.startswith("data_copy.") and "store_in" not in c]
    assert copy == [f"data_copy.split(data_copy_d0, {lanes})", f"data_copy.split(data_copy_d1, {lanes})",
                    "data_copy.reorder(data_copy_d00, data_copy_d10, data_copy_d01, data_copy_d11)",
                    f"data_copy.vectorize(data_copy_d01, {lanes})", f"data_copy.unroll(data_copy_d11, {lanes})",
                    "data_copy.parallelize(data_copy_d00)"], report.commands
    if machine.simd_bytes() >= 64 and X86:
        asm = f.compile().kernel.source("asm")
        copying = [b for b in _loops_with(asm, "vunpck") if not any("mulpd" in x for x in b)]
        assert copying and not any(x.startswith(("vmovsd", "vpinsrq", "vgather")) for b in copying for x in b)
    _same_as_interpreter("covariance", f, [(283, 61), (61, 61), (61,)])
    small, report = _julia_model("covariance", dict(data_1=40, data_2=40))
    assert copy[-2] in report.commands and copy[-1] not in report.commands, report.commands
    _same_as_interpreter("covariance", small, [(37, 29), (29, 29), (29,)])


def test_a_reduction_along_columns_streams_several_at_once():
    """gesummv's sums over j of A[i, j] * x[j], read stride-one along i: each core gets one block of
    rows and, around each vector of it, model.STREAMS columns are unrolled, so that many columns stream
    from memory at once (the sums of the block stay in L1); the values are the interpreter's, at a size
    whose last block, last vector and last columns are partial."""
    f, report = _julia_model("gesummv", dict(A_1=260))
    lanes, cores, u = machine.vector_lanes(ms.float64), machine.cores(), model.STREAMS
    block = -(-260 // (cores * lanes)) * lanes
    for s in ("s23", "s27"):
        for command in (f"{s}.split(i, {block})", f"{s}.split(j, {u})", f"{s}.split(i1, {lanes})",
                        f"{s}.reorder(i0, j0, i10, j1, i11)", f"{s}.unroll(j1, {u})", f"{s}.vectorize(i11, {lanes})"):
            assert command in report.commands, report.commands
    _same_as_gesummv_interpreter(f, 77)


def test_vector_accumulators_read_along_their_loop_are_several_chains():
    """The search's other choice for gesummv (streams 0): the register tile holds as many vectors of i as
    the model's tile has registers, unrolled, so each is its own chain of additions (doitgen above,
    whose C4[s, p] is a gather along p, keeps one vector)."""
    from mascarpone.frontends.julia import from_julia
    text, argtypes = fixture("gesummv")
    f = from_julia(text, argtypes)
    sizes = complete_sizes(f, dict(A_1=260))
    Applier(f, analyze(f, f.context(sizes)), Checker(f)).apply({"streams": {"s23": 0, "s27": 0}})
    commands = f.history()
    lanes = machine.vector_lanes(ms.float64)
    rows, vectors = model.register_tile()
    chains = min(rows * vectors, 260 // lanes)
    for s in ("s23", "s27"):
        for command in (f"{s}.split(i, {chains * lanes})", f"{s}.reorder(i0, j, i1)", f"{s}.vectorize(i1, {lanes})",
                        f"{s}.unroll(i10, {chains})"):
            assert command in commands, commands
    _same_as_gesummv_interpreter(f, 77)


def _same_as_gesummv_interpreter(f, n):
    from mascarpone.frontends.julia import interpret
    text, argtypes = fixture("gesummv")
    rng_ = np.random.default_rng(0)
    args = [1.5, 1.2] + [np.asfortranarray(rng_.random(s)) for s in [(n, n), (n, n), (n,), (n,)]]
    want = [a.copy(order="F") if isinstance(a, np.ndarray) else a for a in args]
    f.compile()(*args)
    interpret(text, argtypes, *want)
    np.testing.assert_array_equal(args[-1], want[-1])


def test_a_band_larger_than_l2_is_tiled():
    """A stencil sum over a wide image: one row of the band's outer loop overflows L2, so the band is
    tiled (edges fitting half of L2) and the inner tile loop vectorized."""
    H, W = ms.Param("H"), ms.Param("W")
    y, x = ms.Var("y", 0, H), ms.Var("x", 0, W)
    with ms.Function("rows") as f:
        img = ms.Input("img", [H + 1, W], ms.float32)
        out = ms.Computation("out", [y, x], img[y, x] + img[y + 1, x])
    wide = machine.cache_bytes(2)       # a row of that many floats is 4x L2
    report = f.autoschedule(sizes=dict(H=64, W=wide), measure=False)
    assert any(c.startswith("out.tile(y, x,") for c in report.commands), report.commands
    im = rng.random((41, 300), dtype=np.float32)
    np.testing.assert_allclose(f.compile("cpu")(img=im), im[:-1] + im[1:], rtol=1e-6)


def test_blur_producer_computed_in_the_consumer_tiles():
    f, bx, by = examples.blur()
    report = f.autoschedule(sizes=dict(H=300, W=600), measure=False)
    assert _commands(report, "tile") and "bx.compute_at(by, x0)" in report.commands
    assert bx.compute_at_target == (by, "x0")
    img = rng.random((93, 211), dtype=np.float32)
    np.testing.assert_allclose(f.compile("cpu")(img=img), blur_reference(img), rtol=1e-5)


def test_a_producer_read_once_is_inlined():
    N = ms.Param("N")
    i = ms.Var("i", 0, N)
    with ms.Function("scaled") as f:
        a = ms.Input("a", [N], ms.float32)
        sq = ms.Computation("sq", [i], a[i] * a[i])
        out = ms.Computation("out", [i], sq[i] + ms.f32(1))
    report = f.autoschedule(sizes=dict(N=1000), measure=False)
    assert "sq.inline()" in report.commands and sq.inlined
    x = rng.random(77, dtype=np.float32)
    np.testing.assert_allclose(f.compile("cpu")(a=x), x * x + 1, rtol=1e-6)


def test_recurrences_keep_their_order():
    """A row scan and an in-place 2-D recurrence: only what the dependences allow is applied."""
    f, out, upd = _row_scan(lambda prev, here: ms.f32(0.5) * prev + ms.f32(0.5) * here)
    report = f.autoschedule(sizes=dict(H=64, W=300), measure=False)
    assert not any(c.startswith("out_update0.vectorize(x") for c in report.commands)   # x carries the scan
    im = rng.random((7, 33), dtype=np.float32)
    ref = im.copy()
    for c in range(1, 33):
        ref[:, c] = np.float32(0.5) * ref[:, c - 1] + np.float32(0.5) * im[:, c]
    np.testing.assert_allclose(f.compile("cpu")(img=im), ref, rtol=1e-6)

    f, upd = seidel()
    naive = f.compile("cpu")
    a = rng.random((13, 13))
    want = naive(A=a)
    f.autoschedule(sizes=dict(N=200), measure=False)
    assert not any("parallelize" in c or "vectorize" in c for c in f.history() if c.startswith("s_update0"))
    np.testing.assert_allclose(f.compile("cpu")(A=a), want, rtol=1e-12)


def test_folded_storage_and_user_placements():
    """Tags on folded storage pass the layout check; the time loop stays serial; a computation the
    user placed keeps its placement."""
    a = rng.random((12, 12))
    want = examples.heat2d()[0].compile("cpu")(A=a, T=5)
    f = examples.heat2d()[0]
    report = f.autoschedule(sizes=dict(N=300, T=10), measure=False)
    assert "u_update0.parallelize(y)" in report.commands and not any("(t" in c for c in report.commands)
    np.testing.assert_allclose(f.compile("cpu")(A=a, T=5), want, rtol=1e-12)

    f, fib = fibonacci()
    fib.storage_fold("i", 3)
    f.autoschedule(sizes=dict(N=50), measure=False)
    assert f.compile("cpu")(N=40)[0] == 102334155

    f = nb_fused()
    report = f.autoschedule(sizes=dict(N=10000), measure=False)
    assert report.commands == [] and str(f.lower()).count("for (") == 1


def test_same_seed_same_commands():
    histories = []
    for _ in range(2):
        f, C, acc = examples.gemm()
        f.autoschedule(sizes=dict(N=200, M=200, K=200), measure=False, seed=5, cache=False)
        histories.append(f.history())
    assert histories[0] == histories[1] and histories[0]


JULIA_FIXTURES = sorted(p.stem for p in (Path(__file__).parent / "julia_fixtures").glob("*.jl"))


@pytest.mark.parametrize("kernel", JULIA_FIXTURES)
def test_julia_fixtures(kernel):
    """Every Julia fixture (loops with a break, while loops, scalar statements included) autoscheduled
    gives the naive loops' values."""
    text, argtypes = fixture(kernel)
    naive = ms.from_julia(text, argtypes=argtypes).compile()
    f = ms.from_julia(text, argtypes=argtypes)
    report = f.autoschedule(sizes={p: 40 for p in f.sizes()}, measure=False)
    assert report.commands == f.history()
    assert report.commands or kernel not in ("gemm", "jacobi2d", "mttkrp", "bicg", "seidel2d", "trmv")
    auto = f.compile()
    want, got = random_args(argtypes, seed=2, n=11), random_args(argtypes, seed=2, n=11)
    r_want, r_got = naive(*want), auto(*got)
    for x, y in zip(want + [r_want], got + [r_got]):
        if isinstance(x, np.ndarray) or isinstance(x, float):
            np.testing.assert_allclose(y, x, rtol=1e-12)


def test_no_choice_refuses_sizes_the_naive_loops_run():
    """edge with `j + true` for `j + 1` (a Bool index term, as a fuzzed case had): the translation reads img
    there through a guarded gather, and inlining it leaves the layout checks a read they can bound only
    for empty loops, so the kernel would refuse every call the naive loops run. The checker refuses a
    choice that admits fewer sizes than the schedule it started from."""
    text, argtypes = fixture("edge")
    mutated = text.replace("%38  = j + 1", "%38  = j + true")
    assert mutated != text
    f = ms.from_julia(mutated, argtypes=argtypes)
    gathers = [c.name for c in f.computations if c.name.startswith("g")]
    assert gathers   # (the read of img at the Bool index term goes through one)
    f.autoschedule(sizes={p: 40 for p in f.sizes()}, measure=False)
    assert not any(c.inlined for c in f.computations if c.name in gathers), f.history()
    naive = ms.from_julia(mutated, argtypes=argtypes).compile()
    want, got = random_args(argtypes, seed=4, n=5), random_args(argtypes, seed=4, n=5)
    naive(*want)
    f.compile()(*got)
    for x, y in zip(want, got):
        np.testing.assert_array_equal(y, x)


@pytest.mark.parametrize("name", ["blur_valid", "gaussian", "conv3x3", "iir"])
def test_halide_pipelines_without_a_schedule(name):
    spec = getattr(pipelines, name)(61, 37, np.random.default_rng(0), schedule=False)
    pipeline = hl.Pipeline(spec["outputs"])
    for ip, arr in spec["images"].items():
        ip.set(hl.Buffer(arr))
    theirs = np.asarray(pipeline.realize(spec["sizes"]))
    f = ms.from_halide(pipeline)
    report = f.autoschedule(measure=False)
    assert _commands(report, "vectorize") and _commands(report, "parallelize")
    ours = f.compile("cpu").realize(spec["sizes"], **{ip.name(): a for ip, a in spec["images"].items()})
    np.testing.assert_allclose(ours, theirs, rtol=spec.get("tol") or 1e-5)


def test_measured_search_then_the_cache():
    """A tiny budget: the model's choice is timed, the best is applied (its values checked, not which
    candidate won); a second call on the same program reads the cache and times nothing."""
    sizes = dict(H=64, W=128)
    f, bx, by = examples.blur()
    first = f.autoschedule(sizes=sizes, budget_s=0.5)
    assert first.measured >= 1 and not first.from_cache and first.seconds > 0
    img = rng.random((66, 130), dtype=np.float32)
    np.testing.assert_allclose(f.compile("cpu")(img=img), blur_reference(img), rtol=1e-5)
    assert len(list(cache.folder().glob("*.json"))) == 1

    g, _, _ = examples.blur()
    second = g.autoschedule(sizes=sizes, budget_s=0.5)
    assert second.from_cache and second.measured == 0
    assert second.choice == first.choice and g.history() == f.history()
    np.testing.assert_allclose(g.compile("cpu")(img=img), blur_reference(img), rtol=1e-5)


def test_tile_sizes_are_screened_by_one_kernel_with_parametric_tiles(monkeypatch):
    """The search ranks a band's tile sizes (those it offers and the model's grid) by one kernel whose
    tiles take their sizes at call time, and measures the fastest as constant tiles; a parametric kernel
    gives the reference values at every size screened."""
    from mascarpone.middleend.autoschedule import measure
    compiled = []
    kernel = measure.Timer.kernel
    monkeypatch.setattr(measure.Timer, "kernel", lambda self: compiled.append(1) or kernel(self))
    f, bx, by = examples.blur()
    report = f.autoschedule(sizes=dict(H=64, W=512), budget_s=5)
    screened = [sizes for sizes, seconds in report.screened["by"]]
    assert len(screened) > 10 and all(len(s) == 2 and seconds > 0 for s, seconds in report.screened["by"])
    assert len(compiled) < len(screened)     # the grid took one compile, not one per size
    img = rng.random((66, 514), dtype=np.float32)
    np.testing.assert_allclose(f.compile("cpu")(img=img), blur_reference(img), rtol=1e-5)
    g, _, gy = examples.blur()
    gy.tile("y", "x", ms.Param("Ty"), ms.Param("Tx"))
    gy.vectorize("x", 16)
    parametric = g.compile("cpu")
    for ty, tx in screened:
        np.testing.assert_allclose(parametric(img=img, Ty=ty, Tx=tx), blur_reference(img), rtol=1e-5)


@pytest.mark.parametrize("kernel", ["jacobi1d", "jacobi2d"])
def test_parametric_time_tiles_give_the_naive_values_at_every_size(kernel):
    """The search's screening of time tiles: the statements of a step shifted, skewed and fused in the
    (time, space) loops, which one parametric tile cuts; one kernel then runs every size with the
    naive loops' values (partial tiles, single steps, tiles wider than the loops)."""
    make, argtypes = _julia(kernel)
    naive = make().compile()
    g = make()
    sizes = {p: (5 if p == "tsteps" else 40) for p in g.sizes()}
    stages = analyze(g, g.context(sizes))
    applier = Applier(g, stages, Checker(g))
    applier.apply({"timetile": {name: model.PARAMETRIC for name in stages}})
    (key, params), = applier.tile_params.items()
    assert key in applier.time_tiled and f"{key}.tile(t, " in " ".join(g.history())
    kernel_ = g.compile()
    for depth, width in ([1, 1], [2, 8], [3, 5], [8, 64]):
        want, got = random_args(argtypes, seed=4, n=23), random_args(argtypes, seed=4, n=23)
        naive(*want)
        kernel_(*got, **dict(zip(params, (depth, width))))
        for x, y in zip(want, got):
            if isinstance(x, np.ndarray):
                np.testing.assert_allclose(y, x, rtol=1e-12)


def test_compile_with_schedule_auto():
    f, C, acc = examples.gemm()
    f.autoschedule(sizes=dict(N=64, M=64, K=64), measure=False)
    given = f.history()
    a = rng.random((64, 64), dtype=np.float32)
    b = rng.random((64, 64), dtype=np.float32)
    k = f.compile("cpu", schedule="auto")          # already autoscheduled: kept as it is
    assert f.history() == given
    np.testing.assert_allclose(k(A=a, B=b), a @ b, rtol=1e-4)

    g, _, _ = examples.blur()
    kernel = g.compile("cpu", fixed=dict(H=32, W=48), schedule="auto")
    # measured; at this size the naive loops may win the final side-by-side timing (no commands)
    assert g.autoscheduled.measured >= 1 and g.history() == g.autoscheduled.commands
    assert (g.autoscheduled.choice == {"naive": True}) == (g.history() == [])
    img = rng.random((34, 50), dtype=np.float32)
    np.testing.assert_allclose(kernel(img=img), blur_reference(img), rtol=1e-5)
    h, _, _ = examples.blur()
    h.compile("cpu")
    assert h.history() == [] and h.autoscheduled is None          # the default stays naive


class _ScriptedTimes:
    """The times a timing gives (medians, or the fastest calls), one list per timing in order (a machine's
    load over the calls), and the kernels each timing was given."""

    def __init__(self, *timings):
        self.timings, self.timed = list(timings), []

    def first_calls(self, kernels):
        return [1e-3] * len(kernels)

    def first_call_within(self, kernel, limit_s):
        return 1e-3

    def medians(self, kernels, limit_s=None, firsts=None):
        self.timed.append(("medians", list(kernels)))
        return self.timings.pop(0)

    def fastest(self, kernels):
        self.timed.append(("fastest", list(kernels)))
        return self.timings.pop(0)


def test_the_naive_loops_replace_the_choice_only_when_a_second_timing_agrees():
    """The search's last step times its best, the model's choice and the naive loops side by side. A
    spell of other work during that timing, which slows parallel loops the most, does not make the
    naive loops the result (the cache would keep them): in a second timing of the best and the naive
    loops, the naive loops' fastest call must be clearly faster than the best's too."""
    from mascarpone.middleend.autoschedule import NAIVE, _side_by_side
    best = {"C": {"tile": 32}}
    kernel_of = repr            # (a kernel per choice; the timings are scripted)
    burst = _ScriptedTimes([2.0, 2.1, 1.0], [1.0, 1.8])
    assert _side_by_side(best, kernel_of, burst) == (best, 2.0, 1.0)
    assert burst.timed[1] == ("fastest", [repr(best), repr(NAIVE)])
    lasting = _ScriptedTimes([2.0, 2.1, 1.0], [2.0, 1.0])
    assert _side_by_side(best, kernel_of, lasting) == (NAIVE, 1.0, 1.0)
    once = _ScriptedTimes([1.0, 1.1, 2.0])           # the choice faster: timed once
    assert _side_by_side(best, kernel_of, once) == (best, 1.0, 2.0) and len(once.timed) == 1


def test_the_fastest_calls_are_the_minimum_of_interleaved_rounds():
    """`Timer.fastest` keeps each kernel's fastest timed call: a kernel slowed in most rounds (a spell of
    other work) still shows what it does in a quiet one, where its median does not."""
    from mascarpone.middleend.autoschedule import measure
    f = examples.gemm()[0]
    timer = measure.Timer(f, "cpu", dict(N=8, M=8, K=8), 0)
    calls = {"n": 0}

    def spelled(**kwargs):      # slow in all calls but a few
        calls["n"] += 1
        time.sleep(0.002 if calls["n"] % 7 else 0.0)

    def steady(**kwargs):
        time.sleep(0.0005)
    fastest = timer.fastest([spelled, steady])
    medians = timer.medians([spelled, steady])
    assert fastest[0] < fastest[1] and medians[0] > medians[1]


def test_kernels_whose_arrays_fit_the_caches_are_timed_on_several_placements_of_them():
    """A measurement's rounds take PLACEMENTS placements of the arguments in turn where the arrays fit
    the cores' L2 caches: copies at other offsets from a 4 KB boundary (multiples of 16 bytes), the same
    for a seed, on which the kernel computes as on the first (outputs kept included); a gemm of 12 MB is
    timed on its own arrays."""
    from mascarpone.middleend.autoschedule import measure
    f = examples.gemm()[0]
    sizes = dict(N=16, M=16, K=16)
    timer = measure.Timer(f, "cpu", sizes, 0)
    assert timer._placements() == measure.PLACEMENTS > 1
    kernel = timer.kernel()
    timer.medians([kernel])
    assert "C" in timer.arguments     # the output of the first call, passed to later calls
    placed = [timer._arguments(k) for k in range(1, measure.PLACEMENTS)]
    for arguments in placed:
        assert arguments.keys() == timer.arguments.keys()
        for name in ("A", "B", "C"):
            mine, first = arguments[name], timer.arguments[name]
            assert not np.shares_memory(mine, first) and mine.ctypes.data % 16 == 0
            np.testing.assert_array_equal(mine, first)
        arguments["C"][...] = 0
    timer.medians([kernel])
    for arguments in placed:
        np.testing.assert_array_equal(arguments["C"], timer.arguments["C"])
    again = measure.Timer(f, "cpu", sizes, 0)
    again.arguments = dict(timer.arguments)
    assert [again._arguments(k)["A"].ctypes.data % 4096 for k in range(1, measure.PLACEMENTS)] == \
        [arguments["A"].ctypes.data % 4096 for arguments in placed]
    assert measure.Timer(f, "cpu", dict(N=1024, M=1024, K=1024), 0)._placements() == 1


def test_bad_arguments_are_refused_by_name():
    f, _, _ = examples.blur()
    with pytest.raises(ms.DomainError, match="no size parameter"):
        f.autoschedule(sizes=dict(Q=3), measure=False)
    with pytest.raises(ms.DomainError, match="budget_s"):
        f.autoschedule(budget_s=-1)
    with pytest.raises(ms.ScheduleError, match="'auto' or 'naive'"):
        f.compile("cpu", schedule="fastest")
    with pytest.raises(ms.TargetError, match="unknown target 'gpu'"):
        f.autoschedule(target="gpu", measure=False)
    assert f.history() == []


def test_model_loop_order_and_cache_key():
    """The loop cost puts the stride-one loop innermost (j for row-major gemm); the cache key changes
    with the sizes, the target and the starting schedule."""
    from mascarpone.middleend.autoschedule import analysis, model
    f, C, acc = examples.gemm()
    stages = analysis.analyze(f, f.context(dict(N=100, M=100, K=100)))
    assert model.loop_orders(stages["C_update0"])[0] == ("i", "k", "j")
    assert model.loop_orders(stages["C"]) == [("i", "j")]      # already best: nothing to try
    assert model.needs_tiling(stages["C_update0"], ["i", "k", "j"]) is False   # B fits in L2 at 100
    sizes = dict(N=100, M=100, K=100)
    key = cache.key(f, sizes, "cpu", 0, True)
    assert key == cache.key(examples.gemm()[0], sizes, "cpu", 0, True)
    assert key != cache.key(f, dict(sizes, N=101), "cpu", 0, True)
    assert key != cache.key(f, sizes, "c", 0, True)
    acc.parallelize("i")
    assert key != cache.key(f, sizes, "cpu", 0, True)


def test_halide_compile_with_schedule_auto_reads_the_cache():
    """A Halide pipeline without a schedule compiled with schedule="auto": the choice a first search
    cached (tiny budget, default sizes) is applied without timing anything, with Halide's values."""
    spec = pipelines.blur_valid(61, 37, np.random.default_rng(0), schedule=False)
    pipeline = hl.Pipeline(spec["outputs"])
    for ip, arr in spec["images"].items():
        ip.set(hl.Buffer(arr))
    theirs = np.asarray(pipeline.realize(spec["sizes"]))
    first = ms.from_halide(pipeline).autoschedule(budget_s=1.0)
    assert first.measured >= 1
    f = ms.from_halide(pipeline)
    kernel = f.compile("cpu", schedule="auto")
    assert f.autoscheduled.from_cache and f.autoscheduled.measured == 0
    assert f.autoscheduled.commands == first.commands
    ours = kernel.realize(spec["sizes"], **{ip.name(): a for ip, a in spec["images"].items()})
    np.testing.assert_allclose(ours, theirs, rtol=1e-5)


def _julia(kernel):
    text, argtypes = fixture(kernel)
    return (lambda: ms.from_julia(text, argtypes=argtypes)), argtypes


def _same_values(naive, auto, argtypes, n=23, tsteps=3):
    want, got = random_args(argtypes, seed=4, n=n, tsteps=tsteps), random_args(argtypes, seed=4, n=n, tsteps=tsteps)
    naive(*want), auto(*got)
    for x, y in zip(want, got):
        if isinstance(x, np.ndarray):
            np.testing.assert_allclose(y, x, rtol=1e-12 if x.dtype == np.float64 else 1e-5)


@pytest.mark.parametrize("kernel", ["jacobi1d", "jacobi2d", "heat3d"])
def test_time_stepped_stencils_are_time_tiled(kernel):
    """Arrays larger than L2: the model shifts, skews and tiles the (time, space) band of each
    statement of the step and fuses them per tile; the values are the naive loops', for several
    tile sizes, sizes that leave partial tiles, and tile sizes of a single step."""
    make, argtypes = _julia(kernel)
    naive = make().compile()
    f = make()
    # two float64 arrays outgrowing every core's L2 twice over, on any machine
    total = 4 * machine.cache_bytes(2) * machine.cores() // 16
    extent = {"jacobi1d": max(100000, total), "jacobi2d": max(600, math.isqrt(total) + 1),
              "heat3d": max(80, round(total ** (1 / 3)) + 1)}[kernel]
    big = {p: (20 if p == "tsteps" else extent) for p in f.sizes()}
    report = f.autoschedule(sizes=big, measure=False)
    skews, tiles = _commands(report, "skew"), _commands(report, "tile")
    steps = [c for c in skews if ".skew(t, " in c]
    assert len(steps) == len(tiles) == 2, report.commands
    # the tiles run in wavefronts: the loop over space tiles skewed by the one over time tiles, which runs
    # the tiles of a wavefront in parallel
    assert all(any(c.startswith(f"{t.split('.')[0]}.{cmd}") for c in report.commands)
               for t in tiles for cmd in ("skew(t0, ", "interchange(t0, ", "parallelize(t0)")), report.commands
    assert any(".after(" in c and c.endswith("1)") for c in report.commands)   # fused in the tiles
    # the copies of the arrays updated in place are the call's on cpu, not loops to schedule
    assert not any(c.startswith(("A.", "B.")) for c in report.commands), report.commands
    _same_values(naive, f.compile(), argtypes)
    again = make()
    assert again.autoschedule(sizes=big, measure=False, seed=0).commands == report.commands   # deterministic
    first = steps[0].split(".")[0]
    for sizes in ([4, 8], [16, 4], [1, 16], []):
        g = make()
        stages = analyze(g, g.context(big))
        applier = Applier(g, stages, Checker(g))
        applier.apply({"timetile": {first: sizes}})
        assert (first in applier.time_tiled) == bool(sizes)
        _same_values(naive, g.compile(), argtypes, n=17)


def test_short_sweeps_run_in_split_tiles_on_every_thread(monkeypatch):
    """jacobi-1d at 2000 points and 500 steps on 2 threads: a sweep is too short to start threads for, so
    the model runs the steps in split tiles. Per block of steps, one trapezoid per thread narrowing by the
    stencil's reach at each statement, then the trapezoids between them widening, each phase in
    parallel and each row one vector loop from its first element. At 400 points and 50 steps a phase is
    too short and the loops stay as they are. The line's ends cut the first and last widening trapezoids
    in half, and the two halves run in one iteration: both parallel loops run one tile per thread. The
    values are the naive loops', for tiles of several sizes with partial blocks and tiles."""
    monkeypatch.setattr(machine, "cores", lambda: 2)
    make, argtypes = _julia("jacobi1d")
    naive = make().compile()
    f = make()
    stages = analyze(f, f.context(dict(A_1=2000, B_1=2000, tsteps=500)))
    applier = Applier(f, stages, Checker(f))
    applier.apply({})
    steps, width = applier.split_tiled["s26"]
    assert width == 999 and 2 * (2 * steps - 1) < width <= 4 * 2 * steps + 8, (steps, width)
    lanes = machine.vector_lanes(ms.float64)
    for s in ("s26", "s48"):
        mine = [c.split(".", 1)[1] for c in f.history() if c.startswith(f"{s}.") and not c.endswith(", root)")]
        assert mine[0].startswith("set_schedule({ ") and "i_phase = 0" in mine[0] and "i_phase = 1" in mine[0]
        assert mine[1:] == (["parallelize(i_tile)"] if s == "s26" else
                            ["parallelize(i_tile)", "after(s26, t_step)"]) + [f"vectorize(i, {lanes}, split=False)"]
    lowered = f.lower(fixed=dict(A_1=2000, B_1=2000, tsteps=500))
    parallel = [s for s in walk_stmts(lowered.body) if isinstance(s, For) and s.kind == LoopKind.PARALLEL]
    assert [(s.var, constant_difference(s.hi, s.lo)) for s in parallel] == [("i_tile", 2)] * 2
    _same_values(naive, f.compile(), argtypes, n=2000, tsteps=500)
    for sizes in ([3, 40], [1, 5], [7, 64]):
        g = make()
        applier = Applier(g, analyze(g, g.context(dict(A_1=301, B_1=301, tsteps=37))), Checker(g))
        applier.apply({"split": {"s26": sizes}})
        assert applier.split_tiled == {"s26": sizes}
        _same_values(naive, g.compile(), argtypes, n=301, tsteps=37)
    small = make()
    applier = Applier(small, analyze(small, small.context(dict(A_1=400, B_1=400, tsteps=50))), Checker(small))
    applier.apply({})
    assert applier.split_groups == {"s26": [24, 199]} and not applier.split_tiled
    assert not any("set_schedule" in c or "parallelize" in c for c in small.history())
    # its loops of chunks carry windows (the reads at i - 1, i, i + 1): no unroll factor is offered
    assert {"s26", "s48"} <= applier.vectorized and not {"s26", "s48"} & applier.unrollable


@pytest.mark.parametrize("target", ["c", "opencl", "hls", "mpi"])
def test_split_tiles_give_the_naive_values_on_every_target(target):
    """jacobi-1d in split tiles of 3 steps by 40 points on each target: the naive loops' values. (On
    mpi, one rank in this process, the arrays it updates in place keep their end points: an output given
    as the input's own memory was zeroed before the kernel copied the input, for any schedule.)"""
    from mascarpone.middleend.targets import get_target
    lack = get_target(target).missing()
    if lack:
        pytest.skip(f"target {target} needs {lack}")
    make, argtypes = _julia("jacobi1d")
    naive = make().compile()
    g = make()
    Applier(g, analyze(g, g.context(dict(A_1=301, B_1=301, tsteps=37))), Checker(g)).apply(
        {"split": {"s26": [3, 40]}})
    assert any("i_phase" in c for c in g.history())
    _same_values(naive, g.compile(target), argtypes, n=301, tsteps=37)


def test_split_tiles_of_a_2d_stencil_cut_its_rows(monkeypatch):
    """jacobi-2d in split tiles: the model's at 260^2 and 10 steps on 2 threads (sweeps of 66564 points,
    short against a thread's start: SPLIT_SWEEP), one tile of 129 rows per thread and all 10 steps in
    a block, but not at 1300^2; one given by the choice cuts the row loop into trapezoids, each row a
    vector loop, and the values are the naive loops' with blocks, tiles and trapezoids of every kind."""
    monkeypatch.setattr(machine, "cores", lambda: 2)
    make, argtypes = _julia("jacobi2d")
    for n, split in ((260, {"s39": [10, 129]}), (1300, {})):
        g = make()
        applier = Applier(g, analyze(g, g.context({p: (10 if p == "tsteps" else n) for p in g.sizes()})),
                          Checker(g))
        applier.apply({"timetile": {"s39": []}})
        assert applier.split_tiled == split
    naive = make().compile()
    g = make()
    applier = Applier(g, analyze(g, g.context(dict(A_1=61, A_2=61, B_1=61, B_2=61, tsteps=9))), Checker(g))
    applier.apply({"split": {"s39": [2, 12]}})
    assert applier.split_tiled == {"s39": [2, 12]}
    assert any(c.startswith("s79.set_schedule(") for c in g.history())
    _same_values(naive, g.compile(), argtypes, n=61, tsteps=9)


@pytest.mark.parametrize("jam", [None, 0, 3])
def test_split_tiles_jam_their_rows_around_the_vector_loop(jam):
    """In split tiles, a stencil's rows are computed `jam` at a time in each vector chunk (0: not), unrolled,
    as the choice says; the model's (no choice) jams WINDOW_JAM, as the arrays stay in the caches and
    jacobi-2d's reads along the vector loop are windows that the jammed rows share (model.jam_factor).
    Trapezoids whose rows are no multiple of the factor give the naive loops' values."""
    make, argtypes = _julia("jacobi2d")
    naive = make().compile()
    g = make()
    applier = Applier(g, analyze(g, g.context(dict(A_1=61, A_2=61, B_1=61, B_2=61, tsteps=9))), Checker(g))
    choice = {"split": {"s39": [2, 12]}}
    if jam is not None:
        choice["jam"] = {"s39": jam, "s79": jam}
    applier.apply(choice)
    factor = model.WINDOW_JAM if jam is None else jam
    assert applier.jammable == {"s39": factor, "s79": factor}
    for name in ("s39", "s79"):
        assert any(c.startswith(f"{name}.unroll(") for c in g.history()) == bool(factor)
    _same_values(naive, g.compile(), argtypes, n=61, tsteps=9)


def test_gauss_seidel_chains_are_interleaved():
    """seidel-2d: the row loop is skewed by 2 (the least factor that makes 8 consecutive rows
    independent at one column) and 8 rows are unrolled there; the values are the naive loops'."""
    make, argtypes = _julia("seidel2d")
    naive = make().compile()
    f = make()
    report = f.autoschedule(sizes={p: (4 if p == "tsteps" else 200) for p in f.sizes()}, measure=False)
    assert [c.split(".", 1)[1] for c in report.commands if c.startswith("s51.") and ".after(" not in c] == \
        ["skew(i, j, 2)", "split(i, 8)", "reorder(i0, j, i1)", "unroll(i1, 8)"]
    _same_values(naive, f.compile(), argtypes)


def test_a_sweep_no_loop_runs_in_parallel_runs_its_tiles_in_wavefronts():
    """seidel-2d at 1000^2 without time tiles: its interleaved sweep is tiled (32 rows of chains by 128
    columns, model.SPACE_WAVE) and the tiles of each wavefront run in parallel, as the dependences allow;
    at 200^2 the sweep stays serial. The values are the naive loops', at sizes with partial tiles too."""
    make, argtypes = _julia("seidel2d")
    naive = make().compile()
    f = make()
    sizes = dict(A_1=1000, tsteps=20)
    applier = Applier(f, analyze(f, f.context(sizes)), Checker(f))
    applier.apply({"timetile": {"s51": []}})
    rows, columns = model.SPACE_WAVE
    assert applier.space_waves == {"s51": model.SPACE_WAVE}
    assert f.history()[-6:] == [f"s51.split(i0, {rows // model.CHAINS})", f"s51.split(j, {columns})",
                                "s51.reorder(i00, j0, i01, j1, i10, i11)", "s51.skew(i00, j0, 1)",
                                "s51.interchange(i00, j0)", "s51.parallelize(i00)"], f.history()
    _same_values(naive, f.compile(), argtypes, n=301)
    small = make()
    applier = Applier(small, analyze(small, small.context(dict(A_1=200, tsteps=4))), Checker(small))
    applier.apply({"timetile": {"s51": []}})
    assert applier.space_waves == {"s51": None} and not any(".parallelize(" in c for c in small.history()
                                                              if c.startswith("s51."))


class _Counted:
    """A compiled kernel that counts its calls (and takes `delay` seconds more each)."""

    def __init__(self, kernel, delay=0.0):
        self.kernel, self.calls, self.delay = kernel, 0, delay

    def __call__(self, **kwargs):
        self.calls += 1
        time.sleep(self.delay)
        return self.kernel(**kwargs)


def test_measurements_stop_at_their_limit_and_clearly_slower_naive_loops_are_called_once(monkeypatch):
    """A measurement takes more runs only within its limit (the search passes what is left of the
    budget), and naive loops whose first call is far slower than the best's are not called again: at
    large sizes the naive loops of a gemm take minutes a call."""
    from mascarpone.middleend import autoschedule as auto
    from mascarpone.middleend.autoschedule.measure import MIN_RUNS, Timer
    f = examples.gemm()[0]
    sizes = dict(N=192, M=192, K=192)
    timer = Timer(f, "cpu", sizes, 0)
    naive = _Counted(timer.kernel())
    assert len(timer.medians([naive], limit_s=0)) == 1 and naive.calls == 1        # the first call only
    timer.medians([naive])
    assert naive.calls >= 2 + MIN_RUNS
    g = examples.gemm()[0]
    g.autoschedule(sizes=sizes, measure=False)
    best = g.autoscheduled.choice
    start = auto.save(f)
    kernels = []
    # the naive loops (the second kernel compiled) made far slower than any load can make the best: the
    # path taken must not depend on how busy the machine is
    monkeypatch.setattr(timer, "kernel", lambda: kernels.append(
        _Counted(Timer.kernel(timer), delay=0.5 if kernels else 0.0)) or kernels[-1])

    def apply(choice):
        auto.restore(f, start)
        applier = Applier(f, analyze(f, f.context(sizes)), Checker(f))
        if not choice.get("naive"):
            applier.apply(choice)
    chosen, chosen_t, naive_t = auto._side_by_side(best, lambda c: (apply(c), timer.kernel())[1], timer)
    assert chosen == best and naive_t > auto.CLEARLY_SLOWER * chosen_t
    assert kernels[1].calls == 1 and kernels[0].calls > 1


@pytest.mark.parametrize("slower, kept", [(0, "model"), (1, "best")])
def test_the_searchs_best_is_kept_only_where_it_beats_the_models_choice_again(monkeypatch, slower, kept):
    """After the search, its best, the model's choice and the naive loops are timed side by side: a best
    that one lucky measurement put ahead but that is slower here gives way to the model's choice; one
    that is faster stays. (Either is made slower by a delay, so the path does not depend on the load.)"""
    from mascarpone.middleend import autoschedule as auto
    from mascarpone.middleend.autoschedule.measure import Timer
    from mascarpone.backends.common import threads
    monkeypatch.setattr(threads, "_default_threads", 1)   # (no worker threads to wake after each delay)
    f = examples.gemm()[0]
    sizes = dict(N=128, M=128, K=128)
    timer = Timer(f, "cpu", sizes, 0)
    start = auto.save(f)
    kernels = []     # compiled in the order: the search's best, the model's choice, the naive loops
    monkeypatch.setattr(timer, "kernel", lambda: kernels.append(
        _Counted(Timer.kernel(timer), delay=0.02 if len(kernels) == slower else 0.0)) or kernels[-1])

    def apply(choice):
        auto.restore(f, start)
        if not choice.get("naive"):
            Applier(f, analyze(f, f.context(sizes)), Checker(f)).apply(choice)
    best = {"registers": {"C_update0": [4, 2]}}
    chosen, chosen_t, naive_t = auto._side_by_side(best, lambda c: (apply(c), timer.kernel())[1], timer)
    assert len(kernels) == 3
    assert chosen == ({} if kept == "model" else best), (chosen, chosen_t, naive_t)


def test_a_parallel_loop_inside_a_recurrence_moves_outermost():
    """A recurrence along rows vectorized across them (Halide's iir update): the loop across the rows is
    the parallel one, moved outside the serial loop along them in strips of a few vectors, so that one
    parallel region runs the whole update rather than one per row, and each strip's chains overlap;
    the values are Halide's."""
    from mascarpone.middleend.autoschedule.apply import STRIP_VECTORS
    spec = pipelines.iir(61, 37, np.random.default_rng(0), schedule=False)
    pipeline = hl.Pipeline(spec["outputs"])
    for ip, arr in spec["images"].items():
        ip.set(hl.Buffer(arr))
    theirs = np.asarray(pipeline.realize(spec["sizes"]))
    f = ms.from_halide(pipeline)
    report = f.autoschedule(sizes=dict(inp_extent_0=1536, inp_extent_1=2560, out_extent_0=1536,
                                       out_extent_1=2560), measure=False)
    update = next(c for c in f.computations if c.name.endswith("_s1"))   # (Halide's names vary in a process)
    assert update.tags.get(update.loops[0]) is not None and update.loops[-1] != update.loops[0], report.commands
    assert any(c.startswith(f"{update.name}.reorder(") and c.endswith(", r_x)") for c in report.commands), \
        report.commands
    assert f"{update.name}.split(x0, {STRIP_VECTORS})" in report.commands, report.commands
    assert update.loops[1] == "r_x" and update.tags[update.loops[-1]][0] == "vector", update.loops
    ours = f.compile("cpu").realize(spec["sizes"], **{ip.name(): a for ip, a in spec["images"].items()})
    np.testing.assert_allclose(ours, theirs, rtol=1e-5)


def test_the_search_tries_the_knobs_a_better_choice_opens():
    """Coordinate descent from the model's choice: once a variant wins, the knobs its schedule has and
    the model's did not (a stencil no longer time-tiled has its loops' knobs) are tried too, once each."""
    from mascarpone.middleend.autoschedule.search import search
    times = {"{}": 1.0, repr({"timetile": {"s": []}}): 0.5,
             repr({"timetile": {"s": []}, "vectorize": {"s": False}}): 0.25}
    tried = []

    def measure(choice, limit):
        tried.append(choice)
        return times.get(repr(choice), 2.0)

    def candidates_of(choice):
        if not choice:
            return [("s", "timetile", [4, 8]), ("s", "timetile", [])]
        return [("s", "timetile", [4, 8]), ("s", "vectorize", False)]
    best, best_t, seen = search(measure, candidates_of, budget_s=60)
    assert best == {"timetile": {"s": []}, "vectorize": {"s": False}} and best_t == 0.25
    assert len(tried) == len(seen) == 4      # {}, the two time tiles, then the opened knob: nothing twice


def test_the_search_starts_no_variant_the_budget_left_cannot_cover(monkeypatch):
    """A variant starts only while the budget left covers the median time a measurement has taken and
    a reserve of one more (the model's, for the final comparison with the naive loops): on a clock each
    measurement advances by 3 s, a budget of 13 s measures the model's choice and two variants (7 s
    left, then 4 s), not a third that would leave 1 s, less than the reserve."""
    import sys
    import types
    search_module = sys.modules["mascarpone.middleend.autoschedule.search"]
    clock = [0.0]
    monkeypatch.setattr(search_module, "time", types.SimpleNamespace(perf_counter=lambda: clock[0]))
    tried = []

    def measure(choice, limit):
        tried.append(choice)
        clock[0] += 3.0
        return 1.0

    search_module.search(measure, lambda c: [("s", "unroll", k) for k in (2, 4, 8, 16)] if not c else [],
                         budget_s=13)
    assert tried == [{}, {"unroll": {"s": 2}}, {"unroll": {"s": 4}}]


def test_a_budget_the_model_spends_measures_nothing(monkeypatch):
    """budget_s counts from the call: where applying the model's choice spends all of it (a budget of 0
    here; the commands of a pipeline of many stages can take minutes to check), nothing is compiled or
    timed, the model's choice is applied once, as with measure=False, and the report says why."""
    from mascarpone.middleend.autoschedule import measure
    applied, compiled = [], []
    apply = Applier.apply
    monkeypatch.setattr(Applier, "apply", lambda self, choice: applied.append(choice) or apply(self, choice))
    monkeypatch.setattr(measure.Timer, "kernel", lambda self: compiled.append(1))
    sizes = dict(H=64, W=128)
    f, _, _ = examples.blur()
    with pytest.warns(UserWarning, match="not measured: applying the model's choice took"):
        report = f.autoschedule(sizes=sizes, budget_s=0)
    assert report.measured == 0 and report.seconds is None and "budget_s=0" in report.note
    assert applied == [{}] and compiled == []
    g, _, _ = examples.blur()
    g.autoschedule(sizes=sizes, measure=False, cache=False)
    assert f.history() == g.history() == report.commands and _commands(report, "vectorize")
    img = rng.random((66, 130), dtype=np.float32)
    np.testing.assert_allclose(f.compile("cpu")(img=img), blur_reference(img), rtol=1e-5)


def test_a_measurement_past_the_budget_leaves_out_the_naive_comparison(monkeypatch):
    """Where the model's measurement alone outlasts the budget (a compile made to take 1.5 s here, on a
    budget of 1 s), no variant is measured and the naive loops are not compiled for the final
    comparison; the report says so, and the model's choice gives the program's values."""
    from mascarpone.middleend.autoschedule import measure
    kernel = measure.Timer.kernel
    compiled = []

    def slow(self):
        compiled.append(1)
        time.sleep(1.5)
        return kernel(self)
    monkeypatch.setattr(measure.Timer, "kernel", slow)
    f, _, _ = examples.blur()
    report = f.autoschedule(sizes=dict(H=64, W=128), budget_s=1.0)
    assert report.measured == 1 and len(compiled) == 1 and report.choice == {}
    assert report.naive_seconds is None and "naive loops were not timed" in report.note
    img = rng.random((66, 130), dtype=np.float32)
    np.testing.assert_allclose(f.compile("cpu")(img=img), blur_reference(img), rtol=1e-5)


def test_a_first_call_past_its_limit_is_stopped():
    """The naive loops' first call in the final comparison runs in a child process, stopped at its
    limit: a 512^3 product's naive loops (about 0.3 s a call here) give None within a limit of 10 ms,
    and their time within one of 60 s."""
    from mascarpone.middleend.autoschedule.measure import Timer
    f, _, _ = examples.gemm()
    timer = Timer(f, "cpu", {p: 512 for p in f.sizes()}, 0)
    kernel = timer.kernel()
    t0 = time.perf_counter()
    assert timer.first_call_within(kernel, 0.01) is None
    stopped = time.perf_counter() - t0
    took = timer.first_call_within(kernel, 60)
    assert took is not None and took > stopped


def test_naive_loops_far_slower_than_the_choice_are_stopped_not_timed():
    """A 1024^3 product: the naive loops' first call (seconds) takes far more than 4 times the chosen
    schedule's, so it is stopped at that time (at 0.5 s at least) instead of run to its end, and the
    report says why the naive loops have no time."""
    f, _, _ = examples.gemm()
    report = f.autoschedule(sizes={p: 1024 for p in f.sizes()}, budget_s=3.0, cache=False)
    assert report.naive_seconds is None and "was stopped" in report.note, report.note
    assert report.seconds is not None and report.measured >= 1


@pytest.mark.parametrize("program", ["blur", "gemm", "jacobi2d", "seidel2d", "gaussian"])
def test_steps_given_unchecked_then_checked_give_the_commands_of_checked_attempts(program):
    """The model's steps of many commands (inlinings, each stage's loops) run first with their attempts
    unchecked and the whole checked once, and again attempt by attempt where that fails (the Julia
    stencils' stages, whose model relies on refused attempts): the same commands as attempts checked
    one by one, and a fall back where the first run fails."""
    def build():
        if program in ("blur", "gemm"):
            f = getattr(examples, program)()[0]
            return f, dict(H=64, W=128) if program == "blur" else dict(N=64, M=64, K=64)
        if program == "gaussian":
            spec = pipelines.gaussian(70, 45, np.random.default_rng(0), schedule=False)
            return ms.from_halide(hl.Pipeline(spec["outputs"])), None
        from mascarpone.frontends.julia import from_julia
        text, argtypes = fixture(program)
        return from_julia(text, argtypes), {}
    from mascarpone.middleend.autoschedule.state import restore, save
    f, sizes = build()
    g = getattr(f, "function", f)
    stages = analyze(g, g.context(g._checked_fixed(dict(sizes)) if sizes else None))
    start = save(g)
    commands, fell_back = [], []
    for optimistic in (True, False):
        restore(g, start)
        applier = Applier(g, stages, Checker(g), optimistic=optimistic)
        applier.apply({"split": {"s39": False}})    # (jacobi-2d's steps as stages, not in split tiles)
        commands.append(g.history()[start.history_length:])
        fell_back.append(applier.fell_back)
    assert commands[0] == commands[1] and commands[0] and not fell_back[1]
    assert fell_back[0] == (program in ("jacobi2d", "seidel2d"))


def test_measurements_fill_the_outputs_of_the_first_call():
    """The timer passes the outputs of its first call to every later one (filled in place): the calls
    it times allocate nothing."""
    from mascarpone.middleend.autoschedule.measure import Timer
    f = examples.gemm()[0]
    timer = Timer(f, "cpu", dict(N=32, M=32, K=32), 0)
    kernel = timer.kernel()
    assert "C" not in timer.arguments
    timer.medians([kernel])
    kept = timer.arguments["C"]
    assert isinstance(kept, np.ndarray) and kernel(**timer.arguments) is kept
    np.testing.assert_allclose(kept, timer.arguments["A"] @ timer.arguments["B"], rtol=1e-4)


def test_stencil_rows_are_unrolled_and_jammed_around_the_vector_loop():
    """jacobi-2d where the arrays fit the caches (no time tiles): a sweep computes `factor` columns together
    inside the vector loop, as the search may try, since its 5-point reads share their column loads;
    the model jams none, since its sweeps stream from memory once the arrays outgrow the caches
    (model.jam_factor). The values are the naive loops' for every factor the search tries, and for
    sizes that leave a partial group of columns."""
    make, argtypes = _julia("jacobi2d")
    naive = make().compile()
    small = {"tsteps": 4, "A_1": 60, "A_2": 60, "B_1": 60, "B_2": 60}
    for factor in (None, 0) + model.JAM_VARIANTS:
        g = make()
        stages = analyze(g, g.context(small))
        applier = Applier(g, stages, Checker(g))
        applier.apply({} if factor is None else {"jam": {name: factor for name in stages}})
        stencils = sorted(applier.jammable)
        assert len(stencils) == 2, g.history()
        want = 0 if factor is None else factor
        assert all(applier.jammable[s] == want for s in stencils)
        jammed = [c for c in g.history() if c.startswith(tuple(f"{s}.unroll(j1, " for s in stencils))]
        assert len(jammed) == (2 if want else 0), g.history()
        _same_values(naive, g.compile(), argtypes, n=23)    # 21 columns: a partial group of each factor
    g = make()
    jacobi = analyze(g, g.context(small))[stencils[0]]
    assert model.reuses_along(jacobi, "j") and model.reuses_along(jacobi, "i") and not model.reuses_along(jacobi, "t")


def test_a_parallel_loop_must_have_enough_work_each_time_it_starts():
    """jacobi-2d's sweeps start their parallel loop at every time step: parallel at 260^2 (67000 points a
    sweep), serial at 100^2 (10^4), where the threads' start and join would cost more than they share;
    the search may also try a stage serial. (Not in split tiles, which the model gives the short sweeps
    of 260^2 by default.)"""
    make, argtypes = _julia("jacobi2d")

    def parallel_commands(n, choice):
        g = make()
        sizes = {p: (10 if p == "tsteps" else n) for p in g.sizes()}
        applier = Applier(g, analyze(g, g.context(sizes)), Checker(g))
        applier.apply({**choice, "split": {"s39": False}})
        return [c for c in g.history() if ".parallelize(" in c and c.startswith("s")], applier, g

    big, applier, _ = parallel_commands(260, {})
    assert len(big) == 2 and {c.split(".")[0] for c in big} <= applier.parallel
    assert parallel_commands(100, {})[0] == []
    serial, _, g = parallel_commands(260, {"parallel": {name: False for name in applier.parallel}})
    assert serial == []
    _same_values(make().compile(), g.compile(), argtypes)


def test_a_variant_wins_only_when_faster_beside_the_best():
    """A variant that measured clearly faster alone is timed again beside the best, their calls
    interleaved: it replaces the best only where it is still clearly faster there."""
    from mascarpone.middleend.autoschedule.search import search
    alone = {"{}": 1.0, repr({"unroll": {"s": 2}}): 0.5, repr({"unroll": {"s": 4}}): 0.5}
    beside = {repr({"unroll": {"s": 2}}): (0.99, 1.0), repr({"unroll": {"s": 4}}): (0.6, 1.0)}
    confirmed = []

    def confirm(candidate, best, limit):
        confirmed.append((candidate, best))
        return beside[repr(candidate)]

    best, best_t, seen = search(lambda c, limit: alone[repr(c)],
                                lambda c: [("s", "unroll", 2), ("s", "unroll", 4)] if not c else [],
                                budget_s=60, confirm=confirm)
    assert confirmed == [({"unroll": {"s": 2}}, {}), ({"unroll": {"s": 4}}, {})]
    assert best == {"unroll": {"s": 4}} and best_t == 0.6


def test_the_search_confirms_on_the_kernels_it_compiled():
    """The autoscheduler's confirmation, and its final comparison, reuse the kernels of the variant, of the
    best and of the model's choice (nothing is compiled twice) and keep the schedule's values."""
    from mascarpone.middleend.autoschedule import Paired
    from mascarpone.middleend.autoschedule.measure import Timer
    f = examples.gemm()[0]
    sizes = dict(N=64, M=64, K=64)
    timer = Timer(f, "cpu", sizes, 0)
    compiled = []
    kernel = timer.kernel
    timer.kernel = lambda: compiled.append(1) or kernel()
    paired = Paired(lambda choice: None, timer)
    paired.measure({}, 10)
    paired.measure({"unroll": {"s": 2}}, 10)
    t_candidate, t_best = paired.confirm({"unroll": {"s": 2}}, {}, 10)
    assert len(compiled) == 2 and t_candidate > 0 and t_best > 0
    paired.measure({"unroll": {"s": 4}}, 10)
    paired.confirm({"unroll": {"s": 4}}, {"unroll": {"s": 2}}, 10)
    # the model's choice ({}), measured first, is still at hand for the final comparison
    assert paired.kernel({}) is not None and len(compiled) == 3
    np.testing.assert_allclose(timer.arguments["C"], timer.arguments["A"] @ timer.arguments["B"], rtol=1e-4)


def test_isl_scheduler_proposal_read_back_as_fusion_and_loop_orders():
    """isl's scheduler (exact dependences as validity, proximity and coincidence) proposes one outermost
    band for the Julia gemm's three statements, with the update's reduction innermost (i, j, k); seidel's
    in-place sweep gets a skewed band, which is not read back as a loop order."""
    from mascarpone.middleend.autoschedule.islschedule import propose
    g = _julia("gemm")[0]()
    proposal = propose(g, g._prepare(), Checker(g).dependences())
    update = next(c for c in g.computations if len(c.vars) == 3)
    init = next(c for c in g.computations if len(c.vars) == 2 and c.name.startswith("s"))
    assert proposal.fused(update.name, init.name)
    assert proposal.orders[update.name] == ["i", "j", "k"] and [v.name for v in update.vars] == ["i", "k", "j"]
    s = _julia("seidel2d")[0]()
    sweep = next(c for c in s.computations if len(c.vars) == 3)
    proposal = propose(s, s._prepare(), Checker(s).dependences())
    assert sweep.name not in proposal.orders and any(g == {sweep.name} for g in proposal.groups)


def test_isl_scheduler_proposal_is_a_measured_variant_with_the_naive_values():
    """Where isl's proposal differs from the model's choice, the search offers it ("isl") first; applied,
    it is legal and computes the naive loops' values (the Julia gemm: the statements left in their source
    nest, the update's loops in isl's order)."""
    from mascarpone.middleend.autoschedule.islschedule import propose
    from mascarpone.middleend.autoschedule.search import variants
    make, argtypes = _julia("gemm")
    naive = make().compile()
    g = make()
    sizes = {p: 48 for p in g.sizes()}
    stages, checker = analyze(g, g.context(sizes)), Checker(g)
    applier = Applier(g, stages, checker, proposal=propose(g, g._prepare(), checker.dependences()))
    applier.apply({})
    assert applier.differs and variants(applier, stages, 0)[0] == ("*", "isl", True)
    g = make()
    checker = Checker(g)
    Applier(g, analyze(g, g.context(sizes)), checker,
            proposal=propose(g, g._prepare(), checker.dependences())).apply({"isl": {"*": True}})
    history = g.history()
    assert not any(".after(" in c for c in history) and any(c.endswith(".reorder(i, j, k)") for c in history)
    assert checker.legal()
    _same_values(naive, g.compile(), argtypes)


def test_the_parallel_loop_runs_more_than_once_at_the_sizes_scheduled_for():
    """A tile loop over a dimension shorter than its tile (4 channels in tiles of 8) runs once at the
    sizes scheduled for: the loop after it is the parallel one (Halide's interpolate ran its two largest
    levels serially)."""
    C, H, W = ms.Param("C"), ms.Param("H"), ms.Param("W")
    c, y, x = ms.Var("c", 0, C), ms.Var("y", 0, H), ms.Var("x", 0, W)
    with ms.Function("channels") as f:
        img = ms.Input("img", [C, H + 2, W], ms.float32)
        out = ms.Computation("out", [c, y, x], img[c, y, x] + img[c, y + 1, x] + img[c, y + 2, x])
    report = f.autoschedule("cpu", sizes=dict(C=4, H=1024, W=1024), measure=False)
    tiles = [cmd for cmd in report.commands if cmd.startswith("out.tile(c, y, x, 8")]
    parallel = [cmd for cmd in report.commands if cmd.startswith("out.parallelize(")]
    assert tiles and parallel == ["out.parallelize(y0)"], report.commands
    a = np.random.default_rng(0).random((4, 42, 40), dtype=np.float32)
    np.testing.assert_allclose(f.compile("cpu")(img=a), a[:, :-2] + a[:, 1:-1] + a[:, 2:], rtol=1e-6)


def test_a_history_replayed_on_a_function_built_the_same_way_gives_the_same_loops():
    """The model's commands, as history() prints them, replayed on a fresh function: split tiles
    (set_schedule with the loop names isl does not print), tiles, register tiles, placements, and
    covariance's copy of its data in panels (store_in of a new array with its index); the loops come out
    the same, and so do the values."""
    for kernel, size, steps in (("jacobi1d", 2000, 500), ("jacobi2d", 260, 10), ("gemm", 200, None),
                                ("covariance", 1200, None)):
        make, argtypes = _julia(kernel)
        f = make()
        sizes = {p: steps if p == "tsteps" else size for p in f.sizes()}
        Applier(f, analyze(f, f.context(sizes)), Checker(f)).apply({})
        g = make().replay(f.history())
        assert len(g.history()) == len(f.history()) > 3
        assert str(g.lower()) == str(f.lower())
        _same_values(make().compile(), g.compile(), argtypes)


def test_replay_names_the_line_it_cannot_read():
    make, _ = _julia("jacobi1d")
    f = make()
    with pytest.raises(ms.ScheduleError, match=r"'s99.vectorize\(i, 8\)'.*no computation or array 's99'"):
        f.replay(["s26.vectorize(i, 8)", "s99.vectorize(i, 8)"])
    assert f.history() == ["s26.vectorize(i, 8)"]       # the lines before it were applied
    with pytest.raises(ms.ScheduleError, match="no command 'vectorise'"):
        f.replay("s26.vectorise(i, 8)")
    with pytest.raises(ms.ScheduleError, match="no command 'compile'"):    # scheduling commands only
        f.replay("compile()")
    with pytest.raises(ms.ScheduleError, match="unbalanced"):
        f.replay("s26.tile(t, i, [4, 8)")
    with pytest.raises(ms.ScheduleError, match=r"'s26.split\(i\)': missing a required argument"):
        f.replay("s26.split(i)")
    with pytest.raises(ms.ScheduleError, match="unexpected keyword argument 'foo'"):
        f.replay("s26.tile(t, i, 4, 8, foo=3)")
    with pytest.raises(ms.ScheduleError, match="cannot read the argument"):
        f.replay("s26.split(i, '\\x')")
    with pytest.raises(ms.ScheduleError, match=r"no computation or array 'B_T' \(an array new"):
        f.replay("s26.store_in(B_T)")
    with pytest.raises(ms.ScheduleError, match=r"cannot read 'B_1 / 2' in the expression"):
        f.replay("s26.store_in(Buffer(B_T, [B_1 / 2], float64))")
    with pytest.raises(ms.ScheduleError, match="has no loop named 'q'"):   # the command's own check
        f.replay("s48.parallelize(q)")
