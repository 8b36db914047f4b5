"""cache_read: copies of the blocks a computation reads (BLIS's packing), with numpy's values on every
target; the copies' temporaries allocated once per thread (backends/common/hoist.py); and the
autoscheduler's packed gemm."""
from __future__ import annotations

import numpy as np
import pytest

import mascarpone as ms
from mascarpone import examples
from mascarpone.backends.common.hoist import hoist_allocations
from mascarpone.middleend.autoschedule import cache
from mascarpone.middleend.buffer import Buffer
from mascarpone.middleend.expr import Const, Sym
from mascarpone.middleend.loopir import Allocate, Block, For, LoopKind, Store, walk_stmts
from mascarpone.middleend.targets import get_target
from mascarpone.middleend.types import float32, int64
from julia_fixtures import fixture, random_args

rng = np.random.default_rng(5)


def packed_gemm():
    """The plain gemm in BLIS's loop nest with copies of A's and B's blocks (small blocks)."""
    f, C, acc = examples.gemm()
    a_copy, b_copy = examples.schedule_gemm_cache_read(f, C, acc, mc=24, kc=16, nc=48, mr=6, nr=16)
    return f, a_copy, b_copy


@pytest.mark.parametrize("target", ["cpu", "c", "opencl", "hls", "mpi"])
@pytest.mark.parametrize("n,m,k", [(96, 96, 64), (37, 101, 45), (5, 7, 3)])   # blocks that divide, and that do not
def test_packed_gemm_with_copies_of_its_blocks(target, n, m, k):
    lack = get_target(target).missing()
    if lack:
        pytest.skip(f"target {target} needs {lack}")
    f, a_copy, b_copy = packed_gemm()
    assert f.history()[-5:-2] == ["C_update0.cache_read(B, at=k0)", "C_update0.cache_read(A, at=i0)",
                                  "B_copy.vectorize(B_copy_d1, 16)"]
    a = rng.standard_normal((n, k), dtype=np.float32)
    b = rng.standard_normal((k, m), dtype=np.float32)
    np.testing.assert_allclose(f.compile(target)(A=a, B=b), a @ b, rtol=1e-4, atol=1e-4)
    text = str(f.lower(fixed=dict(N=96, M=96, K=64)))
    # per k0, a 16 x 48 block of B; per i0 a 24 x 16 block of A; the product reads only the copies
    assert "B_copy_tile[16, 48]" in text and "A_copy_tile[24, 16]" in text
    assert " B[" not in text.split("A_copy_tile[24, 16]")[1].split("C[")[1]


def test_cache_read_errors_name_the_problem():
    f, C, acc = examples.gemm()
    A, B = f.inputs
    k0, _ = acc.split("k", 16)
    with pytest.raises(ms.ScheduleError, match="cannot cache its own storage"):
        acc.cache_read(C, at=k0)
    g, bx, by = examples.blur()
    with pytest.raises(ms.ScheduleError, match="does not read img"):
        by.cache_read(g.inputs[0], at="y")
    with pytest.raises(ms.ScheduleError, match="expected an Input or a Computation"):
        acc.cache_read("B", at=k0)


def _allocations_under(stmt):
    """{buffer name: the loop variables around its Allocate}."""
    out = {}

    def visit(s, loops):
        if isinstance(s, Allocate):
            out[s.buffer.name] = loops
            visit(s.body, loops)
        elif isinstance(s, For):
            visit(s.body, loops + [s.var])
        elif isinstance(s, Block):
            for c in s.body:
                visit(c, loops)
    visit(stmt, [])
    return out


def test_allocations_leave_serial_loops_but_not_parallel_or_vector_ones():
    """A temporary moves out of the serial loops around it, up to the nearest loop whose iterations may
    run at once; one whose size reads a loop's variable stays inside that loop."""
    j = Sym("j", int64)
    tile = Buffer("tile", [64, 64], float32)
    lanes = Buffer("lanes", [2], float32)
    ragged = Buffer("ragged", [j + 1], float32)
    out = Buffer("out", [8, 8], float32, "output")

    def use(b):
        return Store(out, (Const(0, int64), Const(0, int64)), b[tuple(Const(0, int64) for _ in b.shape)])
    body = For("i", Const(0, int64), Const(8, int64), For("j", Const(0, int64), Const(8, int64), Block([
        Allocate(tile, use(tile)),
        Allocate(ragged, use(ragged)),
        For("k", Const(0, int64), Const(8, int64), Allocate(lanes, use(lanes)), LoopKind.VECTOR, 8)])),
        LoopKind.PARALLEL)
    placed = _allocations_under(hoist_allocations(body))
    assert placed == {"tile": ["i"], "ragged": ["i", "j"], "lanes": ["i", "j", "k"]}
    assert sum(isinstance(s, Allocate) for s in walk_stmts(hoist_allocations(body))) == 3


def test_autoscheduled_gemm_packs_its_blocks_where_they_outgrow_l2(tmp_path, monkeypatch):
    """The model's schedule for a gemm whose arrays outgrow L2: BLIS's loop nest with copies of A's
    and B's blocks (the search may drop them: the "pack" knob); numpy's values."""
    monkeypatch.setenv(cache.ENV, str(tmp_path))
    f = examples.gemm()[0]
    n = 600
    report = f.autoschedule(sizes=dict(N=n, M=n, K=n), measure=False)
    assert "C_update0.cache_read(B, at=k0)" in report.commands and "C_update0.cache_read(A, at=i0)" in report.commands
    a = rng.random((n, n), dtype=np.float32)
    b = rng.random((n, n), dtype=np.float32)
    np.testing.assert_allclose(f.compile("cpu")(A=a, B=b), a @ b, rtol=1e-4)
    small = examples.gemm()[0]
    assert not any("cache_read" in c for c in small.autoschedule(sizes=dict(N=64, M=64, K=64), measure=False).commands)


def _julia_values_match(naive, scheduled, argtypes, sizes=(37, 5, 70)):
    for n in sizes:
        want, got = random_args(argtypes, seed=2, n=n), random_args(argtypes, seed=2, n=n)
        naive(*want), scheduled(*got)
        for x, y in zip(want, got):
            if isinstance(x, np.ndarray):
                np.testing.assert_allclose(y, x, rtol=1e-12)


def test_a_julia_gemm_packs_its_blocks_where_they_outgrow_l2():
    """Julia's gemm nests C's scaling and its update in one loop over rows; the copies of A's and B's
    blocks run, in the source order the dependences come from, before that loop nest. The model's
    schedule starts the loops from 1 at 0, so that tiles and vectors start on the arrays' first elements;
    the values are the naive loops'."""
    text, argtypes = fixture("gemm")
    f = ms.from_julia(text, argtypes=argtypes)
    report = f.autoschedule(sizes={p: 600 for p in f.sizes()}, measure=False, cache=False)
    assert {"s49.shift(i, -1)", "s49.shift(j, -1)", "s49.cache_read(A, at=k0)", "s49.cache_read(B, at=j0)"} \
        <= set(report.commands), report.commands
    _julia_values_match(ms.from_julia(text, argtypes=argtypes).compile(), f.compile(), argtypes)


def test_a_julia_statement_caches_an_input_but_not_an_array_its_own_loop_nest_writes():
    """atax's y-update (s60) reads t (s30), which the same source loop over i writes: no whole copy of t
    can run between them, and the command says so. A copy of the input A can, with the same values."""
    text, argtypes = fixture("atax_inbounds")
    f = ms.from_julia(text, argtypes=argtypes)
    with pytest.raises(ms.ScheduleError, match="writes s30 in the loop nest of the source program that holds s60"):
        f["s60"].cache_read(f["s30"], at="i")
    assert f.history() == []
    copy = f["s60"].cache_read(next(x for x in f.inputs if x.name == "A"), at="i")
    assert copy.name == "A_copy"
    _julia_values_match(ms.from_julia(text, argtypes=argtypes).compile(), f.compile(), argtypes)


@pytest.mark.parametrize("target", ["cpu", "c", "opencl", "hls", "mpi"])
def test_cache_read_at_root_copies_the_whole_input_once_in_a_layout_of_its_own(target):
    """gemm reading B through one copy made before its loop nest, stored transposed (store_in): B's
    columns become the copy's rows; numpy's values, and the copy is one loop nest outside the product."""
    lack = get_target(target).missing()
    if lack:
        pytest.skip(f"target {target} needs {lack}")
    f, C, acc = examples.gemm()
    A, B = f.inputs
    copy = acc.cache_read(B, at=ms.root)
    K, M = B.shape
    copy.store_in(ms.Buffer("B_T", [M, K], ms.float32), [copy.vars[1], copy.vars[0]])
    assert f.history() == ["C_update0.cache_read(B, at=root)", "B_copy.store_in(Buffer(B_T, [M, K], float32), index=[B_copy_d1, B_copy_d0])"]
    a = rng.standard_normal((37, 45), dtype=np.float32)
    b = rng.standard_normal((45, 29), dtype=np.float32)
    np.testing.assert_allclose(f.compile(target)(A=a, B=b), a @ b, rtol=1e-4, atol=1e-4)
    copy_nest, product = str(f.lower()).split("B_T[B_copy_d1, B_copy_d0] = B[B_copy_d0, B_copy_d1];")
    assert "C[i, j] = 0.0f" in copy_nest and "(A[i, k] * B_T[j, k])" in product and "B[" not in product


def test_a_julia_covariance_reads_a_transposed_copy_of_its_data():
    """covariance's cov[i, j] += data[k, i] * data[k, j] is stride-one only along the sum: the model
    copies data once, transposed, before the nest, then keeps 8 columns by a vector of cov in
    registers over k, on the triangle j >= i; the values are the naive loops' (sizes whose tiles do and
    do not divide)."""
    text, argtypes = fixture("covariance")
    f = ms.from_julia(text, argtypes=argtypes)
    report = f.autoschedule(sizes={p: 240 for p in f.sizes()}, measure=False, cache=False)
    assert {"s98.cache_read(data, at=root)", "s98.vectorize(i1, 8)"} <= set(report.commands), report.commands
    assert any(c.startswith("data_copy.store_in(Buffer(data_T, ") and c.endswith("index=[data_copy_d1, data_copy_d0])")
               for c in report.commands), report.commands
    _julia_values_match(ms.from_julia(text, argtypes=argtypes).compile(), f.compile(), argtypes, sizes=(37, 5, 70, 16))


def _column_sums(transposed_copy):
    """acc[i] = sum over k < N of a[k, i], for a of shape [K, N]: inside a only where N <= K."""
    N, K = ms.Param("N"), ms.Param("K")
    i, k = ms.Var("i", 0, N), ms.Var("k", 0, N)
    with ms.Function("colsum") as f:
        a = ms.Input("a", [K, N], ms.float64)
        acc = ms.Computation("acc", [i], 0.0)
        total = acc.update([i, k], acc[i] + a[k, i])
    if transposed_copy:
        copy = total.cache_read(a, at=ms.root)
        rows, columns = copy.vars
        copy.store_in(ms.Buffer("a_T", [columns.hi - columns.lo, rows.hi - rows.lo], ms.float64),
                      [columns - columns.lo, rows - rows.lo])
    return f


@pytest.mark.parametrize("target", ["cpu", "c", "opencl", "hls", "mpi"])
@pytest.mark.parametrize("transposed_copy", [False, True])
def test_sizes_that_read_an_input_outside_its_shape_are_refused_at_the_call(transposed_copy, target):
    """Reads of a[k, i] for k < N lie inside a's K rows only where N <= K: the kernel compiles assuming
    that, gives numpy's sums there, and refuses other sizes when called, naming the read (through a
    whole copy of a in a layout of its own, whose reads outside it are reads outside a), on every target."""
    lack = get_target(target).missing()
    if lack:
        pytest.skip(f"target {target} needs {lack}")
    kernel = _column_sums(transposed_copy).compile(target)
    a = rng.random((7, 5))
    np.testing.assert_allclose(kernel(a=a), a[:5].sum(axis=0))
    with pytest.raises(ms.ArgumentError, match=r"assuming N <= K .*reads a .*outside its shape"):
        kernel(a=rng.random((3, 5)))
