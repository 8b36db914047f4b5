"""Programs distributed over MPI ranks (the tests' and benchmarks/mpi.py's): the image set of the
Tiramisu papers' distributed experiments and two loop nests, each with a distributed schedule.

Each builder returns a `Program`: the scheduled `ms.Function`, a function making its inputs for an
image of `height` x `width`, and a numpy reference. Images are distributed by rows (dimension 0);
small weights and matrices every rank needs are replicated.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import mascarpone as ms


@dataclass
class Program:
    name: str
    function: ms.Function
    inputs: object        # (height, width, rng) -> {name: array or size}
    reference: object     # (inputs) -> output array, or a tuple of them
    tol: float = 1e-5     # relative tolerance against numpy (float programs)
    communicates: bool = True


def _clamp(e, lo, hi):
    return ms.clamp(e, lo, hi)


def blur():
    """3x3 box blur in two stages with clamped edges (repeat the border): each rank needs one row of
    the first stage above and below its block."""
    H, W = ms.Param("H"), ms.Param("W")
    y, x = ms.Var("y", 0, H), ms.Var("x", 0, W)
    with ms.Function("blur") as f:
        img = ms.Input("img", [H, W], ms.float32)
        bx = ms.Computation("bx", [y, x], (img[y, _clamp(x - 1, 0, W - 1)] + img[y, x]
                                           + img[y, _clamp(x + 1, 0, W - 1)]) / 3)
        by = ms.Computation("by", [y, x], (bx[_clamp(y - 1, 0, H - 1), x] + bx[y, x]
                                           + bx[_clamp(y + 1, 0, H - 1), x]) / 3)
    img.distribute(dim=0)
    bx.distribute(y)
    by.distribute(y)
    by.vectorize(x, 8)

    def inputs(h, w, rng):
        return {"img": rng.random((h, w), dtype=np.float32)}

    def reference(a):
        p = np.pad(a["img"], 1, mode="edge")
        b = (p[:, :-2] + p[:, 1:-1] + p[:, 2:]) / np.float32(3)
        return (b[:-2] + b[1:-1] + b[2:]) / np.float32(3)
    return Program("blur", f, inputs, reference)


def conv2d():
    """3x3 convolution of an image with a kernel every rank holds: two input rows of halo."""
    H, W = ms.Param("H"), ms.Param("W")
    y, x = ms.Var("y", 0, H), ms.Var("x", 0, W)
    with ms.Function("conv2d") as f:
        img = ms.Input("img", [H + 2, W + 2], ms.float32)
        k = ms.Input("k", [3, 3], ms.float32)
        terms = [img[y + j, x + i] * k[j, i] for j in range(3) for i in range(3)]
        total = terms[0]
        for t in terms[1:]:
            total = total + t
        out = ms.Computation("conv", [y, x], total)
    img.distribute(dim=0)
    out.distribute(y)
    out.vectorize(x, 8)

    def inputs(h, w, rng):
        return {"img": rng.random((h + 2, w + 2), dtype=np.float32), "k": rng.random((3, 3), dtype=np.float32)}

    def reference(a):
        img, k = a["img"], a["k"]
        h, w = img.shape[0] - 2, img.shape[1] - 2
        return sum(img[j:j + h, i:i + w] * k[j, i] for j in range(3) for i in range(3))
    return Program("conv2d", f, inputs, reference)


def gaussian():
    """Separable 5x5 gaussian, Tiramisu style: the rows split in chunks of 8 whose outer loop is
    distributed, the horizontal pass computed per chunk (compute_at): four input rows of halo."""
    H, W = ms.Param("H"), ms.Param("W")
    y, x = ms.Var("y", 0, H), ms.Var("x", 0, W)
    yb = ms.Var("y", 0, H + 4)
    wts = [0.0625, 0.25, 0.375, 0.25, 0.0625]
    with ms.Function("gaussian") as f:
        img = ms.Input("img", [H + 4, W + 4], ms.float32)
        gx = ms.Computation("gx", [yb, x], sum((ms.f32(wts[i]) * img[yb, x + i] for i in range(1, 5)),
                                               ms.f32(wts[0]) * img[yb, x]))
        gy = ms.Computation("gy", [y, x], sum((ms.f32(wts[j]) * gx[y + j, x] for j in range(1, 5)),
                                              ms.f32(wts[0]) * gx[y, x]))
    img.distribute(dim=0)
    y0, y1 = gy.split(y, 8)
    gy.distribute(y0)
    gy.vectorize(x, 8)
    gx.compute_at(gy, y0)

    def inputs(h, w, rng):
        return {"img": rng.random((h + 4, w + 4), dtype=np.float32)}

    def reference(a):
        img = a["img"]
        h, w = img.shape[0] - 4, img.shape[1] - 4
        g = sum(np.float32(wts[i]) * img[:, i:i + w] for i in range(5))
        return sum(np.float32(wts[j]) * g[j:j + h] for j in range(5))
    return Program("gaussian", f, inputs, reference)


def warp_affine():
    """Affine warp with bilinear interpolation and clamped coordinates: the rows a pixel reads are
    computed in floating point, so no affine relation bounds them and each rank needs the whole image."""
    H, W = ms.Param("H"), ms.Param("W")
    y, x = ms.Var("y", 0, H), ms.Var("x", 0, W)
    a00, a01, a02, a10, a11, a12 = (ms.f32(v) for v in (0.9, 0.1, 1.3, -0.05, 1.1, 0.7))
    with ms.Function("warp") as f:
        img = ms.Input("img", [H, W], ms.float32)
        xf = a00 * ms.f32(x) + a01 * ms.f32(y) + a02
        yf = a10 * ms.f32(x) + a11 * ms.f32(y) + a12
        ix, iy = ms.i32(ms.floor(xf)), ms.i32(ms.floor(yf))
        fx, fy = xf - ms.floor(xf), yf - ms.floor(yf)
        cx0, cy0 = ms.clamp(ix, 0, W - 1), ms.clamp(iy, 0, H - 1)
        cx1, cy1 = ms.clamp(ix + 1, 0, W - 1), ms.clamp(iy + 1, 0, H - 1)
        top = img[cy0, cx0] * (ms.f32(1) - fx) + img[cy0, cx1] * fx
        bottom = img[cy1, cx0] * (ms.f32(1) - fx) + img[cy1, cx1] * fx
        warp = ms.Computation("warp", [y, x], top * (ms.f32(1) - fy) + bottom * fy)
    img.distribute(dim=0)
    warp.distribute(y)

    def inputs(h, w, rng):
        return {"img": rng.random((h, w), dtype=np.float32)}

    def reference(a):
        img = a["img"]
        h, w = img.shape
        yy, xx = np.meshgrid(np.arange(h, dtype=np.float32), np.arange(w, dtype=np.float32), indexing="ij")
        xf = np.float32(0.9) * xx + np.float32(0.1) * yy + np.float32(1.3)
        yf = np.float32(-0.05) * xx + np.float32(1.1) * yy + np.float32(0.7)
        ix, iy = np.floor(xf).astype(np.int32), np.floor(yf).astype(np.int32)
        fx, fy = xf - np.floor(xf), yf - np.floor(yf)
        cx0, cy0 = np.clip(ix, 0, w - 1), np.clip(iy, 0, h - 1)
        cx1, cy1 = np.clip(ix + 1, 0, w - 1), np.clip(iy + 1, 0, h - 1)
        top = img[cy0, cx0] * (1 - fx) + img[cy0, cx1] * fx
        bottom = img[cy1, cx0] * (1 - fx) + img[cy1, cx1] * fx
        return top * (1 - fy) + bottom * fy
    return Program("warpAffine", f, inputs, reference, 1e-4)


def edge_detector():
    """Ring blur then a Roberts cross on the blurred image, over the interior pixels: one row of halo
    for each stage."""
    H, W = ms.Param("H"), ms.Param("W")
    y, x = ms.Var("y", 1, H - 1), ms.Var("x", 1, W - 1)
    ye, xe = ms.Var("y", 2, H - 2), ms.Var("x", 2, W - 2)
    with ms.Function("edges") as f:
        img = ms.Input("img", [H, W], ms.float32)
        ring = [img[y + dy, x + dx] for dy in (-1, 0, 1) for dx in (-1, 0, 1) if (dy, dx) != (0, 0)]
        total = ring[0]
        for t in ring[1:]:
            total = total + t
        r = ms.Computation("ring", [y, x], total / 8)
        edge = ms.Computation("edge", [ye, xe], ms.abs(r[ye - 1, xe - 1] - r[ye + 1, xe + 1])
                              + ms.abs(r[ye + 1, xe - 1] - r[ye - 1, xe + 1]))
    img.distribute(dim=0)
    r.distribute(y)
    edge.distribute(ye)

    def inputs(h, w, rng):
        return {"img": rng.random((h, w), dtype=np.float32)}

    def reference(a):
        img = a["img"]
        h, w = img.shape
        ring = sum(img[1 + dy:h - 1 + dy, 1 + dx:w - 1 + dx] for dy in (-1, 0, 1) for dx in (-1, 0, 1)
                   if (dy, dx) != (0, 0)) / np.float32(8)
        e = np.abs(ring[:-2, :-2] - ring[2:, 2:]) + np.abs(ring[2:, :-2] - ring[:-2, 2:])
        out = np.zeros((h - 2, w - 2), np.float32)   # rows and columns 0 and 1 are not computed
        out[2:, 2:] = e
        return out
    return Program("edgeDetector", f, inputs, reference)


def cvt_color():
    """RGB to gray in integers: every pixel from its own rank's rows, no communication."""
    H, W = ms.Param("H"), ms.Param("W")
    y, x = ms.Var("y", 0, H), ms.Var("x", 0, W)
    with ms.Function("cvtcolor") as f:
        rgb = ms.Input("rgb", [H, W, 3], ms.uint8)
        v = [ms.u32(rgb[y, x, c]) for c in range(3)]
        gray = ms.Computation("gray", [y, x], ms.u8((v[0] * 4899 + v[1] * 9617 + v[2] * 1868 + 8192) >> 14))
    rgb.distribute(dim=0)
    gray.distribute(y)
    gray.vectorize(x, 16)

    def inputs(h, w, rng):
        return {"rgb": rng.integers(0, 256, (h, w, 3), dtype=np.uint8)}

    def reference(a):
        v = a["rgb"].astype(np.uint32)
        return ((v[..., 0] * 4899 + v[..., 1] * 9617 + v[..., 2] * 1868 + 8192) >> 14).astype(np.uint8)
    return Program("cvtColor", f, inputs, reference, 0, communicates=False)


def nb():
    """Four pointwise stages with two outputs (h = f + g, k = f - g): no communication."""
    H, W = ms.Param("H"), ms.Param("W")
    y, x = ms.Var("y", 0, H), ms.Var("x", 0, W)
    with ms.Function("nb") as f:
        img = ms.Input("img", [H, W], ms.uint8)
        fc = ms.Computation("f", [y, x], 255 - img[y, x])
        gc = ms.Computation("g", [y, x], 2 * img[y, x])
        hc = ms.Computation("h", [y, x], fc[y, x] + gc[y, x], output=True)
        kc = ms.Computation("k", [y, x], fc[y, x] - gc[y, x], output=True)
    img.distribute(dim=0)
    for c in (fc, gc, hc, kc):
        c.distribute(y)

    def inputs(h, w, rng):
        return {"img": rng.integers(0, 256, (h, w), dtype=np.uint8)}

    def reference(a):
        i = a["img"]
        fv, gv = (255 - i).astype(np.uint8), (2 * i).astype(np.uint8)
        return (fv + gv).astype(np.uint8), (fv - gv).astype(np.uint8)
    return Program("nb", f, inputs, reference, 0, communicates=False)


def heat2d():
    """Heat diffusion over T time steps in a time loop (Jacobi, two planes of storage): each step needs
    the rows next to its block computed by the neighbours in the step before."""
    N, M, T = ms.Param("N"), ms.Param("M"), ms.Param("T")
    ta, ya, xa = ms.Var("t", 0, T + 1), ms.Var("y", 0, N), ms.Var("x", 0, M)
    t = ms.Var("t", 1, T + 1)
    with ms.Function("heat") as f:
        A = ms.Input("A", [N, M], ms.float32)
        u = ms.Computation("u", [ta, ya, xa], A[ya, xa], where=(ta == 0))
        interior = (ya >= 1) & (ya < N - 1) & (xa >= 1) & (xa < M - 1)
        up, down = ms.max(ya - 1, 0), ms.min(ya + 1, N - 1)
        left, right = ms.max(xa - 1, 0), ms.min(xa + 1, M - 1)
        step = u.update([t, ya, xa], ms.select(
            interior, ms.f32(0.3) * u[t - 1, ya, xa] + ms.f32(0.175) * (
                u[t - 1, up, xa] + u[t - 1, down, xa] + u[t - 1, ya, left] + u[t - 1, ya, right]),
            u[t - 1, ya, xa]))
    A.distribute(dim=0)
    u.storage_fold("t", 2)
    u.distribute("y")
    step.distribute("y")
    step.vectorize("x", 8)

    def inputs(h, w, rng, steps=6):
        return {"A": rng.random((h, w), dtype=np.float32), "T": steps}

    def reference(a):
        cur = a["A"].copy()
        for _ in range(a["T"]):
            nxt = cur.copy()
            nxt[1:-1, 1:-1] = np.float32(0.3) * cur[1:-1, 1:-1] + np.float32(0.175) * (
                cur[:-2, 1:-1] + cur[2:, 1:-1] + cur[1:-1, :-2] + cur[1:-1, 2:])
            cur = nxt
        return cur
    return Program("heat2d", f, inputs, reference)


def gemm():
    """C = A B with the rows of A and C distributed and B on every rank: no communication."""
    N, M, K = ms.Param("N"), ms.Param("M"), ms.Param("K")
    i, j, k = ms.Var("i", 0, N), ms.Var("j", 0, M), ms.Var("k", 0, K)
    with ms.Function("gemm") as f:
        A = ms.Input("A", [N, K], ms.float32)
        B = ms.Input("B", [K, M], ms.float32)
        C = ms.Computation("C", [i, j], ms.f32(0))
        acc = C.update([i, j, k], C[i, j] + A[i, k] * B[k, j])
    A.distribute(dim=0)
    C.distribute(i)
    acc.distribute(i)
    acc.reorder("i", "k", "j")
    acc.vectorize("j", 8)

    def inputs(h, w, rng):
        return {"A": rng.random((h, 24), dtype=np.float32), "B": rng.random((24, w), dtype=np.float32)}

    def reference(a):
        return a["A"] @ a["B"]
    return Program("gemm", f, inputs, reference, 1e-4, communicates=False)


#: the image set of the distributed experiments, in the order of the papers' tables
IMAGE_SET = {"blur": blur, "conv2d": conv2d, "gaussian": gaussian, "warpAffine": warp_affine,
             "edgeDetector": edge_detector, "cvtColor": cvt_color, "nb": nb}
ALL = dict(IMAGE_SET, heat2d=heat2d, gemm=gemm)
