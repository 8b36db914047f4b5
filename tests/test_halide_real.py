"""Constructs of real Halide programs (Halide's Python apps, tutorials and correctness tests), each
reproduced in a small pipeline of our own and realized by Halide and by mascarpone."""
import numpy as np
import pytest

import mascarpone as ms
from halide_check import hl, realize_both
from mascarpone.middleend import loopir as L

rng = np.random.default_rng(5)
x, y, c, z = hl.Var("x"), hl.Var("y"), hl.Var("c"), hl.Var("z")
xo, yo, xi, yi = hl.Var("xo"), hl.Var("yo"), hl.Var("xi"), hl.Var("yi")


def i32(*shape):
    return rng.integers(-1000, 1000, shape).astype(np.int32)


def f32(*shape):
    return rng.random(shape, dtype=np.float32)


# compute_at a loop of a consumer that reads the Func through others ---------------------------------

@pytest.mark.parametrize("middle", ["inlined", "computed at the same loop", "computed deeper"])
def test_compute_at_a_consumer_that_reads_through_another_func(middle):
    inp = hl.ImageParam(hl.Int(32), 2, "inp")
    f, g, h = hl.Func("f"), hl.Func("g"), hl.Func("h")
    f[x, y] = inp[x, y] * 2
    g[x, y] = f[x, y] + f[x + 1, y]
    h[x, y] = g[x, y] + g[x, y + 1]
    f.compute_at(h, y)
    if middle == "computed at the same loop":
        g.compute_at(h, y)
    elif middle == "computed deeper":
        h.split(x, xo, xi, 8)
        g.compute_at(h, xo)
    realize_both(h, [29, 11], {inp: i32(12, 30)})


def test_pyramid_levels_computed_at_one_output_loop_with_sliding_windows():
    """The interpolate app's shape: each level upsamples the next, all computed per strip of the output
    and stored per block of strips."""
    inp = hl.ImageParam(hl.Float(32), 2, "inp")
    edge = hl.BoundaryConditions.repeat_edge(inp)
    levels = 3
    down = [hl.Func(f"down{k}") for k in range(levels)]
    up = [hl.Func(f"up{k}") for k in range(levels)]
    down[0][x, y] = edge[x, y]
    for k in range(1, levels):
        down[k][x, y] = (down[k - 1][2 * x, 2 * y] + down[k - 1][2 * x + 1, 2 * y + 1]) * 0.5
    up[levels - 1][x, y] = down[levels - 1][x, y]
    for k in range(levels - 2, -1, -1):
        up[k][x, y] = down[k][x, y] * 0.5 + up[k + 1][x / 2, y / 2]
    out = hl.Func("out")
    out[x, y] = up[0][x, y]
    out.split(y, yo, yi, 8).parallel(yo).vectorize(x, 8)
    for k in range(1, levels):
        down[k].compute_root()
        up[k].store_at(out, yo).compute_at(out, yi).vectorize(x, 4)
    realize_both(out, [37, 30], {inp: f32(30, 37)})


# wrappers and clones ---------------------------------------------------------------------------------

def test_wrappers_in_one_consumer_and_everywhere():
    f, g, h = hl.Func("wf"), hl.Func("wg"), hl.Func("wh")
    f[x, y] = x * 3 + y
    g[x, y] = 2 * f[x, y]
    h[x, y] = 3 + g[x, y] - f[x + 5, y - 2]
    for fn in (f, g, h):
        fn.compute_root()
    f.in_(g).compute_at(g, y).vectorize(x, 4)
    f.in_(h).split(x, xo, xi, 2).reorder(xo, xi).compute_at(h, y)
    realize_both(h, [13, 9])

    a, b = hl.Func("wa"), hl.Func("wb")
    a[x, y] = x - y
    b[x, y] = a[x, y] + a[x + 1, y]
    a.compute_root()
    a.in_().compute_root()
    realize_both(b, [8, 6])


def test_clones_in_several_consumers():
    f, g, h, out = hl.Func("cf"), hl.Func("cg"), hl.Func("ch"), hl.Func("cout")
    f[x, y] = x + 2 * y
    g[x, y] = 2 * f[x, y]
    h[x, y] = f[x, y] + 10
    out[x, y] = f[x, y] + g[x, y] + h[x, y]
    for fn in (f, g, h):
        fn.compute_root()
    f.clone_in([g, h]).compute_root()
    realize_both(out, [7, 5])


def test_an_image_param_staged_through_its_wrapper():
    inp = hl.ImageParam(hl.UInt(8), 2, "inp")
    blur = hl.Func("staged")
    blur[x, y] = hl.u16(inp[x, y]) + hl.u16(inp[x + 1, y]) + hl.u16(inp[x, y + 1])
    blur.split(y, yo, yi, 4)
    inp.in_().compute_at(blur, yo)
    realize_both(blur, [16, 12], {inp: rng.integers(0, 256, (13, 17), dtype=np.uint8)})


# fuse of loops whose extents are not constant -------------------------------------------------------

def test_fused_loops_of_parameter_extents():
    g = hl.Func("fused")
    g[x, y] = x + y * 100
    fused = hl.Var("fused_xy")
    g.fuse(x, y, fused).parallel(fused)
    realize_both(g, [5, 4])

    t = hl.Func("tiles")
    t[x, y] = x * 7 - y
    tile = hl.Var("tile_index")
    t.tile(x, y, xo, yo, xi, yi, 4, 4).fuse(xo, yo, tile).parallel(tile)
    realize_both(t, [19, 10])


def test_splitting_a_fused_loop_of_parameter_extents_is_refused_by_name():
    g = hl.Func("fused_split")
    g[x, y] = x + y
    fused, fo, fi = hl.Var("fxy"), hl.Var("fo"), hl.Var("fi")
    g.fuse(x, y, fused).split(fused, fo, fi, 8)
    with pytest.raises(ms.NotSupportedError, match=r"fused_split.*split\(x\.fxy\) of a fused loop"):
        ms.from_halide(g)


# indices from floats -------------------------------------------------------------------------------

@pytest.mark.parametrize("clamped", [True, False])
def test_a_bin_index_from_a_float_divided_by_a_param(clamped):
    """A bilateral grid's z: a float scaled by a Param, then converted (and maybe clamped)."""
    inp = hl.ImageParam(hl.Float(32), 2, "inp")
    sigma = hl.Param(hl.Float(32), "sigma")
    r = hl.RDom([(0, 4), (0, 4)], "r")
    v = hl.clamp(inp[x * 4 + r.x, y * 4 + r.y], 0.0, 1.0)
    zi = hl.i32(v / sigma + 0.5)
    if clamped:
        zi = hl.clamp(zi, 0, 12)
    hist = hl.Func("hist")
    hist[x, y, z] = 0.0
    hist[x, y, zi] += 1.0
    bins = hl.Func("bins")
    bins[x, y, z] = hist[x, y, z] + hist[x, y, z + 1]
    out = hl.Func("slice_of_bins")
    zv = hl.i32(hl.clamp(inp[x, y], 0.0, 1.0) / sigma)
    out[x, y] = bins[x / 4, y / 4, zv]
    hist.compute_root()
    bins.compute_root()
    img = f32(24, 28)
    k = ms.from_halide(out).compile("cpu")
    inp.set(hl.Buffer(img))
    for s in (0.1, 0.25):   # (the range of z follows sigma: computed on each call)
        sigma.set(s)
        np.testing.assert_allclose(k.realize([28, 24], inp=img, sigma=s), np.asarray(out.realize([28, 24])))
    with pytest.raises(ms.ArgumentError, match=r"sigma = 0.0.*not finite"):
        k.realize([28, 24], inp=img, sigma=0.0)


# outputs over other regions, bounds and constraints ---------------------------------------------

def test_realize_into_buffers_whose_min_is_not_zero():
    grad = hl.Func("grad")
    grad[x, y] = x * 10 + y
    grad.vectorize(x, 4)
    k = ms.from_halide(grad).compile("cpu")
    for mins, extents in (([100, 50], [5, 7]), ([-25, -3], [9, 4])):
        ours, theirs = hl.Buffer(hl.Int(32), extents), hl.Buffer(hl.Int(32), extents)
        ours.set_min(mins)
        theirs.set_min(mins)
        k.realize(ours)
        grad.realize(theirs)
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    big = hl.Buffer(hl.Int(32), [20, 12])
    k.realize(big.cropped(0, 4, 8).cropped(1, 3, 5))
    np.testing.assert_array_equal(np.asarray(big)[3:8, 4:12], np.add.outer(np.arange(3, 8), np.arange(4, 12) * 10))


@pytest.mark.parametrize("condition", ["repeat_edge", "mirror_image", "mirror_interior", "repeat_image",
                                       "constant_exterior"])
def test_boundary_conditions_over_a_region_around_the_image(condition):
    data = hl.Buffer(rng.integers(0, 256, (20, 24), dtype=np.uint8))
    src = hl.Func("src")
    src[x, y] = data[x, y]
    bc = getattr(hl.BoundaryConditions, condition)
    edged = bc(src, 7, [(0, 24), (0, 20)]) if condition == "constant_exterior" else bc(src, [(0, 24), (0, 20)])
    out = hl.Func("edged_" + condition)
    out[x, y] = edged[x, y]
    out.vectorize(x, 8)
    ours, theirs = hl.Buffer(hl.UInt(8), [60, 50]), hl.Buffer(hl.UInt(8), [60, 50])
    ours.set_min([-20, -15])
    theirs.set_min([-20, -15])
    ms.from_halide(out).compile("cpu").realize(ours)
    out.realize(theirs)
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))


def test_bound_on_an_output():
    f = hl.Func("bounded")
    f[x, y] = x + y
    f.bound(x, 0, 16)
    k = ms.from_halide(f).compile("cpu")
    np.testing.assert_array_equal(k.realize([8, 4]), np.add.outer(np.arange(4), np.arange(8)))
    one = hl.Func("bounded_to_one")
    one[x, y] = x * 3 + y
    one.bound(x, 0, 1)
    np.testing.assert_array_equal(ms.from_halide(one).compile("cpu").realize([1, 3]), [[0], [1], [2]])
    shifted = hl.Func("bounded_elsewhere")
    shifted[x, y] = x
    shifted.bound(x, 2, 8)
    # (Halide suffixes `$n` to a name whose counter other names share: the pattern allows it)
    with pytest.raises(ms.ArgumentError, match=r"bounded_elsewhere(\$\d+)? is computed over \[2, 9\] in dimension 0 "
                                               r"\(its bound\(\)\), which does not cover the requested \[0, 7\]"):
        ms.from_halide(shifted).compile("cpu").realize([8, 4])


def test_output_buffer_constraints_are_checked():
    f = hl.Func("constrained")
    f[x, y] = x - y
    f.output_buffer().dim(1).set_bounds(0, 4)
    k = ms.from_halide(f).compile("cpu")
    assert k.realize([5, 4]).shape == (4, 5)
    # (the message names the output buffer as Halide does: "constrained$1" where the name was taken before)
    with pytest.raises(ms.ArgumentError, match=r"constrained(\$\d+)?: its buffer must have extent 4 in dimension 1"):
        k.realize(np.zeros((6, 5), np.int32))
    with pytest.raises(hl.HalideError, match="Constraint violated"):
        f.realize(hl.Buffer(hl.Int(32), [5, 6]))


# Tuples, requirements, constant buffers ----------------------------------------------------------

def test_a_zero_dimensional_tuple():
    f = hl.Func("pair0")
    f[()] = (hl.i32(3) * 7, hl.f32(2.5))
    ours = ms.from_halide(f).compile("cpu").realize([])
    theirs = f.realize([])
    for a, b in zip(ours, theirs):
        assert a.shape == () and a == np.asarray(b)


def test_requirements_are_checked_on_each_call():
    p = hl.Param(hl.Int(32), "p")
    inp = hl.ImageParam(hl.UInt(8), 1, "inp")
    f = hl.Func("required")
    f[x] = x + p + hl.i32(inp[x])
    pipeline = hl.Pipeline(f)
    pipeline.add_requirement(p > 3, "p must exceed 3, got", p)
    pipeline.add_requirement(inp.width() >= 10)
    k = ms.from_halide(pipeline).compile("cpu")
    data = np.arange(12, dtype=np.uint8)
    np.testing.assert_array_equal(k.realize([6], p=5, inp=data), np.arange(6) * 2 + 5)
    inp.set(hl.Buffer(data))
    for value in (2, 3):
        p.set(value)
        with pytest.raises(hl.HalideError, match="Requirement Failed"):
            pipeline.realize([6])
        with pytest.raises(ms.ArgumentError, match=rf"p must exceed 3, got {value}"):
            k.realize([6], p=value, inp=data)
    with pytest.raises(ms.ArgumentError, match=r"inp_extent_0 >= 10"):
        k.realize([6], p=5, inp=data[:8])


def test_constant_buffers_from_cropped_and_strided_numpy_views():
    base = i32(10, 12)
    for view in (base[2:7, 3:9], base[::2, 1:], base.T[1:5, 2:8], base[::-1, :]):
        table = hl.Buffer(view)
        f = hl.Func("lookup")
        f[x, y] = table[x, y] * 2 + 1
        realize_both(f, [view.shape[1], view.shape[0]])


# autoscheduled schedules -----------------------------------------------------------------------

@pytest.mark.parametrize("autoscheduler", ["Adams2019", "Mullapudi2016"])
def test_an_autoscheduled_blur(autoscheduler):
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks" / "halide"))
    import app_pipelines
    spec = app_pipelines.blur("none", 96, 64, rng)
    pipeline, _ = app_pipelines.autoschedule(spec, autoscheduler)
    (ip, image), = spec["images"].items()
    ip.set(hl.Buffer(image))
    theirs = np.asarray(pipeline.realize(spec["sizes"]))
    ours = ms.from_halide(pipeline).compile("cpu").realize(spec["sizes"], input=image)
    np.testing.assert_array_equal(ours, theirs)


def test_a_loop_unrolled_in_a_tile_takes_the_tile_extent_that_lowering_finds():
    """Adams2019 unrolls loops of Funcs computed per tile, whose extent Halide's bounds inference
    makes constant: f computed per 4 rows of g reads 6 rows, so its unrolled row loop has 6 copies
    (known once the tiles are expanded), and the values are Halide's."""
    inp = hl.ImageParam(hl.Int(32), 2, "inp")
    f, g = hl.Func("f"), hl.Func("g")
    f[x, y] = inp[x, y] * 2
    g[x, y] = f[x, y] + f[x, y + 1] + f[x, y + 2]
    g.split(y, yo, yi, 4)
    f.compute_at(g, yo).unroll(y)
    function = ms.from_halide(g)
    unrolled = [s for s in L.walk_stmts(function.lower().body) if isinstance(s, L.For) and s.kind == "unroll"]
    assert [(s.origin[0][0].startswith("f"), s.factor) for s in unrolled] == [(True, 6)]   # (f or f_2...)
    a = rng.integers(-99, 99, (22, 9), dtype=np.int32)
    inp.set(hl.Buffer(a))
    np.testing.assert_array_equal(function.compile("cpu").realize([9, 20], inp=a),
                                  np.asarray(g.realize([9, 20])))


def test_an_unrolled_loop_of_no_constant_extent_runs_as_a_plain_loop_with_a_warning():
    """A loop unrolled without a factor whose extent has no constant bound (a Func's whole row, where
    Halide refuses to unroll) runs plainly, and a warning names it."""
    inp = hl.ImageParam(hl.Float(32), 1, "inp")
    g = hl.Func("unrolled_whole")
    g[x] = inp[x] * 2
    g.unroll(x)
    with pytest.warns(UserWarning, match=r"unrolled_whole(_\d+)?'s loop x: unrolled without a factor, .* no constant bound"):
        k = ms.from_halide(g).compile("cpu")
    a = np.arange(11, dtype=np.float32)
    np.testing.assert_array_equal(k.realize([11], inp=a), a * 2)


# a histogram computed per row of its consumer --------------------------------------------------------

def _access(line, buffer):
    """The text of the first access `buffer[...]` in a printed statement."""
    start = line.index(buffer + "[")
    depth = 0
    for k in range(start + len(buffer), len(line)):
        depth += {"[": 1, "]": -1}.get(line[k], 0)
        if depth == 0:
            return line[start:k + 1]
    raise AssertionError(line)


def test_a_histogram_tile_reads_and_writes_its_bin_through_one_index():
    """The bilateral grid's histogram: an update of a Func computed per row of its consumer adds to
    the bin its clamped input's value selects. The index it writes and the element it reads are lowered
    alike (the clamp split into its steady state and edges in both), so the generated code computes the
    bin once: the two print the same read of the input. The values are Halide's."""
    inp = hl.ImageParam(hl.UInt(8), 2, "inp")
    hist, out = hl.Func("hist"), hl.Func("out")
    r = hl.RDom([(0, 12)], "r")
    b = hl.Var("b")
    hist[b, y] = 0
    hist[hl.clamp(hl.i32(inp[hl.clamp(r.x - 2, 0, inp.width() - 1), y]) // 16, 0, 15), y] += 1
    out[b, y] = hist[b, y] * 2
    hist.compute_at(out, y)
    pipeline = hl.Pipeline(out)
    update = next(line for line in str(ms.from_halide(pipeline).lower()).splitlines()
                  if line.lstrip().startswith("hist") and "+ 1" in line)
    read_of_input = _access(update, "inp")
    assert update.count(read_of_input) == 2, update
    realize_both(out, [16, 9], {inp: rng.integers(0, 256, (9, 12)).astype(np.uint8)})


def test_probes_agree_on_equal_sizes_and_boxes_keep_their_points():
    """Bounds inference compares piecewise sizes with isl only where their probes agree: equal functions
    written apart must agree, and a box built from its dimensions' pieces on the sizes' ranges holds the
    same points as the box intersected whole."""
    import islpy as isl

    from mascarpone.frontends.halide.bounds import box_set, probe_values
    ranges = {"n": (1, 4096), "m": (1, 4096)}
    half = isl.PwAff("[n] -> { [(floor(n/2))] }")
    also_half = isl.PwAff("[n, m] -> { [(n - floor((n + 1)/2))] : n <= m; [(floor(n/2))] : n > m }")
    assert probe_values(half, ranges) == probe_values(also_half, ranges)
    assert probe_values(half.add(isl.PwAff("[n] -> { [(1)] }")), ranges) != probe_values(half, ranges)
    assert probe_values(isl.PwAff("[n] -> { [(n)] : n >= 5000 }"), ranges) == (None, None)
    context = isl.Set("[n, m] -> { : 1 <= n <= 4096 and 1 <= m <= 4096 }")
    space = isl.Set("[n, m] -> { F[x, y] }").get_space()
    bnds = [(isl.PwAff("[n, m] -> { [(0)] }"),
             isl.PwAff("[n, m] -> { [(n)] : n <= m; [(m + floor(n/3))] : n > m }")),
            (isl.PwAff("[n, m] -> { [(-1)] : n < 8; [(0)] : n >= 8 }"),
             isl.PwAff("[n, m] -> { [(floor(m/4))] }"))]
    whole = isl.Set("[n, m] -> { F[x, y] : 0 <= x and ((n <= m and x <= n) or (n > m and x <= m + floor(n/3))) and "
                    "((n < 8 and -1 <= y) or (n >= 8 and 0 <= y)) and y <= floor(m/4) }").intersect_params(context)
    assert box_set(bnds, space, context).is_equal(whole)


@pytest.mark.parametrize("form", ["rows", "columns vectorized", "tiles"])
def test_rfactor_of_a_histogram_as_halides_tutorial_writes_it(form):
    """Lesson 18 of Halide's Python tutorial: a histogram of an 8x8 constant image, its reduction
    factored with `rfactor` over rows (in parallel), columns (vectorized) or 4x4 tiles (in parallel).
    The serializer gives the merged update's read of its own Func by name only (index -1), as the
    deserializer resolves it; the values are Halide's."""
    image = hl.Buffer(rng.integers(0, 256, (8, 8), dtype=np.uint8), "rf_input")
    hist = hl.Func(f"hist_rfactor_{form.split()[0]}")
    hist[x] = 0
    r = hl.RDom([(0, image.width()), (0, image.height())])
    hist[image[r.x, r.y] // 32] += 1
    u, v = hl.Var("u"), hl.Var("v")
    if form == "rows":
        partial = hist.update().rfactor([(r.y, y)])
        partial.compute_root().update().parallel(y)
    elif form == "columns vectorized":
        partial = hist.update().rfactor(r.x, u)
        partial.compute_root().update().vectorize(u, 8)
    else:
        rxo, rxi, ryo, ryi = hl.RVar("rxo"), hl.RVar("rxi"), hl.RVar("ryo"), hl.RVar("ryi")
        hist.update().split(r.x, rxo, rxi, 4).split(r.y, ryo, ryi, 4)
        partial = hist.update().rfactor([(rxo, u), (ryo, v)])
        partial.compute_root().update().parallel(u).parallel(v).reorder(rxi, ryi, u, v)
    partial.vectorize(x, 8)
    hist.vectorize(x, 8)
    ours, theirs = realize_both(hist, [8])
    assert ours[0].sum() == 64


@pytest.mark.parametrize("level", ["x", "y"])
def test_a_func_computed_at_a_consumer_several_of_whose_stages_read_it(level):
    """Lesson 9 of Halide's tutorial (case 3): `producer.compute_at(consumer, x)` where both the pure
    definition and an update of consumer read producer, no stage named. Halide realizes producer in
    each stage's loop; so does the translation (a copy of it per reading stage after the first)."""
    inp = hl.ImageParam(hl.Int(32), 2, "stages_in")
    producer, consumer = hl.Func("per_stage_producer"), hl.Func("per_stage_consumer")
    producer[x, y] = inp[x, y] * 17 + inp[x + 1, y]
    consumer[x, y] = producer[x, y] * x
    r = hl.RDom([(0, 3)], "r")
    consumer[x, y] += producer[x, y] + r.x
    producer.compute_at(consumer, x if level == "x" else y)
    realize_both(consumer, [9, 7], {inp: i32(7, 10)})
    f = ms.from_halide(consumer)
    assert len([c for c in f.computations if c.name.startswith("per_stage_producer")]) == 2


@pytest.mark.parametrize("vector", [16, None])
def test_inline_reductions_reading_a_func_computed_in_their_consumers_loop(vector):
    """Lesson 9 of Halide's tutorial (spread): `maximum(...) - minimum(...)` of a 5x5 box of an
    edge-clamped image computed per row of strips of 32 rows. The reductions, unscheduled, were computed
    at the root, where the clamped rows computed per row do not exist ("no stage of spread reads it").
    They are now computed in the innermost loop of spread, as Halide computes them: per vector of spread,
    in vectors of its width, or per point without one."""
    inp = hl.ImageParam(hl.UInt(8), 2, "spread_in")
    clamped = hl.BoundaryConditions.repeat_edge(inp)
    box = hl.RDom([(-2, 5), (-2, 5)], "box")
    spread = hl.Func("spread")
    spread[x, y] = hl.maximum(clamped[x + box.x, y + box.y]) - hl.minimum(clamped[x + box.x, y + box.y])
    spread.split(y, yo, yi, 32).parallel(yo)
    if vector:
        spread.vectorize(x, vector)
    clamped.store_at(spread, yo).compute_at(spread, yi)
    realize_both(spread, [45, 70], {inp: rng.integers(0, 256, (70, 45), dtype=np.uint8)})
    f = ms.from_halide(spread)
    lowered = f.lower()
    placed = [s.buffer.name for s in L.walk_stmts(lowered.body) if isinstance(s, L.Allocate)]
    assert {name.split("_")[0] for name in placed} >= {"maximum", "minimum"}, placed   # (Halide may add $n)
    vectors = [s for s in L.walk_stmts(lowered.body) if isinstance(s, L.For) and s.kind == "vector"
               and any(isinstance(t, L.Store) and t.buffer.name.startswith("maximum") for t in L.walk_stmts(s.body))]
    assert bool(vectors) == bool(vector)


def test_an_inline_reduction_read_through_an_inlined_func_is_computed_in_the_final_consumer():
    """The spread's maximum read through a Func nothing schedules (inlined into spread, read at x and
    x + 1): the reduction is computed in spread's innermost loop, where the inlined Func's reads land,
    in vectors along x as where spread reads it itself, and gives Halide's values."""
    inp = hl.ImageParam(hl.UInt(8), 2, "through_in")
    clamped = hl.BoundaryConditions.repeat_edge(inp)
    box = hl.RDom([(-2, 5), (-2, 5)], "through_box")
    halved = hl.Func("halved_maximum")
    halved[x, y] = hl.maximum(clamped[x + box.x, y + box.y]) / 2
    spread = hl.Func("spread_through")
    spread[x, y] = halved[x, y] + halved[x + 1, y] - hl.minimum(clamped[x + box.x, y + box.y]) // 4
    spread.split(y, yo, yi, 32).parallel(yo).vectorize(x, 16)
    clamped.store_at(spread, yo).compute_at(spread, yi)
    realize_both(spread, [45, 70], {inp: rng.integers(0, 256, (70, 45), dtype=np.uint8)})
    lowered = ms.from_halide(spread).lower()
    assert any(isinstance(s, L.For) and s.kind == "vector" and any(
        isinstance(t, L.Store) and t.buffer.name.startswith("maximum") for t in L.walk_stmts(s.body))
        for s in L.walk_stmts(lowered.body))   # computed per vector of spread, in vectors


def test_tuple_updates_whose_elements_read_one_another_as_halides_tutorial_writes_them():
    """Lessons 9 and 13 of Halide's tutorial: an argmax by hand (the index reads the maximum at the point
    the iteration writes, so it runs first: Halide loads every element before storing any), `hl.argmax`
    and a Mandelbrot set whose complex Tuple reads both parts at r - 1, escaping where `hl.argmin` says.
    A Tuple whose elements read each other at the point written (a swap) is refused by name."""
    data = hl.Buffer(np.sin(np.arange(100, dtype=np.float32) * 0.37).astype(np.float32), "argmax_data")
    arg_max = hl.Func("arg_max_by_hand")
    arg_max[()] = (0, data[0])
    r = hl.RDom([(1, 99)])
    old_index, old_max = arg_max[()][0], arg_max[()][1]
    arg_max[()] = (hl.select(old_max > data[r], r, old_index), hl.max(data[r], old_max))
    ours, theirs = realize_both(arg_max, [])
    index, most = 0, np.asarray(data)[0]
    for k, value in enumerate(np.asarray(data)[1:], start=1):   # both from the values before the step
        index, most = (k if most > value else index), max(value, most)
    assert ours[0][()] == index and ours[1][()] == most
    r10 = hl.RDom([(0, 10)])
    inline = hl.Func("inline_argmax")
    inline[x] = hl.argmax(hl.sin(hl.f32(x + r10) * 0.7))[0]
    realize_both(inline, [12])
    t = hl.Var("t")
    mandelbrot = hl.Func("mandelbrot_tuple")
    mandelbrot[x, y, t] = (hl.f32(0), hl.f32(0))
    r12 = hl.RDom([(1, 12)])
    re, im = mandelbrot[x, y, r12 - 1][0], mandelbrot[x, y, r12 - 1][1]
    mandelbrot[x, y, r12] = (re * re - im * im + (x / 15.0 - 2.5), 2 * re * im + (y / 6.0 - 2.0))
    mr, mi = mandelbrot[x, y, r12][0], mandelbrot[x, y, r12][1]
    escape = hl.Func("mandelbrot_escape")
    escape[x, y] = hl.argmin(mr * mr + mi * mi < 16.0)[0]
    ours, _ = realize_both(escape, [61, 25])
    assert len(np.unique(ours[0])) > 3
    swap = hl.Func("tuple_swap")
    swap[x] = (x, 2 * x)
    swap[x] = (swap[x][1], swap[x][0])
    with pytest.raises(ms.NotSupportedError, match=r"tuple_swap(\$\d+)? \(update 0\): elements \[0, 1\] .*read each other"):
        ms.from_halide(swap)


def test_tuple_reductions_computed_in_a_consumers_loop_run_their_elements_together():
    """A Tuple whose update's elements read each other (an argmax by hand) computed at a consumer's
    loop, and an inline `argmax` beside a `sum` reading an edge computed per strip of their consumer:
    each element ran its whole update before the next began, which the dependences between the
    elements refused. The elements now share their loops in the tile, iteration by iteration, as at
    the root."""
    inp = hl.ImageParam(hl.Int(32), 1, "tuple_tile_in")
    r = hl.RDom([(0, 5)], "tuple_tile_r")
    best = hl.Func("best_by_hand")
    best[x] = (0, inp[x])
    best[x] = (hl.select(best[x][1] < inp[x + r], r, best[x][0]), hl.max(best[x][1], inp[x + r]))
    out = hl.Func("best_out")
    out[x] = best[x][0] * 1000 + best[x][1]
    out.split(x, xo, xi, 8)
    best.compute_at(out, xo)
    image = rng.integers(-50, 50, 40).astype(np.int32)
    realize_both(out, [30], {inp: image})
    clamped = hl.BoundaryConditions.repeat_edge(inp)
    inline = hl.Func("inline_argmax_in_strips")
    inline[x] = hl.argmax(clamped[x + r])[0] + hl.sum(clamped[x + r] * 2)
    inline.split(x, xo, xi, 8).vectorize(xi, 4)
    clamped.compute_at(inline, xo)
    realize_both(inline, [30], {inp: image[:30]})
    # a 2-D argmax read at x and x + 1 through an inlined Func: its tiles overlap from one x to the next,
    # and an element's update reads the value another's update then writes, within each tile only
    image2 = hl.ImageParam(hl.Int(32), 2, "tuple_tile_in2")
    edge2 = hl.BoundaryConditions.repeat_edge(image2)
    box = hl.RDom([(-1, 2), (-1, 3)], "tuple_tile_box")
    best2 = hl.argmax(edge2[x + box.x, y + box.y])
    both = hl.Func("both_indices")
    both[x, y] = best2[0] * 10 + best2[1]
    pairs = hl.Func("pairs_of_indices")
    pairs[x, y] = both[x, y] + both[x + 1, y]
    edge2.compute_at(pairs, y)
    realize_both(pairs, [9, 7], {image2: rng.integers(-9, 9, (8, 11)).astype(np.int32)})


def test_a_tuple_element_only_its_own_updates_read_is_refused_in_a_tile_by_name():
    """A 2-D argmax read for its first index only: its second index is read by nothing but its own
    update, so a tile of it computed in a consumer's loop would hold nothing; refused naming the Func
    and the element, with what to do, instead of an error about a command the user never wrote."""
    inp = hl.ImageParam(hl.Int(32), 2, "unread_in")
    clamped = hl.BoundaryConditions.repeat_edge(inp)
    box = hl.RDom([(0, 2), (0, 2)], "unread_box")
    out = hl.Func("unread_out")
    out[x, y] = hl.argmax(clamped[x + box.x, y + box.y])[0]
    clamped.compute_at(out, y)
    with pytest.raises(ms.NotSupportedError, match=r"Func argmax(\$\d+)? is computed at unread_out\.x, and nothing "
                                                   r"reads element\(s\) \[1\]"):
        ms.from_halide(out)


@pytest.mark.parametrize("update", [False, True])
def test_a_func_whose_tile_is_the_same_in_every_iteration_of_the_loop_it_is_computed_at(update):
    """A row table (`table[x]`, with or without an update) computed per row of a 2-D consumer: every
    iteration of y needs the same tile, so both bounds of the tile are bound at the root; the pullback
    of its loops then met a point with its tuple name (an isl error before)."""
    inp = hl.ImageParam(hl.Int(16), 1, "row_in")
    table = hl.Func("row_table")
    table[x] = hl.i32(inp[x]) * 7
    if update:
        r = hl.RDom([(0, 3)], "r")
        table[x] += hl.i32(inp[x + r.x])
    rows = hl.Func("rows_of_table")
    rows[x, y] = table[x] + y
    table.compute_at(rows, y)
    realize_both(rows, [5, 3], {inp: np.arange(9, dtype=np.int16)})


def test_a_kernel_for_fixed_sizes_keeps_the_clamp_free_steady_state():
    """A 5-tap minimum of a clamped row, vectorized: its steady vectors read the row plainly (no clamp, so
    no gather), in the kernel for all sizes and in one specialized for fixed sizes alike. Fixed, the
    image's width bounds no loop and left the AST build, and the clamps' pieces were no longer decided
    at the leaves (erode's kernel for its estimate ran 13 times slower than the general one)."""
    inp = hl.ImageParam(hl.UInt(8), 1, "taps_in")
    taps = hl.Func("clamped_taps")
    reads = [inp[hl.clamp(x + d, 0, inp.width() - 1)] for d in range(-2, 3)]
    value = reads[0]
    for read in reads[1:]:
        value = hl.min(value, read)
    taps[x] = value
    taps.vectorize(x, 16)
    f = ms.from_halide(taps)
    fixed = {"out_extent_0": 100, "taps_in_extent_0": 100, "taps_in_im_max_0": 99}   # (the last: the width - 1)
    assert set(fixed) == set(f.sizes())
    for sizes in (None, fixed):
        stores = [line for line in str(f.lower(fixed=sizes)).splitlines() if "clamped_taps[" in line]
        assert any("?" not in line for line in stores), (sizes, stores)
    image = rng.integers(0, 256, 100, dtype=np.uint8)
    inp.set(hl.Buffer(image))
    np.testing.assert_array_equal(f.compile("cpu", fixed=fixed).realize([100], taps_in=image),
                                  np.asarray(taps.realize([100])))
