"""mascarpone's "opencl" target beside Halide's own OpenCL target, on the same OpenCL device (PoCL on this
machine's CPU), with the same schedules, timed in one process; with --target cuda, mascarpone's "cuda"
target beside Halide's CUDA target on an NVIDIA GPU, at sizes that fill it, with the device's measured
copy bandwidth and each memory-bound kernel's fraction of it.

    python benchmarks/gpu.py [--target opencl|cuda] [--quick] [--only NAME ...] [--no-append]

Programs: a two-stage blur (each tile's producer computed by the block's threads in shared memory),
conv2D (weights in constant memory on our side), a separable 5-tap gaussian (weights in constant memory
on our side), nb (f = 255 - in, g = 2 in, h = f + g, k = f - g; Halide computes h and k in two kernels,
we fuse them in one; rows at 2048^2 and 4096^2 too, where the arrays outgrow the caches; the "best" rows
give each side its fastest of a few thread tiles, our fused kernel against Halide's best) and sgemm
(numpy's matmul, OpenBLAS, beside). Our kernels unroll completely the loops of a constant trip count inside
a thread (conv2D's 3x3 taps, gaussian's 5, sgemm's k at 256): PoCL then runs a block's threads in SIMD
lanes, which it does not do for a thread holding a loop. Each pipeline is written in Halide
with its GPU schedule; mascarpone reads it with ms.from_halide and compiles it for "opencl". Outputs are
compared first. Times are medians of interleaved runs (ms), ratios the medians of the rounds' ratios:
"kernels" with the arrays already on the device (Halide: its buffers resident on the device; mascarpone:
pyopencl arrays in and out), "with copies" from numpy arrays to numpy arrays. Ratios are mascarpone /
Halide (below 1: mascarpone is faster). PoCL runs OpenCL on the CPU: these are ratios on one machine, not
GPU times.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import halide as hl  # noqa: E402

import mascarpone as ms  # noqa: E402
from benchlog import append_results  # noqa: E402
from mascarpone import examples  # noqa: E402


def v(*names):
    return [hl.Var(n) for n in names]


def blur(size):
    x, y, xi, yi, xo, yo = v("x", "y", "xi", "yi", "xo", "yo")
    inp = hl.ImageParam(hl.Float(32), 2, "inp")
    bx, by = hl.Func("bx"), hl.Func("by")
    bx[x, y] = (inp[x, y] + inp[x + 1, y] + inp[x + 2, y]) / 3
    by[x, y] = (bx[x, y] + bx[x, y + 1] + bx[x, y + 2]) / 3
    by.gpu_tile(x, y, xo, yo, xi, yi, 32, 8)
    bx.compute_at(by, xo).gpu_threads(x, y)
    img = np.random.default_rng(0).random((size + 2, size + 2), dtype=np.float32)
    return [by], [size, size], {inp: img}, None


def conv2d(size, ch=8):
    x, y, c, xi, yi, xo, yo = v("x", "y", "c", "xi", "yi", "xo", "yo")
    inp = hl.ImageParam(hl.Float(32), 3, "inp")
    w = hl.ImageParam(hl.Float(32), 4, "w")
    r = hl.RDom([(0, 3), (0, 3), (0, ch)])
    out = hl.Func("out")
    out[x, y, c] = hl.f32(0)
    out[x, y, c] += inp[x + r.x, y + r.y, r.z] * w[r.x, r.y, r.z, c]
    out.gpu_tile(x, y, xo, yo, xi, yi, 16, 16)
    out.update().reorder(r.x, r.y, r.z, x, y, c).gpu_tile(x, y, xo, yo, xi, yi, 16, 16)
    rng = np.random.default_rng(1)
    img = rng.random((ch, size + 2, size + 2), dtype=np.float32)
    weights = rng.random((ch, ch, 3, 3), dtype=np.float32)
    return [out], [size, size, ch], {inp: img, w: weights}, ["w"]


def gaussian(size):
    x, y, i, xi, yi, xo, yo = v("x", "y", "i", "xi", "yi", "xo", "yo")
    inp = hl.ImageParam(hl.Float(32), 2, "inp")
    w = hl.ImageParam(hl.Float(32), 1, "w")
    gx, gy = hl.Func("gx"), hl.Func("gy")
    r = hl.RDom([(0, 5)])
    gx[x, y] = hl.f32(0)
    gx[x, y] += inp[x + r.x, y] * w[r.x]
    gy[x, y] = hl.f32(0)
    gy[x, y] += gx[x, y + r.x] * w[r.x]
    for f in (gx, gy):
        f.compute_root().gpu_tile(x, y, xo, yo, xi, yi, 32, 8)
        f.update().gpu_tile(x, y, xo, yo, xi, yi, 32, 8)
    img = np.random.default_rng(2).random((size + 40, size + 40), dtype=np.float32)   # (rounded-up tiles read past)
    weights = np.array([1, 4, 6, 4, 1], np.float32) / 16
    return [gy], [size, size], {inp: img, w: weights}, ["w"]


def nb(size, tile=(32, 8)):
    x, y, xi, yi, xo, yo = v("x", "y", "xi", "yi", "xo", "yo")
    inp = hl.ImageParam(hl.Int(32), 2, "inp")
    f, g, h, k = (hl.Func(n) for n in "fghk")
    f[x, y] = 255 - inp[x, y]
    g[x, y] = 2 * inp[x, y]
    h[x, y] = f[x, y] + g[x, y]
    k[x, y] = f[x, y] - g[x, y]
    for out in (h, k):
        out.compute_root().gpu_tile(x, y, xo, yo, xi, yi, *tile)
    img = np.random.default_rng(3).integers(0, 255, (size, size)).astype(np.int32)
    return [h, k], [size, size], {inp: img}, "fuse"


def sgemm(size):
    x, y, xi, yi, xo, yo = v("x", "y", "xi", "yi", "xo", "yo")
    A = hl.ImageParam(hl.Float(32), 2, "A")
    B = hl.ImageParam(hl.Float(32), 2, "B")
    r = hl.RDom([(0, size)])
    C = hl.Func("C")
    C[x, y] = hl.f32(0)
    C[x, y] += A[r.x, y] * B[x, r.x]
    C.gpu_tile(x, y, xo, yo, xi, yi, 16, 16)
    C.update().gpu_tile(x, y, xo, yo, xi, yi, 16, 16)
    rng = np.random.default_rng(4)
    a = rng.random((size, size), dtype=np.float32)
    b = rng.random((size, size), dtype=np.float32)
    return [C], [size, size], {A: a, B: b}, "numpy"


PROGRAMS = {"blur": (blur, 1024, 256), "conv2D": (conv2d, 256, 64), "gaussian": (gaussian, 1024, 256),
            "nb": (nb, 1024, 256), "sgemm": (sgemm, 256, 128)}

#: nb also at these sizes: at 1024^2 its kernel takes a few tenths of a millisecond and a call is mostly the
#: queue's latency; from 2048^2 its arrays outgrow the caches, and the fused kernel's saved pass over the
#: input shows (one read of `in` and two writes, against Halide's two reads and two writes)
NB_LARGE = (2048, 4096)


#: the sizes on a GPU (--target cuda): large enough that a kernel takes more than a launch's latency
GPU_SIZES = {"blur": 4096, "conv2D": 1024, "gaussian": 4096, "nb": 4096, "sgemm": 1024}
GPU_NB_LARGE = (8192,)


class Side:
    """One GPU target as the benchmark drives it: our target's name, Halide's target, device arrays of
    numpy arrays, waiting for the device, and the device's name."""

    def __init__(self, target):
        self.target = target
        if target == "opencl":
            import pyopencl as cl
            import pyopencl.array as cla

            from mascarpone.backends.gpu.opencl import default_runtime
            rt = default_runtime()
            self.to_device = lambda a: cla.to_device(rt.queue, a)
            self.sync = rt.queue.finish
            self.halide = hl.get_host_target().with_feature(hl.TargetFeature.OpenCL)
            self.device = rt.device.name
            self.is_gpu = bool(rt.device.type & cl.device_type.GPU)
        else:
            from mascarpone.backends.gpu import cuda
            self.to_device = cuda.to_device
            self.sync = lambda: None        # (a call waits for its stream before it returns)
            arch = cuda.device_arch()
            if arch is None:
                raise SystemExit("--target cuda needs a CUDA device; none found")
            self.halide = hl.get_host_target().with_feature(hl.TargetFeature.CUDA)
            capability = getattr(hl.TargetFeature, f"CUDACapability{arch[3:]}", None)
            if capability is not None:
                self.halide = self.halide.with_feature(capability)
            self.device = f"{cuda.device_name()} ({arch})"
            self.is_gpu = True
        #: calls in a row per timed run of the kernels alone (see interleaved_ms)
        self.inner = 20 if self.is_gpu else 1


def copy_bandwidth_gbs(side, nbytes=1 << 30, repeat=21):
    """The device's measured copy bandwidth (GB/s, bytes read plus bytes written) of a device-to-device
    copy of `nbytes`: the bar for memory-bound kernels."""
    if side.target != "cuda":    # (OpenCL has no timed device-to-device copy in pyopencl's arrays)
        return None
    from mascarpone.backends.gpu import cuda
    return cuda.copy_bandwidth_gbs(nbytes, repeat)


def interleaved_ms(fns, repeat, inner=1):
    """The times (ms) of `repeat` rounds, each running every one of `fns` `inner` times in a row (the time
    of one run, averaged), after a warm-up: a list per function. Interleaving lets the load of a shared
    machine fall on all of them alike; runs in a row keep a GPU in one context (Halide's CUDA and OpenCL
    runtimes keep contexts of their own, and the GPU switching between two costs each side's first kernel
    some 0.1 ms)."""
    for fn in fns:
        fn()
    times = [[] for _ in fns]
    for r in range(repeat):
        order = range(len(fns)) if r % 2 == 0 else reversed(range(len(fns)))   # (neither always first)
        for k in order:
            t0 = time.perf_counter()
            for _ in range(inner):
                fns[k]()
            times[k].append((time.perf_counter() - t0) * 1e3 / inner)
    return times


def median_and_ratio(ours, theirs):
    """(median of ours, median of theirs, median of the rounds' ratios ours / theirs): a ratio taken
    within each round cancels the load, which drifts between rounds."""
    return (float(np.median(ours)), float(np.median(theirs)),
            float(np.median([a / b for a, b in zip(ours, theirs)])))


def median_ms(fn, repeat):
    return float(np.median(interleaved_ms([fn], repeat)[0]))


class Recorder:
    """Stands in for a HalideKernel's kernel to see the arguments realize passes it."""

    def __init__(self, kernel):
        self.kernel, self.kwargs = kernel, None

    def __getattr__(self, name):
        return getattr(self.kernel, name)

    def __call__(self, **kwargs):
        self.kwargs = kwargs
        return self.kernel(**kwargs)


def ours(funcs, extra, target):
    """The pipeline through mascarpone for `target`: constant-memory inputs marked, nb's outputs fused, no
    FMA contraction (as Halide's kernels)."""
    f = ms.from_halide(hl.Pipeline(funcs))
    if isinstance(extra, list):
        for inp in f.inputs:
            if inp.name in extra:
                inp.gpu_constant()
    if extra == "fuse":
        h, k = f.outputs()
        k.after(h, h.loops[-1])
        f.assume_same_output_sizes()
    # Halide prints each multiply and add of a kernel as its own statement, so its OpenCL compiler never
    # contracts them into an FMA: ours round each operation too, for the same arithmetic
    return f.compile(target, fp_contract=False)


def run_one(side, name, size, repeat, **options):
    build = PROGRAMS[name][0]
    funcs, sizes, images, extra = build(size, **options)
    target = side.halide
    pipeline = hl.Pipeline(funcs)
    pipeline.compile_jit(target)
    buffers = {ip: hl.Buffer(arr) for ip, arr in images.items()}
    for ip, b in buffers.items():
        ip.set(b)
    outs = [hl.Buffer(f.type(), sizes) for f in funcs]
    realization = outs if len(outs) > 1 else outs[0]

    def halide_copies():
        for b in buffers.values():
            b.set_host_dirty(True)
        pipeline.realize(realization, target)
        for o in outs:
            o.copy_to_host()

    def halide_kernels():
        pipeline.realize(realization, target)
        for o in outs:
            o.device_sync()

    halide_copies()
    theirs = [np.asarray(o).copy() for o in outs]

    k = ours(funcs, extra, side.target)
    named = {ip.name(): arr for ip, arr in images.items()}
    rec = Recorder(k.kernel)
    k.kernel = rec
    mine = k.realize(sizes, **named)
    mine = mine if isinstance(mine, list) else [mine]
    for a, b in zip(mine, theirs):
        if a.dtype.kind == "f":
            np.testing.assert_allclose(a, b, rtol=2e-4, atol=1e-4)
        else:
            np.testing.assert_array_equal(a, b)
    gpu = rec.kernel
    host_args = rec.kwargs
    dev_args = {n: side.to_device(a) if isinstance(a, np.ndarray) and a.ndim else a
                for n, a in host_args.items()}
    outs_dev = gpu(**dev_args)
    # the outputs given back, as Halide's realize fills the same buffers at each call
    outs_dev = outs_dev if isinstance(outs_dev, tuple) else (outs_dev,)
    dev_args.update({b.name: a for b, a in zip(gpu.lowered.outputs, outs_dev)})

    def ours_kernels():
        gpu(**dev_args)
        side.sync()

    # numpy outputs given back too, as Halide's realize copies into the same host buffers at each call (an
    # output allocated at each call costs its first touch, some 10 ms at 4096^2 on this machine)
    outs_host = gpu(**host_args)
    outs_host = outs_host if isinstance(outs_host, tuple) else (outs_host,)
    host_args = dict(host_args, **{b.name: a for b, a in zip(gpu.lowered.outputs, outs_host)})

    def ours_copies():
        gpu(**host_args)

    t_ok, t_hk, r_k = median_and_ratio(*interleaved_ms([ours_kernels, halide_kernels], repeat, side.inner))
    # the device's own times, read apart: reading a call's events is no part of the call
    events = []
    for _ in range(repeat):
        ours_kernels()
        events.append(gpu.profile().kernel_ms)
    prof_k = float(np.median(events))
    t_oc, t_hc, r_c = median_and_ratio(*interleaved_ms([ours_copies, halide_copies], repeat))
    prof = gpu.profile()
    row = {"name": name, "size": size, "halide_k": t_hk, "ours_k": t_ok, "events_k": prof_k, "ratio_k": r_k,
           "ratio_c": r_c,
           "halide_c": t_hc, "ours_c": t_oc, "transfer": prof.transfer_ms, "launches": prof.launches}
    if extra == "numpy":
        a, b = (images[ip] for ip in images)
        row["numpy"] = median_ms(lambda: a @ b, repeat)   # (Halide's C[x, y] is numpy's (A @ B)[y, x])
    del outs_dev
    return row


#: nb's thread tiles (x, y) tried for each side's best (on a CPU device, rows of power-of-two widths
#: read and written 8 at a time contend for the same cache sets)
NB_TILES = ((32, 8), (64, 4), (256, 1))


def nb_best(side, size, repeat):
    """nb, each side with the fastest of NB_TILES: our fused kernel against Halide's best schedule."""
    rows = [(tile, run_one(side, "nb", size, repeat, tile=tile)) for tile in NB_TILES]
    (h_tile, h), (o_tile, o) = (min(rows, key=lambda r: r[1][key]) for key in ("halide_k", "ours_k"))
    (hc_tile, hc), (oc_tile, oc) = (min(rows, key=lambda r: r[1][key]) for key in ("halide_c", "ours_c"))
    name = lambda t: "x".join(map(str, t))   # noqa: E731
    return (f"| nb, each side's best tile of {', '.join(map(name, NB_TILES))} (Halide {name(h_tile)}, ours "
            f"{name(o_tile)}) | {size} | {h['halide_k']:.2f} | {o['ours_k']:.2f} ({o['events_k']:.2f}) | "
            f"{o['ours_k'] / h['halide_k']:.2f} | {hc['halide_c']:.2f} | {oc['ours_c']:.2f} ({oc['transfer']:.2f}) | "
            f"{oc['ours_c'] / hc['halide_c']:.2f} | {o['launches']} |")


def sgemm_shared(side, size, repeat):
    """Our sgemm with A's and B's tiles staged in shared memory per tile of k (cache_shared), a schedule
    Halide's gpu_tile does not write; beside numpy."""
    f, C, acc = examples.gemm()
    C.gpu_tile("i", "j", 16, 16)
    acc.gpu_tile("i", "j", 16, 16)
    k0, _ = acc.split("k", 16)
    acc.reorder("i0", "j0", k0, "i1", "j1", "k1")
    A, B = f.inputs
    acc.cache_shared(A, at=k0)
    acc.cache_shared(B, at=k0)
    k = f.compile(side.target)
    rng = np.random.default_rng(5)
    a = rng.random((size, size), dtype=np.float32)
    b = rng.random((size, size), dtype=np.float32)
    np.testing.assert_allclose(k(A=a, B=b), a @ b, rtol=1e-4)
    da, db = side.to_device(a), side.to_device(b)

    def kernels():
        k(A=da, B=db)
        side.sync()
    t_k = float(np.median(interleaved_ms([kernels], repeat, side.inner)[0]))
    events = k.profile().kernel_ms
    t_c = median_ms(lambda: k(A=a, B=b), repeat)
    t_np = median_ms(lambda: a @ b, repeat)
    return (f"| sgemm, shared tiles (ours only); numpy {t_np:.2f} ms | {size} | - | {t_k:.2f} ({events:.2f}) | - | - | "
            f"{t_c:.2f} ({k.profile().transfer_ms:.2f}) | - | {k.profile().launches} |")


def row(r):
    """A table row of run_one's result."""
    extra = f"; numpy {r['numpy']:.2f} ms" if "numpy" in r else ""
    return (f"| {r['name']}{extra} | {r['size']} | {r['halide_k']:.2f} | {r['ours_k']:.2f} ({r['events_k']:.2f}) | "
            f"{r['ratio_k']:.2f} | {r['halide_c']:.2f} | {r['ours_c']:.2f} "
            f"({r['transfer']:.2f}) | {r['ratio_c']:.2f} | {r['launches']} |")


def nb_bytes(size):
    """Bytes nb must move at least: one read of its int32 input and a write of each of its two outputs."""
    return 3 * 4 * size * size


def bandwidth_note(r, bandwidth):
    """nb's fraction of the copy bandwidth, ours and Halide's kernels, for a table row."""
    if bandwidth is None or r["name"] != "nb":
        return ""
    # (the bytes the program must move over each time: Halide's two kernels read the input twice)
    fraction = {key: nb_bytes(r["size"]) / (r[key] * 1e6) / bandwidth for key in ("events_k", "ours_k", "halide_k")}
    return (f"; of the copy bandwidth: ours {fraction['events_k']:.2f} by events, {fraction['ours_k']:.2f} by "
            f"wall time, Halide {fraction['halide_k']:.2f} by wall time")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", choices=("opencl", "cuda"), default="opencl")
    parser.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--no-append", action="store_true")
    args = parser.parse_args()
    side = Side(args.target)
    gpu = side.is_gpu
    repeat = 3 if args.quick else 21 if gpu else 41
    load_start = os.getloadavg()[0]
    bandwidth = copy_bandwidth_gbs(side)
    if bandwidth is not None:
        print(f"copy bandwidth (device to device, read + written): {bandwidth:.0f} GB/s", flush=True)
    lines = ["| program | size | Halide kernels | ours kernels (events) | ratio | Halide with copies | ours with "
             "copies (of which copies) | ratio | launches (ours) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]

    def add(r):
        lines.append(row(r).replace(f"| {r['name']}", f"| {r['name']}{bandwidth_note(r, bandwidth)}", 1))
        print(lines[-1], flush=True)

    for name, (_, big, small) in PROGRAMS.items():
        if args.only and name not in args.only:
            continue
        add(run_one(side, name, small if args.quick else GPU_SIZES[name] if gpu else big, repeat))
    if not args.only or "nb" in args.only:
        for size in () if args.quick else GPU_NB_LARGE if gpu else NB_LARGE:
            add(run_one(side, "nb", size, repeat))
        best = (PROGRAMS["nb"][2],) if args.quick else (GPU_NB_LARGE[-1],) if gpu else \
            (PROGRAMS["nb"][1], NB_LARGE[-1])
        for size in best:
            lines.append(nb_best(side, size, repeat))
            print(lines[-1], flush=True)
    if not args.only or "sgemm" in args.only:
        size = PROGRAMS["sgemm"][2] if args.quick else GPU_SIZES["sgemm"] if gpu else PROGRAMS["sgemm"][1]
        lines.append(sgemm_shared(side, size, repeat))
        print(lines[-1], flush=True)
    load = f"(1 min) {load_start:.2f} at the start, {os.getloadavg()[0]:.2f} at the end"
    print(f"load average {load}")
    table = "\n".join(lines)
    print(table)
    if not args.no_append:
        title = "GPU targets on OpenCL" if args.target == "opencl" else "GPU target cuda beside Halide's CUDA"
        intro = "" if bandwidth is None else f"Device-to-device copy bandwidth: {bandwidth:.0f} GB/s."
        append_results(f"{title} ({side.device}), ms, median of {repeat} interleaved runs, load {load}", table,
                       intro)


if __name__ == "__main__":
    main()
