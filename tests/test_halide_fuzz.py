"""Mutated serialize_pipeline bytes never crash, hang, escape as a raw exception or give other values
than Halide's: a small fixed-seed run of benchmarks/halide/fuzz.py (each case in a worker process)."""
import sys
from pathlib import Path

import pytest

pytest.importorskip("halide")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks" / "halide"))
import fuzz  # noqa: E402


def test_mutated_pipelines_are_refused_by_type_or_computed_as_halide_does():
    counts, defects = fuzz.fuzz(cases=40, seed=11, timeout=60, budget=8)
    assert not defects, "\n\n".join(f"{o}: {name}: {what}\n{detail}" for o, name, what, detail in defects)
    assert counts["typed error"] > 0 and sum(counts.values()) >= 8
