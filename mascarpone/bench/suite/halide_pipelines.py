"""The benchmarked Halide pipelines, each with the schedule both compilers run.

Each builder takes (width, height, rng, schedule=True) and returns a dict: `outputs` (Funcs),
`images` ({ImageParam: numpy array}), `sizes` (realize sizes), `tol` (float
tolerance or None for bit-exact). With schedule=False the Funcs keep Halide's default
schedule, for an autoscheduler to fill in.
"""
import halide as hl
import numpy as np

x, y, c, z = hl.Var("x"), hl.Var("y"), hl.Var("c"), hl.Var("z")
xo, yo, xi, yi = hl.Var("xo"), hl.Var("yo"), hl.Var("xi"), hl.Var("yi")


def cvt_color(w, h, rng, schedule=True):
    inp = hl.ImageParam(hl.UInt(8), 3, "rgb")
    gray = hl.Func("gray")
    v = lambda ch: hl.cast(hl.UInt(32), inp[x, y, ch])
    gray[x, y] = hl.cast(hl.UInt(8), (v(2) * 1868 + v(1) * 9617 + v(0) * 4899 + 8192) / 16384)
    if schedule:
        gray.parallel(y, 16).vectorize(x, 16)
    return dict(outputs=[gray], images={inp: rng.integers(0, 256, (3, h, w), dtype=np.uint8)}, sizes=[w, h])


def conv3x3(w, h, rng, schedule=True):
    inp = hl.ImageParam(hl.Float(32), 2, "inp")
    ker = hl.ImageParam(hl.Float(32), 2, "ker")
    r = hl.RDom([(0, 3), (0, 3)], "r")
    conv = hl.Func("conv")
    conv[x, y] = hl.f32(0)
    conv[x, y] += inp[x + r.x, y + r.y] * ker[r.x, r.y]
    if schedule:
        conv.parallel(y, 8).vectorize(x, 8)
        conv.update(0).reorder(r.x, r.y, x, y).vectorize(x, 8).parallel(y, 8)
    return dict(outputs=[conv], images={inp: rng.random((h + 2, w + 2), dtype=np.float32),
                                        ker: rng.random((3, 3), dtype=np.float32)}, sizes=[w, h], tol=1e-5)


def gaussian(w, h, rng, schedule=True):
    inp = hl.ImageParam(hl.Float(32), 2, "inp")
    wts = [hl.f32(v) for v in (0.0625, 0.25, 0.375, 0.25, 0.0625)]
    gx, gy = hl.Func("gx"), hl.Func("gy")
    gx[x, y] = sum(wts[i] * inp[x + i, y] for i in range(5))
    gy[x, y] = sum(wts[i] * gx[x, y + i] for i in range(5))
    if schedule:
        gy.tile(x, y, xi, yi, 256, 32).parallel(y).vectorize(xi, 8)
        gx.compute_at(gy, x).vectorize(x, 8)
    return dict(outputs=[gy], images={inp: rng.random((h + 4, w + 4), dtype=np.float32)}, sizes=[w, h], tol=1e-5)


def warp_affine(w, h, rng, schedule=True):
    inp = hl.ImageParam(hl.Float(32), 2, "inp")
    a00, a01, a02, a10, a11, a12 = (hl.f32(v) for v in (0.9, 0.1, 1.3, -0.05, 1.1, 0.7))
    xf = a00 * hl.f32(x) + a01 * hl.f32(y) + a02
    yf = a10 * hl.f32(x) + a11 * hl.f32(y) + a12
    ix, iy = hl.cast(hl.Int(32), hl.floor(xf)), hl.cast(hl.Int(32), hl.floor(yf))
    fx, fy = xf - hl.floor(xf), yf - hl.floor(yf)
    cx0, cy0 = hl.clamp(ix, 0, inp.width() - 1), hl.clamp(iy, 0, inp.height() - 1)
    cx1, cy1 = hl.clamp(ix + 1, 0, inp.width() - 1), hl.clamp(iy + 1, 0, inp.height() - 1)
    warp = hl.Func("warp")
    warp[x, y] = hl.lerp(hl.lerp(inp[cx0, cy0], inp[cx1, cy0], fx), hl.lerp(inp[cx0, cy1], inp[cx1, cy1], fx), fy)
    if schedule:
        warp.parallel(y, 8).vectorize(x, 8)
    # floor() of coordinates that FMA contraction moves across an integer picks a neighbouring pixel
    return dict(outputs=[warp], images={inp: rng.random((h, w), dtype=np.float32)}, sizes=[w, h], tol=1e-3)


def heat2d(w, h, rng, schedule=True):
    inp = hl.ImageParam(hl.Float(32), 2, "inp")
    heat = hl.Func("heat")
    r = hl.RDom([(1, inp.width() - 2), (1, inp.height() - 2)], "r")
    heat[x, y] = inp[x, y]
    heat[r.x, r.y] = hl.f32(0.3) * inp[r.x, r.y] + hl.f32(0.4) * (
        inp[r.x + 1, r.y] + inp[r.x - 1, r.y] + inp[r.x, r.y + 1] + inp[r.x, r.y - 1])
    if schedule:
        heat.parallel(y, 8).vectorize(x, 8)
        heat.update(0).parallel(r.y, 8).vectorize(r.x, 8)
    return dict(outputs=[heat], images={inp: rng.random((h, w), dtype=np.float32)}, sizes=[w, h], tol=1e-5)


def rgbyuv420(w, h, rng, schedule=True):
    rgb = hl.ImageParam(hl.UInt(8), 3, "rgb")
    v = lambda xx, yy, ch: hl.cast(hl.Int(32), rgb[xx, yy, ch])
    y_part, u_part, v_part = hl.Func("y_part"), hl.Func("u_part"), hl.Func("v_part")
    y_part[x, y] = hl.cast(hl.UInt(8), ((66 * v(x, y, 0) + 129 * v(x, y, 1) + 25 * v(x, y, 2) + 128) / 256) + 16)
    u_part[x, y] = hl.cast(hl.UInt(8), ((-38 * v(2 * x, 2 * y, 0) - 74 * v(2 * x, 2 * y, 1)
                                         + 112 * v(2 * x, 2 * y, 2) + 128) / 256) + 128)
    v_part[x, y] = hl.cast(hl.UInt(8), ((112 * v(2 * x, 2 * y, 0) - 94 * v(2 * x, 2 * y, 1)
                                         - 18 * v(2 * x, 2 * y, 2) + 128) / 256) + 128)
    for fn in (y_part, u_part, v_part) if schedule else ():
        fn.parallel(y, 8).vectorize(x, 16)
    return dict(outputs=[y_part, u_part, v_part], images={rgb: rng.integers(0, 256, (3, h, w), dtype=np.uint8)},
                sizes=[[w, h], [w // 2, h // 2], [w // 2, h // 2]])


def nb_pipeline(schedule):
    inp = hl.ImageParam(hl.UInt(8), 2, "img")
    f, g, hh, k = hl.Func("f"), hl.Func("g"), hl.Func("h"), hl.Func("k")
    f[x, y] = 255 - inp[x, y]
    g[x, y] = 2 * inp[x, y]
    hh[x, y] = f[x, y] + g[x, y]
    k[x, y] = f[x, y] - g[x, y]
    if schedule == "root":
        for fn in (f, g):
            fn.compute_root().split(y, yo, yi, 8).parallel(yo).vectorize(x, 32)
    if schedule == "stages":   # every stage its own loop nest, left for mascarpone to schedule
        f.compute_root()
        g.compute_root()
        return inp, [hh, k]
    if schedule != "plain":
        for fn in (hh, k):
            fn.split(y, yo, yi, 8).parallel(yo).vectorize(x, 32)
    if schedule == "compute_with":
        hh.compute_with(k, yi)
    return inp, [hh, k]


def nb(w, h, rng, schedule=True):
    inp, outs = nb_pipeline("root" if schedule else "plain")
    return dict(outputs=outs, images={inp: rng.integers(0, 256, (h, w), dtype=np.uint8)}, sizes=[w, h])


def blur_repeat_edge(w, h, rng, schedule=True):
    inp = hl.ImageParam(hl.UInt(16), 2, "inp")
    clamped = hl.BoundaryConditions.repeat_edge(inp)
    bx, by = hl.Func("blur_x"), hl.Func("blur_y")
    bx[x, y] = (clamped[x - 1, y] + clamped[x, y] + clamped[x + 1, y]) / 3
    by[x, y] = (bx[x, y - 1] + bx[x, y] + bx[x, y + 1]) / 3
    if schedule:
        by.tile(x, y, xi, yi, 256, 32).parallel(y).vectorize(xi, 16)
        bx.compute_at(by, x).vectorize(x, 16)
    return dict(outputs=[by], images={inp: rng.integers(0, 60000, (h, w), dtype=np.uint16)}, sizes=[w, h])


def histogram(w, h, rng, schedule=True):
    inp = hl.ImageParam(hl.UInt(8), 2, "inp")
    hist = hl.Func("hist")
    r = hl.RDom([(0, inp.width()), (0, inp.height())], "r")
    hist[x] = hl.u32(0)
    hist[hl.cast(hl.Int(32), inp[r.x, r.y])] += hl.u32(1)
    return dict(outputs=[hist], images={inp: rng.integers(0, 256, (h, w), dtype=np.uint8)}, sizes=[256])


def iir(w, h, rng, schedule=True):
    inp = hl.ImageParam(hl.Float(32), 2, "inp")
    out = hl.Func("iir")
    r = hl.RDom([(1, inp.height() - 1)], "r")
    out[x, y] = inp[x, y]
    out[x, r] = hl.f32(0.7) * out[x, r - 1] + hl.f32(0.3) * inp[x, r]
    if schedule:
        out.parallel(y, 8).vectorize(x, 8)
        out.update(0).split(x, xo, xi, 64).parallel(xo).vectorize(xi, 8)
    return dict(outputs=[out], images={inp: rng.random((h, w), dtype=np.float32)}, sizes=[w, h], tol=1e-5)


def bilateral_grid(w, h, rng, schedule=True):
    inp = hl.ImageParam(hl.Float(32), 2, "inp")
    s_sigma, r_sigma = 8, hl.f32(0.1)
    clamped = hl.BoundaryConditions.repeat_edge(inp)
    r = hl.RDom([(0, s_sigma), (0, s_sigma)], "r")
    val = hl.clamp(clamped[x * s_sigma + r.x - s_sigma // 2, y * s_sigma + r.y - s_sigma // 2], hl.f32(0), hl.f32(1))
    zi = hl.clamp(hl.cast(hl.Int(32), val * (1 / r_sigma) + hl.f32(0.5)), 0, 10)
    grid = hl.Func("grid")
    grid[x, y, z, c] = hl.f32(0)
    grid[x, y, zi, c] += hl.select(c == 0, val, hl.f32(1))
    blurz, blurx, blury = hl.Func("blurz"), hl.Func("blurx"), hl.Func("blury")
    blurz[x, y, z, c] = grid[x, y, z - 1, c] + 2 * grid[x, y, z, c] + grid[x, y, z + 1, c]
    blurx[x, y, z, c] = blurz[x - 1, y, z, c] + 2 * blurz[x, y, z, c] + blurz[x + 1, y, z, c]
    blury[x, y, z, c] = blurx[x, y - 1, z, c] + 2 * blurx[x, y, z, c] + blurx[x, y + 1, z, c]
    zv = hl.clamp(inp[x, y], hl.f32(0), hl.f32(1)) * (1 / r_sigma)
    zk = hl.clamp(hl.cast(hl.Int(32), zv), 0, 9)
    zf = zv - hl.f32(zk)
    xf, yf = hl.f32(x % s_sigma) / s_sigma, hl.f32(y % s_sigma) / s_sigma
    xk, yk = x / s_sigma, y / s_sigma
    interp = hl.Func("interp")
    interp[x, y, c] = hl.lerp(hl.lerp(hl.lerp(blury[xk, yk, zk, c], blury[xk + 1, yk, zk, c], xf),
                                      hl.lerp(blury[xk, yk + 1, zk, c], blury[xk + 1, yk + 1, zk, c], xf), yf),
                              hl.lerp(hl.lerp(blury[xk, yk, zk + 1, c], blury[xk + 1, yk, zk + 1, c], xf),
                                      hl.lerp(blury[xk, yk + 1, zk + 1, c], blury[xk + 1, yk + 1, zk + 1, c], xf),
                                      yf), zf)
    out = hl.Func("bilateral")
    out[x, y] = interp[x, y, 0] / hl.max(interp[x, y, 1], hl.f32(1e-6))
    if schedule:
        grid.compute_root().parallel(y)
        grid.update(0).parallel(y)
        for f in (blurz, blurx, blury):
            f.compute_root().parallel(y).vectorize(x, 8)
        out.parallel(y, 8).vectorize(x, 8)
    return dict(outputs=[out], images={inp: rng.random((h, w), dtype=np.float32)}, sizes=[w, h], tol=1e-3)


def pyramid(w, h, rng, schedule=True):
    inp = hl.ImageParam(hl.Float(32), 2, "inp")
    clamped = hl.BoundaryConditions.repeat_edge(inp)

    def down(f, name):
        dx, d = hl.Func(name + "_x"), hl.Func(name)
        dx[x, y] = (f[2 * x - 1, y] + 3 * f[2 * x, y] + 3 * f[2 * x + 1, y] + f[2 * x + 2, y]) / 8
        d[x, y] = (dx[x, 2 * y - 1] + 3 * dx[x, 2 * y] + 3 * dx[x, 2 * y + 1] + dx[x, 2 * y + 2]) / 8
        return dx, d

    def up(f, name):
        ux, u = hl.Func(name + "_x"), hl.Func(name)
        ux[x, y] = (f[x / 2 + (x % 2) * 2 - 1, y] + 3 * f[x / 2, y]) / 4
        u[x, y] = (ux[x, y / 2 + (y % 2) * 2 - 1] + 3 * ux[x, y / 2]) / 4
        return ux, u

    d1x, d1 = down(clamped, "d1")
    d2x, d2 = down(d1, "d2")
    u1x, u1 = up(d2, "u1")
    out = hl.Func("pyr")
    out[x, y] = clamped[x, y] - u1[x, y]
    if schedule:
        for f in (d1, d2):
            f.compute_root().parallel(y, 8).vectorize(x, 8)
        d1x.compute_at(d1, y).vectorize(x, 8)
        d2x.compute_at(d2, y).vectorize(x, 8)
        u1.compute_root().parallel(y, 8).vectorize(x, 8)
        out.parallel(y, 8).vectorize(x, 8)
    return dict(outputs=[out], images={inp: rng.random((h, w), dtype=np.float32)}, sizes=[w, h], tol=1e-5)


def tuple_func(w, h, rng, schedule=True):
    inp = hl.ImageParam(hl.UInt(8), 2, "inp")
    pair, out = hl.Func("pair"), hl.Func("out")
    pair[x, y] = hl.Tuple([hl.cast(hl.Int(32), inp[x, y]) * 3, hl.f32(inp[x, y]) * hl.f32(0.5)])
    out[x, y] = hl.f32(pair[x, y][0]) + pair[x, y][1]
    if schedule:
        pair.compute_root().parallel(y, 8).vectorize(x, 8)
        out.parallel(y, 8).vectorize(x, 8)
    return dict(outputs=[out], images={inp: rng.integers(0, 256, (h, w), dtype=np.uint8)}, sizes=[w, h], tol=1e-6)


def blur_valid(w, h, rng, schedule=True):
    """The two-stage 3x3 box blur of float images over the valid region (no boundary condition),
    Halide's classic schedule: 256x32 tiles, 8 lanes, rows of tiles over the threads, blur_x per tile."""
    inp = hl.ImageParam(hl.Float(32), 2, "inp")
    blur_x, blur_y = hl.Func("blur_x"), hl.Func("blur_y")
    blur_x[x, y] = (inp[x, y] + inp[x + 1, y] + inp[x + 2, y]) / 3
    blur_y[x, y] = (blur_x[x, y] + blur_x[x, y + 1] + blur_x[x, y + 2]) / 3
    if schedule:
        blur_y.tile(x, y, xi, yi, 256, 32).vectorize(xi, 8).parallel(y)
        blur_x.compute_at(blur_y, x).vectorize(x, 8)
    return dict(outputs=[blur_y], images={inp: rng.random((h + 2, w + 2), dtype=np.float32)}, sizes=[w, h],
                tol=1e-6)


def nb_spec(w, h, rng, schedule="root"):
    """nb with one of the schedules of nb_pipeline, as a builder's spec."""
    inp, outs = nb_pipeline(schedule)
    return dict(outputs=outs, images={inp: rng.integers(0, 256, (h, w), dtype=np.uint8)}, sizes=[w, h])


def triangular(n, rng, schedule=True):
    """y = L x for a lower-triangular L (Halide ticket #2373's triangular domain): an RDom over the
    square with `where(i >= j)`; L is column-major as Julia's arrays are (Halide's dimension 0 is i).
    j outer, i inner in 8 lanes."""
    L = hl.ImageParam(hl.Float(64), 2, "L")
    xv = hl.ImageParam(hl.Float(64), 1, "x")
    i = hl.Var("i")
    yv = hl.Func("y")
    r = hl.RDom([(0, L.width()), (0, L.height())], "r")     # r.x is i, r.y is j
    r.where(r.x >= r.y)
    yv[i] = hl.f64(0)
    yv[r.x] += L[r.x, r.y] * xv[r.y]
    if schedule:
        yv.vectorize(i, 8)
        yv.update(0).vectorize(r.x, 8)
    column_major = np.asfortranarray(rng.random((n, n)))
    return dict(outputs=[yv], images={L: column_major.T, xv: rng.random(n)}, sizes=[n], tol=1e-9)


HEAT3D_ALPHA, HEAT3D_BETA = 0.125, 2.0


def heat3d(nx, ny, nz, steps, rng, schedule=True):
    """`steps` steps of a 7-point heat stencil on a 3-D grid with fixed borders, as Tiramisu's Halide
    reference writes it: a Func over (x, y, z, t) whose pure definition is the input at every t and
    whose update over an RDom with t outermost computes step t from step t - 1. Halide stores every
    step: the pure definition fills each t, so the time dimension cannot be folded to two grids
    (Halide accepts fold_storage(t, 2) here only because every t starts equal). The update's planes
    over the threads, 8 lanes."""
    inp = hl.ImageParam(hl.Float(32), 3, "inp")
    heat, out = hl.Func("heat"), hl.Func("heat3d")
    t = hl.Var("t")
    r = hl.RDom([(1, inp.width() - 2), (1, inp.height() - 2), (1, inp.dim(2).extent() - 2), (1, steps)], "r")
    heat[x, y, z, t] = inp[x, y, z]
    a, b = hl.f32(HEAT3D_ALPHA), hl.f32(HEAT3D_BETA)

    def u(dz, dy, dx):
        return heat[r.x + dx, r.y + dy, r.z + dz, r[3] - 1]
    heat[r.x, r.y, r.z, r[3]] = u(0, 0, 0) + a * (u(-1, 0, 0) - b * u(0, 0, 0) + u(1, 0, 0)
                                                  + u(0, -1, 0) - b * u(0, 0, 0) + u(0, 1, 0)
                                                  + u(0, 0, -1) - b * u(0, 0, 0) + u(0, 0, 1))
    out[x, y, z] = heat[x, y, z, steps]
    if schedule:
        heat.compute_root().parallel(z).vectorize(x, 8)
        heat.update(0).allow_race_conditions().parallel(r.z).vectorize(r.x, 8)   # steps read the one before
        out.parallel(z).vectorize(x, 8)
    image = rng.random((nz, ny, nx), dtype=np.float32)
    return dict(outputs=[out], images={inp: image}, sizes=[nx, ny, nz], tol=1e-5)
