"""Halide's bitwise intrinsics, bit counts, lerp and reinterpret, realized by Halide and by mascarpone on
random inputs: integers bit for bit, in scalar and vectorized schedules."""
import numpy as np
import pytest

import mascarpone as ms
from halide_check import hl, realize_both

rng = np.random.default_rng(11)
x, y = hl.Var("x"), hl.Var("y")
N = 203   # no multiple of the vector widths: the scalar remainder runs too

INT_TYPES = [np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int32]


def hl_type(dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return hl.Float(dtype.itemsize * 8)
    if dtype.kind == "b":
        return hl.Bool()
    return (hl.Int if dtype.kind == "i" else hl.UInt)(dtype.itemsize * 8)


def image(name, dtype, lo=None, hi=None):
    """A 1-D ImageParam with N random values in [lo, hi] (the type's range by default; for integer
    types the range's ends and 0 come first)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        values = rng.random(N).astype(dtype)
    elif dtype.kind == "b":
        values = rng.integers(0, 2, N).astype(bool)
    else:
        info = np.iinfo(dtype)
        lo = info.min if lo is None else lo
        hi = info.max if hi is None else hi
        values = rng.integers(lo, hi, N, endpoint=True).astype(dtype)
        values[:3] = [lo, hi, max(lo, 0)]
    return hl.ImageParam(hl_type(dtype), 1, name), values


def check(define, images, widths=(1, 16), rtol=None):
    """One output Func per vector width, each `define()`d alike, realized in one pipeline by both."""
    funcs = []
    for w in widths:
        f = hl.Func(f"out_v{w}")
        f[x] = define()
        if w > 1:
            f.vectorize(x, w)
        funcs.append(f)
    realize_both(funcs, [N], dict(images), rtol=rtol)


@pytest.mark.parametrize("dtype", INT_TYPES, ids=lambda t: t.__name__)
def test_bitwise_ops_and_bit_counts(dtype):
    """& | ^ ~, and popcount, count_leading_zeros, count_trailing_zeros (the width for 0)."""
    (a, av), (b, bv) = image("a", dtype), image("b", dtype)
    av[3:6] = [1, 0, 64]
    check(lambda: hl.Tuple([a[x] & b[x], a[x] | b[x], a[x] ^ b[x], ~a[x], a[x] & 0x35,
                            hl.popcount(a[x]), hl.count_leading_zeros(a[x]), hl.count_trailing_zeros(a[x])]),
          [(a, av), (b, bv)])


def test_bitwise_of_mixed_widths_and_bools():
    """Halide widens the narrower operand; on bools `&` is logic and `~` negation."""
    (a, av), (b, bv), (c, cv) = image("a", np.uint8), image("b", np.uint16), image("c", bool)
    check(lambda: hl.Tuple([a[x] | b[x], b[x] ^ a[x], ~c[x] | (c[x] & (a[x] > 100))]), [(a, av), (b, bv), (c, cv)])


@pytest.mark.parametrize("dtype", INT_TYPES, ids=lambda t: t.__name__)
def test_shifts(dtype):
    """By amounts of a signed type (negative ones shift the other way) and of an unsigned type, and by
    constants; right shifts of signed values are arithmetic."""
    bits = np.dtype(dtype).itemsize * 8
    a, av = image("a", dtype)
    s, sv = image("s", getattr(np, f"int{bits}"), -(bits - 1), bits - 1)
    u, uv = image("u", getattr(np, f"uint{bits}"), 0, bits - 1)
    check(lambda: hl.Tuple([a[x] << s[x], a[x] >> s[x], a[x] << u[x], a[x] >> u[x],
                            a[x] << 3, a[x] >> (bits - 1), a[x] << -2]), [(a, av), (s, sv), (u, uv)])


def test_shifted_and_masked_indices():
    """Bounds inference: a loaded byte `>> 4` or `& 15` indexes 16 entries, as `(x >> 2) & 15` does."""
    (a, av), (lut, lutv) = image("a", np.uint8), image("lut", np.uint8)
    lutv = lutv[:16]
    check(lambda: lut[a[x] >> 4] + lut[a[x] & 15] + lut[(x >> 2) & 15], [(a, av), (lut, lutv)])


def test_shift_by_the_width_is_refused_as_halide_does():
    a, _ = image("a", np.uint8)
    f = hl.Func("shifts_too_far")
    f[x] = a[x] << 8
    with pytest.raises(ms.NotSupportedError, match="Func shifts_too_far.*by 8"):
        ms.from_halide(f)


@pytest.mark.parametrize("dtype", INT_TYPES, ids=lambda t: t.__name__)
def test_integer_lerp(dtype):
    """Integer weights are rescaled to the values' width, float weights in [0, 1] multiplied by its
    maximum; the result rounds to nearest."""
    (z, zv), (o, ov) = image("z", dtype), image("o", dtype)
    weights = [image(f"w{k}", t) for k, t in enumerate([np.uint8, np.uint16, np.uint32, np.float32])]
    weights[-1][1][:4] = [0.0, 1.0, 0.5, 1e-7]
    check(lambda: hl.Tuple([hl.lerp(z[x], o[x], w[x]) for w, _ in weights]), [(z, zv), (o, ov)] + weights)


def test_lerp_of_floats_and_bools():
    """Float values with an integer weight (divided by its maximum) or a wider float weight (Halide
    computes in the wider type); bools pick the value the weight is nearer to."""
    (z, zv), (o, ov) = image("z", np.float32), image("o", np.float32)
    (w8, w8v), (w16, w16v), (wd, wdv) = image("w8", np.uint8), image("w16", np.uint16), image("wd", np.float64)
    (p, pv), (q, qv), (wf, wfv) = image("p", bool), image("q", bool), image("wf", np.float32)
    images = [(z, zv), (o, ov), (w8, w8v), (w16, w16v), (wd, wdv), (p, pv), (q, qv), (wf, wfv)]
    check(lambda: hl.Tuple([hl.lerp(z[x], o[x], w8[x]), hl.lerp(z[x], o[x], w16[x]), hl.lerp(z[x], o[x], wd[x])]),
          images[:5], widths=(1, 8))
    check(lambda: hl.Tuple([hl.lerp(p[x], q[x], w8[x]), hl.lerp(p[x], q[x], wf[x])]),
          [images[2]] + images[5:], widths=(1, 8))


def test_reinterpret():
    """Bits of floats as integers and back, and between signed and unsigned integers."""
    (f, fv), (d, dv) = image("f", np.float32), image("d", np.float64)
    (i, iv), (u, uv) = image("i", np.int32, -(1 << 29), 1 << 29), image("u", np.uint8)
    fv[:3] = [-0.0, np.inf, -1.5]
    check(lambda: hl.Tuple([hl.reinterpret(hl.UInt(32), f[x] * 3.0), hl.reinterpret(hl.Int(64), d[x]),
                            hl.reinterpret(hl.Int(8), u[x])]), [(f, fv), (d, dv), (u, uv)])
    check(lambda: hl.reinterpret(hl.Float(32), i[x]) + 1.0, [(i, iv)], rtol=0)


def test_random_numbers_hash_with_bitwise_operations():
    """random_int and random_float are hashes of the coordinates built from xor and reinterpret."""
    r = hl.Func("r")
    r[x, y] = hl.Tuple([hl.random_int(3), hl.random_float(5)])
    r.vectorize(x, 8)
    realize_both(r, [37, 5], rtol=0)


def test_unsupported_intrinsic_names_the_func():
    a, _ = image("a", np.uint8)
    f = hl.Func("saturated")
    f[x] = hl.saturating_add(a[x], a[x])
    with pytest.raises(ms.NotSupportedError, match="Func saturated.*saturating_add"):
        ms.from_halide(f)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_division_by_a_constant_as_halide_computes_it(dtype):
    """Halide multiplies by a constant divisor's reciprocal, rounded to the type (a constant Halide folds
    too: 1 + 6), also for the quotient inside a float `%`; strict_float and a Param divide as IEEE does.
    Each result bit for bit, where IEEE division differs from the reciprocal's product in many of them."""
    inp, a = image("inp", dtype)
    a *= 100
    p = hl.Param(hl_type(dtype), "p")
    t = dtype

    def c(v):
        return hl.f32(v) if dtype == np.float32 else hl.f64(v)
    quotients = {"by 3": (inp[x] / c(3), a * (t(1) / t(3))),
                 "by 1 + 6": (inp[x] / (c(1) + c(6)), a * (t(1) / t(7))),
                 "by 0.1": (inp[x] / c(0.1), a * (t(1) / t(0.1))),
                 "strict": (hl.strict_float(inp[x] / c(3)), a / t(3)),
                 "by a Param": (inp[x] / p, a / t(3)),
                 # `%` takes the same quotient (its floor), then a - b * q contracted as Halide's LLVM does
                 "modulo 0.7": (inp[x] % c(0.7), None)}
    for name, (expr, want) in quotients.items():
        f = hl.Func("q")
        f[x] = expr
        ours, theirs = realize_both(f, [N], {inp: a}, [(p, 3.0)] if name == "by a Param" else [])
        if want is not None:
            np.testing.assert_array_equal(theirs[0], want, err_msg=f"Halide, {name}")
        np.testing.assert_array_equal(ours[0], theirs[0], err_msg=f"ours, {name}")
    assert (a * (t(1) / t(3)) != a / t(3)).sum() > N // 10    # (the two rules differ here)
