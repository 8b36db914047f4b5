"""Arrays a function updates in place (an output that starts as a copy of an input): the "cpu" and "c"
targets lower without that copy and bind the output in place, or copy the input in when the caller
passes other memory; the results match numpy in every way of calling."""
from __future__ import annotations

import gc
import sys

import numpy as np
import pytest

import mascarpone as ms
from mascarpone.middleend.copy_in import copied_inputs


def prefix_sum(read_input_again=False):
    """a = a_in, then a[i] += a[i - 1] for i = 1..N-1 (a recurrence on the array itself)."""
    N = ms.Param("N")
    with ms.Function("prefix") as f:
        i, k = ms.Var("i", 0, N), ms.Var("k", 1, N)
        a_in = ms.Input("a_in", [N], ms.float64)
        a = ms.Computation("a", [i], a_in[i], output=True)
        extra = a_in[k] * 0.0 if read_input_again else ms.f64(0.0)
        a.update([k], a[k - 1] + a[k] + extra, at=[k])
    return f


def two_outputs():
    """a = 2 a_in and b = a_in + 1: two outputs of one input."""
    N = ms.Param("N")
    with ms.Function("two_outputs") as f:
        i = ms.Var("i", 0, N)
        a_in = ms.Input("a_in", [N], ms.float64)
        ms.Computation("a", [i], a_in[i] * 2.0, output=True)
        ms.Computation("b", [i], a_in[i] + 1.0, output=True)
    return f


@pytest.mark.parametrize("target", ["cpu", "c"])
def test_in_place_and_apart(target):
    """An output that starts as an input is bound in place or gets the input's values; from the second
    round on, the calls launch on the first round's checks (Kernel.direct), copying the input's bytes
    where it lies apart, and an input that partly overlaps its output still takes the general path."""
    f = prefix_sum()
    kernel = f.compile(target)
    x = np.random.default_rng(0).random(100)
    want = np.cumsum(x)
    for _ in range(3):
        same = x.copy()
        kernel(a_in=same, a=same)                     # bound in place
        np.testing.assert_allclose(same, want)
        source, out = x.copy(), np.full(100, 7.0)
        kernel(a_in=source, a=out)                    # other memory: copied in, the input left as it was
        np.testing.assert_allclose(out, want)
        np.testing.assert_array_equal(source, x)
        np.testing.assert_allclose(kernel(a_in=x), want)   # an output not given starts as a copy of the input
        np.testing.assert_array_equal(kernel(a_in=x[:0]), np.zeros(0))
        overlap = np.concatenate([x, [0.0]])          # an input overlapping its output without being it
        kernel(a_in=overlap[1:], a=overlap[:-1])
        np.testing.assert_allclose(overlap[:-1], np.cumsum(np.concatenate([x[1:], [0.0]])))
    assert any(plan is not None for plan in kernel._direct.values())


@pytest.mark.parametrize("target", ["cpu", "c"])
def test_a_repeated_call_for_timing_gives_the_keyword_calls_results(target):
    """`repeat_call` (what the autoscheduler times a short kernel with) runs the kernel through its
    native entry where the target has one: the output gets the input's values and the recurrence, as
    a keyword call gives it, call after call; the input stays as it was."""
    from mascarpone.backends.common import pyentry
    kernel = prefix_sum().compile(target)
    x = np.random.default_rng(4).random(40)
    out = np.zeros(40)
    call = kernel.repeat_call(a_in=x, a=out)
    if pyentry.LAYOUT is not None:
        assert type(call.func).__name__ == "builtin_function_or_method"
    for _ in range(3):
        out[:] = -1.0
        call()
        np.testing.assert_array_equal(out, kernel(a_in=x))
        np.testing.assert_allclose(out, np.cumsum(x))


def test_lowered_without_the_copy():
    f = prefix_sum()
    assert "a_in[" in str(f.lower())
    lowered = f.lower(caller_copies_in=True)
    assert "a_in[" not in str(lowered)
    assert [b.initial_input for b in lowered.outputs] == ["a_in"]


def test_input_read_again_keeps_its_copy():
    f = prefix_sum(read_input_again=True)
    f.lower()
    assert copied_inputs(f, f.context()) == {}
    lowered = f.lower(caller_copies_in=True)
    assert "a_in[" in str(lowered) and lowered.outputs[0].initial_input is None
    x = np.random.default_rng(1).random(50)
    same = x.copy()
    f.compile("cpu")(a_in=same, a=same)
    np.testing.assert_allclose(same, np.cumsum(x))


@pytest.mark.parametrize("target", ["cpu", "c"])
def test_calls_alike_in_kind_are_each_checked_for_overlap(target):
    """A call whose arrays have the shapes, dtypes and flags of an earlier one reuses that call's checks
    (backends/common/arguments.py) and, where that call bound its arrays as given, launches on their
    addresses at once (Kernel.direct); where its arrays lie is still checked at every call."""
    kernel = two_outputs().compile(target)
    x = np.random.default_rng(2).random(64)
    for _ in range(2):   # (the second round runs on the checks the first one kept)
        out_a, out_b = np.empty(64), np.empty(64)
        kernel(a_in=x, a=out_a, b=out_b)
        np.testing.assert_array_equal(out_a, x * 2.0)
        np.testing.assert_array_equal(out_b, x + 1.0)
        shared = np.empty(64)
        with pytest.raises(ms.ArgumentError, match="outputs a and b share memory"):
            kernel(a_in=x, a=shared, b=shared)
        y = x.copy()
        other = np.empty(64)
        kernel(a_in=y, a=y, b=other)          # the input is the first output's memory: read before written
        np.testing.assert_array_equal(y, x * 2.0)
        np.testing.assert_array_equal(other, x + 1.0)
        with pytest.raises(ms.ArgumentError, match="parameter N: expected an integer"):
            kernel(a_in=x, a=out_a, b=out_b, N=True)
        with pytest.raises(ms.ArgumentError, match="unexpected argument"):
            kernel(a_in=x, a=out_a, b=out_b, c=out_a)
    # the second round's calls with the outputs given launched on the first one's plan
    assert any(plan is not None for plan in kernel._direct.values())


@pytest.mark.parametrize("target", ["cpu", "c"])
def test_keyword_calls_in_a_row_go_through_a_native_entry(target):
    """Keyword calls of one signature in a row get the kernel's native entry (NATIVE_AFTER direct calls):
    the outputs filled and returned as the Python path returns them (a tuple of the arrays given, their
    reference counts unchanged over many calls); the same keywords in another order, another size, or
    outputs that share memory go the Python way, with its results and errors. A kernel holding its entry
    is collected without calling freed code."""
    from mascarpone.backends.common import pyentry
    kernel = two_outputs().compile(target)
    x = np.random.default_rng(6).random(32)
    out_a, out_b = np.empty(32), np.empty(32)
    for _ in range(kernel.NATIVE_AFTER + 1):
        got = kernel(a_in=x, a=out_a, b=out_b)
    if pyentry.LAYOUT is not None:
        assert kernel._native is not None
    del got
    before = sys.getrefcount(out_a), sys.getrefcount(out_b)
    for _ in range(50):
        out_a[:], out_b[:] = 0.0, 0.0
        got = kernel(a_in=x, a=out_a, b=out_b)
        assert type(got) is tuple and got[0] is out_a and got[1] is out_b
        np.testing.assert_array_equal(out_a, x * 2.0)
        np.testing.assert_array_equal(out_b, x + 1.0)
    del got
    assert (sys.getrefcount(out_a), sys.getrefcount(out_b)) == before
    out_a[:] = 0.0
    kernel(b=out_b, a=out_a, a_in=x)
    np.testing.assert_array_equal(out_a, x * 2.0)
    y = np.random.default_rng(7).random(16)
    small_a, small_b = kernel(a_in=y, a=np.empty(16), b=np.empty(16), N=16)
    np.testing.assert_array_equal(small_b, y + 1.0)
    with pytest.raises(ms.ArgumentError, match="outputs a and b share memory"):
        kernel(a_in=x, a=out_a, b=out_a)
    if pyentry.LAYOUT is not None:
        assert kernel._native(a_in=x, a=out_a, b=out_a) is pyentry.MISMATCH
        first = kernel._native
        for _ in range(kernel.NATIVE_AFTER):       # another signature in a row gets its entry...
            kernel(a_in=y, a=small_a, b=small_b, N=16)
        assert kernel._native is not first
        kernel(a_in=x, a=out_a, b=out_b)          # ...and the first one's comes back, not built again
        assert kernel._native is first
    del kernel
    gc.collect()


def test_data_address_is_the_first_element():
    from mascarpone.backends.common.addresses import data_address
    base = np.arange(60, dtype=np.float32).reshape(6, 10)
    read_only = base.copy()
    read_only.flags.writeable = False
    for a in (base, base[2:, 3:], base.T, base[::2], read_only, np.empty(0), np.zeros((3, 0)), np.ones(()),
              np.float64(2.0)):
        assert data_address(a) == a.__array_interface__["data"][0]
