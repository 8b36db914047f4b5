"""Halide's split semantics and tail strategies: splits anchored at their loop's min, GuardWithIf,
Predicate, ShiftInwards, RoundUp and Auto, compared with Halide's own realize and with the points
Halide stores.

Iterations are compared point by point: Halide's `trace_stores` lists every store a Func makes;
mascarpone's lowered loop IR is run by a small interpreter here that counts the stores it makes.
"""
import collections
import contextlib
import io
import os
import re
import sys
import tempfile

import numpy as np
import pytest

import mascarpone as ms
from mascarpone.backends.common.affine import constant_difference
from mascarpone.frontends.halide.reader import read_pipeline
from mascarpone.frontends.halide.schema import TAIL_STRATEGIES
from mascarpone.frontends.halide.splits import Loop, resolve_auto
from halide_check import hl, realize_both
from loopir_run import stored_points, stores_in_order
from mascarpone.middleend import loopir as L

x, y = hl.Var("x"), hl.Var("y")
xo, xi, yo, yi = hl.Var("xo"), hl.Var("xi"), hl.Var("yo"), hl.Var("yi")
T = hl.TailStrategy
rng = np.random.default_rng(7)


# what Halide stores, and what mascarpone's code stores ----------------------------------------------

def halide_stores(outputs, sizes, traced, images=()):
    """{Func name: Counter of points} of the stores the `traced` Funcs make when Halide realizes `outputs`."""
    return {name: collections.Counter(points)
            for name, points in halide_stores_in_order(outputs, sizes, traced, images).items()}


def halide_stores_in_order(outputs, sizes, traced, images=()):
    """{Func name: list of points} of the stores the `traced` Funcs make when Halide realizes `outputs`,
    in the order Halide makes them (the lanes of a vector store in lane order)."""
    for f in traced:
        f.trace_stores()
    for ip, arr in images:
        ip.set(hl.Buffer(arr))
    # Halide's runtime prints its traces through Python's print when it runs under Python, else
    # on the C streams: catch both
    sys.stdout.flush()
    sys.stderr.flush()
    printed = io.StringIO()
    with tempfile.TemporaryFile() as tmp:
        saved = {fd: os.dup(fd) for fd in (1, 2)}
        for fd in saved:
            os.dup2(tmp.fileno(), fd)
        try:
            with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
                hl.Pipeline(outputs).realize(sizes)
        finally:
            for fd, copy in saved.items():
                os.dup2(copy, fd)
                os.close(copy)
        tmp.seek(0)
        text = tmp.read().decode() + printed.getvalue()
    out = collections.defaultdict(list)
    for name, args in re.findall(r"^Store (\S+)\.\d+\((.*?)\) = ", text, re.M):
        coords = [[int(v) for v in a.strip("<>").split(",")] for a in re.findall(r"<[^>]*>|-?\d+", args)]
        for lane in range(max(len(c) for c in coords)):   # a vector store lists its lanes
            out[name].append(tuple(c[lane] if len(c) > 1 else c[0] for c in coords))
    return out


def lower_steady(function):
    """The loop IR of `function` for the steady regime of its ShiftInwards splits (see
    HalideFunction.compile), or for all sizes when it has none."""
    steady = function.translation.steady
    if steady is None:
        return function.lower()
    with function.assuming(function.translation.symbolic_steady()):
        return function.lower()


def our_stores(function, values, buffer, steady=False):
    """Counter of the indices of a buffer (see buffer_of) that the code of `function` stores to for the
    size parameters `values` (the general code, or the steady regime's): its loop IR, run without values."""
    lowered = lower_steady(function) if steady else function.lower()
    return stored_points(lowered, values, buffer())


def from_origin(counts, reverse=False):
    """The counts with each coordinate taken from its smallest value (buffers and Funcs differ by an
    origin), in Halide's dimension order (mascarpone's buffers list dimension 0 last: reverse)."""
    lows = [min(p[d] for p in counts) for d in range(len(next(iter(counts))))]
    out = collections.Counter()
    for p, c in counts.items():
        q = tuple(v - lo for v, lo in zip(p, lows))
        out[q[::-1] if reverse else q] += c
    return out


def multiplicities(counts):
    """How many points are stored once, twice...: comparable whatever the buffers."""
    return sorted(collections.Counter(counts.values()).items())


def size_values(function, sizes, images=()):
    """The size parameters of a pipeline with one output, as its kernel computes them."""
    tr = function.translation
    values = {p.name: s for p, s in zip(tr.out_params[tr.outputs[0].index], sizes)}
    for ip, arr in images:
        info = tr.image_params[ip.name()]
        values.update({p.name: arr.shape[arr.ndim - 1 - d] for d, p in enumerate(info.extent_params)})
    return values


def buffer_of(function, func, tile=False):
    """The name of the buffer a translated Func is stored in (its tile's when computed per tile), once
    the function is lowered."""
    info = next(i for i in function.translation.funcs if i.name == func.name())
    comp = function.computation(info.ms_names[0])
    return lambda: comp.name + "_tile" if tile else comp.buffer.name


def assert_same_stores(outputs, sizes, func, images=(), tile=False):
    """`func` stores what Halide stores, realizing `outputs` at `sizes`: the same points, each as often
    (for a Func computed per tile, whose tiles share one buffer, as many stores)."""
    theirs = halide_stores(outputs, sizes, [func], images)[func.name()]
    f = ms.from_halide(outputs)
    ours = our_stores(f, size_values(f, sizes, images), buffer_of(f, func, tile))
    assert sum(ours.values()) == sum(theirs.values())
    if not tile:
        assert multiplicities(ours) == multiplicities(theirs)
        assert from_origin(ours, reverse=True) == from_origin(theirs)
    return f


def vector_trips(function, buffer_name):
    """The trip counts (None: not constant) of the steady code's vector loops around stores to a buffer."""
    out = []

    def visit(s, vectors):
        if isinstance(s, L.For):
            visit(s.body, vectors + [s] if s.kind == "vector" else vectors)
        elif isinstance(s, L.Block):
            for c in s.body:
                visit(c, vectors)
        elif isinstance(s, L.If):
            visit(s.then, vectors)
            if s.else_ is not None:
                visit(s.else_, vectors)
        elif isinstance(s, L.Allocate):
            visit(s.body, vectors)
        elif isinstance(s, L.Store) and s.buffer.name == buffer_name:
            out.extend(constant_difference(v.hi, v.lo) for v in vectors)
    body = lower_steady(function).body
    buffer_name = buffer_name()
    visit(body, [])
    return out


def ints(*shape):
    return rng.integers(-1000, 1000, shape, dtype=np.int32)


# the enum and Auto ------------------------------------------------------------------------------------

def test_tail_strategy_numbers_are_halides():
    for number, name in enumerate(TAIL_STRATEGIES):
        assert int(getattr(hl.TailStrategy, name)) == number


def _auto_pipelines():
    """Funcs whose splits Halide resolved from TailStrategy.Auto when they were written."""
    f = hl.Func("vec_unroll")
    f[x] = x
    f.vectorize(x, 8).unroll(x, 4)
    g = hl.Func("upd")
    r = hl.RDom([(1, 10)], "r")
    g[x] = x
    g[x] += r.x
    g.update(0).split(x, xo, xi, 8).split(xi, hl.Var("a"), hl.Var("b"), 3).split(r.x, hl.RVar("ro"), hl.RVar("ri"), 4)
    h = hl.Func("pure")
    h[x, y] = x + y
    h.split(x, xo, xi, 8).split(xi, hl.Var("c"), hl.Var("d"), 3).split(xo, hl.Var("e"), hl.Var("g"), 2)
    h.vectorize(y, 4)
    return [f, g, h]


def test_auto_resolves_as_halide_does():
    """Halide serializes the strategy it picked for Auto; replaying the splits, resolve_auto picks the same
    (ShiftInwards for pure definitions, RoundUp inside an earlier ShiftInwards outer loop at least as
    large, RoundUp for pure variables of updates, GuardWithIf under an inner loop or for RVars)."""
    seen = set()
    for func in _auto_pipelines():
        pipe = read_pipeline(hl.serialize_pipeline(hl.Pipeline(func)))
        for fn in pipe.funcs:
            for k, d in enumerate([fn.init_def] + list(fn.updates)):
                loops = {}
                for s in d.stage_schedule.splits:
                    old = loops.get(s.old_var, Loop(s.old_var, s.old_var, "0", "0", None, s.exact, False))
                    chosen = resolve_auto(old, s.factor.value, s.exact, k == 0)
                    assert chosen == TAIL_STRATEGIES[s.tail], (fn.name, k, s.old_var)
                    seen.add(chosen)
                    shift = s.factor.value if chosen == "ShiftInwards" else old.shift_factor
                    loops[s.outer] = Loop(s.outer, s.outer, "0", "0", None, old.rvar, old.from_inner, shift)
                    loops[s.inner] = Loop(s.inner, s.inner, "0", "0", None, old.rvar, True,
                                          None if chosen == "ShiftInwards" else old.shift_factor)
    assert seen == {"ShiftInwards", "RoundUp", "GuardWithIf"}


# each strategy: the points stored and the values ------------------------------------------------------

@pytest.mark.parametrize("tail", ["GuardWithIf", "Predicate", "ShiftInwards", "RoundUp"])
@pytest.mark.parametrize("size", [29, 7])
def test_split_of_a_root_producer(tail, size):
    """A compute_root producer read at x and x + 1 (a region of size + 1 points from 0), split by 8:
    it stores the points Halide stores, as often (ShiftInwards: the overlap of the last tile twice;
    RoundUp: up to a multiple of 8), and the values agree."""
    inp = hl.ImageParam(hl.Int(32), 1, "inp")
    p, out = hl.Func(f"p_{tail}"), hl.Func("out")
    p[x] = inp[x] * 3 + 1
    out[x] = p[x] + 2 * p[x + 1]
    p.compute_root().split(x, xo, xi, 8, getattr(T, tail)).vectorize(xi)
    img = ints(48)
    realize_both(out, [size], {inp: img})
    assert_same_stores([out], [size], p, [(inp, img)])


def test_round_up_computes_a_multiple_of_the_factor():
    """A RoundUp split runs up to a multiple of its factor: the stage computes those points and reads
    its input there (which must cover them, in Halide as here). Its producers are computed at the
    root over the region required of them only, as in Halide (the extra points read values nobody
    computed, from a buffer that covers them, and are never used); a producer computed per tile of
    the stage is computed over the extra points too."""
    inp = hl.ImageParam(hl.Int(32), 1, "inp")
    p, q, c, out = hl.Func("ru_p"), hl.Func("ru_q"), hl.Func("ru_c"), hl.Func("ru_out")
    p[x] = inp[x] - 7
    q[x] = inp[x] * 5
    c[x] = inp[x] * 2 + p[x] - q[x]
    out[x] = c[x] + 1
    p.compute_root()
    c.compute_root().split(x, xo, xi, 8, T.RoundUp)
    q.compute_at(c, xo)
    img = ints(16)
    realize_both(out, [13], {inp: img})
    assert_same_stores([out], [13], c, [(inp, img)])                       # 16 points
    assert_same_stores([out], [13], p, [(inp, img)])                       # 13 points
    assert_same_stores([out], [13], q, [(inp, img)], tile=True)   # 2 tiles of 8
    k = ms.from_halide(out).compile("cpu")
    with pytest.raises(ms.ArgumentError, match="inp"):
        k.realize([13], inp=img[:14])
    inp.set(hl.Buffer(img[:14]))
    with pytest.raises(hl.HalideError, match="inp"):
        hl.Pipeline(out).realize([13])


def test_round_up_of_an_output_and_of_an_update():
    """RoundUp of an output's pure variable, in its pure definition and in an update (Auto's choice
    for updates): Halide realizes the grown region and returns the requested one."""
    f, g = hl.Func("rounded_out"), hl.Func("rounded_upd")
    f[x, y] = x * 10 + y
    f.split(x, xo, xi, 8, T.RoundUp)
    g[x] = x * 3
    g[x] += 1
    g.update(0).vectorize(x, 8)
    realize_both(f, [13, 3])
    realize_both(g, [13])
    assert_same_stores([g], [13], g)


def test_shift_inwards_with_fewer_points_than_the_factor():
    """An output narrower than its ShiftInwards factor: Halide computes one tile shifted below 0 and
    returns the requested part; the values agree (mascarpone computes that tile's points in the
    output's region only, with general code for such sizes)."""
    f = hl.Func("narrow")
    f[x, y] = x * 7 - y
    f.vectorize(x, 8)
    k = ms.from_halide(f).compile("cpu")
    for size in ([5, 3], [29, 3], [8, 2]):   # both kinds of code, from one kernel
        np.testing.assert_array_equal(k.realize(size), np.asarray(f.realize(size)))


# anchored at the loop's min -----------------------------------------------------------------------------

def test_split_anchored_at_a_region_starting_below_zero():
    """A producer read at x - 1 is computed from -1: Halide anchors its split there, so the last
    tile's overlap (points computed twice by ShiftInwards) depends on it."""
    inp = hl.ImageParam(hl.Int(32), 1, "inp")
    p, out = hl.Func("from_minus_one"), hl.Func("out_m1")
    p[x] = inp[x + 1] * 5
    out[x] = p[x - 1] + p[x]
    p.compute_root().vectorize(x, 8)
    img = ints(32)
    realize_both(out, [20], {inp: img})
    assert_same_stores([out], [20], p, [(inp, img)])


def test_rdom_split_anchored_at_its_min():
    """An RDom from 1 split by 4 (GuardWithIf) with a producer computed per outer iteration: tiles
    start at 1, 5 and 9 as in Halide (from 0 there would be four tiles, and more points recomputed)."""
    inp = hl.ImageParam(hl.Int(32), 1, "inp")
    p, f = hl.Func("per_tile"), hl.Func("scan")
    r = hl.RDom([(1, 12)], "r")
    p[x] = inp[x] * 2
    f[x] = 0
    f[0] = f[0] * 3 + p[r.x] + p[r.x + 1]
    ro, ri = hl.RVar("ro"), hl.RVar("ri")
    f.update(0).split(r.x, ro, ri, 4)
    p.compute_at(f, ro)
    img = ints(20)
    realize_both(f, [1], {inp: img})
    assert_same_stores([f], [1], p, [(inp, img)], tile=True)


def test_split_of_a_compute_at_producer():
    """A producer computed per tile of its consumer and vectorized: its split is anchored at each
    tile's min (18 points from 16x - 1). Where a tile is computed, ShiftInwards guards the last tile
    instead (of the consumer's loop and of the producer's own): Halide's values, and the points
    stored per tile are those Halide stores with GuardWithIf."""
    inp = hl.ImageParam(hl.Int(32), 2, "inp")

    def pipeline(tail):
        p, c = hl.Func("tile_p"), hl.Func("tile_c")
        p[x, y] = inp[x + 1, y] * 3 - inp[x + 2, y]
        c[x, y] = p[x - 1, y] + p[x, y] + p[x + 1, y]
        c.split(x, xo, xi, 16, tail).vectorize(xi, 8)
        p.compute_at(c, xo).split(x, x, xi, 8, tail).vectorize(xi)
        return p, c

    img = ints(5, 60)
    p, c = pipeline(T.Auto)
    realize_both(c, [43, 4], {inp: img})
    f = ms.from_halide(c)
    ours = our_stores(f, size_values(f, [43, 4], [(inp, img)]), buffer_of(f, p, tile=True))
    guarded_p, guarded_c = pipeline(T.GuardWithIf)
    theirs = halide_stores([guarded_c], [43, 4], [guarded_p], [(inp, img)])[guarded_p.name()]
    assert sum(ours.values()) == sum(theirs.values()) == 4 * (18 + 18 + 13)   # tiles from -1, 15 and 31


def test_shift_inwards_gives_full_vectors():
    """The point of ShiftInwards: with at least the factor of points, every vector is full (the last
    one shifted back), in the steady code of an output and of a root producer."""
    inp = hl.ImageParam(hl.Int(32), 2, "inp")
    p, out = hl.Func("full_p"), hl.Func("full_out")
    p[x, y] = inp[x, y] + inp[x, y + 1]
    out[x, y] = p[x, y] * p[x + 2, y]
    p.compute_root().vectorize(x, 8)
    out.vectorize(x, 8).parallel(y)
    img = ints(9, 40)
    realize_both(out, [29, 8], {inp: img})
    f = ms.from_halide(out)
    assert set(vector_trips(f, buffer_of(f, p))) == {8}
    assert set(vector_trips(f, buffer_of(f, out))) == {8}


def test_shift_inwards_keeps_a_floor_uniform_in_the_regular_vectors():
    """An upsampling read `g[x / 8]` in a vector loop of 8 whose last vector is shifted back: the regular
    vectors start at multiples of 8, so their index is the tile's own (one value for the 8 lanes, no
    gather); the shifted vector keeps the floor and stays a full vector; the values are Halide's."""
    g = hl.ImageParam(hl.Float(32), 2, "coarse")
    out = hl.Func("upsampled")
    out[x, y] = g[x / 8, y] * hl.f32(x % 8) + g[x / 8 + 1, y]
    out.vectorize(x, 8)
    coarse = rng.random((5, 6), dtype=np.float32)
    for width in (37, 40, 8):
        realize_both(out, [width, 5], {g: coarse})
    f = ms.from_halide(out)
    assert set(vector_trips(f, buffer_of(f, out))) == {8}
    # (Halide suffixes `$n` to a Func's name whose counter other names share: `upsampled_n` here)
    steady = [line for line in str(f.lower()).splitlines() if re.search(r"upsampled(_\d+)?\[y, \(\(8 \* x_x\)", line)]
    assert steady and all("coarse[y, x_x]" in line and "/ 8" not in line for line in steady), steady


# what is not supported -----------------------------------------------------------------------------------

@pytest.mark.parametrize("tail", ["PredicateLoads", "PredicateStores", "ShiftInwardsAndBlend", "RoundUpAndBlend"])
def test_predicated_or_blended_tails_are_refused(tail):
    """These guard only the loads or only the stores of the last tile, or blend its values: not the
    iterations of any strategy above."""
    f = hl.Func(f"guarded_{tail}")
    f[x] = x * 2
    f.split(x, xo, xi, 8, getattr(T, tail))
    with pytest.raises(ms.NotSupportedError, match=rf"guarded_{tail}.*{tail}"):
        ms.from_halide(f)


def test_root_func_read_by_outputs_of_two_sizes_has_derived_bounds():
    """A Func at the root read by two outputs covers the larger of their sizes: that bound becomes a
    size computed on entry, so the shifted last tile of its vectorized loop indexes with one min,
    not a select over the cases of the max, and the values are Halide's for either output larger."""
    inp = hl.ImageParam(hl.UInt(8), 2, "inp")
    f, h, k = hl.Func("two_f"), hl.Func("two_h"), hl.Func("two_k")
    f[x, y] = 255 - inp[x, y]
    h[x, y] = f[x, y] + 1
    k[x, y] = f[x, y] * 2
    f.compute_root().vectorize(x, 8)
    function = ms.from_halide(hl.Pipeline([h, k]))
    stores = [line for line in str(lower_steady(function)).splitlines() if line.strip().startswith("two_f")]
    assert stores and all("?" not in line and "min(" in line for line in stores)
    kernel = function.compile("cpu")
    img = np.random.default_rng(3).integers(0, 256, (12, 40), dtype=np.uint8)
    inp.set(hl.Buffer(img))
    for size_h, size_k in (([37, 5], [21, 9]), ([19, 11], [40, 12])):
        want = [hl.Buffer(hl.UInt(8), size_h), hl.Buffer(hl.UInt(8), size_k)]
        hl.Pipeline([h, k]).realize(want)
        got = kernel.realize([size_h, size_k], inp=img)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, np.asarray(w))


def test_store_at_an_outer_loop_slides_within_each_strip():
    """store_at(consumer, yo).compute_at(consumer, yi): within each strip of 8 rows the producer's
    rows are computed once (8 plus the 2 the next strip needs again), as in Halide's sliding window;
    the strips run in parallel. Halide's values and the points it stores."""
    inp = hl.ImageParam(hl.Int(32), 2, "inp")
    bx, by = hl.Func("strip_bx"), hl.Func("strip_by")
    bx[x, y] = inp[x, y] + inp[x + 1, y] * 2
    by[x, y] = bx[x, y] + bx[x, y + 1] + bx[x, y + 2]
    yo, yi = hl.Var("yo"), hl.Var("yi")
    by.split(y, yo, yi, 8, T.GuardWithIf).parallel(yo)   # (ShiftInwards would be guarded here, see above)
    bx.store_at(by, yo).compute_at(by, yi)
    img = ints(27, 12)
    realize_both(by, [11, 25], {inp: img})
    f = assert_same_stores([by], [11, 25], bx, [(inp, img)], tile=True)
    assert sum(our_stores(f, size_values(f, [11, 25], [(inp, img)]), buffer_of(f, bx, tile=True)).values()) \
        == 11 * (10 + 10 + 10 + 3)


@pytest.mark.parametrize("sizes", [[21, 7], [16, 6], [30, 13]])
@pytest.mark.parametrize("producer_at_tile", [False, True])
def test_fused_tile_loops_keep_halides_order(sizes, producer_at_tile):
    """Tile loops whose extents depend on the output's size, fused into one (as Halide's autoschedulers
    write them): each loop keeps its place, so the stores come in Halide's order, and a producer computed
    per fused tile computes a tile's worth each time (not a whole column). With a producer inside, the
    last tiles are guarded instead of shifted (see above): the same points, first stored in the same order."""
    inp = hl.ImageParam(hl.Int(32), 2, "inp")
    f, g = hl.Func("fused_tiles_f"), hl.Func("fused_tiles")
    f[x, y] = inp[x, y] * 3
    g[x, y] = f[x, y] + f[x, y + 1]
    tile = hl.Var("tile")
    g.split(x, xo, xi, 8, T.ShiftInwards).split(y, yo, yi, 3, T.ShiftInwards)
    g.reorder(xi, yi, xo, yo).fuse(xo, yo, tile)
    if producer_at_tile:
        f.compute_at(g, tile)
    img = ints(sizes[1] + 1, sizes[0])
    theirs = halide_stores_in_order([g], sizes, [g], [(inp, img)])[g.name()]
    function = ms.from_halide(g)
    ours = [p[::-1] for p in stores_in_order(function.lower(), size_values(function, sizes, [(inp, img)]),
                                             buffer_of(function, g)())]
    if producer_at_tile:
        assert list(dict.fromkeys(ours)) == list(dict.fromkeys(theirs))
        tile_stores = our_stores(function, size_values(function, sizes, [(inp, img)]), buffer_of(function, f, tile=True))
        tiles = -(-sizes[0] // 8) * -(-sizes[1] // 3)
        assert sum(tile_stores.values()) <= tiles * 8 * 4
    else:
        assert ours == theirs
    realize_both(g, sizes, {inp: img})
