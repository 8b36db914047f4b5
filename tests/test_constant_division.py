"""Float32 division by a constant in the GPU dialects (Helpers._cdiv): the printed rule gives the same bits
as IEEE division, checked by the C compiler on every mantissa of the dividend at the exponents where the
rule's cases meet (ordinary quotients, quotients near overflow, near and below the smallest normal), and
on random bit patterns of both signs, NaN and infinities included."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from mascarpone.backends.c.dialect import CDialect
from mascarpone.backends.c.printer import CPrinter
from mascarpone.backends.c.semantics import Helpers
from mascarpone.backends.gpu.opencl import OpenCLDialect
from mascarpone.middleend.expr import BinOp, Const
from mascarpone.middleend.types import float32, float64

#: divisors: small integers, a repeating binary fraction, the largest mantissa, a subnormal, a huge
#: one, one near 1 and random floats
DIVISORS = [3.0, -7.0, 0.3, 255.0, 1.9999999, 1e-40, 3e38, 1.0000001] + \
    [float(x) for x in np.random.default_rng(5).standard_normal(4).astype(np.float32) * 1e3]

HARNESS = r"""
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
%(helpers)s
static int check(float a, float c, double r) {
    float x = ms_cdiv_f32(a, c, r), y = a / c;
    uint32_t xb, yb;
    memcpy(&xb, &x, 4);
    memcpy(&yb, &y, 4);
    if (xb != yb && !(isnan(x) && isnan(y))) {
        printf("%%a / %%a: %%a, IEEE %%a\n", a, c, x, y);
        return 1;
    }
    return 0;
}
int main(void) {
    static const float cs[] = {%(divisors)s};
    uint64_t state = 88172645463325252ull, bad = 0;
    for (unsigned k = 0; k < sizeof cs / sizeof cs[0]; k++) {
        const float c = cs[k];
        const double r = 1.0 / (double)c;
        const int e = ilogbf(c);
        /* dividend exponents: an ordinary quotient, quotients near the largest float, near and below the
           smallest normal float */
        const int exps[] = {0, e + 127, e - 125, e - 127, e - 140};
        for (unsigned j = 0; j < 5; j++)
            for (uint32_t m = 0; m < (1u << 23); m++) {
                int ex = exps[j] + 127;
                if (ex < 1 || ex > 254) continue;
                uint32_t bits = ((uint32_t)ex << 23) | m;
                float a;
                memcpy(&a, &bits, 4);
                bad += check(a, c, r);
            }
        for (int i = 0; i < (1 << 20); i++) {
            state ^= state << 13; state ^= state >> 7; state ^= state << 17;
            uint32_t bits = (uint32_t)state;
            float a;
            memcpy(&a, &bits, 4);
            bad += check(a, c, r);
        }
        bad += check(INFINITY, c, r) + check(-INFINITY, c, r) + check(NAN, c, r) + check(0.0f, c, r)
            + check(-0.0f, c, r);
        if (bad > 20) break;
    }
    printf("%%llu differ\n", (unsigned long long)bad);
    return bad != 0;
}
"""


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_division_by_a_constant_is_correctly_rounded(tmp_path):
    helpers = Helpers(CDialect())
    helpers.call("cdiv", (float32,), ["a", "c", "r"])
    divisors = ", ".join(float(np.float32(c)).hex() + "f" for c in DIVISORS)
    (tmp_path / "cdiv.c").write_text(HARNESS % {"helpers": "\n".join(helpers.definitions()), "divisors": divisors})
    exe = tmp_path / "cdiv"
    # no FMA contraction and no fast math: the reference is the compiler's IEEE division
    subprocess.run(["gcc", "-O2", "-ffp-contract=off", "-o", str(exe), str(tmp_path / "cdiv.c"), "-lm"],
                   check=True)
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:]
    assert run.stdout.strip().endswith("0 differ")


def test_which_divisions_by_constants_are_rewritten():
    """float32 by a power of two: a multiply; by another finite constant: the helper; float64, zero and
    non-finite divisors, and the CPU dialect: divisions as written."""
    gpu, cpu = CPrinter(OpenCLDialect()), CPrinter(CDialect())
    a32, a64 = Const(1.5, float32), Const(1.5, float64)

    def printed(printer, a, c):
        return printer.expr(BinOp("div", a, Const(c, a.dtype)))

    assert printed(gpu, a32, 4.0) == "(1.5f * 0.25f)"
    assert printed(gpu, a32, 2.0 ** -126) == "(1.5f * 8.507059e+37f)"
    assert printed(gpu, a32, 3.0).startswith("ms_cdiv_f32(1.5f, 3.0f, 0.333")
    for c in (0.0, float("inf"), float("nan")):
        assert "ms_cdiv" not in printed(gpu, a32, c)
    assert "ms_cdiv" not in printed(gpu, a64, 3.0) and "/" in printed(gpu, a64, 3.0)
    assert "ms_cdiv" not in printed(cpu, a32, 3.0)
