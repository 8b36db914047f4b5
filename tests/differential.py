"""Differential testing: every program a test compiles for "cpu" also runs on "c", and the two agree.

While the test suite runs (conftest.py installs this unless MASCARPONE_DIFFERENTIAL=0),
`Function.compile(target="cpu", ...)` returns a `DifferentialKernel`: the test's own kernel, plus a
pair compiled with `fp_contract=False` and without fast-math on both targets (LLVM and the C
compiler), so that floats too must match bit for bit. Each call runs the test's kernel as usual, then
the pair on copies of the same arguments; integers and floats must be equal bit for bit (any NaN
equals any NaN: payloads are not part of the contract). A disagreement is a bug in one of the two
back-ends: the error names the program, the output and the first differing element.
"""
from __future__ import annotations

import os

import numpy as np

from mascarpone.middleend.function import Function

ENABLED = os.environ.get("MASCARPONE_DIFFERENTIAL", "1") != "0"
#: MASCARPONE_DIFFERENTIAL_GPU=1 also runs every such program on "opencl" (one-thread kernels where the
#: program has no GPU tags) and compares it bit for bit; off by default for the time it takes
GPU = os.environ.get("MASCARPONE_DIFFERENTIAL_GPU", "0") == "1"
_original_compile = Function.compile
#: (program, number of calls compared) for the summary at the end of the run
compared = []


class DifferentialKernel:
    """The test's kernel, checked against the other target on every call; everything else delegates."""

    def __init__(self, kernel, reference, other, program, gpu=None):
        object.__setattr__(self, "_kernel", kernel)
        object.__setattr__(self, "_pair", (reference, other))
        object.__setattr__(self, "_program", program)
        object.__setattr__(self, "_gpu", gpu)

    def __getattr__(self, name):
        return getattr(self._kernel, name)

    def __setattr__(self, name, value):
        setattr(self._kernel, name, value)
        if name == "num_threads":
            for k in self._pair:
                k.num_threads = value

    def __repr__(self):
        return repr(self._kernel)

    def __call__(self, **kwargs):
        untouched = {k: np.array(v, copy=True) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
        result = self._kernel(**kwargs)    # a bad argument raises here, as it would without this check
        reference, other = self._pair
        copies = [{k: np.array(v, copy=True) if isinstance(v, np.ndarray) else v for k, v in untouched.items()}
                  for _ in self._pair]
        want = reference(**copies[0]) if reference is not self._kernel else result
        got = other(**copies[1])
        compare(self._program, reference.lowered, want, got)
        if self._gpu is not None:
            gpu_copy = {k: np.array(v, copy=True) if isinstance(v, np.ndarray) else v for k, v in untouched.items()}
            compare(self._program, reference.lowered, want, self._gpu(**gpu_copy), "opencl")
        compared.append(self._program)
        return result


def same_bits(a, b, what):
    """Assert two arrays hold the same bits (any NaN equals any NaN: payloads are not part of the
    contract); the message starts with `what` and names the first difference."""
    assert a.shape == b.shape and a.dtype == b.dtype, f"{what}: {a.dtype}{a.shape} against {b.dtype}{b.shape}"
    if a.dtype.kind == "f":
        same = (a.view(f"u{a.itemsize}") == b.view(f"u{b.itemsize}")) | (np.isnan(a) & np.isnan(b))
    else:
        same = a == b
    if not same.all():
        first = tuple(int(k) for k in np.argwhere(~same)[0])
        raise AssertionError(f"{what}, first at index {first}: {a[first]!r} against {b[first]!r} "
                             f"({int((~same).sum())} of {same.size} elements differ)")


def compare(program, lowered, want, got, other="c"):
    """Assert the outputs of cpu (`want`) and `other` (`got`) are the same bits; name the first difference."""
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    for buf, a, b in zip(lowered.outputs, want, got):
        same_bits(a, b, f"cpu and {other} disagree on {program}: output {buf.name}")


def _compile(self, target="cpu", check=True, fixed=None, **options):
    kernel = _original_compile(self, target, check, fixed, **options)
    if target != "cpu":
        return kernel
    exact = dict(options, fp_contract=False, fast_math=False)
    if options.get("fp_contract", True) or options.get("fast_math", False):
        reference = _original_compile(self, "cpu", check, fixed, **exact)
    else:
        reference = kernel
    exact.pop("arch", None)  # the C compiler's -march names differ from LLVM's
    other = _original_compile(self, "c", check, fixed, **exact)
    gpu = None
    if GPU:
        gpu = _original_compile(self, "opencl", check, fixed, fp_contract=False)
    return DifferentialKernel(kernel, reference, other, self.name, gpu)


def install():
    """Make Function.compile return differential kernels for "cpu" (a no-op when disabled)."""
    if ENABLED:
        Function.compile = _compile
