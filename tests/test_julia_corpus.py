"""Printed IR as users paste it (tests/julia_corpus): each text translates, compiles and gives the
reference interpreter's results, or is refused with the error and message its case names."""
import pytest

import mascarpone.frontends.julia as J
from mascarpone.frontends.julia import from_julia
from mascarpone.middleend import errors
from julia_corpus import CASES, run_case


@pytest.mark.parametrize("case", [c for c in CASES if c.refused is None], ids=lambda c: c.file)
def test_corpus_text_matches_the_interpreter(case):
    stage, detail = run_case(case)
    assert stage == "matched", detail


@pytest.mark.parametrize("case", [c for c in CASES if c.refused is not None], ids=lambda c: c.file)
def test_corpus_text_is_refused_by_name(case):
    name, pattern = case.refused
    error = getattr(J, name, None) or getattr(errors, name)
    with pytest.raises(error, match=pattern):
        from_julia(case.text, case.argtypes, static_parameters=case.static_parameters)


def test_every_corpus_file_has_a_case():
    from julia_corpus import HERE
    assert sorted(p.name for p in HERE.glob("*.txt")) == sorted(c.file for c in CASES)
