"""Distributed programs run with mpiexec on 1 to 4 ranks of this machine, against numpy and the cpu
target; the bytes each rank sends against the exact halo counted by hand."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import mascarpone as ms
from mascarpone.middleend.distribution import block_bounds

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import mpi_programs  # noqa: E402

needs_mpi = pytest.mark.skipif(any(not t.available for t in ms.targets() if t.name == "mpi"),
                               reason="needs the MPI tools (pip install 'mascarpone[mpi]')")
pytestmark = needs_mpi

#: 23 rows and 19 columns: no rank count from 2 to 4 divides them
HEIGHT, WIDTH = 23, 19


def _tuple(x):
    return x if isinstance(x, tuple) else (x,)


@pytest.fixture(scope="module")
def built():
    """Each program built once for mpi (and for cpu), run on several rank counts."""
    cache = {}

    def get(name):
        if name not in cache:
            prog = mpi_programs.ALL[name]()
            cache[name] = (prog, prog.function.compile("mpi", fp_contract=False),
                           prog.function.compile("cpu", fp_contract=False))
        return cache[name]
    return get


@pytest.mark.parametrize("name", list(mpi_programs.ALL))
def test_program_on_1_to_4_ranks(built, name):
    prog, kernel, cpu = built(name)
    inputs = prog.inputs(HEIGHT, WIDTH, np.random.default_rng(11))
    want = _tuple(prog.reference(inputs))
    same_bits = _tuple(cpu(**inputs))
    for ranks in (1, 2, 3, 4):
        k = kernel.with_ranks(ranks, timeout=120)
        got = _tuple(k(**inputs))
        if name == "heat2d":   # the last of the two time planes holds the result
            got, same = (got[0][inputs["T"] % 2],), (same_bits[0][inputs["T"] % 2],)
        else:
            same = same_bits
        for g, w, c in zip(got, want, same):
            np.testing.assert_array_equal(g, c, err_msg=f"{name} on {ranks} ranks differs from the cpu target")
            np.testing.assert_allclose(g, w, rtol=prog.tol or 0, atol=1e-6 if prog.tol else 0)
        stats = k.stats()
        assert [s["rank"] for s in stats] == list(range(ranks))
        sent = sum(s["bytes_sent"] for s in stats)
        assert sent == sum(s["bytes_received"] for s in stats)
        if ranks == 1 or not prog.communicates:
            assert sent == 0, f"{name} on {ranks} ranks sent {sent} bytes"
        else:
            assert sent > 0


def _rows_from_others(need, own):
    """{rank: rows} that a rank needing rows `need` (a set) gets from each other rank holding `own[r]`."""
    return {r: len(need & set(range(*own[r]))) for r in range(len(own))}


def test_blur_halo_is_one_row_from_each_neighbour(built):
    """Clamped 3x3 blur: rank r's second stage reads rows lo-1 and hi of the first (clamped at the
    image's edges), computed by its neighbours: exactly those rows are sent, each once."""
    prog, kernel, _ = built("blur")
    inputs = prog.inputs(HEIGHT, WIDTH, np.random.default_rng(1))
    for ranks in (2, 3, 4):
        k = kernel.with_ranks(ranks)
        k(**inputs)
        blocks = [block_bounds(0, HEIGHT, r, ranks) for r in range(ranks)]
        sent = [0] * ranks
        received = [0] * ranks
        for q, (lo, hi) in enumerate(blocks):
            need = {min(max(y, 0), HEIGHT - 1) for y in range(lo - 1, hi + 1)} - set(range(lo, hi))
            for r, rows in _rows_from_others(need, blocks).items():
                sent[r] += rows * WIDTH * 4
                received[q] += rows * WIDTH * 4
        stats = k.stats()
        assert [s["bytes_sent"] for s in stats] == sent
        assert [s["bytes_received"] for s in stats] == received
        # one message per neighbour: a rank inside the line has two
        assert [s["messages"] for s in stats] == [sum(1 for p in (r - 1, r + 1) if 0 <= p < ranks)
                                                   for r in range(ranks)]


def test_conv2d_halo_follows_the_blocks_of_input_and_output(built):
    """The input has two rows more than the output: both are split in balanced blocks, so a rank's
    halo (rows lo..hi+1 of the input, minus its own) comes from one or two ranks, 0 to 2 rows each."""
    prog, kernel, _ = built("conv2d")
    h, w = 21, 17
    inputs = prog.inputs(h, w, np.random.default_rng(2))
    for ranks in (3, 4):
        k = kernel.with_ranks(ranks)
        k(**inputs)
        own = [block_bounds(0, h + 2, r, ranks) for r in range(ranks)]
        out = [block_bounds(0, h, r, ranks) for r in range(ranks)]
        sent = [0] * ranks
        for q in range(ranks):
            need = set(range(out[q][0], out[q][1] + 2)) - set(range(*own[q]))
            for r, rows in _rows_from_others(need, own).items():
                sent[r] += rows * (w + 2) * 4
        assert [s["bytes_sent"] for s in k.stats()] == sent


def test_heat2d_exchanges_a_row_with_each_neighbour_every_step(built):
    prog, kernel, _ = built("heat2d")
    inputs = prog.inputs(HEIGHT, WIDTH, np.random.default_rng(3))
    steps = inputs["T"]
    k = kernel.with_ranks(3)
    k(**inputs)
    row = WIDTH * 4
    assert [s["bytes_sent"] for s in k.stats()] == [steps * row, 2 * steps * row, steps * row]
    assert [s["messages"] for s in k.stats()] == [steps, 2 * steps, steps]


def test_more_ranks_than_rows():
    """Ranks with no rows take part in every exchange and return empty blocks."""
    prog = mpi_programs.blur()
    k = prog.function.compile("mpi").with_ranks(4)
    inputs = prog.inputs(3, 5, np.random.default_rng(4))
    np.testing.assert_allclose(k(**inputs), prog.reference(inputs), rtol=1e-6)


def test_columns_distributed_send_strided_halos_as_one_datatype():
    """Blur split by columns: a halo column is one element per row, not contiguous; it goes as one
    message per neighbour (an MPI struct datatype over the runs), H elements of 4 bytes each."""
    H, W = ms.Param("H"), ms.Param("W")
    y, x = ms.Var("y", 0, H), ms.Var("x", 0, W)
    with ms.Function("colblur") as f:
        img = ms.Input("img", [H, W], ms.float32)
        bx = ms.Computation("bx", [y, x], (img[y, ms.max(x - 1, 0)] + img[y, x] + img[y, ms.min(x + 1, W - 1)]) / 3)
    img.distribute(dim=1)
    bx.interchange("y", "x")
    bx.distribute("x")
    h, w = 13, 17
    a = np.random.default_rng(5).random((h, w), dtype=np.float32)
    p = np.pad(a, ((0, 0), (1, 1)), mode="edge")
    want = (p[:, :-2] + p[:, 1:-1] + p[:, 2:]) / np.float32(3)
    k = f.compile("mpi", fp_contract=False).with_ranks(3)
    np.testing.assert_allclose(k(img=a), want, rtol=1e-6)
    assert [s["bytes_sent"] for s in k.stats()] == [h * 4, 2 * h * 4, h * 4]
    assert [s["messages"] for s in k.stats()] == [1, 2, 1]
