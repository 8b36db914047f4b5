"""Halide pipelines with their own schedules, realized by Halide and by mascarpone on random inputs."""
import re

import numpy as np
import pytest

import mascarpone as ms
from halide_check import hl, realize_both
from mascarpone.bench.suite import halide_pipelines as pipelines  # the benchmarks' builders, at small sizes
from mascarpone.bench.suite.tiramisu import fuse_nb
from mascarpone.frontends.halide.names import sanitize
from mascarpone.middleend.expr import Select, walk

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


def test_nb_fused_with_after_beyond_halide():
    """The benchmark's fused nb: f, g inlined, h and k in one loop nest; Halide's values, no guards in
    the fused loops, and sizes that break the promised single output size are refused."""
    img = u8(21, 70)
    inp, outs = pipelines.nb_pipeline("root")
    inp.set(hl.Buffer(img))
    expected = [np.asarray(b) for b in hl.Pipeline(outs).realize([70, 21])]
    inp, outs = pipelines.nb_pipeline("stages")
    f = ms.from_halide(hl.Pipeline(outs))
    fuse_nb(f)
    kernel = f.compile("cpu")
    for got, want in zip(kernel.realize([70, 21], img=img), expected):
        np.testing.assert_array_equal(got, want)
    lines = str(kernel.kernel.lowered).splitlines()
    assert not [line for line in lines if "if (" in line]
    tails = [line for line in lines if "for (" in line and "floormod" in line]
    assert len(tails) == 1 and "vector" in tails[0]   # only the tail of a row has a trip count of its own
    with pytest.raises(ms.ArgumentError, match="assuming"):
        kernel.realize([[70, 21], [64, 21]], img=img)


def test_conv3x3_with_kernel_input():
    inp = hl.ImageParam(hl.Float(32), 2, "inp")
    ker = hl.ImageParam(hl.Float(32), 2, "ker")
    r = hl.RDom([(0, 3), (0, 3)], "r")
    conv = hl.Func("conv")
    conv[x, y] = 0.0
    conv[x, y] += inp[x + r.x, y + r.y] * ker[r.x, r.y]
    conv.parallel(y).vectorize(x, 8)
    conv.update(0).reorder(r.x, r.y, x, y).vectorize(x, 8).parallel(y)
    realize_both(conv, [40, 21], {inp: f32(23, 42), ker: f32(3, 3)})


def test_separable_gaussian():
    inp = hl.ImageParam(hl.Float(32), 2, "inp")
    w = [0.0625, 0.25, 0.375, 0.25, 0.0625]
    gx, gy = hl.Func("gx"), hl.Func("gy")
    gx[x, y] = sum(w[i] * inp[x + i, y] for i in range(5))
    gy[x, y] = sum(w[i] * gx[x, y + i] for i in range(5))
    gy.tile(x, y, xi, yi, 16, 8).parallel(y).vectorize(xi, 8)
    gx.compute_at(gy, x).vectorize(x, 8)
    realize_both(gy, [50, 30], {inp: f32(34, 54)})


def test_heat2d_rdom_update():
    inp = hl.ImageParam(hl.Float(32), 2, "inp")
    heat = hl.Func("heat")
    r = hl.RDom([(1, inp.width() - 2), (1, inp.height() - 2)], "r")
    heat[x, y] = inp[x, y]
    heat[r.x, r.y] = hl.f32(0.3) * inp[r.x, r.y] + hl.f32(0.4) * (inp[r.x + 1, r.y] + inp[r.x - 1, r.y] + inp[r.x, r.y + 1]
                                                   + inp[r.x, r.y - 1])
    heat.parallel(y).vectorize(x, 8)
    heat.update(0).parallel(r.y)
    realize_both(heat, [33, 20], {inp: f32(20, 33)})


def test_rgbyuv420_three_outputs():
    """Three outputs of two sizes (the benchmark's rgbyuv420 builder), realized into separate buffers."""
    w, h = 36, 22
    spec = pipelines.rgbyuv420(w, h, rng)
    (rgb, img), = spec["images"].items()
    rgb.set(hl.Buffer(img))
    bufs = [hl.Buffer(hl.UInt(8), size) for size in spec["sizes"]]
    hl.Pipeline(spec["outputs"]).realize(bufs)
    k = ms.from_halide(spec["outputs"]).compile("cpu")
    ours = k.realize(spec["sizes"], rgb=img)
    for a, b in zip(ours, bufs):
        np.testing.assert_array_equal(a, np.asarray(b))


def test_blur_repeat_edge_tiled():
    inp = hl.ImageParam(hl.UInt(16), 2, "inp")
    clamped = hl.BoundaryConditions.repeat_edge(inp)
    bx, by = hl.Func("blur_x"), hl.Func("blur_y")
    bx[x, y] = (clamped[x - 1, y] + clamped[x, y] + clamped[x + 1, y]) / 3
    by[x, y] = (bx[x, y - 1] + bx[x, y] + bx[x, y + 1]) / 3
    by.tile(x, y, xi, yi, 16, 8).parallel(y).vectorize(xi, 8)
    bx.compute_at(by, x).vectorize(x, 8)
    img = rng.integers(0, 60000, (25, 39), dtype=np.uint16)
    realize_both(by, [39, 25], {inp: img})


def test_histogram_scatter():
    inp = hl.ImageParam(hl.UInt(8), 2, "inp")
    hist = hl.Func("hist")
    r = hl.RDom([(0, inp.width()), (0, inp.height())], "r")
    hist[x] = hl.u32(0)
    hist[hl.cast(hl.Int(32), inp[r.x, r.y])] += hl.u32(1)
    hist.compute_root()
    realize_both(hist, [256], {inp: u8(31, 47)})


def test_iir_scan_down_columns():
    inp = hl.ImageParam(hl.Float(32), 2, "inp")
    iir = hl.Func("iir")
    r = hl.RDom([(1, inp.height() - 1)], "r")
    iir[x, y] = inp[x, y]
    iir[x, r] = hl.f32(0.7) * iir[x, r - 1] + hl.f32(0.3) * inp[x, r]
    iir.parallel(y).vectorize(x, 8)
    iir.update(0).vectorize(x, 8)
    realize_both(iir, [32, 17], {inp: f32(17, 32)})


def test_tuple_valued_func():
    inp = hl.ImageParam(hl.UInt(8), 2, "inp")
    pair, out = hl.Func("pair"), hl.Func("out")
    pair[x, y] = hl.Tuple([hl.cast(hl.Int(32), inp[x, y]) * 3, hl.f32(inp[x, y]) * 0.5])
    out[x, y] = hl.f32(pair[x, y][0]) + pair[x, y][1]
    pair.compute_root().vectorize(x, 8)
    out.vectorize(x, 8)
    realize_both(out, [21, 13], {inp: u8(13, 21)})
    realize_both(pair, [21, 13], {inp: u8(13, 21)})


@pytest.mark.parametrize("name, rtol, atol", [("warp_affine", 1e-5, 1e-5), ("bilateral_grid", 1e-4, 1e-5),
                                              ("pyramid", 1e-5, 1e-6)])
def test_benchmark_pipelines_at_a_small_size(name, rtol, atol):
    """The benchmark's warpAffine (bilinear), bilateral grid and two-level pyramid (down- and
    up-sampling), with their schedules, at a size where the tolerances can be tight."""
    spec = getattr(pipelines, name)(72, 56, rng)
    realize_both(spec["outputs"], spec["sizes"], spec["images"], rtol=rtol, atol=atol)


def test_expressions_and_boundary_conditions():
    inp = hl.ImageParam(hl.Float(32), 2, "inp")
    lut = hl.Buffer(np.arange(7, dtype=np.int16) * 3 - 5)
    gain = hl.Param(hl.Float(32), "gain")
    shift = hl.Param(hl.Int(32), "shift")
    ce = hl.BoundaryConditions.constant_exterior(inp, hl.f32(0.25))
    mi = hl.BoundaryConditions.mirror_image(inp)
    mo = hl.BoundaryConditions.mirror_interior(inp)
    v = ce[x - 2, y + 1] + mi[x + 3, y - 2] * gain - mo[x - 1, y + 2]
    idx = hl.clamp(hl.cast(hl.Int(32), hl.floor(hl.abs(v) * 3)), 0, 6)
    f = hl.Func("kitchen")
    f[x, y] = hl.select(hl.likely(v > 0.5) & (x % 3 != 1) | (y < shift),
                        hl.sqrt(hl.abs(v)) + hl.exp(-v * v),
                        hl.mux(x % 4, [hl.floor(v), hl.ceil(v), hl.f32(lut[idx]), hl.min(hl.max(v, -1.0), 1.0)]))
    g = hl.Func("kitchen_int")
    g[x, y] = hl.cast(hl.Int(16), f[x, y] * 100) / 7 + hl.cast(hl.Int(16), (x - y)) % 5 - lut[(x + y) % 7]
    f.compute_root().vectorize(x, 4)
    g.parallel(y)
    realize_both([f, g], [23, 19], {inp: f32(19, 23)}, [(gain, 1.5), (shift, 4)], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("schedule", ["split_reorder", "fuse_parallel", "tile_unroll", "reorder_vectorize",
                                      "compute_at_inner", "store_root_compute_at", "sliding_window_folded"])
def test_tutorial_schedules(schedule):
    inp = hl.ImageParam(hl.Int(32), 2, "inp")
    prod, cons = hl.Func("producer"), hl.Func("consumer")
    prod[x, y] = inp[x, y] * 3 + x - y
    cons[x, y] = prod[x, y] + prod[x + 1, y] + prod[x, y + 1] - prod[x + 1, y + 1]
    fused = hl.Var("fused")
    if schedule == "split_reorder":
        cons.split(x, xo, xi, 4).reorder(xo, xi, y)
        prod.compute_root()
    elif schedule == "fuse_parallel":
        cons.split(x, xo, xi, 4).fuse(xi, y, fused).parallel(fused)
        prod.compute_root().parallel(y)
    elif schedule == "tile_unroll":
        cons.tile(x, y, xo, yo, xi, yi, 4, 2).unroll(xi).parallel(yo)
        prod.compute_at(cons, xo)
    elif schedule == "reorder_vectorize":
        cons.reorder(y, x).vectorize(y, 4)
        prod.compute_root().vectorize(x, 8)
    elif schedule == "compute_at_inner":
        cons.split(y, yo, yi, 3).parallel(yo).vectorize(x, 4)
        prod.compute_at(cons, yi)
    elif schedule == "store_root_compute_at":
        prod.store_root().compute_at(cons, y)
    elif schedule == "sliding_window_folded":
        prod.store_root().compute_at(cons, y).fold_storage(y, 2)
    img = rng.integers(-1000, 1000, (22, 33), dtype=np.int32)
    realize_both(cons, [32, 21], {inp: img})
    if schedule.startswith(("store_root", "sliding")):
        # a sliding window: no tile; the first row computes two producer rows, later rows one each
        text = str(ms.from_halide(cons).lower())
        assert "_tile" not in text and re.search(r"int32 producer\w*\[\(out_extent_1 \+ 1\)|int32 producer\w*\[2,", text), text


def test_realize_into_given_outputs():
    """Like Pipeline.realize(buffers): numpy arrays and hl.Buffers are filled in place."""
    spec = pipelines.rgbyuv420(40, 18, rng)
    for ip, a in spec["images"].items():
        ip.set(hl.Buffer(a))
    bufs = [hl.Buffer(hl.UInt(8), s) for s in spec["sizes"]]
    hl.Pipeline(spec["outputs"]).realize(bufs)
    expected = [np.asarray(b).copy() for b in bufs]
    kernel = ms.from_halide(hl.Pipeline(spec["outputs"])).compile("cpu")
    inputs = {ip.name(): a for ip, a in spec["images"].items()}
    outs = [np.zeros((18, 40), np.uint8), np.zeros((9, 20), np.uint8), hl.Buffer(hl.UInt(8), [20, 9])]
    kernel.realize(outs, **inputs)
    for got, want in zip(outs, expected):
        np.testing.assert_array_equal(np.asarray(got), want)
    with pytest.raises(ms.ArgumentError, match="3: "):
        kernel.realize(outs[:2], **inputs)
    with pytest.raises(ms.ArgumentError, match=r"output y_part\S* has 2 dimension"):
        kernel.realize([np.zeros(5, np.uint8), outs[1], outs[2]], **inputs)
    with pytest.raises(ms.ArgumentError, match="not a mix"):
        kernel.realize([outs[0], [20, 9], [20, 9]], **inputs)


def test_compute_at_of_a_func_with_updates():
    """A row sum over an RDom, computed per tile of its consumer: each tile runs the pure definition
    and the whole reduction for its points, as Halide does."""
    inp = hl.ImageParam(hl.Float(32), 2, "inp")
    r = hl.RDom([(0, 5)], "r")
    box, out = hl.Func("box"), hl.Func("out")
    box[x, y] = hl.f32(0)
    box[x, y] += inp[x + r, y]
    out[x, y] = box[x, y] * 2 + box[x, y + 1]
    out.tile(x, y, xo, yo, xi, yi, 16, 4).parallel(yo).vectorize(xi, 8)
    box.compute_at(out, xo).vectorize(x, 8)
    box.update(0).vectorize(x, 8)
    f = ms.from_halide(out)
    assert any(f"{sanitize(box.name())}_tile" in line for line in str(f.lower()).splitlines())
    realize_both(out, [37, 19], {inp: f32(20, 41)}, rtol=1e-6)


def test_compute_at_of_a_scan_is_computed_at_root_with_a_warning():
    inp = hl.ImageParam(hl.Float(32), 2, "inp")
    r = hl.RDom([(1, 9)], "r")
    scan, out = hl.Func("scan"), hl.Func("out")
    scan[x, y] = inp[x, y]
    scan[x, r] = scan[x, r - 1] * 0.5 + inp[x, r]
    out[x, y] = scan[x, y] + 1
    scan.compute_at(out, y)
    with pytest.warns(UserWarning, match="scan.*computed at root"):
        realize_both(out, [13, 10], {inp: f32(10, 13)}, rtol=1e-6)


def test_update_writing_beyond_the_requested_box_grows_the_realized_region():
    """As Halide's realize(sizes): an update writing past the requested output is computed over the
    grown region (the pure definition too) and the requested part is returned; a buffer given to
    fill must cover what is written, as Halide's realize(buffer) requires."""
    f = hl.Func("grows")
    r = hl.RDom([(0, 5)], "r")
    f[x, y] = x * 2 + y
    f[r.x + 3, y] = f[r.x + 3, y] + 100
    f.vectorize(x, 4)
    ours, theirs = realize_both(f, [4, 3])
    kernel = ms.from_halide(f).compile("cpu")
    with pytest.raises(ms.ArgumentError, match="beyond the given buffer"):
        kernel.realize(np.zeros((3, 4), np.int32))
    with pytest.raises(hl.HalideError, match="beyond"):
        f.realize(hl.Buffer(hl.Int(32), [4, 3]))
    wide = np.zeros((3, 8), np.int32)
    kernel.realize(wide)
    np.testing.assert_array_equal(wide[:, :4], theirs[0])


def test_update_over_an_rdom_keeps_the_output_in_one_piece():
    """heat2D's update writes over an RDom that is empty for small inputs: its box counts at its
    nominal bounds, as Halide's boxes do, so the output's bound is one derived size, its buffer
    shape has no cases and the pure definition provably writes all of it (no zero-fill per call)."""
    spec = pipelines.heat2d(24, 16, rng)
    f = ms.from_halide(hl.Pipeline(spec["outputs"]))
    kernel = f.compile("cpu")
    shape = kernel.kernel.lowered.outputs[0].shape
    assert not any(isinstance(n, Select) for d in shape for n in walk(d)), shape
    assert not any(spec.zero_init for spec in kernel.kernel._binder.specs)
    img = list(spec["images"].values())[0]
    list(spec["images"])[0].set(hl.Buffer(img))
    want = np.asarray(hl.Pipeline(spec["outputs"]).realize([24, 16]))
    np.testing.assert_allclose(kernel.realize([24, 16], inp=img), want, rtol=1e-5)
