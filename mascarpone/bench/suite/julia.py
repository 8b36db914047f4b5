"""The Julia suite: PolyBench-style linear-algebra and stencil kernels written in Julia, against numba's
loops (naive and parallel) and numpy/OpenBLAS."""
from __future__ import annotations

import importlib.metadata

import numpy as np

from ..model import Benchmark, Call, Peer
from . import julia_variants

TOL = (1e-9, 1e-12)


def _array_args(args):
    return [a for a in args if isinstance(a, np.ndarray)]


def _numba_version():
    try:
        return importlib.metadata.version("numba")
    except importlib.metadata.PackageNotFoundError:
        return "?"


def _compiled(fn, args):
    """numba's dispatcher compiled for these arguments (so the first timed call does not compile)."""
    import numba
    fn.compile(tuple(numba.typeof(a) for a in args))
    return fn


def numba_peer(fn, parallel=False, cannot=None) -> Peer:
    """numba's @njit of the kernel's loops: naive order, or with prange where the loops allow it."""
    name = "numba parallel" if parallel else "numba"

    def bind(data, size, env):
        import numba
        if parallel:
            numba.set_num_threads(min(env.threads, numba.config.NUMBA_NUM_THREADS))
            env.peers_how[name] = how.replace("the run's", str(numba.get_num_threads()))
        compiled = _compiled(fn, data)
        return Call(lambda: compiled(*data), lambda: [a.copy() for a in _array_args(data)])
    how = (f"numba {_numba_version()} @njit(parallel=True), prange on a loop that carries no dependence, "
           f"threads: the run's" if parallel else
           f"numba {_numba_version()} @njit of the Julia loops in their naive order, one thread")
    return Peer(name, None if cannot else bind, cannot=cannot, how=how)


def numpy_peer(function, args=None, outputs=None) -> Peer:
    """numpy/OpenBLAS (numpy_peers.py) in the peer's own process, with the BLAS kernel of this CPU;
    `args(data, size)` gives its arguments (default: the Julia kernel's), `outputs` the indices of
    those it writes (default: every array)."""
    def bind(data, size, env):
        a = args(data, size) if args else data
        written = outputs if outputs is not None else [i for i, v in enumerate(a) if isinstance(v, np.ndarray)]
        return env.blas.bind(f"mascarpone.bench.suite.numpy_peers:{function}", a, written)
    return Peer("numpy/OpenBLAS", bind, how="numpy's BLAS calls in a process of their own (see the run's stamp)")


def numba_reference(fn):
    """reference(data, size): the arrays after numba's naive loops ran on them."""
    def ref(data, size):
        fn(*data)
        return [a.copy() for a in _array_args(data)]
    return ref


def describe(spec) -> str:
    """The first array's shape, and the time steps where the kernel has some: '1300x1300, 100 steps'."""
    first = next(s for s in spec if isinstance(s, tuple))
    steps = [s for s in spec if isinstance(s, int) and not isinstance(s, bool)]
    return "x".join(map(str, first)) + (f", {steps[0]} steps" if steps else "")


def benchmarks() -> list:
    from .julia_kernels import KERNELS, NOT_PARALLEL, arrays
    out = []
    for name, k in KERNELS.items():
        peers = [numba_peer(k["numba"]),
                 numba_peer(k["parallel"], parallel=True, cannot=None if k["parallel"] else NOT_PARALLEL[name])]
        if k["numpy"]:
            peers.append(numpy_peer(k["numpy"]))
        out.append(Benchmark(
            name, "julia", sizes={"small": k["small"], "paper": k["paper"]}, data=arrays,
            reference=numba_reference(k["numba"]),
            variants=[julia_variants.variant(k["fixture"], k["schedule"], args=lambda data, size: data,
                                             outputs=_array_args)],
            peers=peers, tol=TOL, describe=describe))
    return out
