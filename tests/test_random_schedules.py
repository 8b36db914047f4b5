"""Random command sequences: whatever the checker accepts must compute what the unscheduled program does,
and what it does not accept is refused with a typed error. tests/fuzz/layouts.py runs longer."""
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from random_programs import (COMPUTATIONS, FACTORS, IMG, LAYOUT_COMMANDS, LOOP_COMMANDS, apply, program,
                             reference, run_case)


def commands(names, max_size):
    return st.lists(st.tuples(st.sampled_from(names), st.sampled_from(COMPUTATIONS), st.integers(0, 3),
                              st.integers(0, 3), st.sampled_from(FACTORS)), max_size=max_size)


@settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(commands(LOOP_COMMANDS, 5))
def test_accepted_schedules_compute_the_same_values(seq):
    outcome = run_case(seq)
    assert outcome == "equal" or outcome.startswith("refused"), (seq, outcome)


@settings(max_examples=120, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(commands(LOOP_COMMANDS + LAYOUT_COMMANDS * 4, 6))
def test_accepted_layouts_compute_the_same_values(seq):
    """Layout commands (store_in with transposed, padded, flipped, panelled, too small and contracted
    buffers; storage_fold) among loop commands: a run with the program's values or a typed refusal."""
    outcome = run_case(seq)
    assert outcome == "equal" or outcome.startswith("refused"), (seq, outcome)


def test_layout_classes_each_run_or_are_refused():
    """Each buffer class of p, p computed at the root, and as a window slid over the rows of c (each row
    of p computed once, when c's row y needs it: rows y + 2 on, after the first)."""
    outcomes = {}
    for k in range(11):
        for sliding in (False, True):
            seq = [("compute_at", "p", 0, 0, 1), ("store_root", "p", 0, 0, 1)] if sliding else []
            seq.append(("store_in", "p", k // 4, k % 4, 1))
            outcomes[(k, sliding)] = run_case(seq)
    assert all(o == "equal" or o.startswith("refused") for o in outcomes.values()), outcomes
    # natural, transposed, padded, flipped and panelled buffers hold p; too small ones never
    for sliding in (False, True):
        assert [outcomes[(k, sliding)] for k in range(7)] == ["equal"] * 5 + ["refused: OutOfBoundsError"] * 2
    # one row, one column or one element for all of p: values overwritten before they are read
    assert {outcomes[(k, False)] for k in (7, 9, 10)} == {"refused: OverwriteError"}
    # a ring of three rows holds the window: rows y, y + 1, y + 2 when c's row y reads them
    assert outcomes[(8, True)] == "equal" and outcomes[(8, False)] == "refused: OverwriteError"


def test_condition_that_isl_writes_as_constant_true():
    """isl can print an always-true disjunct as the integer 1 inside a guard; it must read as a bool."""
    f, comps = program()
    for cmd in [("split", "p", 0, 0, 2), ("vectorize", "c", 1, 0, 2), ("vectorize", "c", 0, 0, 2)]:
        apply(comps, *cmd)
    np.testing.assert_allclose(f.compile("cpu")(img=IMG), reference(), rtol=1e-5)


def test_rows_unrolled_inside_lanes_of_a_width_that_is_no_power_of_two():
    """p vectorized by 3 lanes with an unrolled loop of 3 inside each chunk whose copies read across
    rows (lanes a row apart): the cpu target transposes such a block in registers only for a power of
    two of lanes (its rounds halve the block) and loads the others lane by lane; it once failed with an
    IndexError (found by tests/fuzz/layouts.py, seed 11291)."""
    case = [("vectorize", "p", 2, 3, 3), ("split", "c", 2, 0, 3), ("tile", "r", 0, 2, 2), ("unroll", "p", 2, 0, 3),
            ("reverse", "r", 0, 1, 8), ("store_at", "p", 1, 1, 1), ("split", "r", 0, 1, 3)]
    assert run_case(case) == "equal"
