"""The loop-IR tests of the native targets (every operation of middleend/semantics.py on every type, every
loop kind, temporaries, argument checks) run on the "opencl" target, each kernel in one thread on the
OpenCL device (PoCL here), and compiled as CUDA to PTX; where a CUDA device exists they run on "cuda" too."""
from __future__ import annotations

import pytest

from gpu_check import require
from mascarpone.middleend.targets import get_target

import test_native_targets as native


@pytest.fixture(params=["opencl", "cuda"])
def target(request):
    require(request.param)
    return request.param


_options = {"num_threads", "arch"}


def _build(target, lowered, **options):
    """The opencl kernel (options of the CPU targets that do not apply dropped), and the same program
    compiled as CUDA to PTX."""
    options = {k: v for k, v in options.items() if k not in _options}
    if target != "cuda" and get_target("cuda").missing() is None:
        get_target("cuda").compile(lowered, **options)
    return get_target(target).compile(lowered, **options)


@pytest.fixture(autouse=True)
def _gpu_build(monkeypatch):
    monkeypatch.setattr(native, "build", _build)


from test_native_targets import (test_loop_kinds, test_unroll_constant_and_versioned, test_vector_bounds,  # noqa: E402,F401
                                 test_vector_constant_trip_with_remainder, test_vector_access_patterns,
                                 test_vector_strided_loads_and_stores, test_vector_uniform_store_keeps_last_lane,
                                 test_vector_masked_if, test_integer_ops, test_division_by_constants,
                                 test_bitwise_ops_shifts_and_bit_counts, test_reinterpret, test_uint8_add_wraps,
                                 test_casts, test_select_compare_logic_and_bools, test_narrow_symbols_and_negation,
                                 test_symbolic_temporary_and_kernel_wide_temporaries, test_promotion_skips_aliasing_accesses,
                                 test_params_inferred_from_shapes_and_noncontiguous_inputs, test_argument_errors,
                                 test_overlapping_input_and_output_is_safe, test_allocate_inside_parallel_loop,
                                 test_float_ops_ieee_without_contraction,
                                 test_math_calls, test_ieee_maximum_and_minimum)
