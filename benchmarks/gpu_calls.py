"""The cost of a call when the kernel takes no time: one program at a small size, called again and again with
device arrays on a GPU target, ours against Halide's realize (plus device_sync) on the same device.

usage: python benchmarks/gpu_calls.py [--target cuda|opencl] [--program nb:64] [--calls 2000] [--profile]

`--profile` prints cProfile's table of our calls (where the Python work goes) and the last call's events.
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import time

import numpy as np

import gpu as bench


def per_call_us(fn, calls):
    """Microseconds a call of `fn`, over `calls` calls in a row after one warm-up call."""
    fn()
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t) / calls * 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="cuda", choices=("cuda", "opencl"))
    ap.add_argument("--program", default="nb:64", help="NAME:SIZE of benchmarks/gpu.py's programs")
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    side = bench.Side(args.target)
    name, size = args.program.split(":")
    funcs, sizes, images, extra = bench.PROGRAMS[name][0](int(size))
    ours = bench.ours(funcs, extra, args.target)
    recorder = bench.Recorder(ours.kernel)
    ours.kernel = recorder
    ours.realize(sizes, **{ip.name(): a for ip, a in images.items()})
    kernel = recorder.kernel
    kwargs = {n: side.to_device(a) if isinstance(a, np.ndarray) and a.ndim else a for n, a in recorder.kwargs.items()}
    outs = kernel(**kwargs)
    outs = outs if isinstance(outs, tuple) else (outs,)
    kwargs.update({b.name: a for b, a in zip(kernel.lowered.outputs, outs)})

    pipeline = bench.hl.Pipeline(funcs)
    pipeline.compile_jit(side.halide)
    for ip, a in images.items():
        ip.set(bench.hl.Buffer(a))
    buffers = [bench.hl.Buffer(f.type(), sizes) for f in funcs]

    def halide():
        pipeline.realize(buffers, side.halide)
        for b in buffers:
            b.device_sync()

    def mine():
        kernel(**kwargs)
        side.sync()

    print(f"{side.device}, {args.program}, {args.calls} calls with device arrays")
    print(f"ours: {per_call_us(mine, args.calls):.1f} us a call; Halide: {per_call_us(halide, args.calls):.1f} us a call")
    if args.profile:
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(args.calls):
            mine()
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(16)
        print("last call's events:", [(kind, n, round(ms, 4)) for kind, n, ms in kernel.profile().events])


if __name__ == "__main__":
    main()
