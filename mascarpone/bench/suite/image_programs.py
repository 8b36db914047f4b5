"""The image benchmarks of the Tiramisu papers written with mascarpone's own language, each with the
schedule of its Halide version (halide_pipelines.py) expressed with mascarpone's commands.

Arrays follow numpy's (and hl.Buffer's) order: an image of width W and height H is [H, W] (x last),
a colour image [3, H, W]. Each builder returns the scheduled ms.Function.
"""
from __future__ import annotations

import mascarpone as ms


def _sizes(*names):
    return [ms.Param(n) for n in names]


def cvt_color():
    """gray = (4899 R + 9617 G + 1868 B + 8192) / 16384 in 32-bit unsigned arithmetic; rows in blocks of
    16 over the threads, 16 lanes (Halide: gray.parallel(y, 16).vectorize(x, 16))."""
    H, W = _sizes("H", "W")
    y, x = ms.Var("y", 0, H), ms.Var("x", 0, W)
    with ms.Function("cvtColor") as f:
        rgb = ms.Input("rgb", [3, H, W], ms.uint8)
        v = [ms.u32(rgb[c, y, x]) for c in range(3)]
        gray = ms.Computation("gray", [y, x], ms.u8((v[2] * ms.u32(1868) + v[1] * ms.u32(9617) + v[0] * ms.u32(4899)
                                                     + ms.u32(8192)) / ms.u32(16384)))
    y0, _ = gray.split("y", 16)
    gray.parallelize(y0)
    gray.vectorize("x", 16)
    return f


def conv2d():
    """A 3x3 convolution as a reduction (rows of the kernel outer, columns inner, as Halide's
    update.reorder(r.x, r.y, x, y)); rows in blocks of 8 over the threads, 8 lanes of x with the
    reduction loops outside the lanes."""
    H, W = _sizes("H", "W")
    y, x = ms.Var("y", 0, H), ms.Var("x", 0, W)
    ry, rx = ms.Var("ry", 0, 3), ms.Var("rx", 0, 3)
    with ms.Function("conv2D") as f:
        inp = ms.Input("inp", [H + 2, W + 2], ms.float32)
        ker = ms.Input("ker", [3, 3], ms.float32)
        conv = ms.Computation("conv", [y, x], ms.f32(0))
        acc = conv.update([y, x, ry, rx], conv[y, x] + inp[y + ry, x + rx] * ker[ry, rx])
    for c in (conv, acc):
        y0, _ = c.split("y", 8)
        c.parallelize(y0)
        c.vectorize("x", 8)
    acc.reorder("ry", "rx", "x1")
    return f


def gaussian():
    """A separable 5-tap Gaussian: gx over rows then gy over columns; 256x32 tiles of gy, rows of tiles
    over the threads, gx computed per tile (Halide: gy.tile(...).parallel(y).vectorize(xi, 8),
    gx.compute_at(gy, x).vectorize(x, 8))."""
    H, W = _sizes("H", "W")
    y, x, yb = ms.Var("y", 0, H), ms.Var("x", 0, W), ms.Var("y", 0, H + 4)
    w = [ms.f32(v) for v in (0.0625, 0.25, 0.375, 0.25, 0.0625)]
    with ms.Function("gaussian") as f:
        inp = ms.Input("inp", [H + 4, W + 4], ms.float32)
        gx = ms.Computation("gx", [yb, x], _sum(w[i] * inp[yb, x + i] for i in range(5)))
        gy = ms.Computation("gy", [y, x], _sum(w[i] * gx[y + i, x] for i in range(5)))
    y0, x0, _, x1 = gy.tile("y", "x", 32, 256)
    gy.vectorize(x1, 8)
    gy.parallelize(y0)
    gx.compute_at(gy, x0)
    gx.vectorize("x", 8)
    return f


def _sum(terms):
    terms = list(terms)
    total = terms[0]
    for t in terms[1:]:
        total = total + t
    return total


def _lerp(a, b, w):
    """Halide's lerp of floats: a * (1 - w) + b * w."""
    return a * (ms.f32(1.0) - w) + b * w


def warp_affine():
    """Bilinear resampling at an affine map of (x, y), coordinates clamped to the image; rows in blocks
    of 8 over the threads, 8 lanes (the four reads are gathers)."""
    H, W = _sizes("H", "W")
    y, x = ms.Var("y", 0, H), ms.Var("x", 0, W)
    a00, a01, a02, a10, a11, a12 = (ms.f32(v) for v in (0.9, 0.1, 1.3, -0.05, 1.1, 0.7))
    with ms.Function("warpAffine") as f:
        inp = ms.Input("inp", [H, W], ms.float32)
        xf = a00 * ms.f32(x) + a01 * ms.f32(y) + a02
        yf = a10 * ms.f32(x) + a11 * ms.f32(y) + a12
        ix, iy = ms.i32(ms.floor(xf)), ms.i32(ms.floor(yf))
        fx, fy = xf - ms.floor(xf), yf - ms.floor(yf)
        cx0, cy0 = ms.clamp(ix, 0, ms.i32(W) - 1), ms.clamp(iy, 0, ms.i32(H) - 1)
        cx1, cy1 = ms.clamp(ix + 1, 0, ms.i32(W) - 1), ms.clamp(iy + 1, 0, ms.i32(H) - 1)
        warp = ms.Computation("warp", [y, x], _lerp(_lerp(inp[cy0, cx0], inp[cy0, cx1], fx),
                                                    _lerp(inp[cy1, cx0], inp[cy1, cx1], fx), fy))
    y0, _ = warp.split("y", 8)
    warp.parallelize(y0)
    warp.vectorize("x", 8)
    return f


def heat2d():
    """One step of a 2-D heat stencil: the borders copied, the interior 0.3 u + 0.4 (sum of the 4
    neighbours); each stage with rows in blocks of 8 over the threads and 8 lanes."""
    H, W = _sizes("H", "W")
    y, x = ms.Var("y", 0, H), ms.Var("x", 0, W)
    yi, xi = ms.Var("y", 1, H - 1), ms.Var("x", 1, W - 1)
    with ms.Function("heat2D") as f:
        inp = ms.Input("inp", [H, W], ms.float32)
        heat = ms.Computation("heat", [y, x], inp[y, x])
        step = heat.update([yi, xi], ms.f32(0.3) * inp[yi, xi] + ms.f32(0.4) * (
            inp[yi, xi + 1] + inp[yi, xi - 1] + inp[yi + 1, xi] + inp[yi - 1, xi]))
    for c in (heat, step):
        y0, _ = c.split("y", 8)
        c.parallelize(y0)
        c.vectorize("x", 8)
    return f


def nb_fused():
    """nb: f = 255 - in, g = 2 in, h = f + g, k = f - g (8-bit, wrapping); f and g inlined, h and k
    fused into one loop nest down to the vector loop (`after`), rows over the threads, 32 lanes: each
    pixel is read once for both outputs."""
    H, W = _sizes("H", "W")
    y, x = ms.Var("y", 0, H), ms.Var("x", 0, W)
    with ms.Function("nb") as f:
        img = ms.Input("img", [H, W], ms.uint8)
        fc = ms.Computation("f", [y, x], ms.u8(255) - img[y, x])
        gc = ms.Computation("g", [y, x], ms.u8(2) * img[y, x])
        hc = ms.Computation("h", [y, x], fc[y, x] + gc[y, x])
        kc = ms.Computation("k", [y, x], fc[y, x] - gc[y, x])
    fc.inline()
    gc.inline()
    for c in (hc, kc):
        c.parallelize("y")
        c.vectorize("x", 32)
    kc.after(hc, hc.loops[-1])
    return f


def edge_detector():
    """Tiramisu's edge detector: a ring blur R (the 3x3 neighbourhood without its centre, / 8) of each
    channel, then Roberts' cross of R written back into the image it was computed from (a cycle in the
    data flow: image -> R -> image). In place: `out` is the image, its values passed in kept outside
    the edges' region. R is computed whole first; both stages' rows of channels over the threads,
    8 lanes."""
    H, W = _sizes("H", "W")
    c, y, x = ms.Var("c", 0, 3), ms.Var("y", 0, H), ms.Var("x", 0, W)
    yr, xr = ms.Var("y", 0, H - 2), ms.Var("x", 0, W - 2)
    ye, xe = ms.Var("y", 0, H - 3), ms.Var("x", 0, W - 3)
    with ms.Function("edgeDetector") as f:
        img = ms.Input("img", [3, H, W], ms.float32)
        ring = [(0, 0), (0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1), (2, 2)]
        R = ms.Computation("R", [c, yr, xr], _sum(img[c, yr + dy, xr + dx] for dy, dx in ring) / ms.f32(8))
        out = ms.Computation("out", [c, y, x], img[c, y, x])
        edges = out.update([c, ye, xe], (R[c, ye, xe] - R[c, ye + 1, xe + 1]) + (R[c, ye, xe + 1] - R[c, ye + 1, xe]))
    for s in (R, out, edges):
        s.parallelize("y")
        s.vectorize("x", 8)
    edges.after(out, ms.root)
    return f


#: heat3D's constants, as Tiramisu's benchmark names them
ALPHA, BETA = 0.125, 2.0


def heat3d():
    """T steps of a 7-point heat stencil on a 3-D grid (borders fixed), the time loop outermost and two
    grids of storage (`storage_fold(t, 2)`): step t reads the grid of step t - 1. Each step writes its
    whole grid: the border copied from the step before, then the stencil inside (a step that wrote only
    the inside would leave the border of its grid undefined; the fold would then read what two steps
    earlier wrote there, which the layout check refuses). Planes over the threads, 8 lanes."""
    Z, Y, X, T = _sizes("Z", "Y", "X", "T")
    t0, z, y, x = ms.Var("t", 0, 1), ms.Var("z", 0, Z), ms.Var("y", 0, Y), ms.Var("x", 0, X)
    t1, z1, y1, x1 = ms.Var("t", 1, T + 1), ms.Var("z", 1, Z - 1), ms.Var("y", 1, Y - 1), ms.Var("x", 1, X - 1)
    a, b = ms.f32(ALPHA), ms.f32(BETA)
    border = (z < 1) | (z >= Z - 1) | (y < 1) | (y >= Y - 1) | (x < 1) | (x >= X - 1)
    with ms.Function("heat3D") as f:
        inp = ms.Input("inp", [Z, Y, X], ms.float32)
        h = ms.Computation("h", [t0, z, y, x], inp[z, y, x])

        def u(dz, dy, dx):
            return h[t1 - 1, z1 + dz, y1 + dy, x1 + dx]
        keep = h.update([t1, z, y, x], h[t1 - 1, z, y, x], where=border)
        step = h.update([t1, z1, y1, x1], u(0, 0, 0) + a * (u(-1, 0, 0) - b * u(0, 0, 0) + u(1, 0, 0)
                                                           + u(0, -1, 0) - b * u(0, 0, 0) + u(0, 1, 0)
                                                           + u(0, 0, -1) - b * u(0, 0, 0) + u(0, 0, 1)))
    h.storage_fold("t", 2)
    step.after(keep, "t")
    for s in (h, keep, step):
        s.parallelize("z")
        s.vectorize("x", 8)
    return f


def triangular():
    """y = L x for lower-triangular L (the triangular domain j <= i of Halide ticket #2373), L stored
    column-major as Julia's arrays are (the numpy array is L's transpose, Lt[j, i] = L[i, j]); j outer,
    i inner in 8 lanes, so each lane reads its own column of L contiguously."""
    N = ms.Param("N")
    i, j = ms.Var("i", 0, N), ms.Var("j", 0, N)
    with ms.Function("triangular") as f:
        Lt = ms.Input("Lt", [N, N], ms.float64)
        xv = ms.Input("x", [N], ms.float64)
        yv = ms.Computation("y", [i], ms.f64(0))
        acc = yv.update([j, i], yv[i] + Lt[j, i] * xv[j], where=(j <= i))
    yv.vectorize("i", 8)
    acc.vectorize("i", 8)
    return f
