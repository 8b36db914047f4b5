"""What Halide's apps need of the middle-end at their sizes: dependences by composition where a
buffer has one writer, each reproduced in a small pipeline of our own and checked against an
independent reference (isl's flow analysis, Halide's realize)."""
import warnings

import islpy as isl
import numpy as np
import pytest

import mascarpone as ms
from mascarpone.frontends.halide.names import sanitize
from mascarpone.middleend import dependences
from halide_check import hl, realize_both

rng = np.random.default_rng(12)
x, y, c = hl.Var("x"), hl.Var("y"), hl.Var("c")
xo, yo, xi, yi = hl.Var("xo"), hl.Var("yo"), hl.Var("xi"), hl.Var("yi")


def _pyramid_with_a_histogram():
    """Clamped, strided and divided reads of single-writer Funcs, and a Func with an update (two
    writers of one buffer, read by a later Func)."""
    inp = hl.ImageParam(hl.Float(32), 2, "inp")
    edge = hl.BoundaryConditions.repeat_edge(inp)
    down, up, hist, out = hl.Func("down"), hl.Func("up"), hl.Func("hist"), hl.Func("out")
    down[x, y] = (edge[2 * x - 1, y] + edge[2 * x + 1, 2 * y]) * 0.5
    up[x, y] = down[x / 2, (y + 1) / 2] + edge[x, y]
    r = hl.RDom([(0, 4)], "r")
    hist[x, y] = 0.0
    hist[x, y] += up[x, y + r.x]
    out[x, y] = hist[x, y] + down[x // 2, y // 2]
    for func in (down, up, hist):
        func.compute_root()
    return out, inp, down, hist


def _flow_analysis_raw(f):
    """Read-after-write dependences by isl's flow analysis over every access, the reference."""
    context = f._prepare(None)
    acc = dependences.collect_accesses(f.computations, context, program=True)
    schedule = dependences.original_schedule(f.computations, context)
    return (isl.UnionAccessInfo.from_sink(acc.reads).set_must_source(acc.must_writes)
            .set_may_source(acc.may_writes).set_schedule_map(schedule).compute_flow().get_may_dependence())


def test_dependences_of_single_writer_buffers_equal_the_flow_analysis():
    out, _, down, hist = _pyramid_with_a_histogram()
    f = ms.from_halide(hl.Pipeline([out]))
    raw = f.dependences().raw
    reference = _flow_analysis_raw(f)
    assert not reference.is_empty()
    assert raw.is_equal(reference)
    # the histogram's buffer has two writers: its readers' sources are its update, not its base
    # (names from the Funcs: Halide adds a suffix to a name used before in the process)
    writers = {m.get_tuple_name(isl.dim_type.in_) for m in dependences.union_maps(raw)
               if m.get_tuple_name(isl.dim_type.out) == sanitize(out.name())}
    assert sanitize(down.name()) in writers
    assert any(w.startswith(sanitize(hist.name()) + "_") for w in writers), writers


def test_pyramid_with_a_histogram_matches_halide():
    out, inp, _, _ = _pyramid_with_a_histogram()
    out.split(y, yo, yi, 4).vectorize(x, 4)
    realize_both(out, [21, 18], {inp: rng.random((30, 45), dtype=np.float32)})


def _tile_shapes(lowered):
    """{buffer name: shape} of the tile buffers allocated in the loop IR."""
    from mascarpone.middleend import loopir as L
    return {s.buffer.name: [getattr(d, "value", d) for d in s.buffer.shape] for s in L.walk_stmts(lowered)
            if isinstance(s, L.Allocate) and s.buffer.name.endswith("_tile")}


def test_tile_of_a_compute_at_func_has_the_constant_size_of_its_largest_tile():
    """The blur of Halide's Adams2019 schedule: the image's size bounds the last tile, but no tile is
    larger than the split gives, so the tile buffers have constant sizes (on the stack, as Halide's)."""
    inp = hl.ImageParam(hl.UInt(16), 2, "inp")
    edge = hl.BoundaryConditions.repeat_edge(inp)
    bx, by = hl.Func("bx"), hl.Func("by")
    bx[x, y] = (edge[x, y] + edge[x + 1, y] + edge[x + 2, y]) // 3
    by[x, y] = (bx[x, y] + bx[x, y + 1] + bx[x, y + 2]) // 3
    by.split(y, yo, yi, 8).split(x, xo, xi, 16).reorder(xi, yi, xo, yo).vectorize(xi, 8)
    bx.compute_at(by, xo).vectorize(x, 8)
    edge.compute_at(bx, y).vectorize(edge.args()[0], 8)
    f = ms.from_halide(hl.Pipeline([by]))
    shapes = _tile_shapes(f.lower().body)
    # (bx's name as Halide gave it, `bx$n` where it counted the name before)
    assert shapes.pop(bx.name().replace("$", "_") + "_tile") == [10, 16] and list(shapes.values()) == [[1, 18]]
    image = rng.integers(0, 1 << 14, (13, 37), dtype=np.uint16)
    realize_both(by, [37, 13], {inp: image})
    realize_both(by, [5, 3], {inp: image[:5, :7]})


def test_compute_at_a_loop_another_reader_runs_outside_is_refused_as_halide_refuses_it():
    """Halide requires every reader of a Func computed at a loop to run inside that loop (its "Legal
    locations" error); a reader outside it is refused by name, the same way."""
    f, g, h = hl.Func("f"), hl.Func("g"), hl.Func("h")
    f[x, y] = x + y
    g[x, y] = f[x, y] * 2
    h[x, y] = g[x, y] + f[x, y]
    g.compute_root()
    f.compute_at(h, y)
    with pytest.raises(hl.HalideError, match="invalid location"):
        h.realize([8, 8])
    kernel = ms.from_halide(hl.Pipeline([h]))
    with pytest.raises(ms.ScheduleError, match=rf"{sanitize(f.name())}\.compute_at\({sanitize(h.name())}, y\).*also read by \['{sanitize(g.name())}'\]"):
        kernel.compile("cpu")


# the apps themselves (benchmarks/halide/app_pipelines.py), at small sizes ---------------------------

def _app_pipelines():
    """benchmarks/halide/app_pipelines.py, the apps' pipelines."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks" / "halide"))
    import app_pipelines
    return app_pipelines


def _app(name, schedule, w, h, **kwargs):
    """The app's spec with its hand schedule (or Halide's autoscheduler `schedule`) and its Pipeline."""
    app_pipelines = _app_pipelines()
    spec = getattr(app_pipelines, name)("hand" if schedule == "hand" else "none", w, h, rng, **kwargs)
    pipeline = hl.Pipeline(spec["outputs"]) if schedule == "hand" else app_pipelines.autoschedule(spec, schedule)[0]
    return spec, pipeline


def _app_matches_halide(spec, pipeline):
    """The app compiled by mascarpone gives Halide's realize within the app's tolerance."""
    for ip, array in spec["images"].items():
        ip.set(hl.Buffer(array))
    for p, value in spec["params"]:
        p.set(value)
    theirs = np.asarray(pipeline.realize(spec["sizes"]))
    inputs = {ip.name(): a for ip, a in spec["images"].items()}
    inputs.update({p.name(): v for p, v in spec["params"]})
    ours = ms.from_halide(pipeline).compile("cpu").realize(spec["sizes"], **inputs)
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
    if np.issubdtype(ours.dtype, np.integer):
        assert np.abs(ours.astype(np.int64) - theirs.astype(np.int64)).max() <= spec["tol"]
    else:
        np.testing.assert_allclose(ours, theirs, rtol=spec["tol"], atol=spec["tol"])


def test_plain_form_of_strided_pieces_whose_union_is_an_interval():
    """Reads at 2x - 1, 2x and 2x + 1 cover an interval, but isl may write it as odd and even pieces
    (which form depends on the order the parts were built in): a sliding window scanned in that form
    gets a loop of stride 2. The plain form is taken where it is exact, and only there."""
    from mascarpone.middleend.statements import without_needless_divs
    parity = isl.Map("[N] -> { [t] -> [x] : exists k : x = 2k + 1 and 0 <= t and -1 <= x <= 2N + 1; "
                     "[t] -> [x] : exists k : x = 2k and 0 <= t and 0 <= x <= 2N }")
    plain = without_needless_divs(parity)
    assert plain.is_equal(parity)
    assert all(b.dim(isl.dim_type.div) == 0 for b in plain.get_basic_maps())
    strided = isl.Map("[N] -> { [t] -> [x] : exists k : x = 2k and 0 <= x <= 2N }")
    assert without_needless_divs(strided).is_equal(strided)
    assert any(b.dim(isl.dim_type.div) for b in without_needless_divs(strided).get_basic_maps())
    # a division of the sizes alone (a derived size's parity) is kept, and the rest still made plain
    sized = parity.intersect_params(isl.Set("[N] -> { : exists m : N = 2m }"))
    made = without_needless_divs(sized)
    assert made.is_equal(sized) and made.n_basic_map() == 1


def test_interpolate_with_its_hand_schedule_at_4_levels_matches_halide():
    """The finest level cloned into the first downsampling, stored per strip and computed per row (a
    sliding window read at 2x - 1, 2x, 2x + 1): it was refused with "a loop with stride 2" under
    most hash seeds, as the window's points came out of isl in odd and even pieces."""
    spec, pipeline = _app("interpolate", "hand", 64, 48, levels=4)
    _app_matches_halide(spec, pipeline)


def test_tile_bounds_taken_from_the_readers_pieces_give_the_same_values(monkeypatch):
    """A tile's box that isl cannot find within its budget from the coalesced tiles is found from the
    readers' pieces (schedule._tile_bounds). Forced for every tile, the interpolate app (tiles per strip,
    sliding windows of the finest level) still matches Halide."""
    from mascarpone.middleend import schedule
    monkeypatch.setattr(schedule, "TILE_BOUNDS_OPERATIONS", 1)
    tiles, made = [], []
    bounds = schedule._tile_bounds

    def counted(tiles_map, pieces, dims):
        tiles.append(dims)
        return bounds(tiles_map, lambda: (made.append(dims), pieces())[1], dims)
    monkeypatch.setattr(schedule, "_tile_bounds", counted)
    spec, pipeline = _app("interpolate", "hand", 64, 48, levels=4)
    _app_matches_halide(spec, pipeline)
    assert tiles and made == [dims for dims in tiles if dims]


def test_a_sliding_window_too_intricate_to_separate_computes_whole_tiles(monkeypatch):
    """A sliding window whose new points per iteration isl cannot separate within its budget
    (statements.SLIDING_OPERATIONS) computes its whole tile at each iteration, with a warning naming
    the Func: the same values, as interpolate's hand schedule (sliding windows of the finest level)
    shows against Halide."""
    from mascarpone.middleend import statements
    monkeypatch.setattr(statements, "SLIDING_OPERATIONS", 1)
    spec, pipeline = _app("interpolate", "hand", 64, 48, levels=4)
    with pytest.warns(UserWarning, match=r"^\w+: the points each iteration of its sliding window adds are too "
                                         r"intricate .*computes its whole tile at each iteration"):
        _app_matches_halide(spec, pipeline)


@pytest.mark.parametrize("app", ["interpolate", "bilateral_grid"])
def test_a_func_whose_tiles_are_too_intricate_for_isl_is_computed_at_the_root(app, monkeypatch):
    """A Func computed at a loop whose tiles isl cannot expand within its budget
    (statements.EXPANSION_OPERATIONS) is computed at the root instead, just before its consumer's
    loop nest, with what is computed at its own loops and its updates; a warning names it. With a
    budget of one operation every compute_at falls back: the values still match Halide's."""
    from mascarpone.middleend import statements
    monkeypatch.setattr(statements, "EXPANSION_OPERATIONS", 1)
    spec, pipeline = _app(app, "hand", 64, 48, **({"levels": 4} if app == "interpolate" else {}))
    with pytest.warns(UserWarning, match=r"^\w+: the points each iteration of \w+'s loop \w+ needs are too "
                                         r"intricate for isl .* is computed at the root instead"):
        _app_matches_halide(spec, pipeline)


def test_histogram_computed_per_row_of_its_consumer_as_the_bilateral_grid_schedules_it():
    """A Func whose update scatters into a bin computed from data (the bilateral grid's histogram),
    computed at a loop of its consumer: each tile spans the bins whole, so the histogram is made per
    row inside the consumer's parallel loop, as Halide's is, not once at the root."""
    inp = hl.ImageParam(hl.Float(32), 2, "inp")
    sigma = hl.Param(hl.Float(32), "sigma")
    z = hl.Var("z")
    r = hl.RDom([(0, 4), (0, 4)], "r")
    sample = hl.clamp(inp[4 * x + r.x, 4 * y + r.y], 0.0, 1.0)
    hist, blur = hl.Func("hist"), hl.Func("blur")
    hist[x, y, z, c] = 0.0
    hist[x, y, hl.i32(sample / sigma + 0.5), c] += hl.mux(c, [sample, 1.0])
    blur[x, y, z, c] = hist[x, y, z - 1, c] + 2 * hist[x, y, z, c] + hist[x, y, z + 1, c]
    blur.bound(c, 0, 2).reorder(c, z, x, y).parallel(y).vectorize(x, 4).unroll(c)
    hist.compute_at(blur, y)
    hist.update().reorder(c, r.x, r.y, x, y).unroll(c)
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # (no fallback to the root)
        f = ms.from_halide(hl.Pipeline([blur]))
    shapes = _tile_shapes(f.lower().body)
    assert list(shapes) == [sanitize(hist.name()) + "_tile"]
    assert shapes[sanitize(hist.name()) + "_tile"][2] == 1   # one row of the histogram per tile
    image = rng.random((36, 52), dtype=np.float32)
    realize_both(blur, [13, 9, 6, 2], {inp: image}, [(sigma, 0.25)], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("schedule", ["hand", "Mullapudi2016", "Adams2019", "ours", "Adams2019 then ours"])
def test_erode_matches_halide(schedule):
    """Halide's erode app (a 5x5 minimum of a clamped 8-bit image, in strips of 8 rows), with its hand
    schedule, Halide's autoschedulers' or ours, at a size no strip divides: Halide's values, bit for bit.
    Adams2019 computes input_clamped per strip of erode_y and leaves erode_x, which reads it, unscheduled
    (inlined): our autoscheduler, placing the Funcs nothing schedules, keeps erode_x inlined there."""
    if schedule in ("hand", "Mullapudi2016", "Adams2019"):
        _app_matches_halide(*_app("erode", schedule, 37, 29))
        return
    if schedule == "ours":
        spec = _app_pipelines().erode("none", 37, 29, rng)
        pipeline = hl.Pipeline(spec["outputs"])
    else:
        spec, pipeline = _app("erode", "Adams2019", 37, 29)
    f = ms.from_halide(pipeline)
    f.autoschedule("cpu", measure=False)
    (ip, image), = spec["images"].items()
    ip.set(hl.Buffer(image))
    np.testing.assert_array_equal(f.compile("cpu").realize(spec["sizes"], input=image),
                                  np.asarray(pipeline.realize(spec["sizes"])))


@pytest.mark.parametrize("schedule", ["hand", "Mullapudi2016", "Adams2019"])
def test_spread_matches_halide(schedule):
    """Lesson 9's spread (the maximum minus the minimum of each 5x5 box, by two inline reductions) with the
    tutorial's schedule, whose clamped rows are computed per row and read by the reductions, or Halide's
    autoschedulers', at a size no strip or vector divides: Halide's values, bit for bit."""
    _app_matches_halide(*_app("spread", schedule, 37, 45))


def test_autoschedule_times_nothing_at_sizes_where_the_pipeline_reads_beyond_its_inputs():
    """erode with estimates on its input only: the outputs' default sizes (256 channels) read the
    3-channel input beyond what it covers, which Halide's realize refuses; the kernels the search would
    time read there (a crash before). The model's choice is applied unmeasured, with a warning."""
    spec = _app_pipelines().erode("none", 37, 29, rng)
    pipeline = hl.Pipeline(spec["outputs"])
    f = ms.from_halide(pipeline)
    with pytest.warns(UserWarning, match=r"ImageParam input is accessed over \[0, 255\] in dimension 2.*unmeasured"):
        report = f.autoschedule("cpu", budget_s=5)
    assert report.measured == 0 and report.seconds is None
    (ip, image), = spec["images"].items()
    ip.set(hl.Buffer(image))
    np.testing.assert_array_equal(f.compile("cpu").realize(spec["sizes"], input=image),
                                  np.asarray(pipeline.realize(spec["sizes"])))


def test_bilateral_grid_with_its_hand_schedule_matches_halide():
    spec, pipeline = _app("bilateral_grid", "hand", 64, 48)
    _app_matches_halide(spec, pipeline)


@pytest.mark.parametrize("bounded", ["clamped", None])
def test_rows_of_a_histogram_computed_at_their_consumer_are_checked_like_the_root_histogram(bounded):
    """The middle-end's side of the bilateral grid's histogram: per row of the consumer, a tile over
    every bin; a bin clamped into the bins fills it, an unbounded one is refused, not written past
    the tile."""
    R, N = ms.Param("R"), ms.Param("N")
    r, i, b = ms.Var("r", 0, R), ms.Var("i", 0, N), ms.Var("b", 0, 16)
    with ms.Function("rows") as f:
        v = ms.Input("v", [R, N], ms.int32)
        h = ms.Computation("h", [r, b], ms.i32(0))
        at = ms.clamp(v[r, i], 0, 15) if bounded else v[r, i]
        h.update([r, i], h[r, at] + 1, at=[r, at])
        out = ms.Computation("out", [r, b], h[r, b] * 2)
        out.parallelize(r)
        h.compute_at(out, r)
    if not bounded:
        with pytest.raises(ms.OutOfBoundsError):
            f.lower()
        return
    data = rng.integers(-5, 25, (7, 40)).astype(np.int32)
    expected = 2 * np.stack([np.bincount(np.clip(row, 0, 15), minlength=16) for row in data])
    np.testing.assert_array_equal(f.compile("cpu")(v=data), expected)
    tiles = _tile_shapes(f.lower().body)
    assert tiles == {"h_tile": [1, 16]}
