"""The image benchmarks of the Tiramisu papers, each written in mascarpone, in Halide and in Julia where
the DSL (or our front-end for it) can say it, with one schedule across them."""
from __future__ import annotations

import numpy as np

import mascarpone as ms

from ..model import Benchmark, Call, Variant
from . import halide_variants as H
from . import image_programs as P
from . import julia_variants as J

IMAGE = {"small": (512, 384), "paper": (2112, 3520)}


def native(build, inputs, outputs, params=None, pick=None, note="") -> Variant:
    """The mascarpone program `build()`, called with `data[key]` for each {argument: key} of `inputs`
    and size parameters `params(size)`, into outputs allocated once ({argument: (shape(size), dtype)});
    `pick(outputs, size)` selects what is checked (default: every output)."""
    def bind(kernel, data, size):
        outs = {name: np.empty(shape(size), dtype) for name, (shape, dtype) in outputs.items()}
        args = {arg: data[key] for arg, key in inputs.items()} | outs | (params(size) if params else {})
        chosen = (lambda: pick(outs, size)) if pick else (lambda: list(outs.values()))
        return Call(lambda: kernel(**args), lambda: [o.copy() for o in chosen()])
    return Variant("mascarpone", lambda size: build(), bind, note=note)


def _image(dtype):
    """An output of the image's size: (shape(size), dtype)."""
    return lambda size: (size[1], size[0]), dtype


def _image_benchmark(name, builder, mascarpone, julia, sizes=IMAGE, extra_variants=(), peers=None,
                     reference=None, note=""):
    return Benchmark(name, "tiramisu", sizes, H.data(builder), reference or H.reference(builder),
                     variants=[mascarpone, H.variant(builder), *extra_variants, julia],
                     peers=H.peers(builder) if peers is None else peers, tol=H.tolerance(builder, sizes["small"]),
                     describe=H.describe, note=note)


def _no_uint8_in_julia(what):
    return Variant.absent("julia", "not supported", f"{what} works on UInt8 images; the Julia front-end reads "
                                                    f"Float64, Float32, Int64 and Bool arrays")


def _julia_heat2d():
    def schedule(f):
        for name in ("out", "s20", "s62"):
            c = f[name]
            j = c.loops[0]
            j0, _ = c.split(j, 8)
            c.parallelize(j0)
            c.vectorize(c.loops[-1], 8)

    def args(data, size):
        w, h = size
        return [np.empty((w, h), np.float32, order="F"), data["inp"].T]
    return J.variant("heat2d", schedule, args, outputs=lambda a: [a[0].T],
                     note="out is an argument: the front-end copies its values in before the loops overwrite them")


def _julia_triangular():
    def schedule(f):
        f["s24"].after(f["s10"], ms.root)     # all of y zeroed first, so that j can go outside i
        f["s10"].vectorize("i", 8)
        f["s24"].interchange("i", "j")
        f["s24"].vectorize("i", 8)

    def args(data, size):
        return [data["L"].T, data["x"], np.empty(size[0])]
    return J.variant("trmv", schedule, args, outputs=lambda a: [a[2]])


def _julia_edge():
    def schedule(f):
        for name in ("img", "R", "s50", "s103"):
            c = f[name]
            c.parallelize(c.loops[1])
            c.vectorize(c.loops[2], 8)

    def args(data, size):
        w, h = size
        return [data["img"].T, np.zeros((w - 2, h - 2, 3), np.float32, order="F")]
    return J.variant("edge", schedule, args, outputs=lambda a: [a[0].T],
                     note="R is an argument (Julia allocates no arrays here): the front-end copies it in too")


def _julia_heat3d():
    def schedule(f):
        for name in ("A", "B", "s66", "s136"):
            c = f[name]
            c.parallelize(c.loops[-3])
            c.vectorize(c.loops[-1], 8)

    def args(data, size):
        steps = size[3]
        grid = data["inp"].T
        return [steps // 2, grid.copy(order="F"), grid.copy(order="F")]
    return J.variant("heat3d", schedule, args, outputs=lambda a: [a[1].T],
                     note="two grids A and B, each time-loop iteration B from A then A from B (T/2 iterations)")


def _edge_data(size):
    w, h = size
    return {"img": np.random.default_rng(0).random((3, h, w), dtype=np.float32)}


def _edge_reference(data, size):
    img = data["img"]
    ring = [(0, 0), (0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1), (2, 2)]
    _, h, w = img.shape
    r = img[:, 0:h - 2, 0:w - 2].copy()
    for dy, dx in ring[1:]:
        r = r + img[:, dy:dy + h - 2, dx:dx + w - 2]
    r = r / np.float32(8)
    out = img.copy()
    out[:, :h - 3, :w - 3] = (r[:, :-1, :-1] - r[:, 1:, 1:]) + (r[:, :-1, 1:] - r[:, 1:, :-1])
    return [out]


def _native_edge():
    def bind(kernel, data, size):
        img = data["img"]
        return Call(lambda: kernel(img=img, out=img), lambda: [img.copy()])
    return Variant("mascarpone", lambda size: P.edge_detector(), bind,
                   note="in place: the kernel's output is the image it reads (the input is copied on entry)")


def _heat3d_reference(data, size):
    a, b = np.float32(P.ALPHA), np.float32(P.BETA)
    u = data["inp"].copy()
    for _ in range(size[3]):
        c = u[1:-1, 1:-1, 1:-1]
        n = u.copy()
        n[1:-1, 1:-1, 1:-1] = c + a * (u[:-2, 1:-1, 1:-1] - b * c + u[2:, 1:-1, 1:-1] + u[1:-1, :-2, 1:-1]
                                       - b * c + u[1:-1, 2:, 1:-1] + u[1:-1, 1:-1, :-2] - b * c + u[1:-1, 1:-1, 2:])
        u = n
    return [u]


def benchmarks() -> list:
    from . import halide_pipelines as HP
    from .julia import numpy_peer
    nb_fused_note = "f, g inlined; h, k fused down to the vector loop with after (Halide: compute_with)"
    out = [
        _image_benchmark("cvtColor", HP.cvt_color,
                         native(P.cvt_color, {"rgb": "rgb"}, {"gray": _image(np.uint8)}),
                         _no_uint8_in_julia("cvtColor")),
        _image_benchmark("conv2D", HP.conv3x3,
                         native(P.conv2d, {"inp": "inp", "ker": "ker"}, {"conv": _image(np.float32)}),
                         Variant.absent("julia", "not written", "no Julia version written yet")),
        _image_benchmark("gaussian", HP.gaussian,
                         native(P.gaussian, {"inp": "inp"}, {"gy": _image(np.float32)}),
                         Variant.absent("julia", "not written", "gx per tile of gy (compute_at) needs a temporary "
                                                                "array, which the Julia kernels here take as an "
                                                                "argument; not written yet")),
        _image_benchmark("warpAffine", HP.warp_affine,
                         native(P.warp_affine, {"inp": "inp"}, {"warp": _image(np.float32)}),
                         Variant.absent("julia", "not supported", "floor to an integer index (floor(Int, x)) is "
                                                                  "not read by the Julia front-end")),
        _image_benchmark("nb", HP.nb,
                         native(P.nb_fused, {"img": "img"}, {"h": _image(np.uint8), "k": _image(np.uint8)},
                                note=nb_fused_note),
                         _no_uint8_in_julia("nb"),
                         extra_variants=[H.variant(HP.nb, label="fused with after",
                                                   outputs=lambda size: HP.nb_spec(*size, np.random.default_rng(0),
                                                                                   "stages"),
                                                   reschedule=fuse_nb, note=nb_fused_note)],
                         peers=[H.jit_peer(HP.nb, what="compute_root of f and g (the halide variant's schedule)"),
                                *(H.jit_peer(HP.nb, f"Halide JIT ({s})", what=f"nb's {s} schedule",
                                             pipeline=lambda size, s=s: HP.nb_spec(*size, np.random.default_rng(0), s))
                                  for s in ("inline", "compute_with")),
                                *(H.autoscheduler_peer(HP.nb, a) for a in H.AUTOSCHEDULERS)]),
        Benchmark("edgeDetector", "tiramisu", IMAGE, _edge_data, _edge_reference,
                  variants=[_native_edge(),
                            Variant.absent("halide", "cannot express",
                                           "the edges are written into the image they are computed from (a cycle "
                                           "in the data flow); a Halide Func cannot update its input"),
                            _julia_edge()],
                  peers=[], tol=(1e-5, 1e-5), describe=H.describe),
        _image_benchmark("heat2D", HP.heat2d,
                         native(P.heat2d, {"inp": "inp"}, {"heat": _image(np.float32)}), _julia_heat2d()),
        Benchmark("heat3D", "tiramisu", {"small": (32, 32, 32, 4), "paper": (128, 128, 128, 20)},
                  H.data(HP.heat3d), _heat3d_reference,
                  variants=[native(P.heat3d, {"inp": "inp"},
                                   {"h": (lambda size: (2, size[2], size[1], size[0]), np.float32)},
                                   params=lambda size: {"T": size[3]},
                                   pick=lambda outs, size: [outs["h"][size[3] % 2]],
                                   note="two grids of storage (storage_fold(t, 2))"),
                            H.variant(HP.heat3d, note="Halide keeps every time step (T + 1 grids)"),
                            _julia_heat3d()],
                  peers=H.peers(HP.heat3d, autoschedulers=False), tol=(1e-5, 1e-5),
                  describe=lambda size: f"{size[0]}x{size[1]}x{size[2]}, {size[3]} steps"),
        Benchmark("triangular", "tiramisu", {"small": (300,), "paper": (3000,)}, H.data(HP.triangular),
                  H.reference(HP.triangular),
                  variants=[native(P.triangular, {"Lt": "L", "x": "x"}, {"y": (lambda size: size, np.float64)}),
                            H.variant(HP.triangular, note="an RDom over the square with where(i >= j)"),
                            _julia_triangular()],
                  peers=[H.jit_peer(HP.triangular),
                         numpy_peer("trmv", args=lambda data, size: [data["L"].T, data["x"], np.empty(size[0])],
                                    outputs=[2])],
                  tol=(1e-9, 1e-12),
                  describe=lambda size: f"{size[0]}x{size[0]}",
                  note="ticket #2373 of Halide: a triangular iteration domain"),
    ]
    return out


def fuse_nb(f):
    """The fused schedule of image_programs.nb_fused on the Function read from Halide's nb stages."""
    # Halide renames repeated Func names f$1, f$2...: find the computations by the Funcs' base names
    comps = {info.name.split("$")[0]: info.comps[0][0] for info in f.translation.funcs if info.comps}
    fc, gc, hc, kc = comps["f"], comps["g"], comps["h"], comps["k"]
    fc.inline()
    gc.inline()
    for c in (hc, kc):
        c.parallelize("y")
        c.vectorize("x", 32)
    kc.after(hc, hc.loops[-1])
    f.assume_same_output_sizes()
