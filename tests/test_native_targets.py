"""Hand-built loop IR on the targets that run on this machine's cores ("cpu" through LLVM, "c" through the
C compiler), each checked against numpy and the Python evaluator: every operation of the contract
(middleend/semantics.py) on every type, every loop kind, temporaries, threads and argument checks."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mascarpone.backends.common.collapse import collapse_parallel_nests
from mascarpone.backends.common.openmp import AFFINITY_VARIABLES
from mascarpone.backends.cpu.machine import masked_memory, slow_gathers
from mascarpone.backends.common.threads import get_num_threads, set_num_threads
from mascarpone.backends.common.evaluate import (euclid_div, euclid_mod, evaluate, float_to_int, trunc_div,
                                                 trunc_mod, wrap)
from mascarpone.middleend.buffer import Buffer
from mascarpone.middleend.errors import ArgumentError
from mascarpone.middleend.expr import Const, Sym, call, cast, floordiv, floormod, max_, min_, reinterpret, select
from mascarpone.middleend.loopir import Allocate, Block, For, If, LoweredFunction, Store, substitute_stmt
from mascarpone.middleend.targets import get_target
from mascarpone.middleend.types import (bool_, float32, float64, int8, int16, int32, int64, uint8, uint16, uint32,
                                        uint64)

N, M = Sym("N"), Sym("M")
i, j, k = Sym("i"), Sym("j"), Sym("k")


def c64(v):
    return Const(v, int64)


def loop(var, lo, hi, body, kind="serial", factor=1):
    lo = lo if not isinstance(lo, int) else c64(lo)
    hi = hi if not isinstance(hi, int) else c64(hi)
    return For(var, lo, hi, body, kind, factor)


def rng(seed=0):
    return np.random.default_rng(seed)


NATIVE_TARGETS = ["cpu", "c"]
REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(params=NATIVE_TARGETS)
def target(request):
    return request.param


def build(target, lowered, **options):
    """The kernel of `lowered` for `target`, through the registry as Function.compile finds it."""
    return get_target(target).compile(lowered, **options)


# --- loop kinds -------------------------------------------------------------------------------

def axpy_kernel(target, outer, inner, fo=1, fi=1, name="axpy"):
    a = Buffer("a", [N, M], float32, "input")
    b = Buffer("b", [M], float32, "input")
    out = Buffer("out", [N, M], float32, "output")
    body = Store(out, (i, j), a[i, j] * 2.0 + b[j])
    nest = loop("i", 0, N, loop("j", 0, M, body, inner, fi), outer, fo)
    return build(target, LoweredFunction(name, ["N", "M"], [a, b], [out], nest))


@pytest.mark.parametrize("outer,inner,fo,fi", [
    ("serial", "serial", 1, 1),
    ("parallel", "vector", 1, 8),
    ("parallel", "serial", 1, 1),
    ("serial", "vector", 1, 16),
    ("serial", "unroll", 1, 4),
    ("unroll", "vector", 3, 8),
    ("gpu_block", "gpu_thread", 1, 1),
    ("distribute", "pipeline", 1, 1),
    ("parallel", "parallel", 1, 1),
])
def test_loop_kinds(target, outer, inner, fo, fi):
    kern = axpy_kernel(target, outer, inner, fo, fi)
    r = rng()
    for n, m in [(37, 29), (3, 4), (1, 8), (0, 5), (5, 0), (17, 64)]:
        a = r.standard_normal((n, m), dtype=np.float32)
        b = r.standard_normal(m, dtype=np.float32)
        np.testing.assert_array_equal(kern(a=a, b=b), a * np.float32(2) + b)


def test_nested_parallel_loops_run_as_one_parallel_loop(target):
    """Parallel channels, each of parallel strips that allocate a row of their own: the nest runs as one
    parallel loop over channels x strips, so 3 channels share out all their strips among threads (only
    the outer loop ran on threads before), and every size gives numpy's values."""
    a = Buffer("a", [N, M], float32, "input")
    out = Buffer("out", [N, M], float32, "output")
    row = Buffer("row", [Const(4, int64)], float32)
    c, s, t = Sym("c"), Sym("s"), Sym("t")
    x = s * 4 + t
    fill = loop("t", 0, 4, If(x < M, Store(row, (t,), a[c, x] * 3.0)))
    use = loop("t", 0, 4, If(x < M, Store(out, (c, x), row[t] + 1.0)))
    strips = loop("s", 1, (M + 3).__floordiv__(4) + 1, Allocate(row, Block([fill, use])), "parallel")
    nest = loop("c", 0, N, Block([strips]), "parallel")
    shifted = substitute_stmt(nest, {"s": s - 1})
    kern = build(target, LoweredFunction("collapsed", ["N", "M"], [a], [out], shifted))
    # the one loop on threads runs the product's variable (named after both loops)
    if target == "c":
        code = kern.source("c")
        assert code.count("#pragma omp parallel for") == 1 and "for (int64_t c_s = " in code
    else:
        code = kern.source("llvm-unoptimized")
        assert code.count("call void @\"GOMP_parallel\"") == 1 and '%"c.s.closure"' in code
    for n, m in [(3, 96), (1, 1), (5, 7), (2, 4), (0, 5), (5, 0)]:
        img = rng().standard_normal((n, m), dtype=np.float32)
        np.testing.assert_array_equal(kern(a=img), img * np.float32(3) + np.float32(1))


def test_a_collapsed_nest_is_empty_where_either_range_is():
    """Two empty ranges (negative trip counts) must not multiply into a non-empty one; the loop over the
    product recovers each variable by a division and a remainder."""
    inner = loop("j", 2, M, Store(Buffer("o", [N, M], int32, "output"), (i, j), Const(1, int32)), "parallel")
    collapsed = collapse_parallel_nests(loop("i", 1, N, inner, "parallel"))
    assert isinstance(collapsed, For) and not isinstance(collapsed.body, For)
    visited = []
    for n, m in [(-3, -4), (0, -1), (4, 1), (4, 5), (1, 9)]:
        trips = evaluate(collapsed.hi, {"N": n, "M": m})
        pairs = [(evaluate(collapsed.body.indices[0], {"N": n, "M": m, collapsed.var: f}),
                  evaluate(collapsed.body.indices[1], {"N": n, "M": m, collapsed.var: f})) for f in range(trips)]
        assert pairs == [(ii, jj) for ii in range(1, n) for jj in range(2, m)]
        visited.append(len(pairs))
    assert visited == [0, 0, 0, 9, 0]


def test_unroll_constant_and_versioned(target):
    a = Buffer("a", [N], int32, "input")
    out = Buffer("out", [N], int32, "output")
    # constant trip 4 == factor: full unroll; the inner loop starts at a symbolic base
    io, ii = Sym("io"), Sym("ii")
    body = Store(out, (io * 4 + ii,), a[io * 4 + ii] + Const(1, int32))
    nest = loop("io", 0, N.__floordiv__(4), loop("ii", 0, 4, body, "unroll", 4))
    kern = build(target, LoweredFunction("unr", ["N"], [a], [out], nest))
    x = np.arange(12, dtype=np.int32)
    np.testing.assert_array_equal(kern(a=x), x + 1)
    # a symbolic trip count: unrolled when it equals the factor, a plain loop otherwise
    body2 = Store(out, (i,), a[i] * Const(3, int32))
    kern2 = build(target, LoweredFunction("unr2", ["N"], [a], [out], loop("i", 0, N, body2, "unroll", 4)))
    for n in (0, 3, 4, 5, 11):
        x = np.arange(n, dtype=np.int32)
        np.testing.assert_array_equal(kern2(a=x), x * 3)
    # a constant trip longer than the factor: steps of the factor, then the rest
    body3 = Store(out, (i,), a[i] - Const(2, int32))
    kern3 = build(target, LoweredFunction("unr3", ["N"], [a], [out], loop("i", 0, 10, body3, "unroll", 4)))
    x = np.arange(10, dtype=np.int32)
    np.testing.assert_array_equal(kern3(a=x), x - 2)


@pytest.mark.parametrize("lo,width", [(0, 8), (3, 8), (1, 4), (0, 5)])
def test_vector_bounds(target, lo, width):
    a = Buffer("a", [N], float64, "input")
    out = Buffer("out", [N], float64, "output")
    body = Store(out, (i,), a[i] * a[i] - cast(float64, i))
    nest = Block([Store(out, (c64(n),), Const(0.0, float64)) for n in range(lo)]
                 + [loop("i", lo, N, body, "vector", width)])
    kern = build(target, LoweredFunction("vb", ["N"], [a], [out], nest), fp_contract=False)
    for n in (lo, lo + 1, lo + width, lo + 2 * width + 3, 100):
        x = rng(n).standard_normal(n)
        ref = x * x - np.arange(n)
        ref[:lo] = 0
        np.testing.assert_array_equal(kern(a=x), ref)


def test_vector_constant_trip_with_remainder(target):
    a = Buffer("a", [c64(21)], int16, "input")
    out = Buffer("out", [c64(21)], int16, "output")
    kern = build(target, LoweredFunction("vc", [], [a], [out],
                                       loop("i", 0, 21, Store(out, (i,), a[i] * Const(300, int16)), "vector", 8)))
    x = np.arange(-10, 11, dtype=np.int16)
    np.testing.assert_array_equal(kern(a=x), x * np.int16(300))


def test_vector_access_patterns(target):
    """Broadcast, contiguous, strided (transposed, step 2) and gathered loads; scattered stores."""
    a = Buffer("a", [N, N], float32, "input")
    v = Buffer("v", [N * 2], float32, "input")
    idx = Buffer("idx", [N], int32, "input")
    s = Buffer("s", [], float32, "input")
    out = Buffer("out", [N, N], float32, "output")
    perm = Buffer("perm", [N], float32, "output")
    val = a[j, i] + a[i, j] * s[()] + v[j * 2 + 1] + v[cast(int64, idx[j])]
    body = Block([
        loop("i", 0, N, loop("j", 0, N, Store(out, (i, j), val), "vector", 8)),
        loop("j", 0, N, Store(perm, (cast(int64, idx[j]),), v[j]), "vector", 8),
    ])
    kern = build(target, LoweredFunction("pat", ["N"], [a, v, idx, s], [out, perm], body))
    r = rng(1)
    for n in (5, 8, 19):
        A = r.standard_normal((n, n), dtype=np.float32)
        V = r.standard_normal(2 * n, dtype=np.float32)
        ix = r.permutation(n).astype(np.int32)
        S = np.array(1.5, dtype=np.float32)
        o, p = kern(a=A, v=V, idx=ix, s=S)
        ref = A.T + A * S + V[1::2][None, :] + V[ix][None, :]
        np.testing.assert_allclose(o, ref, rtol=1e-5, atol=1e-6)
        ref_p = np.empty(n, np.float32)
        ref_p[ix] = V[:n]
        np.testing.assert_array_equal(p, ref_p)


@pytest.mark.parametrize("arch, gathers", [("skylake", True), ("znver3", False)])
def test_gathers_or_lane_loads_by_cpu(arch, gathers):
    """A gathered vector load uses the CPU's gather instruction, or one load per lane where that is the
    faster way (AMD's Zen cores): the same values either way, with or without a mask."""
    v = Buffer("v", [N], float32, "input")
    idx = Buffer("idx", [N], int32, "input")
    out = Buffer("out", [N], float32, "output")
    body = loop("j", 0, N, Store(out, (j,), v[cast(int64, idx[j])] * 2.0), "vector", 8)
    kern = build("cpu", LoweredFunction("gath", ["N"], [v, idx], [out], body), arch=arch)
    assert ("vgather" in kern.source("asm")) == gathers
    r = rng(3)
    for n in (3, 8, 21):
        V = r.standard_normal(n, dtype=np.float32)
        ix = r.integers(0, n, n).astype(np.int32)
        np.testing.assert_array_equal(kern(v=V, idx=ix), V[ix] * np.float32(2))


@pytest.mark.parametrize("arch, gathers", [("skylake", True), ("znver3", False)])
def test_gathers_differing_in_terms_fixed_over_the_lanes_share_their_lane_offsets(arch, gathers):
    """The corners of an interpolation, lut[i + k, idx[j] + c]: the lanes' offsets (idx[j]) are computed
    and taken apart once, and each read adds its own base (row i + k, column c), so the loads per lane
    are one extraction of an offset and not one per read."""
    lut = Buffer("lut", [N + 2, N + 1], float32, "input")
    idx = Buffer("idx", [N], int32, "input")
    out = Buffer("out", [N, N], float32, "output")
    col = cast(int64, idx[j])
    val = lut[i, col] + lut[i + 1, col] * 2.0 + lut[i + 2, col + 1]
    body = loop("i", 0, N, loop("j", 0, N, Store(out, (i, j), val), "vector", 8))
    kern = build("cpu", LoweredFunction("corners", ["N"], [lut, idx], [out], body), arch=arch)
    ir = kern.source("llvm")
    if not gathers:
        assert ir.count("extractelement <8 x i64>") == 8     # (24 when each read takes its own apart)
    r = rng(5)
    for n in (3, 8, 21):
        L = r.standard_normal((n + 2, n + 1), dtype=np.float32)
        ix = r.integers(0, n, n).astype(np.int32)
        ref = L[:n, ix] + L[1:n + 1, ix] * np.float32(2) + L[2:, ix + 1]
        np.testing.assert_array_equal(kern(lut=L, idx=ix), ref)


@pytest.mark.parametrize("stride", [2, 3, 4, 5])
@pytest.mark.parametrize("dt,width", [(uint8, 16), (float32, 8)])
def test_vector_strided_loads_and_stores(target, stride, dt, width):
    """Down-sampling reads (dense loads and a shuffle) and strided writes, on buffers that end at the
    last lane's element."""
    src = Buffer("src", [stride * (N - 1) + 1], dt, "input")
    out = Buffer("out", [N], dt, "output")
    up = Buffer("up", [stride * (N - 1) + 1], dt, "output")
    body = Block([loop("j", 0, N, Store(out, (j,), src[j * stride] + src[j * stride]), "vector", width),
                  loop("j", 0, N, Store(up, (j * stride,), src[j * stride]), "vector", width)])
    kern = build(target, LoweredFunction(f"strided{stride}", ["N"], [src], [out, up], body))
    for n in (1, width - 1, width, 3 * width + 5):
        x = (np.arange(stride * (n - 1) + 1) % 97).astype(dt.numpy)
        o, u = kern(src=x)
        np.testing.assert_array_equal(o, x[::stride] + x[::stride])
        np.testing.assert_array_equal(u[::stride], x[::stride])


@pytest.mark.parametrize("k", [2, 3, 4])
@pytest.mark.parametrize("dt,width", [(uint8, 16), (float32, 8)])
def test_vector_upsampling_loads(target, k, dt, width):
    """Up-sampling reads `src[(j + c) / k]` (each element read by k lanes in a row: one dense load and a
    shuffle per remainder of the numerator), with floor division from starts of every remainder (negative
    numerators included) and with C division whose numerator crosses zero inside a vector; the sources
    end at the last element a lane reads."""
    lo = Sym("lo")
    floor_src = Buffer("floor_src", [floordiv(N - 1 + 3, c64(k)) - floordiv(lo + c64(-7) + 3, c64(k)) + 1], dt,
                       "input")
    trunc_src = Buffer("trunc_src", [(N - 1 + c64(-5)) / c64(k) + 10], dt, "input")
    up_floor = Buffer("up_floor", [N - lo + c64(7)], dt, "output")
    up_trunc = Buffer("up_trunc", [N], dt, "output")
    first = floordiv(lo + c64(-7) + 3, c64(k))
    body = Block([
        loop("j", lo + c64(-7), N, Store(up_floor, (j - lo + 7,), floor_src[floordiv(j + 3, c64(k)) - first]),
             "vector", width),
        loop("j", 0, N, Store(up_trunc, (j,), trunc_src[(j + c64(-5)) / c64(k) + 9]), "vector", width),
    ])
    kern = build(target, LoweredFunction(f"upsampled{k}", ["N", "lo"], [floor_src, trunc_src],
                                         [up_floor, up_trunc], body))
    if target == "cpu":   # dense loads; a gather only where a C division's numerator is negative
        code = kern.source("llvm-unoptimized")
        calls = [line for line in code.splitlines() if " call " in line]
        assert sum("llvm.masked.load" in line for line in calls) == 2
        # (loaded lane by lane where this machine's gather instruction is the slower way; each loop's last
        # chunk, fewer than a vector, under a lane mask where the CPU masks: a masked gather)
        tails = 2 if masked_memory() else 0
        assert sum("llvm.masked.gather" in line for line in calls) == (0 if slow_gathers() else 1) + tails
    for n, start in ((1, 1), (width - 1, 3), (width, 2), (3 * width + 5, 1), (2 * width + 1, 9)):
        jf = np.arange(start - 7, n)
        floor_index = (jf + 3) // k - (start - 7 + 3) // k
        xf = (np.arange(floor_index.max() + 1) * 7 % 97).astype(dt.numpy)
        jt = np.arange(n)
        trunc_index = np.trunc((jt - 5) / k).astype(np.int64) + 9
        xt = (np.arange((n - 1 - 5) // k + 10 if n - 1 - 5 >= 0 else -((5 - n + 1) // k) + 10) * 5 % 89).astype(dt.numpy)
        o_floor, o_trunc = kern(floor_src=xf, trunc_src=xt, N=n, lo=start)
        np.testing.assert_array_equal(o_floor, xf[floor_index])
        np.testing.assert_array_equal(o_trunc, xt[trunc_index])


def test_vector_uniform_store_keeps_last_lane(target):
    a = Buffer("a", [N], int64, "input")
    out = Buffer("out", [c64(1)], int64, "output")
    kern = build(target, LoweredFunction("last", ["N"], [a], [out],
                                       loop("i", 0, N, Store(out, (c64(0),), a[i]), "vector", 8)))
    x = np.arange(100, 119, dtype=np.int64)
    assert kern(a=x)[0] == 118


def test_vector_masked_if(target):
    """A varying condition guards loads that would be out of bounds for the inactive lanes."""
    a = Buffer("a", [N], float32, "input")
    g = Buffer("g", [N], int32, "input")
    out = Buffer("out", [N + 5], float32, "output")
    cnt = Buffer("cnt", [N + 5], int32, "output")
    shifted = Buffer("shifted", [N + 5], float32, "output")
    body = Block([
        If((i >= 3) & (i < N + 3), Store(shifted, (i,), a[i - 3]), Store(shifted, (i,), Const(0.0, float32))),
        If(i < N, Store(out, (i,), a[i] * 2.0), Store(out, (i,), Const(-1.0, float32))),
        If(i < N,
           If(a[i] > 0.0, Store(cnt, (i,), g[cast(int64, g[i])]), Store(cnt, (i,), g[c64(0)])),
           Store(cnt, (i,), Const(7, int32))),
    ])
    kern = build(target, LoweredFunction("msk", ["N"], [a, g], [out, cnt, shifted],
                                       loop("i", 0, N + 5, body, "vector", 8)))
    r = rng(2)
    for n in (1, 3, 11, 16):
        x = r.standard_normal(n, dtype=np.float32)
        gi = r.integers(0, n, n).astype(np.int32)
        o, cn, sh = kern(a=x, g=gi)
        np.testing.assert_array_equal(sh, np.concatenate([np.zeros(3, np.float32), x, np.zeros(2, np.float32)]))
        np.testing.assert_array_equal(o, np.concatenate([x * 2, -np.ones(5, np.float32)]))
        ref = np.where(x > 0, gi[gi], gi[0])
        np.testing.assert_array_equal(cn, np.concatenate([ref, np.full(5, 7, np.int32)]))


def test_vector_with_inner_loop(target):
    """The inner loop runs once per chunk with vector values (lanes along the outer variable)."""
    a = Buffer("a", [N, M], float32, "input")
    out = Buffer("out", [N], float32, "output")
    body = Block([Store(out, (i,), Const(0.0, float32)),
                  loop("j", 0, M, Store(out, (i,), out[i] + a[i, j]), "unroll", 2)])
    kern = build(target, LoweredFunction("inner", ["N", "M"], [a], [out], loop("i", 0, N, body, "vector", 8)))
    x = rng(3).standard_normal((13, 7), dtype=np.float32)
    np.testing.assert_allclose(kern(a=x), x.sum(axis=1), rtol=1e-5)
    if target == "cpu":
        assert "<8 x float>" in kern.source("llvm-unoptimized")


def test_vector_falls_back_with_allocation(target):
    a = Buffer("a", [N], float32, "input")
    out = Buffer("out", [N], float32, "output")
    t = Buffer("t", [c64(2)], float32, "temporary")
    body = Allocate(t, Block([Store(t, (c64(0),), a[i] + 1.0), Store(t, (c64(1),), t[c64(0)] * 2.0),
                              Store(out, (i,), t[c64(1)])]))
    kern = build(target, LoweredFunction("fb", ["N"], [a], [out], loop("i", 0, N, body, "vector", 8)),
                       fp_contract=False)
    x = rng(3).standard_normal(21, dtype=np.float32)
    np.testing.assert_array_equal(kern(a=x), (x + 1) * 2)
    if target == "cpu":
        assert "llvm.loop.vectorize.width\", i32 8" in kern.source("llvm-unoptimized")
    else:  # no OpenMP construct may nest in a SIMD loop: a plain loop
        assert "#pragma omp simd" not in kern.source("c")


# --- integer semantics -------------------------------------------------------------------------

INT_TYPES = [int8, int16, int32, int64, uint8, uint16, uint32, uint64]
OPS = ["add", "sub", "mul", "div", "mod", "ediv", "emod", "min", "max"]
_BUILD = {"add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y,
          "div": lambda x, y: x / y, "mod": lambda x, y: x % y,
          "ediv": floordiv, "emod": floormod, "min": min_, "max": max_}
_PY = {"add": lambda p, q: p + q, "sub": lambda p, q: p - q, "mul": lambda p, q: p * q,
       "div": trunc_div, "mod": trunc_mod, "ediv": euclid_div, "emod": euclid_mod, "min": min, "max": max}


def reference(op, dt, xs, ys):
    return np.array([wrap(_PY[op](wrap(int(p), dt), wrap(int(q), dt)), dt) for p, q in zip(xs, ys)],
                    dtype=dt.numpy)


def int_operands(dt, n=64, seed=0):
    """Edge values (0, +-1, the extremes...) then random ones, as Python ints in the type's range."""
    import random
    lo, hi = dt.min_value(), dt.max_value()
    specials = [wrap(v, dt) for v in [0, 1, -1, 2, -2, 3, -3, 7, -7, lo, hi, lo + 1, hi - 1]]
    r = random.Random(seed)
    return specials + [r.randint(lo, hi) for _ in range(n - len(specials))]


@pytest.mark.parametrize("dt", INT_TYPES, ids=str)
def test_integer_ops(target, dt):
    """Every arithmetic op, wrap-around, C and Euclidean division (by zero gives 0), min/max."""
    x = int_operands(dt, seed=1)
    y = int_operands(dt, seed=2)
    y = y[:13] + x[:13] + y[26:]  # zero, -1, INT_MIN ... against each other
    xs, ys = x + x[::-1], y + y[5:] + y[:5]
    a = Buffer("a", [N], dt, "input")
    b = Buffer("b", [N], dt, "input")
    out = Buffer("out", [c64(len(OPS)), N], dt, "output")
    body = Block([Store(out, (c64(t), i), _BUILD[op](a[i], b[i])) for t, op in enumerate(OPS)])
    xa, ya = np.array(xs, dtype=dt.numpy), np.array(ys, dtype=dt.numpy)
    for kind in ("serial", "vector"):
        kern = build(target, LoweredFunction(f"iops_{dt}_{kind}", ["N"], [a, b], [out], loop("i", 0, N, body, kind, 8)))
        got = kern(a=xa, b=ya)
        for t, op in enumerate(OPS):
            np.testing.assert_array_equal(got[t], reference(op, dt, xs, ys), err_msg=f"{op} {dt} {kind}")


DIVISORS = [0, 1, -1, 2, -2, 3, -3, 8, -8, 7, 100]


@pytest.mark.parametrize("dt", [int8, int32, int64, uint8, uint32], ids=str)
def test_division_by_constants(target, dt):
    divs = [wrap(d, dt) for d in DIVISORS]
    x = int_operands(dt, seed=3)
    a = Buffer("a", [N], dt, "input")
    ops = ["div", "mod", "ediv", "emod"]
    out = Buffer("out", [c64(len(ops) * len(divs)), N], dt, "output")
    body = Block([Store(out, (c64(t * len(divs) + u), i), _BUILD[op](a[i], Const(d, dt)))
                  for t, op in enumerate(ops) for u, d in enumerate(divs)])
    xa = np.array(x, dtype=dt.numpy)
    for kind in ("serial", "vector"):
        kern = build(target, LoweredFunction(f"cdiv_{dt}_{kind}", ["N"], [a], [out], loop("i", 0, N, body, kind, 8)))
        got = kern(a=xa)
        for t, op in enumerate(ops):
            for u, d in enumerate(divs):
                np.testing.assert_array_equal(got[t * len(divs) + u], reference(op, dt, x, [d] * len(x)),
                                              err_msg=f"{op} {dt} by {d} ({kind})")


def _bit_exprs(a, b, s, u):
    """Bitwise ops, shifts by a signed and an unsigned amount and by constants, and bit counts."""
    return [a & b, a | b, a ^ b, ~a, a << s, a >> s, a << u, a >> u, a << 3, a >> -2, a >> 200,
            call("popcount", a), call("clz", a), call("ctz", a)]


@pytest.mark.parametrize("dt", INT_TYPES, ids=str)
def test_bitwise_ops_shifts_and_bit_counts(target, dt):
    """Against the Python evaluator: shift amounts from -(width + 2) to width + 2 (negative ones shift
    the other way, the width or more saturates) as int8, and up to 255 as uint8."""
    x, y = int_operands(dt, seed=6), int_operands(dt, seed=7)
    amounts = [k % (2 * dt.bits + 5) - dt.bits - 2 for k in range(len(x))]
    unsigned_amounts = [abs(v) if k % 7 else 255 for k, v in enumerate(amounts)]
    a, b = Buffer("a", [N], dt, "input"), Buffer("b", [N], dt, "input")
    s, u = Buffer("s", [N], int8, "input"), Buffer("u", [N], uint8, "input")
    exprs = _bit_exprs(a[i], b[i], s[i], u[i])
    symbolic = _bit_exprs(Sym("a", dt), Sym("b", dt), Sym("s", int8), Sym("u", uint8))
    out = Buffer("out", [c64(len(exprs)), N], dt, "output")
    body = Block([Store(out, (c64(t), i), e) for t, e in enumerate(exprs)])
    ref = np.array([[evaluate(e, {"a": p, "b": q, "s": v, "u": w}) for p, q, v, w
                     in zip(x, y, amounts, unsigned_amounts)] for e in symbolic], dtype=dt.numpy)
    arrays = dict(a=np.array(x, dtype=dt.numpy), b=np.array(y, dtype=dt.numpy),
                  s=np.array(amounts, dtype=np.int8), u=np.array(unsigned_amounts, dtype=np.uint8))
    for kind in ("serial", "vector"):
        kern = build(target, LoweredFunction(f"bits_{dt}_{kind}", ["N"], [a, b, s, u], [out],
                                           loop("i", 0, N, body, kind, 8)))
        got = kern(**arrays)
        for t, e in enumerate(symbolic):
            np.testing.assert_array_equal(got[t], ref[t], err_msg=f"{e} ({kind})")


def test_shift_and_bit_count_reference_values():
    """The evaluator's definitions on a few values worked out by hand."""
    i8, u8 = (lambda v: Const(v, int8)), (lambda v: Const(v, uint8))
    cases = [(i8(-5) >> 1, -3), (i8(-5) >> 100, -1), (i8(-5) << 100, 0), (i8(3) << -1, 1),
             (i8(64) << 1, -128), (u8(200) >> 9, 0), (u8(3) << Const(-1, int8), 1),
             (call("clz", u8(0)), 8), (call("ctz", i8(-128)), 7), (call("popcount", i8(-1)), 8)]
    for e, value in cases:
        assert evaluate(e, {}) == value, e


@pytest.mark.parametrize("src,dst", [(float32, int32), (float32, uint32), (int32, float32),
                                     (float64, int64), (uint64, float64), (int8, uint8)], ids=str)
def test_reinterpret(target, src, dst):
    a = Buffer("a", [N], src, "input")
    out = Buffer("out", [N], dst, "output")
    body = Store(out, (i,), reinterpret(dst, a[i]))
    if src.is_float:
        x = np.array([0.0, -0.0, 1.5, -2.25, np.inf, np.nan, 1e-40, 3.0e38], dtype=src.numpy)
    else:
        x = np.array(int_operands(src, 19, seed=8), dtype=src.numpy)
    for kind in ("serial", "vector"):
        kern = build(target, LoweredFunction(f"bitcast_{src}_{dst}_{kind}", ["N"], [a], [out],
                                           loop("i", 0, N, body, kind, 4)))
        got = kern(a=x)
        assert got.dtype == dst.numpy
        # compared as integers: the bits, NaN's payload included
        np.testing.assert_array_equal(*((got.view(src.numpy), x) if dst.is_float else (got, x.view(dst.numpy))))


def test_uint8_add_wraps(target):
    a = Buffer("a", [N], uint8, "input")
    out = Buffer("out", [N], uint8, "output")
    kern = build(target, LoweredFunction("u8", ["N"], [a], [out],
                                       loop("i", 0, N, Store(out, (i,), a[i] + Const(200, uint8)), "vector", 16)))
    x = np.arange(256, dtype=np.uint8)
    np.testing.assert_array_equal(kern(a=x), (x.astype(np.int64) + 200) % 256)


# --- casts, selects, comparisons, bools ---------------------------------------------------------

CAST_TYPES = [int8, int32, int64, uint8, uint16, uint32, uint64, float32, float64, bool_]


def cast_inputs(src):
    if src.is_bool:
        return np.array([True, False, True, True, False, False, True, False, True], dtype=np.bool_)
    if src.is_float:
        with np.errstate(over="ignore"):
            return np.array([0.0, -0.0, 0.5, -0.5, 1.7, -1.7, 2.5, -2.5, 100.9, -100.9, 127.0, 200.0, 3e4, 1e-3]
                            + FAR_FLOATS, dtype=src.numpy)
    return np.array(int_operands(src, 40, seed=4), dtype=src.numpy)


#: float inputs outside every integer range, and the edges of the saturating conversions
FAR_FLOATS = [np.nan, -np.nan, np.inf, -np.inf, 3e9, -3e9, 2.0**31, -2.0**31, 2.0**31 - 128, 1e19, -1e19,
              2.0**63, -2.0**63, 2.0**64, 1.8e19, -0.75, -1.0, 65535.9, 4294967295.0,
              2.0**31 - 1, -2.0**31 - 1, 2.0**63 - 1024, 2.0**64 - 2048, -2.0**63 - 2048]


def cast_reference(x, src, dst):
    """The values the contract defines for every input (middleend/semantics.py)."""
    if dst.is_bool:
        return x != 0
    if src.is_float and dst.is_int:
        return np.array([float_to_int(float(v), dst) for v in x], dtype=dst.numpy)
    with np.errstate(over="ignore", invalid="ignore"):
        return x.astype(dst.numpy)


@pytest.mark.parametrize("src", CAST_TYPES, ids=str)
def test_casts(target, src):
    x = cast_inputs(src)
    a = Buffer("a", [N], src, "input")
    outs = [Buffer(f"o_{dst}", [N], dst, "output") for dst in CAST_TYPES]
    body = Block([Store(o, (i,), cast(o.dtype, a[i])) for o in outs])
    for kind in ("serial", "vector"):
        kern = build(target, LoweredFunction(f"cast_{src}_{kind}", ["N"], [a], outs, loop("i", 0, N, body, kind, 8)))
        for dst, got in zip(CAST_TYPES, kern(a=x)):
            ref = cast_reference(x, src, dst)
            assert got.dtype == dst.numpy
            np.testing.assert_array_equal(got, ref, err_msg=f"{src}->{dst} ({kind}, {target})")


def test_select_compare_logic_and_bools(target):
    a = Buffer("a", [N], float32, "input")
    b = Buffer("b", [N], float32, "input")
    u = Buffer("u", [N], uint32, "input")
    flags = Buffer("flags", [N], bool_, "input")
    out = Buffer("out", [N], float32, "output")
    cmp = Buffer("cmp", [N, c64(8)], bool_, "output")
    x, y, ui, fl = a[i], b[i], u[i], flags[i]
    tests = [x < y, x <= y, x > y, x >= y, x == y, x != y,
             (ui > Const(2**31, uint32)) & ~fl, (ui < Const(5, uint32)) | fl]
    body = Block([Store(out, (i,), select(fl & (x > y), x - y, select(x != x, Const(9.0, float32),
                                                                      min_(x, y) + max_(x, y))))]
                 + [Store(cmp, (i, c64(t)), e) for t, e in enumerate(tests)])
    for kind in ("serial", "vector"):
        kern = build(target, LoweredFunction(f"sel_{kind}", ["N"], [a, b, u, flags], [out, cmp],
                                           loop("i", 0, N, body, kind, 8)))
        r = rng(5)
        n = 23
        X = r.integers(-3, 3, n).astype(np.float32)
        Y = r.integers(-3, 3, n).astype(np.float32)
        X[[0, 5]] = np.nan
        Y[[1, 5]] = np.nan
        U = r.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
        U[:3] = [0, 4, 2**31 + 1]
        F = r.integers(0, 2, n).astype(np.bool_)
        o, cm = kern(a=X, b=Y, u=U, flags=F)
        with np.errstate(invalid="ignore"):
            fmin = np.where(X < Y, X, Y)
            fmax = np.where(X > Y, X, Y)
            ref = np.where(F & (X > Y), X - Y, np.where(X != X, np.float32(9), fmin + fmax))
            refc = np.stack([X < Y, X <= Y, X > Y, X >= Y, X == Y, X != Y,
                             (U > 2**31) & ~F, (U < 5) | F], axis=1)
        np.testing.assert_array_equal(o, ref)
        np.testing.assert_array_equal(cm, refc)
        assert cm.dtype == np.bool_


def test_narrow_symbols_and_negation(target):
    out = Buffer("out", [N], int8, "output")
    body = Store(out, (i,), -Sym("i", int8))
    for kind in ("serial", "vector"):
        kern = build(target, LoweredFunction(f"sym8_{kind}", ["N"], [], [out], loop("i", 0, N, body, kind, 16)))
        np.testing.assert_array_equal(kern(N=300), (-np.arange(300)).astype(np.int8))


# --- math ----------------------------------------------------------------------------------------

UNARY = {"sqrt": np.sqrt, "exp": np.exp, "log": np.log, "sin": np.sin, "cos": np.cos, "tan": np.tan,
         "tanh": np.tanh, "floor": np.floor, "ceil": np.ceil, "round": np.round, "trunc": np.trunc,
         "fabs": np.abs}


@pytest.mark.parametrize("dt", [float32, float64], ids=str)
def test_math_calls(target, dt):
    a = Buffer("a", [N], dt, "input")
    b = Buffer("b", [N], dt, "input")
    names = list(UNARY) + ["pow", "atan2"]
    out = Buffer("out", [c64(len(names)), N], dt, "output")
    stores = [Store(out, (c64(t), i), call(fn, a[i]) if fn in UNARY else call(fn, a[i], b[i]))
              for t, fn in enumerate(names)]
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 0.25, 3.7, -2.2, 10.0, 1e-3, 0.0, 7.5, -7.5], dtype=dt.numpy)
    y = np.linspace(-2, 2, len(x)).astype(dt.numpy)
    with np.errstate(invalid="ignore", divide="ignore"):
        refs = [UNARY[fn](x) for fn in UNARY] + [np.power(np.abs(x), y), np.arctan2(x, y)]
    xs = {"pow": np.abs(x)}
    for kind in ("serial", "vector"):
        kern = build(target, LoweredFunction(f"math_{dt}_{kind}", ["N"], [a, b], [out],
                                           loop("i", 0, N, Block(stores), kind, 4)))
        got = kern(a=x, b=y)
        got_pow = kern(a=xs["pow"], b=y)[names.index("pow")]
        rtol = 2e-6 if dt == float32 else 1e-14
        for t, fn in enumerate(names):
            g = got_pow if fn == "pow" else got[t]
            np.testing.assert_allclose(g, refs[t], rtol=rtol, atol=1e-30, equal_nan=True, err_msg=f"{fn} {kind}")
        np.testing.assert_array_equal(got[names.index("round")], np.round(x))  # half to even


def ieee_maximum(x, y, name):
    """IEEE 754-2019 maximum/minimum written out in numpy: NaN wins, -0.0 is below 0.0."""
    pick = np.maximum if name == "maximum" else np.minimum
    out = pick(x, y)
    zeros = (x == 0) & (y == 0)
    negative = (np.signbit(x) & np.signbit(y)) if name == "maximum" else (np.signbit(x) | np.signbit(y))
    out[zeros] = np.where(negative[zeros], -0.0, 0.0)
    return out


@pytest.mark.parametrize("dt", [float32, float64], ids=str)
def test_ieee_maximum_and_minimum(target, dt):
    a = Buffer("a", [N], dt, "input")
    b = Buffer("b", [N], dt, "input")
    names = ["maximum", "minimum"]
    out = Buffer("out", [c64(len(names)), N], dt, "output")
    stores = [Store(out, (c64(t), i), call(fn, a[i], b[i])) for t, fn in enumerate(names)]
    special = [np.nan, -0.0, 0.0, 1.0, -np.inf, np.inf]
    x = np.array([p for p in special for q in special] + [2.5, -3.0, 7.0], dtype=dt.numpy)
    y = np.array([q for p in special for q in special] + [-1.0, -3.0, 7.5], dtype=dt.numpy)
    for kind in ("serial", "vector"):
        kern = build(target, LoweredFunction(f"ieee_minmax_{dt}_{kind}", ["N"], [a, b], [out],
                                           loop("i", 0, N, Block(stores), kind, 4)))
        got = kern(a=x, b=y)
        for t, fn in enumerate(names):
            want = ieee_maximum(x, y, fn)
            np.testing.assert_array_equal(got[t], want, err_msg=f"{fn} {kind}")
            np.testing.assert_array_equal(np.signbit(got[t][~np.isnan(want)]), np.signbit(want[~np.isnan(want)]),
                                          err_msg=f"sign of {fn} {kind}")


def test_float_ops_ieee_without_contraction(target):
    a = Buffer("a", [N], float32, "input")
    b = Buffer("b", [N], float32, "input")
    out = Buffer("out", [N], float32, "output")
    body = Store(out, (i,), a[i] * b[i] + a[i] / b[i] - a[i] % b[i])
    x = rng(6).standard_normal(50).astype(np.float32)
    y = rng(7).standard_normal(50).astype(np.float32)
    ref = x * y + x / y - np.fmod(x, y)
    for kind in ("serial", "vector"):
        kern = build(target, LoweredFunction(f"ieee_{kind}", ["N"], [a, b], [out], loop("i", 0, N, body, kind, 8)),
                           fp_contract=False)
        np.testing.assert_array_equal(kern(a=x, b=y), ref)
    fast = build(target, LoweredFunction("fastm", ["N"], [a, b], [out], loop("i", 0, N, body, "vector", 8)),
                       fast_math=True)
    if target == "cpu":
        assert " fast " in fast.source("llvm-unoptimized")
    np.testing.assert_allclose(fast(a=x, b=y), ref, rtol=1e-4, atol=1e-5)


# --- temporaries, parallelism, reductions ----------------------------------------------------------

@pytest.mark.parametrize("size", [16, 20000])  # a stack slot, then a heap block
def test_allocate_inside_parallel_loop(target, size):
    a = Buffer("a", [N, c64(size)], float32, "input")
    out = Buffer("out", [N, c64(size)], float32, "output")
    tmp = Buffer("tmp", [c64(size)], float32, "temporary")
    body = Allocate(tmp, Block([
        loop("j", 0, size, Store(tmp, (j,), a[i, j] * 3.0), "vector", 8),
        loop("j", 0, size, Store(out, (i, j), tmp[c64(size - 1) - j] + cast(float32, i))),
    ]))
    kern = build(target, LoweredFunction(f"tmp{size}", ["N"], [a], [out], loop("i", 0, N, body, "parallel")),
                       num_threads=2, fp_contract=False)
    x = rng(8).standard_normal((9, size), dtype=np.float32)
    np.testing.assert_array_equal(kern(a=x), x[:, ::-1] * np.float32(3) + np.arange(9, dtype=np.float32)[:, None])


def test_heap_temporaries_kept_between_calls_of_every_size(target):
    """A temporary too large for the stack is a heap block that the "cpu" kernel keeps for its next call
    (backends/cpu/blocks.py): calls with smaller, larger and equal sizes, inside a parallel loop where
    threads allocate at once, and after the kept blocks are freed, all give numpy's values."""
    a = Buffer("a", [N, M], float64, "input")
    out = Buffer("out", [N, M], float64, "output")
    tmp = Buffer("tmp", [M], float64, "temporary")
    body = Allocate(tmp, Block([
        loop("j", 0, M, Store(tmp, (j,), a[i, j] * 2.0)),
        loop("j", 0, M, Store(out, (i, j), tmp[M - 1 - j] + cast(float64, i))),
    ]))
    kern = build(target, LoweredFunction("kept", ["N", "M"], [a], [out], loop("i", 0, N, body, "parallel")),
                 num_threads=2)
    for m in (40000, 100000, 30000, 100000, 1):
        x = rng(m).standard_normal((5, m))
        np.testing.assert_array_equal(kern(a=x), x[:, ::-1] * 2.0 + np.arange(5.0)[:, None])
        if m == 30000 and hasattr(kern, "release_memory"):
            kern.release_memory()


CYCLE_PROBE = """
import gc, os, sys
import numpy as np
sys.path.insert(0, os.getcwd())
from tests.test_native_targets import *
a, out, tmp = Buffer("a", [N], float64, "input"), Buffer("out", [N], float64, "output"), Buffer("tmp", [N], float64, "temporary")
body = Allocate(tmp, Block([loop("i", 0, N, Store(tmp, (i,), a[i] * 2.0)), loop("i", 0, N, Store(out, (i,), tmp[N - 1 - i]))]))
for k in range(3):
    kern = build(sys.argv[1], LoweredFunction(f"cyc{k}", ["N"], [a], [out], body))
    x = np.arange(100000.0)
    assert np.array_equal(kern(a=x), x[::-1] * 2.0)     # (a heap block, kept for the next call)
    kern.itself = kern
    del kern
    gc.collect()
print("collected")
"""


def test_a_kernel_in_a_reference_cycle_is_collected_safely(target):
    """A kernel that a reference cycle holds (a traceback of one of its calls holds it so) is collected
    with the code that only it reaches, in no set order; the heap blocks it kept are freed while that code
    is still loaded. (The "cpu" kernel's own __del__ once called into an engine already freed: a
    segmentation fault, found by fuzzing the Julia front-end.)"""
    out = subprocess.run([sys.executable, "-c", CYCLE_PROBE, target], capture_output=True, text=True, cwd=REPO,
                         timeout=300)
    assert out.returncode == 0 and out.stdout.split() == ["collected"], (out.returncode, out.stderr[-2000:])


def test_symbolic_temporary_and_kernel_wide_temporaries(target):
    a = Buffer("a", [N], int64, "input")
    out = Buffer("out", [N], int64, "output")
    tmp = Buffer("t", [N + 1], int64, "temporary")
    body = Block([loop("i", 0, N, Store(tmp, (i + 1,), a[i] * a[i])),
                  Store(tmp, (c64(0),), c64(5)),
                  loop("i", 0, N, Store(out, (i,), tmp[i] + tmp[i + 1]), "parallel")])
    kern = build(target, LoweredFunction("kt", ["N"], [a], [out], body, temporaries=[tmp]))
    x = np.arange(10, dtype=np.int64)
    sq = x * x
    np.testing.assert_array_equal(kern(a=x), np.concatenate([[5], sq[:-1]]) + sq)


def test_num_threads_settings(target):
    kern = axpy_kernel(target, "parallel", "vector", fi=8, name="thr")
    a = rng(9).standard_normal((64, 24), dtype=np.float32)
    b = rng(10).standard_normal(24, dtype=np.float32)
    ref = a * np.float32(2) + b
    for n in (1, 2, 5):
        kern.num_threads = n
        np.testing.assert_array_equal(kern(a=a, b=b), ref)
    kern.num_threads = None
    try:
        set_num_threads(3)
        assert get_num_threads() == 3
        np.testing.assert_array_equal(kern(a=a, b=b), ref)
    finally:
        set_num_threads(None)
    with pytest.raises(ValueError):
        set_num_threads(0)


def test_parallel_loop_runs_every_iteration_once_whatever_the_threads(target):
    """Each thread takes its own part of a parallel loop's range first, then what is left of the others':
    every iteration runs once with more threads than iterations, than parts (64), with a range that does
    not divide, and with an empty or one-iteration range."""
    a = Buffer("a", [N], int64, "input")
    out = Buffer("out", [N], int64, "output")
    kern = build(target, LoweredFunction("par_parts", ["N"], [a], [out],
                                         loop("i", 0, N, Store(out, (i,), a[i] * 3 + i), "parallel")))
    for n in (0, 1, 7, 129, 1000):
        x = np.arange(n, dtype=np.int64) * 5 + 1
        for threads in (1, 2, 3, 7, 70):
            kern.num_threads = threads
            np.testing.assert_array_equal(kern(a=x), x * 3 + np.arange(n), err_msg=f"N={n}, {threads} threads")


def gemm_kernel(target, mr=4, nr=16, width=8, packed_c=False):
    """A register-blocked sgemm: k { ii (unroll) { ji (vector) } } inside io/jo tile loops."""
    A = Buffer("A", [M, Sym("K")], float32, "input")
    B = Buffer("B", [Sym("K"), N], float32, "input")
    C = Buffer("C", [M, N], float32, "output")
    io, ii, jo, ji = Sym("io"), Sym("ii"), Sym("jo"), Sym("ji")
    row, col = io * mr + ii, jo * nr + ji
    upd = Store(C, (row, col), C[row, col] + A[row, k] * B[k, col])
    micro = loop("k", 0, Sym("K"), loop("ii", 0, mr, loop("ji", 0, nr, upd, "vector", width), "unroll", mr))
    zero = loop("ii", 0, mr, loop("ji", 0, nr, Store(C, (row, col), Const(0.0, float32)), "vector", width),
                "unroll", mr)
    nest = loop("jo", 0, N.__floordiv__(nr), loop("io", 0, M.__floordiv__(mr), Block([zero, micro])), "parallel")
    return build(target, LoweredFunction("gemm", ["M", "N", "K"], [A, B], [C], nest))


def test_gemm_accumulators_in_registers(target):
    kern = gemm_kernel(target)
    r = rng(11)
    for m, n, kk in [(8, 32, 5), (12, 16, 33), (4, 48, 1), (4, 16, 0)]:
        a = r.standard_normal((m, kk), dtype=np.float32)
        b = r.standard_normal((kk, n), dtype=np.float32)
        np.testing.assert_allclose(kern(A=a, B=b), a @ b, rtol=1e-5, atol=1e-5)
    if target == "cpu":
        ir_text = kern.source("llvm")
        # the accumulators live in vector phis of the k loop, not in memory
        assert "phi <8 x float>" in ir_text or "phi fast <8 x float>" in ir_text
        asm = kern.source("asm")
        assert "vfmadd" in asm or "fma" in asm or "mulps" in asm
    else:  # the same tile of accumulators, a local array the C compiler keeps in registers
        assert "float C_acc" in kern.source("c").replace(".", "_")


def test_promotion_skips_aliasing_accesses(target):
    """out[i] is read at i-1 inside the loop over k: no tile, plain code, same results."""
    a = Buffer("a", [N], float32, "input")
    out = Buffer("out", [N], float32, "output")
    body = Block([Store(out, (c64(0),), Const(1.0, float32)),
                  loop("k", 0, 3, loop("i", 1, N, Store(out, (i,), out[i - 1] + a[i]), "serial"))])
    kern = build(target, LoweredFunction("alias", ["N"], [a], [out], body))
    x = np.arange(6, dtype=np.float32)
    ref = np.ones(6, np.float32)
    for _ in range(3):
        for t in range(1, 6):
            ref[t] = ref[t - 1] + x[t]
    np.testing.assert_array_equal(kern(a=x), ref)


# --- calling ----------------------------------------------------------------------------------------

def blur_kernel(target):
    inp = Buffer("inp", [N + 2, M + 2], float32, "input")
    out = Buffer("out", [N, M], float32, "output")
    s = None
    for dy in range(3):
        for dx in range(3):
            t = inp[i + dy, j + dx]
            s = t if s is None else s + t
    body = Store(out, (i, j), s * Const(1 / 9, float32))
    return build(target, LoweredFunction("blur", ["N", "M"], [inp], [out],
                                       loop("i", 0, N, loop("j", 0, M, body, "vector", 8), "parallel")))


def blur_ref(x):
    s = sum(x[dy:dy + x.shape[0] - 2, dx:dx + x.shape[1] - 2] for dy in range(3) for dx in range(3))
    return s * np.float32(1 / 9)


def test_params_inferred_from_shapes_and_noncontiguous_inputs(target):
    kern = blur_kernel(target)
    x = rng(12).standard_normal((20, 40), dtype=np.float32)
    np.testing.assert_allclose(kern(inp=x), blur_ref(x), rtol=1e-6)
    np.testing.assert_allclose(kern(inp=x, N=18, M=38), blur_ref(x), rtol=1e-6)
    view = x[::2, ::3]  # not contiguous: copied before the call
    np.testing.assert_allclose(kern(inp=view), blur_ref(np.ascontiguousarray(view)), rtol=1e-6)
    out = np.zeros((18, 38), np.float32)
    res = kern(inp=x, out=out)
    assert res is out
    np.testing.assert_allclose(out, blur_ref(x), rtol=1e-6)


def test_argument_errors(target):
    kern = blur_kernel(target)
    x = np.zeros((10, 12), np.float32)
    with pytest.raises(ArgumentError, match="missing the input 'inp'"):
        kern()
    with pytest.raises(ArgumentError, match="unexpected argument"):
        kern(inp=x, bogus=1)
    with pytest.raises(ArgumentError, match="inp: expected 2 dimension"):
        kern(inp=np.zeros(5, np.float32))
    with pytest.raises(ArgumentError, match=r"inp: expected shape \(10, 12\) and dtype float32, got shape "
                                            r"\(10, 12\) and dtype float64"):
        kern(inp=x.astype(np.float64))
    with pytest.raises(ArgumentError, match=r"inp: expected shape \(7, 12\).*\(with N=5, M=10\)"):
        kern(inp=x, N=5)  # explicit N disagrees with the shape
    with pytest.raises(ArgumentError, match=r"parameter M: inp \(dimension 1, size 12\) gives 10 but out "
                                            r"\(dimension 1, size 11\) gives 11"):
        kern(inp=x, out=np.zeros((8, 11), np.float32))
    with pytest.raises(ArgumentError, match=r"out: expected shape \(8, 10\) and dtype float32, got shape "
                                            r"\(8, 10\) and dtype int32"):
        kern(inp=x, out=np.zeros((8, 10), np.int32))
    with pytest.raises(ArgumentError, match="C-contiguous"):
        kern(inp=x, out=np.zeros((10, 8), np.float32).T)
    with pytest.raises(ArgumentError, match="numpy array"):
        kern(inp=[[1.0]])
    with pytest.raises(ArgumentError, match="integer"):
        kern(inp=x, N=2.5)
    with pytest.raises(ArgumentError, match="negative shape"):
        kern(inp=np.zeros((1, 1), np.float32))
    # a parameter no shape determines
    a = Buffer("a", [N], float32, "input")
    out = Buffer("out", [N], float32, "output")
    k2 = build(target, LoweredFunction("p2", ["N", "K"], [a], [out],
                                     loop("i", 0, N, Store(out, (i,), a[i] * cast(float32, Sym("K"))))))
    with pytest.raises(ArgumentError, match="cannot tell the value of parameter"):
        k2(a=np.ones(3, np.float32))
    np.testing.assert_array_equal(k2(a=np.ones(3, np.float32), K=4), np.full(3, 4, np.float32))


def test_overlapping_input_and_output_is_safe(target):
    a = Buffer("a", [N], float32, "input")
    out = Buffer("out", [N], float32, "output")
    body = Store(out, (i,), a[N - 1 - i] + 1.0)
    kern = build(target, LoweredFunction("ovl", ["N"], [a], [out], loop("i", 0, N, body, "vector", 4)))
    x = np.arange(10, dtype=np.float32)
    ref = x[::-1] + 1
    res = kern(a=x, out=x)  # the input is copied first
    np.testing.assert_array_equal(res, ref)


AFFINITY_PROBE = """
import os, sys, threading
import numpy as np
sys.path.insert(0, os.getcwd())
from tests.test_native_targets import axpy_kernel

def masks():
    found = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/status") as status:
                line = next(l for l in status if l.startswith("Cpus_allowed_list"))
        except FileNotFoundError:
            continue    # (a thread that has just ended, such as the one joined below)
        found[int(tid)] = line.split()[1]
    return found

before = os.sched_getaffinity(0)
kern = axpy_kernel(sys.argv[1], "parallel", "serial", name="probe")
kern.num_threads = len(before)
a, b = np.ones((64, 8), np.float32), np.arange(8, dtype=np.float32)
assert np.array_equal(kern(a=a, b=b), a * 2 + b)
later = []
thread = threading.Thread(target=lambda: later.append(os.sched_getaffinity(0)))
thread.start(); thread.join()
workers = {tid: m for tid, m in masks().items() if tid != threading.get_native_id()}
print(os.sched_getaffinity(0) == before, later[0] == before,
      sum(1 for m in workers.values() if "," not in m and "-" not in m))
"""


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="binding threads needs two cores")
@pytest.mark.parametrize("environment", [{}, {"OMP_PROC_BIND": "false"}])
def test_openmp_workers_bound_to_cores_and_the_caller_left_free(target, environment):
    """libgomp's workers are bound to one core each (a worker woken after a pause otherwise queues on the
    caller's core); the calling thread, and threads it starts later, keep every core they had. A user's
    OMP_PROC_BIND stands."""
    env = {name: value for name, value in os.environ.items() if name not in AFFINITY_VARIABLES}
    out = subprocess.run([sys.executable, "-c", AFFINITY_PROBE, target], capture_output=True, text=True,
                         env={**env, **environment}, cwd=REPO, timeout=300)
    assert out.returncode == 0, out.stderr
    caller_free, later_thread_free, bound_workers = out.stdout.split()
    assert caller_free == "True" and later_thread_free == "True"
    expected = len(os.sched_getaffinity(0)) - 1 if not environment else 0
    assert int(bound_workers) == expected
