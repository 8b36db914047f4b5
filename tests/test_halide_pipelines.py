"""Halide pipelines with their own schedules, realized by Halide and by mascarpone on random inputs."""
import numpy as np
import pytest

from halide_check import hl, realize_both

rng = np.random.default_rng(1)
x, y, c = hl.Var("x"), hl.Var("y"), hl.Var("c")
xo, yo, xi, yi = hl.Var("xo"), hl.Var("yo"), hl.Var("xi"), hl.Var("yi")


def u8(*shape):
    return rng.integers(0, 256, shape, dtype=np.uint8)


def f32(*shape):
    return rng.random(shape, dtype=np.float32)


def test_cvt_color():
    inp = hl.ImageParam(hl.UInt(8), 3, "rgb")
    gray = hl.Func("gray")
    v = lambda ch: hl.cast(hl.UInt(32), inp[x, y, ch])
    gray[x, y] = hl.cast(hl.UInt(8), (v(2) * 1868 + v(1) * 9617 + v(0) * 4899 + 8192) / 16384)
    gray.parallel(y).vectorize(x, 8)
    realize_both(gray, [45, 23], {inp: u8(3, 23, 45)})


def test_nb_four_stages():
    inp = hl.ImageParam(hl.UInt(8), 2, "img")
    f, g, h, k = hl.Func("f"), hl.Func("g"), hl.Func("h"), hl.Func("k")
    f[x, y] = 255 - inp[x, y]
    g[x, y] = 2 * inp[x, y]
    h[x, y] = f[x, y] + g[x, y]
    k[x, y] = f[x, y] - g[x, y]
    for fn in (f, g):
        fn.compute_root().parallel(y).vectorize(x, 16)
    for fn in (h, k):
        fn.parallel(y).vectorize(x, 16)
    realize_both([h, k], [37, 19], {inp: u8(19, 37)})
