"""Halide pipelines in a benchmark: the variant mascarpone compiles, the data, Halide's reference, and
Halide as a peer (its JIT with the same schedule, its autoschedulers).

A pipeline is given by a builder of halide_pipelines.py: `builder(w, h, rng, schedule=True)` returns
its output Funcs, input images, realize sizes and tolerance. The builder is called afresh for each
use (Halide Funcs carry their schedule); the images come from a generator seeded alike, so every
call gives the same data.
"""
from __future__ import annotations

import importlib.metadata
import os

import numpy as np

from ..model import Call, Peer, Variant

AUTOSCHEDULERS = {"Adams2019": "autoschedule_adams2019", "Mullapudi2016": "autoschedule_mullapudi2016"}
_plugins_loaded = set()


def spec_of(builder, size, schedule=True) -> dict:
    """The builder's pipeline at `size` (a tuple of the builder's first arguments: width and height for
    images), its images from a generator seeded with 0."""
    return builder(*size, np.random.default_rng(0), schedule=schedule)


def data(builder):
    """data(size) for a benchmark of this pipeline: the images by ImageParam name."""
    def make(size):
        return {ip.name(): arr for ip, arr in spec_of(builder, size)["images"].items()}
    return make


def tolerance(builder, size):
    """The benchmark's tol from the builder's at `size` (one float, used as rtol and atol; None: bit-exact)."""
    tol = spec_of(builder, size).get("tol")
    return None if tol is None else (tol, tol)


def _per_output_sizes(spec):
    sizes, outputs = spec["sizes"], spec["outputs"]
    return sizes if sizes and isinstance(sizes[0], list) else [sizes] * len(outputs)


def _set_images(spec, data):
    import halide as hl
    for ip in spec["images"]:
        ip.set(hl.Buffer(data[ip.name()]))


def _jit_call(pipeline, spec, data):
    """A Call realizing `pipeline` into output buffers allocated once (as Halide's own benchmarks do);
    it holds `data`, whose arrays the ImageParams' buffers point into."""
    import halide as hl
    pipeline.compile_jit()
    bufs = [hl.Buffer(f.type(), s) for f, s in zip(spec["outputs"], _per_output_sizes(spec))]
    return Call(lambda: pipeline.realize(bufs), lambda: [np.asarray(b).copy() for b in bufs], keep=data)


def reference(builder, pipeline=None):
    """reference(data, size): the outputs of Halide's own JIT with the builder's schedule (or those of
    `pipeline(size)`, a spec of another schedule of the same algorithm)."""
    def ref(data, size):
        import halide as hl
        spec = pipeline(size) if pipeline else spec_of(builder, size)
        _set_images(spec, data)
        call = _jit_call(hl.Pipeline(spec["outputs"]), spec, data)
        call.run()
        return call.outputs()
    return ref


def variant(builder, label="", reschedule=None, note="", outputs=None) -> Variant:
    """The pipeline read by `ms.from_halide` (its Halide schedule translated), optionally rescheduled
    with mascarpone's commands by `reschedule(function)`; `outputs(size)` overrides the builder
    (another Halide schedule of the same algorithm)."""
    def build(size):
        import halide as hl

        import mascarpone as ms
        spec = outputs(size) if outputs else spec_of(builder, size)
        f = ms.from_halide(hl.Pipeline(spec["outputs"]))
        if reschedule:
            reschedule(f)
        return f

    def bind(kernel, data, size):
        spec = spec_of(builder, size, schedule=False) if outputs is None else outputs(size)
        outs = kernel.realize(spec["sizes"], **data)
        outs = outs if isinstance(outs, list) else [outs]
        return Call(lambda: kernel.realize(outs, **data), lambda: [o.copy() for o in outs])
    return Variant("halide", build, bind, label=label, note=note)


def _version():
    try:
        return importlib.metadata.version("halide")
    except importlib.metadata.PackageNotFoundError:
        return "?"


def jit_peer(builder, name="Halide JIT", pipeline=None, what="the benchmark's schedule") -> Peer:
    """Halide's own JIT with the same schedule (or `pipeline(size)`'s, another schedule)."""
    def bind(data, size, env):
        import halide as hl
        spec = pipeline(size) if pipeline else spec_of(builder, size)
        _set_images(spec, data)
        env.peers_how[name] = _how(f"JIT, {what}")
        return _jit_call(hl.Pipeline(spec["outputs"]), spec, data)
    return Peer(name, bind, how=_how(f"JIT, {what}"))


def _how(what):
    return (f"Halide {_version()} {what}, target {_host_target()}, "
            f"HL_NUM_THREADS={os.environ.get('HL_NUM_THREADS', 'unset: one thread per core')}")


def _host_target():
    try:
        import halide as hl
    except ImportError:
        return "host"
    return hl.get_host_target().to_string()


def _load_plugin(name):
    import halide as hl
    if name not in _plugins_loaded:
        lib = os.path.join(os.path.dirname(hl.__file__), "lib64", f"lib{AUTOSCHEDULERS[name]}.so")
        hl.load_plugin(lib if os.path.exists(lib) else AUTOSCHEDULERS[name])
        _plugins_loaded.add(name)


def autoscheduler_peer(builder, name) -> Peer:
    """Halide's JIT with the schedule its autoscheduler `name` gives the unscheduled pipeline, with
    estimates set to the benchmark's sizes."""
    def bind(data, size, env):
        import halide as hl
        _load_plugin(name)
        spec = spec_of(builder, size, schedule=False)
        _set_images(spec, data)
        for ip in spec["images"]:
            ip.set_estimates([(0, n) for n in reversed(data[ip.name()].shape)])
        for f, s in zip(spec["outputs"], _per_output_sizes(spec)):
            f.set_estimates([(0, n) for n in s])
        p = hl.Pipeline(spec["outputs"])
        p.apply_autoscheduler(hl.get_host_target(), hl.AutoschedulerParams(name, {"parallelism": str(env.threads)}))
        env.peers_how[f"Halide {name}"] = _how(what)
        return _jit_call(p, spec, data)
    what = f"JIT with the {name} autoscheduler's schedule (parallelism = threads, estimates = the benchmark's sizes)"
    return Peer(f"Halide {name}", bind, how=_how(what))


def peers(builder, autoschedulers=True) -> list:
    """Halide's JIT with the same schedule, then each autoscheduler."""
    out = [jit_peer(builder)]
    if autoschedulers:
        out += [autoscheduler_peer(builder, name) for name in AUTOSCHEDULERS]
    return out


def describe(size) -> str:
    return "x".join(map(str, size))
