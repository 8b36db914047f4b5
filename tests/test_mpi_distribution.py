"""Distribution commands, the per-rank program and its exchanges (middleend/spmd.py,
middleend/communication.py), and what is refused, with the reason."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import mascarpone as ms
from mascarpone.middleend.communication import Exchange, Wait
from mascarpone.middleend.distribution import block_bounds
from mascarpone.middleend.loopir import For, walk_stmts

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import mpi_programs  # noqa: E402

needs_mpi = pytest.mark.skipif(any(not t.available for t in ms.targets() if t.name == "mpi"),
                               reason="needs the MPI tools (pip install 'mascarpone[mpi]')")


def row_scan():
    """out[y, x] = 0.5 out[y - 1, x] + img[y, x]: each row needs the one above."""
    H, W = ms.Param("H"), ms.Param("W")
    y, x = ms.Var("y", 0, H), ms.Var("x", 0, W)
    y1 = ms.Var("y", 1, H)
    with ms.Function("scan") as f:
        img = ms.Input("img", [H, W], ms.float32)
        out = ms.Computation("out", [y, x], img[y, x])
        step = out.update([y1, x], ms.f32(0.5) * out[y1 - 1, x] + img[y1, x])
    return f, img, out, step


def test_a_distributed_loop_carrying_a_dependence_is_refused_naming_it():
    f, img, out, step = row_scan()
    out.distribute("y")
    step.distribute("y")
    with pytest.raises(ms.IllegalScheduleError, match=r"loop y of out_update0 is tagged distribute but carries a "
                                                      r"read-after-write dependence from out_update0 to out_update0") as e:
        f.compile("mpi")
    assert e.value.command == "out_update0.distribute(y)"
    assert e.value.dependence is not None


def test_the_same_scan_distributed_across_its_rows_is_fine():
    f, img, out, step = row_scan()
    step.interchange("y", "x")
    out.distribute("y")
    step.distribute("x")    # the recurrence runs down each column: columns are independent
    assert f.lower().spmd().exchanges   # rows computed by out on one rank, scanned by columns on another


def test_distribution_commands_check_their_arguments():
    f, img, out, step = row_scan()
    with pytest.raises(ms.ScheduleError, match=r"img.distribute\(dim=2\): img has 2 dimension\(s\)"):
        img.distribute(dim=2)
    with pytest.raises(ms.ScheduleError, match="give a loop, or dim= for the storage, not both"):
        out.distribute("y", dim=0)
    with pytest.raises(ms.ScheduleError, match="has no loop named 'z'"):
        out.send_receive(step, "z")


def test_two_distributed_loops_in_one_computation_are_refused():
    f, img, out, step = row_scan()
    out.distribute("y")
    out.distribute("x")
    with pytest.raises(ms.NotSupportedError, match="out has 2 distributed loops"):
        f.lower().spmd()


def test_a_distributed_loop_inside_a_parallel_one_is_refused():
    prog = mpi_programs.cvt_color()
    gray = prog.function["gray"]
    gray.interchange("y", "x0")        # (x was split for the vector lanes)
    gray.parallelize("x0")
    with pytest.raises(ms.NotSupportedError, match="loop y of gray is distributed inside the parallel loop x0"):
        prog.function.lower().spmd()


def test_the_time_loop_exchanges_in_each_step_and_overlaps_the_interior():
    """heat2d: the exchange is inside the t loop, before the distributed y loop; the rows that need
    nothing from the neighbours run between the start of the exchange and its wait."""
    prog = mpi_programs.heat2d()
    dist = prog.function.lower().spmd()
    body = dist.lowered.body
    t_loops = [s for s in walk_stmts(body) if isinstance(s, For) and s.var == "t"]
    assert len(t_loops) == 1
    inside = list(walk_stmts(t_loops[0].body))
    kinds = [type(s).__name__ for s in inside if isinstance(s, (Exchange, Wait)) or
             (isinstance(s, For) and s.var == "y")]
    start, wait = kinds.index("Exchange"), kinds.index("Wait")
    assert start == 0 and wait > 1 and "For" in kinds[wait:], kinds   # interior, wait, boundary
    interior = next(s for s in inside if isinstance(s, For) and s.var == "y")
    assert (str(interior.lo), str(interior.hi)) == ("(mpi_lo0 + 1)", "(mpi_hi0 - 1)")
    exchange = next(s for s in inside if isinstance(s, Exchange))
    assert [str(e) for e in exchange.outer] == ["t"]   # its element sets depend on the step


def test_programs_without_shared_rows_have_no_exchange():
    for build in (mpi_programs.cvt_color, mpi_programs.nb, mpi_programs.gemm):
        dist = build().function.lower().spmd()
        assert not dist.exchanges, build.__name__
        assert not any(isinstance(s, (Exchange, Wait)) for s in walk_stmts(dist.lowered.body))


def test_an_input_used_in_place_when_no_rank_reads_outside_its_block():
    """cvtColor reads only its own rows: the caller's block is used as it is; blur's second stage reads
    rows of the first computed elsewhere, which live in a box one row wider than the block."""
    dist = mpi_programs.cvt_color().function.lower().spmd()
    assert [p.copy for p in dist.placements] == [False, False]
    dist = mpi_programs.conv2d().function.lower().spmd()
    img = dist.placements[0]
    assert img.copy and img.local.name == "img_local"


@needs_mpi
def test_explicit_send_receive_where_the_compiler_would_put_it():
    prog = mpi_programs.blur()
    f = prog.function
    f["bx"].send_receive(f["by"], "y")
    assert f.history()[-1] == "bx.send_receive(by, y)"
    inputs = prog.inputs(20, 16, np.random.default_rng(0))
    k = f.compile("mpi").with_ranks(3)
    np.testing.assert_allclose(k(**inputs), prog.reference(inputs), rtol=1e-6)
    assert [s["bytes_sent"] for s in k.stats()] == [64, 128, 64]


def test_explicit_send_receive_before_the_values_exist_is_refused():
    """Sending heat2d's rows once before the time loop cannot carry what each step computes."""
    prog = mpi_programs.heat2d()
    f = prog.function
    f["u"].send_receive(f["u_update0"], "t")
    with pytest.raises(ms.IllegalScheduleError, match=r"u.send_receive\(u_update0, t\) exchanges values of "
                                                      r"u_update0 before u_update0's loop, but some are written "
                                                      r"later on another rank") as e:
        f.lower().spmd()
    assert e.value.command == "u.send_receive(u_update0, t)"


def test_explicit_send_receive_inside_the_distributed_loop_is_refused():
    prog = mpi_programs.heat2d()
    f = prog.function
    f["u"].send_receive(f["u_update0"], "x0")
    with pytest.raises(ms.IllegalScheduleError, match="loop x0 is inside the distributed loop y"):
        f.lower().spmd()


@needs_mpi
def test_blocks_of_the_generated_code_follow_the_rule():
    prog = mpi_programs.conv2d()
    k = prog.function.compile("mpi")
    for ranks in (1, 3, 4, 7):
        for rank in range(ranks):
            assert k.block("img", rank, ranks, H=10, W=5) == (0, *block_bounds(0, 12, rank, ranks))
            assert k.block("conv", rank, ranks, H=10, W=5) == (0, *block_bounds(0, 10, rank, ranks))
            assert k.block("k", rank, ranks, H=10, W=5) is None


@needs_mpi
def test_a_function_without_distribution_runs_on_every_rank_alike():
    H = ms.Param("H")
    i = ms.Var("i", 0, H)
    with ms.Function("twice_all") as f:
        a = ms.Input("a", [H], ms.int32)
        ms.Computation("twice", [i], a[i] * 2)
    k = f.compile("mpi").with_ranks(2)
    np.testing.assert_array_equal(k(a=np.arange(5, dtype=np.int32)), np.arange(5) * 2)
    assert sum(s["bytes_sent"] for s in k.stats()) == 0


def test_a_lowering_rescheduled_since_is_not_distributed():
    prog = mpi_programs.blur()
    lowered = prog.function.lower()
    prog.function["by"].parallelize("x0")
    with pytest.raises(ms.ScheduleError, match="blur was rescheduled after it was lowered"):
        lowered.spmd()


def test_an_exchange_under_a_condition_that_differs_between_ranks_is_refused():
    """Every rank must reach each exchange point: a guard that the sizes decide is fine, one that
    depends on the rank's block is not (the other ranks would wait for it)."""
    from mascarpone.middleend import spmd
    from mascarpone.middleend.dependences import compute_dependences
    from mascarpone.middleend.expr import Const, Sym, binop
    from mascarpone.middleend.statements import build_statements
    f = mpi_programs.blur().function
    lowered = f.lower()
    context = f.context()
    lowering = spmd._Lowering(f, build_statements(f, context), compute_dependences(f.computations, context),
                              context, lowered)
    lowering.me_context = lowering.dists.constraints("me")
    lowering._check_rank_independent("cond", binop("ge", Sym("H"), Const(5, ms.int64)), 0)
    lowering._check_rank_independent("cond", binop("ge", Sym("mpi_lo0"), Const(0, ms.int64)), 0)  # always true
    with pytest.raises(ms.NotSupportedError, match="differs between ranks"):
        lowering._check_rank_independent("cond", binop("ge", Sym("mpi_lo0"), Const(5, ms.int64)), 0)
    with pytest.raises(ms.NotSupportedError, match="differs between ranks"):
        lowering._check_rank_independent("bound", Sym("mpi_hi0"), 0)


def test_names_of_the_back_end_are_refused():
    H = ms.Param("H")
    i = ms.Var("mpi_o0", 0, H)
    with ms.Function("clash") as f:
        a = ms.Input("a", [H], ms.int32)
        c = ms.Computation("c", [i], a[i] + 1)
    c.distribute("mpi_o0")
    with pytest.raises(ms.NotSupportedError, match="'mpi_o0': names starting with 'mpi_' are the MPI back-end's"):
        f.lower().spmd()
