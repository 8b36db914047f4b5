"""Scalar Params in RDom bounds: integer Params become sizes of the Function (isl parameters), which
may be zero or negative (an empty reduction), compared with Halide's own realize."""
import numpy as np
import pytest

import mascarpone as ms
from halide_check import hl, realize_both

x, y = hl.Var("x"), hl.Var("y")
rng = np.random.default_rng(11)


def check_values(outputs, sizes, images, param, values, rtol=1e-5):
    """Compile once, then realize with Halide and with mascarpone for each value of `param`."""
    for ip, arr in images.items():
        ip.set(hl.Buffer(arr))
    kernel = ms.from_halide(outputs).compile("cpu")
    for v in values:
        param.set(v)
        theirs = np.asarray(outputs.realize(sizes))
        ours = kernel.realize(sizes, **{ip.name(): arr for ip, arr in images.items()}, **{param.name(): v})
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
        if np.issubdtype(ours.dtype, np.floating):
            np.testing.assert_allclose(ours, theirs, rtol=rtol, err_msg=f"{param.name()} = {v}")
        else:
            np.testing.assert_array_equal(ours, theirs, err_msg=f"{param.name()} = {v}")


def histogram(schedule):
    inp = hl.ImageParam(hl.UInt(8), 1, "inp")
    n = hl.Param(hl.Int(32), "n")
    r = hl.RDom([(0, n)], "r")
    hist = hl.Func("hist")
    hist[x] = 0
    hist[hl.cast(hl.Int(32), inp[r.x]) % 16] += 1
    if schedule:
        ro, ri = hl.RVar("ro"), hl.RVar("ri")
        hist.update(0).split(r.x, ro, ri, 8)
    return hist, inp, n


@pytest.mark.parametrize("schedule", [False, True])
def test_histogram_over_a_param_count(schedule):
    """n elements of the input counted; n = 0 and n < 0 leave the histogram empty, as in Halide."""
    hist, inp, n = histogram(schedule)
    data = rng.integers(0, 256, 60, dtype=np.uint8)
    check_values(hist, [16], {inp: data}, n, [0, -3, 1, 7, 8, 60])


def window_sum(schedule):
    """A sliding sum of n inputs weighted by the Param itself: n bounds the RDom and is a value."""
    inp = hl.ImageParam(hl.Int(32), 1, "inp")
    n = hl.Param(hl.Int(32), "n")
    r = hl.RDom([(0, n)], "r")
    f = hl.Func("window")
    f[x] = n
    f[x] += inp[x + r.x] * (r.x + n)
    if schedule == "vectorize":
        f.update(0).vectorize(x, 4)
    elif schedule == "split_rvar":
        ro, ri = hl.RVar("ro"), hl.RVar("ri")
        f.update(0).split(r.x, ro, ri, 4).reorder(x, ri, ro)
    return f, inp, n


@pytest.mark.parametrize("schedule", [None, "vectorize", "split_rvar"])
def test_param_in_an_rdom_bound_and_in_a_value(schedule):
    f, inp, n = window_sum(schedule)
    data = rng.integers(-100, 100, 40, dtype=np.int32)
    check_values(f, [20], {inp: data}, n, [-2, 0, 1, 7, 20])


@pytest.mark.parametrize("schedule", [False, True])
def test_rdom_of_two_params_over_an_image(schedule):
    """RDom(lo, ext): rows lo..lo+ext-1 of the image summed per column (ext <= 0: none)."""
    inp = hl.ImageParam(hl.Float(32), 2, "inp")
    lo, ext = hl.Param(hl.Int(32), "lo"), hl.Param(hl.Int(16), "ext")
    r = hl.RDom([(lo, ext)], "r")
    f, g = hl.Func("colsum"), hl.Func("shifted")
    f[x, y] = hl.f32(0)
    f[x, y] += inp[x, r.x] * hl.f32(y + 1)
    g[x, y] = f[x, y] + hl.f32(lo)
    if schedule:
        f.compute_root()
        f.update(0).vectorize(x, 8).parallel(y)
    img = rng.standard_normal((30, 16)).astype(np.float32)
    inp.set(hl.Buffer(img))
    kernel = ms.from_halide(g).compile("cpu")
    # (Halide refuses an empty RDom past the image, (40, -7): its box [40, 32] reaches row 32; here
    # it reads nothing and is accepted)
    for lv, ev in [(0, 30), (3, 10), (29, 1), (5, 0), (5, -2)]:
        lo.set(lv)
        ext.set(ev)
        theirs = np.asarray(g.realize([16, 5]))
        np.testing.assert_allclose(kernel.realize([16, 5], inp=img, lo=lv, ext=ev), theirs, rtol=1e-5)


def trimmed_sum(schedule):
    """Each row summed without n columns at either end: an RDom of extent inp.width() - 2*n."""
    inp = hl.ImageParam(hl.Int(16), 2, "inp")
    n = hl.Param(hl.UInt(8), "n")
    r = hl.RDom([(hl.i32(n), inp.width() - 2 * hl.i32(n))], "r")
    f = hl.Func("trimmed")
    f[y] = hl.i32(0)
    f[y] += hl.i32(inp[r.x, y])
    if schedule:
        ro, ri = hl.RVar("ro"), hl.RVar("ri")
        f.update(0).split(r.x, ro, ri, 4)
    return f, inp, n


@pytest.mark.parametrize("schedule", [False, True])
def test_affine_mix_of_a_param_and_an_image_extent(schedule):
    f, inp, n = trimmed_sum(schedule)
    img = rng.integers(-1000, 1000, (9, 21), dtype=np.int16)
    check_values(f, [9], {inp: img}, n, [0, 1, 7, 10, 11, 200])


def scan(schedule):
    """A first-order recursive filter down the columns over rows 1..inp.height() - k."""
    inp = hl.ImageParam(hl.Float(32), 2, "inp")
    k = hl.Param(hl.Int(32), "k")
    r = hl.RDom([(1, inp.height() - k)], "r")
    f = hl.Func("iir")
    f[x, y] = inp[x, y]
    f[x, r.x] = f[x, r.x - 1] * 0.5 + inp[x, r.x] * 0.5
    if schedule:
        xo, xi = hl.Var("xo"), hl.Var("xi")
        f.update(0).split(x, xo, xi, 8).vectorize(xi).parallel(xo)
    return f, inp, k


@pytest.mark.parametrize("schedule", [False, True])
def test_scan_over_the_image_height_less_a_param(schedule):
    f, inp, k = scan(schedule)
    img = rng.standard_normal((12, 16)).astype(np.float32)
    check_values(f, [16, 12], {inp: img}, k, [1, 5, 11, 12, 20])


def test_a_param_in_an_index_and_a_tile():
    """A Param in an index is a size too (exact bounds), and a reduction over a Param count computed
    per tile of its consumer."""
    inp = hl.ImageParam(hl.Float(32), 2, "inp")
    n, s = hl.Param(hl.Int(32), "n"), hl.Param(hl.Int(16), "s")
    r = hl.RDom([(0, n)], "r")
    f, g = hl.Func("boxf"), hl.Func("outg")
    f[x, y] = hl.f32(0)
    f[x, y] += inp[x + r.x, y]
    g[x, y] = f[x, y] * 2 + inp[x + s, y]
    xo, xi = hl.Var("xo"), hl.Var("xi")
    g.split(x, xo, xi, 8).vectorize(xi)
    f.compute_at(g, xo)
    img = rng.standard_normal((6, 40)).astype(np.float32)
    for nv in (-1, 0, 3, 24):
        realize_both(g, [16, 6], {inp: img}, [(n, nv), (s, 5)])


def test_missing_param_and_regions_beyond_the_input():
    f, inp, n = window_sum(None)
    kernel = ms.from_halide(f).compile("cpu")
    data = np.arange(30, dtype=np.int32)
    with pytest.raises(ms.ArgumentError, match="missing the Param 'n'"):
        kernel.realize([10], inp=data)
    # x + r reaches 10 + 25 - 2 = 33: Halide refuses it too
    with pytest.raises(ms.ArgumentError, match=r"ImageParam inp is accessed over \[0, 33\]"):
        kernel.realize([10], inp=data, n=25)
    with pytest.raises(ms.ArgumentError, match="Param n: expected an integer of type int32"):
        kernel.realize([10], inp=data, n=2**40)
    np.testing.assert_array_equal(kernel.realize([10], inp=data, n=-4), np.full(10, -4, np.int32))
    # the scan with k = 0 reads row 12 of a 12-row input
    f, inp, k = scan(False)
    kernel = ms.from_halide(f).compile("cpu")
    with pytest.raises(ms.ArgumentError, match=r"ImageParam inp is accessed over \[0, 12\] in dimension 1"):
        kernel.realize([16, 12], inp=np.zeros((12, 16), np.float32), k=0)


def test_an_image_the_pipeline_no_longer_reads_still_bounds_the_check_of_the_others():
    """Bytes whose read of `inp` was redirected to `ker` (as a fuzzed case did): the pipeline reads only
    ker, over the output's region, but inp is still one of its ImageParams. realize checks ker's region
    with every ImageParam's extents and refuses what Halide refuses, naming the image."""
    from halide_bytes import encode
    from mascarpone.frontends.halide.pipeline import walk_nodes
    from mascarpone.frontends.halide.reader import read_pipeline
    inp, ker = hl.ImageParam(hl.Float(32), 1, "inp"), hl.ImageParam(hl.Float(32), 1, "ker")
    out = hl.Func("redirected")
    out[x] = inp[x] * 2 + ker[0]
    pipe = read_pipeline(hl.serialize_pipeline(hl.Pipeline([out])))
    base = {i: f.name.split("$")[0] for i, f in enumerate(pipe.funcs)}   # (Halide may suffix `$n`)
    ker_func = next(i for i, name in base.items() if name == "ker_im")
    redirected = [call for call in walk_nodes(pipe) if call.kind == "Call" and base.get(call.func_index) == "inp_im"]
    assert redirected
    for call in redirected:
        call.func_index = ker_func
    data = encode(pipe)
    kernel = ms.from_halide(data).compile("cpu")
    inp_values, ker_values = np.zeros(5, np.float32), np.array([1, 2, 3], np.float32)
    np.testing.assert_array_equal(kernel.realize([3], inp=inp_values, ker=ker_values), ker_values * 2 + 1)
    with pytest.raises(ms.ArgumentError, match=r"ImageParam ker is accessed over \[0, 4\]"):
        kernel.realize([5], inp=inp_values, ker=ker_values)
    with pytest.raises(ms.ArgumentError, match="missing the ImageParam 'inp'"):
        kernel.realize([3], ker=ker_values)
    inp.set(hl.Buffer(inp_values))
    ker.set(hl.Buffer(ker_values))
    theirs = hl.deserialize_pipeline(data, {"inp": inp.parameter(), "ker": ker.parameter()})
    np.testing.assert_array_equal(np.asarray(theirs.realize([3])), ker_values * 2 + 1)
    with pytest.raises(hl.HalideError, match="ker is accessed at 4"):
        theirs.realize([5])


@pytest.mark.parametrize("ptype", [hl.Float(32), hl.UInt(32), hl.Int(64), hl.UInt(64)])
def test_params_of_other_types_in_rdom_bounds_are_named(ptype):
    inp = hl.ImageParam(hl.Int(32), 1, "inp")
    p = hl.Param(ptype, "p")
    r = hl.RDom([(0, hl.i32(p))], "r")
    f = hl.Func("odd_bound")
    f[x] = 0
    f[x] += inp[x + r.x]
    with pytest.raises(ms.NotSupportedError, match=r"odd_bound.*reduction variable.*Param p of type"):
        ms.from_halide(f)


def test_params_used_only_in_values_stay_inputs():
    inp = hl.ImageParam(hl.Float(32), 1, "inp")
    gain, n = hl.Param(hl.Float(32), "gain"), hl.Param(hl.Int(32), "n")
    f = hl.Func("scaled")
    f[x] = inp[x] * gain + hl.f32(n)
    translation = ms.from_halide(f).translation
    assert all(sp.size is None for sp in translation.scalar_params.values())
    realize_both(f, [8], {inp: rng.standard_normal(8).astype(np.float32)}, [(gain, 1.5), (n, -3)])


def test_a_level_index_clamped_to_a_float_params_range():
    """`clamp(i32(v * f32(levels - 1)), 0, levels - 2)` with v unbounded data (a local Laplacian's level
    index): the clamp's upper end reads the scalar Param, so the kernel computes that bound on each
    call; the values are Halide's for several levels."""
    k = hl.Var("k")
    inp = hl.ImageParam(hl.Float(32), 1, "inp")
    levels = hl.Param(hl.Int(32), "levels")
    table, out = hl.Func("table"), hl.Func("out")
    table[x, k] = inp[x] * hl.f32(k) + hl.f32(k)
    li = hl.clamp(hl.i32(inp[x] * hl.f32(levels - 1)), 0, levels - 2)
    out[x] = table[x, li] + table[x, li + 1]
    table.compute_root()
    values = (rng.random(60) * 3 - 1).astype(np.float32)
    check_values(hl.Pipeline(out), [60], {inp: values}, levels, [2, 5, 9])
