"""Autoscheduling a Halide pipeline that has no schedule: the sizes come from the pipeline's own
estimates (what Halide's autoschedulers read), and the values stay Halide's."""
import re

import halide as hl
import numpy as np
import pytest

import mascarpone as ms
from mascarpone.bench.suite import halide_pipelines as pipelines
from mascarpone.middleend.autoschedule import cache, machine, model


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv(cache.ENV, str(tmp_path / "autoschedule"))


def _estimated(spec, w, h):
    for ip, a in spec["images"].items():
        ip.set_estimates([(0, n) for n in reversed(a.shape)])
    for f in spec["outputs"]:
        f.set_estimates([(0, w), (0, h)])
    return hl.Pipeline(spec["outputs"])


def test_output_and_image_estimates_are_the_sizes():
    spec = pipelines.gaussian(40, 24, np.random.default_rng(0), schedule=False)
    f = ms.from_halide(_estimated(spec, 640, 480))
    assert f.estimated_sizes() == {"out_extent_0": 640, "out_extent_1": 480, "inp_extent_0": 44, "inp_extent_1": 28}
    report = f.autoschedule(measure=False)
    assert report.sizes == f.estimated_sizes()

    g = ms.from_halide(_estimated(pipelines.gaussian(40, 24, np.random.default_rng(0), schedule=False), 640, 480))
    assert g.autoschedule(sizes={"out_extent_0": 96}, measure=False).sizes["out_extent_0"] == 96   # sizes= wins


def test_no_estimates_leave_the_defaults():
    """Without estimates the outputs take the default size, and each input covers what the pipeline
    reads at it (gaussian's 5 taps along both dimensions: 4 more), so that the kernels timed read only
    their arrays."""
    spec = pipelines.gaussian(40, 24, np.random.default_rng(0), schedule=False)
    f = ms.from_halide(hl.Pipeline(spec["outputs"]))
    assert f.estimated_sizes() == {}
    assert f.autoschedule(measure=False).sizes == {"inp_extent_0": 260, "inp_extent_1": 260,
                                                    "out_extent_0": 256, "out_extent_1": 256}


def test_a_param_that_bounds_an_rdom_is_given_by_sizes():
    """A scalar Param's estimate does not survive serialization: the size is the default or sizes=."""
    x = hl.Var("x")
    inp = hl.ImageParam(hl.Float(32), 1, "inp")
    n = hl.Param(hl.Int(32), "n")
    n.set_estimate(7)
    r = hl.RDom([(0, n)], "r")
    box = hl.Func("window_sum")
    box[x] = hl.f32(0)
    box[x] += inp[x + r.x]
    box.set_estimates([(0, 300)])
    inp.set_estimates([(0, 306)])
    f = ms.from_halide(hl.Pipeline([box]))
    sizes = f.estimated_sizes()
    assert sizes == {"out_extent_0": 300, "inp_extent_0": 306}

    data = np.random.default_rng(1).random(306, dtype=np.float32)
    inp.set(hl.Buffer(data))
    n.set(7)
    theirs = np.asarray(hl.Pipeline([box]).realize([300]))
    report = f.autoschedule(budget_s=1.0, sizes={"n": 7})
    assert report.sizes == {"n": 7, "out_extent_0": 300, "inp_extent_0": 306}
    np.testing.assert_allclose(f.compile("cpu").realize([300], inp=data, n=7), theirs, rtol=1e-5)


@pytest.mark.parametrize("name", ["gaussian", "conv3x3", "blur_repeat_edge"])
def test_autoscheduled_at_the_estimates_gives_halides_values(name):
    spec = getattr(pipelines, name)(70, 45, np.random.default_rng(0), schedule=False)
    pipeline = _estimated(spec, 70, 45)
    for ip, arr in spec["images"].items():
        ip.set(hl.Buffer(arr))
    theirs = np.asarray(pipeline.realize(spec["sizes"]))
    f = ms.from_halide(pipeline)
    report = f.autoschedule(budget_s=1.0)
    assert report.sizes["out_extent_0"] == 70 and report.sizes["out_extent_1"] == 45
    ours = f.compile("cpu").realize(spec["sizes"], **{ip.name(): a for ip, a in spec["images"].items()})
    tol = spec.get("tol")
    if tol is None:
        np.testing.assert_array_equal(ours, theirs)
    else:
        np.testing.assert_allclose(ours, theirs, rtol=tol, atol=tol)


def test_bilateral_grid_scatter_vectorized_and_channels_inlined():
    """The grid's histogram adds into bins the data chooses: its cells along x are vectorized (each lane
    a cell of its own, the sums in the source's order), not its reduction, whose steps may hit one bin.
    The interpolation, read once per channel (interp[x, y, 0] / interp[x, y, 1]), is inlined."""
    w, h = 640, 384
    spec = pipelines.bilateral_grid(w, h, np.random.default_rng(0), schedule=False)
    pipeline = _estimated(spec, w, h)
    for ip, arr in spec["images"].items():
        ip.set(hl.Buffer(arr))
    theirs = np.asarray(pipeline.realize(spec["sizes"]))
    f = ms.from_halide(pipeline)
    report = f.autoschedule(measure=False)
    update = next(c.name for c in f.computations if c.name.startswith("grid") and c.name.endswith("_s1"))
    interp = next(c.name for c in f.computations if c.name.startswith("interp"))
    lanes = model.SCATTER_VECTORS * machine.vector_lanes(ms.float32)
    assert f"{update}.vectorize(x, {lanes})" in report.commands
    assert not any(c.startswith(f"{update}.unroll") for c in report.commands)
    assert f"{interp}.inline()" in report.commands
    ours = f.compile("cpu").realize(spec["sizes"], **{ip.name(): a for ip, a in spec["images"].items()})
    np.testing.assert_allclose(ours, theirs, rtol=spec["tol"], atol=spec["tol"])


@pytest.mark.parametrize("name, inlined", [("tuple_func", (r"pair(_\d+)?_0", r"pair(_\d+)?_1")),
                                           ("nb", (r"f(_\d+)?", r"g(_\d+)?"))])
def test_unscheduled_producers_are_placed_by_the_autoscheduler(name, inlined):
    """A Tuple's elements that nothing schedules are the autoscheduler's to place (not kept in one loop
    nest at the root): read once each, they are inlined. nb's `f = 255 - img` and `g = 2 * img`, each read
    by two outputs at their own point, are cheap enough to compute in each (as Adams2019 does)."""
    w, h = 200, 120
    spec = getattr(pipelines, name)(w, h, np.random.default_rng(0), schedule=False)
    pipeline = _estimated(spec, w, h)
    for ip, arr in spec["images"].items():
        ip.set(hl.Buffer(arr))
    theirs = pipeline.realize(spec["sizes"])
    theirs = [np.asarray(b) for b in theirs] if len(spec["outputs"]) > 1 else [np.asarray(theirs)]
    f = ms.from_halide(pipeline)
    report = f.autoschedule(measure=False)
    for producer in inlined:     # (Halide numbers a Func whose name another one took: pair_1_0)
        assert any(re.fullmatch(producer + r"\.inline\(\)", c) for c in report.commands), report.commands
    ours = f.compile("cpu").realize(spec["sizes"], **{ip.name(): a for ip, a in spec["images"].items()})
    ours = ours if len(spec["outputs"]) > 1 else [ours]
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=spec.get("tol") or 0, atol=spec.get("tol") or 0)
