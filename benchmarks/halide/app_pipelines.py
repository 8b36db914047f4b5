"""The pipelines of Halide's Python apps (blur, erode, bilateral grid, interpolate, local Laplacian) and the
spread of its tutorial (lesson 9), our own reproductions of their algorithms, each with the CPU schedule the
app or tutorial writes by hand or none (for an autoscheduler).

Each builder takes `schedule` ("hand" or "none"), sizes and `levels` where the app has pyramid levels,
and returns a dict: `outputs` (Funcs), `images` ({ImageParam: numpy array}), `params` ([(Param,
value)]), `sizes` (realize sizes), `tol` (float tolerance, None for bit-exact), `estimates`, the
(min, extent) per output dimension an autoscheduler needs (set on the outputs by `autoschedule`), and
`ieee` where only IEEE arithmetic on both sides gives comparable values (see local_laplacian).
"""
from __future__ import annotations

import os

import halide as hl
import numpy as np

VECTOR = 8    # float32 lanes of AVX2; the apps ask Halide for its natural vector size


def _vars(names):
    return [hl.Var(n) for n in names.split()]


def blur(schedule, w, h, rng):
    """A 3x3 box blur of 16-bit pixels, separable, with a repeat_edge boundary."""
    x, y, yi = _vars("x y yi")
    inp = hl.ImageParam(hl.UInt(16), 2, "input")
    edge = hl.BoundaryConditions.repeat_edge(inp)
    blur_x, blur_y = hl.Func("blur_x"), hl.Func("blur_y")
    blur_x[x, y] = (edge[x, y] + edge[x + 1, y] + edge[x + 2, y]) // 3
    blur_y[x, y] = (blur_x[x, y] + blur_x[x, y + 1] + blur_x[x, y + 2]) // 3
    inp.set_estimates([(0, w), (0, h)])
    if schedule == "hand":
        lanes = 2 * VECTOR   # 16-bit lanes
        blur_y.split(y, y, yi, 32).parallel(y).vectorize(x, lanes)
        blur_x.store_at(blur_y, y).compute_at(blur_y, x).vectorize(x, lanes)
    image = rng.integers(0, 1 << 14, (h, w), dtype=np.uint16)   # the app keeps to 14 bits
    return dict(outputs=[blur_y], images={inp: image}, params=[], sizes=[w, h], tol=None,
                estimates=[[(0, w), (0, h)]])


def erode(schedule, w, h, rng):
    """The minimum of each 5x5 window of an 8-bit color image, separable (along x, then along y), with
    the image's edge clamped; the app computes both stages at the root, in parallel strips of 8 rows."""
    x, y, c, yi = _vars("x y c yi")
    inp = hl.ImageParam(hl.UInt(8), 3, "input")
    clamped, erode_x, erode_y = hl.Func("input_clamped"), hl.Func("erode_x"), hl.Func("erode_y")
    clamped[x, y, c] = inp[hl.clamp(x, 0, inp.width() - 1), hl.clamp(y, 0, inp.height() - 1), c]
    erode_x[x, y, c] = _min_of([clamped[x + d, y, c] for d in range(-2, 3)])
    erode_y[x, y, c] = _min_of([erode_x[x, y + d, c] for d in range(-2, 3)])
    inp.set_estimates([(0, w), (0, h), (0, 3)])
    if schedule == "hand":
        erode_x.compute_root().split(y, y, yi, 8).parallel(y)
        erode_y.compute_root().split(y, y, yi, 8).parallel(y)
    image = rng.integers(0, 256, (3, h, w), dtype=np.uint8)
    return dict(outputs=[erode_y], images={inp: image}, params=[], sizes=[w, h, 3], tol=0,
                estimates=[[(0, w), (0, h), (0, 3)]])


def spread(schedule, w, h, rng):
    """The spread (maximum minus minimum) of each 5x5 box of an 8-bit image with its edges clamped, by two
    inline reductions; lesson 9 of the tutorial computes the clamped rows per row of strips of 32 rows,
    stored per strip, and vectorizes 16 columns."""
    x, y, yo, yi = _vars("x y yo yi")
    inp = hl.ImageParam(hl.UInt(8), 2, "input")
    clamped = hl.BoundaryConditions.repeat_edge(inp)
    box = hl.RDom([(-2, 5), (-2, 5)], "box")
    out = hl.Func("spread")
    out[x, y] = hl.maximum(clamped[x + box.x, y + box.y]) - hl.minimum(clamped[x + box.x, y + box.y])
    inp.set_estimates([(0, w), (0, h)])
    if schedule == "hand":
        out.split(y, yo, yi, 32).parallel(yo).vectorize(x, 16)
        clamped.store_at(out, yo).compute_at(out, yi)
    image = rng.integers(0, 256, (h, w), dtype=np.uint8)
    return dict(outputs=[out], images={inp: image}, params=[], sizes=[w, h], tol=0,
                estimates=[[(0, w), (0, h)]])


def _min_of(values):
    """min(min(min(a, b), c), ...), as the app nests it."""
    out = values[0]
    for v in values[1:]:
        out = hl.min(out, v)
    return out


def bilateral_grid(schedule, w, h, rng, s_sigma=8, r_sigma=0.1):
    """A bilateral filter through a grid: a histogram of the image per s_sigma x s_sigma block and
    intensity bin (bins of width r_sigma, a Param), blurred in the three grid dimensions and sliced
    back with trilinear interpolation."""
    x, y, z, c = _vars("x y z c")
    inp = hl.ImageParam(hl.Float(32), 2, "input")
    sigma = hl.Param(hl.Float(32), "r_sigma")
    edge = hl.BoundaryConditions.repeat_edge(inp)
    r = hl.RDom([(0, s_sigma), (0, s_sigma)], "r")
    sample = hl.clamp(edge[x * s_sigma + r.x - s_sigma // 2, y * s_sigma + r.y - s_sigma // 2], 0.0, 1.0)
    bin_of = hl.i32(sample / sigma + 0.5)
    histogram = hl.Func("histogram")
    histogram[x, y, z, c] = 0.0
    histogram[x, y, bin_of, c] += hl.mux(c, [sample, 1.0])

    def five_tap(f, shift):
        taps = [(-2, 1), (-1, 4), (0, 6), (1, 4), (2, 1)]
        out = None
        for d, wt in taps:
            term = f[shift(d)] * wt if wt != 1 else f[shift(d)]
            out = term if out is None else out + term
        return out

    blurz, blurx, blury = hl.Func("blurz"), hl.Func("blurx"), hl.Func("blury")
    blurz[x, y, z, c] = five_tap(histogram, lambda d: (x, y, z + d, c))
    blurx[x, y, z, c] = five_tap(blurz, lambda d: (x + d, y, z, c))
    blury[x, y, z, c] = five_tap(blurx, lambda d: (x, y + d, z, c))

    pixel = hl.clamp(edge[x, y], 0.0, 1.0)
    zv = pixel / sigma
    zi = hl.i32(zv)
    zf = zv - zi
    xf = hl.f32(x % s_sigma) / s_sigma
    yf = hl.f32(y % s_sigma) / s_sigma
    xi, yi = x / s_sigma, y / s_sigma

    def corner(dx, dy, dz):
        return blury[xi + dx, yi + dy, zi + dz, c]

    def bilinear(dz):
        return hl.lerp(hl.lerp(corner(0, 0, dz), corner(1, 0, dz), xf),
                       hl.lerp(corner(0, 1, dz), corner(1, 1, dz), xf), yf)

    interpolated = hl.Func("interpolated")
    interpolated[x, y, c] = hl.lerp(bilinear(0), bilinear(1), zf)
    out = hl.Func("bilateral_grid")
    out[x, y] = interpolated[x, y, 0] / interpolated[x, y, 1]

    inp.set_estimates([(0, w), (0, h)])
    sigma.set_estimate(r_sigma)
    histogram.set_estimate(z, -2, 16)
    for f in (blurz, blurx, blury):
        f.set_estimate(z, 0, 12)
    if schedule == "hand":
        blurz.compute_root().reorder(c, z, x, y).parallel(y).vectorize(x, VECTOR).unroll(c)
        histogram.compute_at(blurz, y)
        histogram.update().reorder(c, r.x, r.y, x, y).unroll(c)
        blurx.compute_root().reorder(c, x, y, z).parallel(z).vectorize(x, VECTOR).unroll(c)
        blury.compute_root().reorder(c, x, y, z).parallel(z).vectorize(x, VECTOR).unroll(c)
        out.compute_root().parallel(y).vectorize(x, VECTOR)
    image = rng.random((h, w), dtype=np.float32)
    return dict(outputs=[out], images={inp: image}, params=[(sigma, r_sigma)], sizes=[w, h], tol=2e-3,
                estimates=[[(0, w), (0, h)]])


def interpolate(schedule, w, h, rng, levels=10):
    """Fills the transparent parts of an RGBA image from a pyramid: premultiplied colors are
    downsampled `levels - 1` times, then each level is upsampled and blended under the finer one
    by its alpha."""
    x, y, c = _vars("x y c")
    inp = hl.ImageParam(hl.Float(32), 3, "input")
    inp.dim(2).set_bounds(0, 4)
    names = lambda base: [hl.Func(f"{base}_{k}") for k in range(levels)]
    downsampled, downx = names("downsampled"), names("downx")
    interpolated, upsampled, upsampledx = names("interpolated"), names("upsampled"), names("upsampledx")
    edge = hl.BoundaryConditions.repeat_edge(inp)
    downsampled[0][x, y, c] = hl.select(c < 3, edge[x, y, c] * edge[x, y, 3], edge[x, y, 3])
    for k in range(1, levels):
        prev = downsampled[k - 1]
        if k == 4:
            # a boundary condition in the middle of the pyramid keeps the footprint of the coarse
            # levels close to the image
            wk, hk = inp.width() / (1 << (k - 1)), inp.height() / (1 << (k - 1))
            prev = hl.lambda_func(x, y, c, prev[hl.clamp(x, 0, wk), hl.clamp(y, 0, hk), c])
        downx[k][x, y, c] = (prev[x * 2 - 1, y, c] + 2 * prev[x * 2, y, c] + prev[x * 2 + 1, y, c]) * 0.25
        downsampled[k][x, y, c] = (downx[k][x, y * 2 - 1, c] + 2 * downx[k][x, y * 2, c]
                                   + downx[k][x, y * 2 + 1, c]) * 0.25
    interpolated[levels - 1][x, y, c] = downsampled[levels - 1][x, y, c]
    for k in range(levels - 2, -1, -1):
        coarse = interpolated[k + 1]
        upsampledx[k][x, y, c] = (coarse[x / 2, y, c] + coarse[(x + 1) / 2, y, c]) / 2
        upsampled[k][x, y, c] = (upsampledx[k][x, y / 2, c] + upsampledx[k][x, (y + 1) / 2, c]) / 2
        alpha = 1.0 - downsampled[k][x, y, 3]
        interpolated[k][x, y, c] = downsampled[k][x, y, c] + alpha * upsampled[k][x, y, c]
    out = hl.Func("output")
    out[x, y, c] = interpolated[0][x, y, c] / interpolated[0][x, y, 3]

    inp.set_estimates([(0, w), (0, h), (0, 4)])
    if schedule == "hand":
        xo, xi, yo, yi = _vars("xo xi yo yi")
        for k in range(1, levels - 1):
            downsampled[k].compute_root().reorder(x, c, y).split(y, yo, yi, 8).parallel(yo).vectorize(x, VECTOR)
        # the finest level is recomputed per strip of the first downsampling, through a clone
        (downsampled[0].clone_in(downx[1]).store_at(downsampled[1], yo).compute_at(downsampled[1], yi)
         .reorder(c, x, y).unroll(c).vectorize(x, VECTOR))
        (out.bound(x, 0, inp.width()).bound(y, 0, inp.height()).bound(c, 0, 3)
         .split(x, xo, xi, VECTOR).split(y, yo, yi, 32).reorder(xi, c, xo, yi, yo)
         .unroll(c).vectorize(xi).parallel(yo))
        for k in range(1, levels):
            interpolated[k].store_at(out, yo).compute_at(out, yi).vectorize(x, VECTOR)
    image = rng.random((4, h, w), dtype=np.float32)
    image[3] = np.where(rng.random((h, w)) < 0.3, 0.0, image[3])   # holes of zero alpha
    image[3] = np.maximum(image[3], 1e-3)   # (the output divides by the blended alpha)
    return dict(outputs=[out], images={inp: image}, params=[], sizes=[w, h, 3], tol=2e-3,
                estimates=[[(0, w), (0, h), (0, 3)]])


def local_laplacian(schedule, w, h, rng, levels=8):
    """Local Laplacian filtering: a Gaussian pyramid of the gray image selects, per pixel and level,
    between the Laplacian pyramids of several remapped copies of it; the result is collapsed and
    the color put back."""
    x, y, c, k = _vars("x y c k")
    inp = hl.ImageParam(hl.UInt(16), 3, "input")
    n_levels = hl.Param(hl.Int(32), "levels")
    alpha, beta = hl.Param(hl.Float(32), "alpha"), hl.Param(hl.Float(32), "beta")

    def downsample(f):
        dx, dy = hl.Func("downx"), hl.Func("downy")
        dx[x, y, hl._] = (f[2 * x - 1, y, hl._] + 3.0 * (f[2 * x, y, hl._] + f[2 * x + 1, y, hl._])
                          + f[2 * x + 2, y, hl._]) / 8.0
        dy[x, y, hl._] = (dx[x, 2 * y - 1, hl._] + 3.0 * (dx[x, 2 * y, hl._] + dx[x, 2 * y + 1, hl._])
                          + dx[x, 2 * y + 2, hl._]) / 8.0
        return dy

    def upsample(f):
        ux, uy = hl.Func("upx"), hl.Func("upy")
        ux[x, y, hl._] = hl.lerp(f[(x + 1) // 2, y, hl._], f[(x - 1) // 2, y, hl._], ((x % 2) * 2 + 1) / 4.0)
        uy[x, y, hl._] = hl.lerp(ux[x, (y + 1) // 2, hl._], ux[x, (y - 1) // 2, hl._], ((y % 2) * 2 + 1) / 4.0)
        return uy

    fx = hl.f32(x) / 256.0
    remap = hl.Func("remap")
    remap[x] = alpha * fx * hl.exp(-fx * fx / 2.0)
    edge = hl.BoundaryConditions.repeat_edge(inp)
    floating = hl.Func("floating")
    floating[x, y, c] = edge[x, y, c] / 65535.0
    gray = hl.Func("gray")
    gray[x, y] = hl.f32(0.299) * floating[x, y, 0] + hl.f32(0.587) * floating[x, y, 1] + \
        hl.f32(0.114) * floating[x, y, 2]

    names = lambda base: [hl.Func(f"{base}_{j}") for j in range(levels)]
    g_pyr, l_pyr, in_pyr, out_l, out_g = (names(b) for b in
                                           ("gPyramid", "lPyramid", "inGPyramid", "outLPyramid", "outGPyramid"))
    level = k * (1.0 / (n_levels - 1))
    idx = hl.clamp(hl.i32(gray[x, y] * hl.f32(n_levels - 1) * 256.0), 0, (n_levels - 1) * 256)
    g_pyr[0][x, y, k] = beta * (gray[x, y] - level) + level + remap[idx - 256 * k]
    for j in range(1, levels):
        g_pyr[j][x, y, k] = downsample(g_pyr[j - 1])[x, y, k]
    l_pyr[levels - 1][x, y, k] = g_pyr[levels - 1][x, y, k]
    for j in range(levels - 2, -1, -1):
        l_pyr[j][x, y, k] = g_pyr[j][x, y, k] - upsample(g_pyr[j + 1])[x, y, k]
    in_pyr[0][x, y] = gray[x, y]
    for j in range(1, levels):
        in_pyr[j][x, y] = downsample(in_pyr[j - 1])[x, y]
    for j in range(levels):
        lv = in_pyr[j][x, y] * hl.f32(n_levels - 1)
        li = hl.clamp(hl.i32(lv), 0, n_levels - 2)
        lf = lv - hl.f32(li)
        out_l[j][x, y] = (1.0 - lf) * l_pyr[j][x, y, li] + lf * l_pyr[j][x, y, li + 1]
    out_g[levels - 1][x, y] = out_l[levels - 1][x, y]
    for j in range(levels - 2, -1, -1):
        out_g[j][x, y] = upsample(out_g[j + 1])[x, y] + out_l[j][x, y]
    color = hl.Func("color")
    eps = hl.f32(0.01)
    color[x, y, c] = out_g[0][x, y] * (floating[x, y, c] + eps) / (gray[x, y] + eps)
    out = hl.Func("local_laplacian")
    out[x, y, c] = hl.u16(hl.clamp(color[x, y, c], 0.0, 1.0) * 65535.0)

    inp.set_estimates([(0, w), (0, h), (0, 3)])
    n_levels.set_estimate(8)
    alpha.set_estimate(1)
    beta.set_estimate(1)
    if schedule == "hand":
        yo = hl.Var("yo")
        remap.compute_root()
        out.reorder(c, x, y).split(y, yo, y, 64).parallel(yo).vectorize(x, VECTOR)
        gray.compute_root().parallel(y, 32).vectorize(x, VECTOR)
        for j in range(1, min(5, levels)):
            in_pyr[j].compute_root().parallel(y, 32).vectorize(x, VECTOR)
            g_pyr[j].compute_root().reorder_storage(x, k, y).reorder(k, y).parallel(y, 8).vectorize(x, VECTOR)
            out_g[j].store_at(out, yo).compute_at(out, y).fold_storage(y, 4).vectorize(x, VECTOR)
        out_g[0].compute_at(out, y).vectorize(x, VECTOR)
        for j in range(5, levels):
            in_pyr[j].compute_root()
            g_pyr[j].compute_root().parallel(k)
            out_g[j].compute_root()
    image = rng.integers(0, 1 << 16, (3, h, w), dtype=np.uint16)
    # (tol 1: exp and the long float chain differ from Halide's in the last bits, which the conversion
    # to 16 bits turns into a difference of 1 at a few pixels. ieee: `gray` truncated to a table index
    # makes the last bit of a float a step of the table, which the pyramid spreads to the neighbours:
    # Halide's own default and strict_float targets differ by up to 499 at 1551 of the 2.9 million
    # values at 1280x768 with 8 levels, so only IEEE arithmetic on both sides is compared)
    return dict(outputs=[out], images={inp: image}, params=[(n_levels, 8), (alpha, 1.0), (beta, 1.0)],
                sizes=[w, h, 3], tol=1, estimates=[[(0, w), (0, h), (0, 3)]], ieee=True)


APPS = {"blur": blur, "erode": erode, "spread": spread, "bilateral_grid": bilateral_grid,
        "interpolate": interpolate, "local_laplacian": local_laplacian}
AUTOSCHEDULERS = ("Adams2019", "Mullapudi2016")
_PLUGINS = {"Adams2019": "autoschedule_adams2019", "Mullapudi2016": "autoschedule_mullapudi2016"}
_loaded = set()


def autoschedule(spec, name):
    """Schedule the pipeline of `spec` (built with schedule="none") with Halide's autoscheduler
    `name`, as the apps' generators do; returns the Pipeline and the schedule as C++ source."""
    if name not in _loaded:
        lib = os.path.join(os.path.dirname(hl.__file__), "lib64", f"lib{_PLUGINS[name]}.so")
        hl.load_plugin(lib if os.path.exists(lib) else _PLUGINS[name])
        _loaded.add(name)
    for f, est in zip(spec["outputs"], spec["estimates"]):
        f.set_estimates(est)
    p = hl.Pipeline(spec["outputs"])
    result = p.apply_autoscheduler(hl.get_host_target(), hl.AutoschedulerParams(name))
    return p, result.schedule_source
