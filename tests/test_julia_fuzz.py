"""Mutated printed IR never crashes the front-end: each mutant of the fixtures and corpus is refused with a
typed error or compiles to a kernel that gives the reference interpreter's results (tests/julia_fuzz.py;
benchmarks/fuzz_julia.py runs it longer)."""
import os

from julia_fuzz import BUGS, counts, fuzz


def test_mutants_are_refused_by_type_or_match_the_interpreter():
    results = fuzz(seed=20240611, cases=50, budget_s=300.0)     # the budget only bounds a stuck machine
    assert [r["i"] for r in results] == list(range(50))
    found = counts(results)
    assert found["typed error"] > 0 and found["accepted, equal"] > 0, found
    bugs = [r for r in results if r["outcome"] in BUGS]
    assert not bugs, bugs[:3]


def test_a_crash_or_a_hang_is_counted_for_its_case(monkeypatch):
    monkeypatch.setenv("JULIA_FUZZ_FAULTS", "2:crash,4:hang")
    # the budget only bounds a stuck machine; a case is a hang after 5 s without an answer
    results = fuzz(seed=1, budget_s=300.0, cases=6, case_timeout_s=5.0)
    by_case = {r["i"]: r["outcome"] for r in results}
    assert sorted(by_case) == [0, 1, 2, 3, 4, 5]
    assert by_case[2] == "crash" and by_case[4] == "hang"
    assert all(by_case[i] not in BUGS for i in (0, 1, 3, 5))
    assert os.environ["JULIA_FUZZ_FAULTS"] == "2:crash,4:hang"
