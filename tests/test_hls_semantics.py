"""The loop-IR tests of tests/test_native_targets.py on the "hls" target: every operation of the contract on
every type, loop kinds, temporaries and argument checks, run by C simulation and checked against numpy and
the Python evaluator as on "cpu" and "c" (threads and OpenMP-specific tests are left out)."""
from __future__ import annotations

import pytest

from mascarpone.middleend.targets import get_target

pytestmark = pytest.mark.skipif(get_target("hls").missing() is not None,
                                reason=f"hls target: {get_target('hls').missing()}")

from test_native_targets import (test_argument_errors,  # noqa: E402,F401
                                 test_bitwise_ops_shifts_and_bit_counts, test_casts, test_division_by_constants,
                                 test_integer_ops, test_loop_kinds,
                                 test_math_calls, test_ieee_maximum_and_minimum, test_narrow_symbols_and_negation,
                                 test_overlapping_input_and_output_is_safe,
                                 test_params_inferred_from_shapes_and_noncontiguous_inputs, test_reinterpret,
                                 test_select_compare_logic_and_bools, test_symbolic_temporary_and_kernel_wide_temporaries,
                                 test_uint8_add_wraps, test_unroll_constant_and_versioned, test_vector_bounds)


@pytest.fixture
def target():
    return "hls"
