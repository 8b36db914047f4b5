"""Computation.expand: a scratch array given a copy per iteration of a loop, where the program's
reads allow it (isl's flow analysis), with the array's last values copied back; refused with the
read that keeps it from being private otherwise."""
import numpy as np
import pytest

import mascarpone as ms
from julia_fixtures import fixture
from mascarpone.frontends.julia import from_julia, interpret
from mascarpone.middleend.targets import get_target


def _doitgen():
    text, argtypes = fixture("doitgen")
    return from_julia(text, argtypes)


def _same_as_interpreter(f, shapes, seed=0, target="cpu"):
    """doitgen's arrays of `shapes` after `f` compiled for `target`: those of the reference interpreter."""
    text, argtypes = fixture("doitgen")
    rng = np.random.default_rng(seed)
    args = [np.asfortranarray(rng.random(s)) for s in shapes]
    want = [a.copy(order="F") for a in args]
    f.compile(target)(*args)
    interpret(text, argtypes, *want)
    for got, ref in zip(args, want):
        np.testing.assert_array_equal(got, ref)


def test_an_expanded_scratch_array_frees_the_loop_that_reused_it():
    """doitgen's acc[p] chains the iterations of r (each zeroes and sums it anew): parallel r is illegal.
    Expanded over r, the same command is legal, and A and acc (its last sums, copied back) are bit for
    bit the interpreter's, also where acc is longer than a row of sums."""
    f = _doitgen()
    f["s42"].parallelize("r")
    with pytest.raises(ms.IllegalScheduleError, match="parallel"):
        f.lower()
    f = _doitgen()
    expanded = f["acc"].expand("r")
    assert expanded.name == "acc_r" and [v.name for v in expanded.vars] == ["acc_d1", "r"]
    for name in ("s28", "s42", "s62"):
        f[name].parallelize("r")
    assert f.history()[0] == "acc.expand(r)"
    _same_as_interpreter(f, [(7, 6, 19), (19, 19), (19,)])
    _same_as_interpreter(f, [(5, 4, 6), (6, 6), (9,)], seed=1)


@pytest.mark.parametrize("target", ["cpu", "c", "opencl", "hls", "mpi"])
def test_an_array_expanded_twice_keeps_the_values_on_every_target(target):
    """acc over r, then over q as its dimension 1 (A's order: r stride-one): the copies back run in turn
    after the nest. Every target gives the interpreter's values."""
    lack = get_target(target).missing()
    if lack:
        pytest.skip(f"target {target} needs {lack}")
    f = _doitgen()
    f["acc"].expand("r").expand("q", dim=1)
    assert [v.name for v in f["acc_r_q"].vars] == ["acc_d1", "q", "r"]
    _same_as_interpreter(f, [(5, 4, 6), (6, 6), (7,)], seed=2, target=target)


def test_reads_of_values_written_before_the_loop_are_refused():
    """bicg's s[j] is zeroed in a loop nest of its own (over j) and summed over i: every iteration of i
    reads what earlier ones left, and a loop named j runs in both nests."""
    text, argtypes = fixture("bicg")
    for loop, message in (("i", r"s39 reads values of s that s\d+ wrote outside loop 'i'"),
                          ("j", "loops named 'j' of several loop nests touch s")):
        f = from_julia(text, argtypes)
        with pytest.raises(ms.ScheduleError, match=message):
            f["s"].expand(loop)
        assert f.history() == []


def _running_sums():
    R, P = ms.Param("R"), ms.Param("P")
    r, p = ms.Var("r", 0, R), ms.Var("p", 0, P)
    with ms.Function("running") as f:
        a = ms.Input("a", [R, P], ms.float64)
        acc = ms.Computation("acc", [p], ms.cast(ms.float64, 0), output=True)
        acc.update([r, p], a[r, p], at=[p])
        acc.update([r, p], acc[p] + a[r, p], at=[p])
    return f, acc


def test_reads_of_another_iteration_are_refused():
    """The second update adds to what the first left after all of r (declaration order): its reads come
    from other iterations of r, named in the error."""
    f, acc = _running_sums()
    with pytest.raises(ms.ScheduleError, match="wrote in another iteration of loop 'r'"):
        acc.expand("r")


def test_expand_is_refused_after_scheduling_commands_and_for_a_bad_dimension():
    f = _doitgen()
    with pytest.raises(ms.ScheduleError, match="dim must be an int from 0 to 1"):
        f["acc"].expand("r", dim=3)
    with pytest.raises(ms.ScheduleError, match="no update of acc runs in a loop named 'z'"):
        f["acc"].expand("z")
    with pytest.raises(ms.ScheduleError, match="is an update; expand the array it updates, acc"):
        f["s42"].expand("r")
    with pytest.raises(ms.ScheduleError, match="expected a loop"):
        f["acc"].expand(3)
    assert f["acc"].expand(f["s42"].vars[0]).name == "acc_r"      # a Var names its loop
    f["s28"].vectorize("p", 8)
    with pytest.raises(ms.ScheduleError, match=r"before scheduling commands \(given: s28.vectorize"):
        f["acc"].expand("r")
