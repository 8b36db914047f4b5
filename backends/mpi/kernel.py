"""Kernels of the "mpi" target.

`MPIKernel` runs in an MPI program (SPMD, way 2): every rank calls it at once with its own blocks
of the distributed inputs and outputs (`k.block` tells which) and the whole replicated ones; the
kernel exchanges what the ranks need itself. `LaunchedKernel` (way 1, `compile("mpi", ranks=4)`)
is called like any kernel with whole arrays: it starts `mpiexec`, whose ranks get their blocks from
rank 0, run the same kernel and send their blocks back.

A call either succeeds on every rank or raises the same exception on every rank, naming the ranks
where it went wrong (a bad argument on one rank is seen by all: they compare their arguments with
one collective before anything else).
"""
from __future__ import annotations

import ctypes

import numpy as np

from mascarpone.backends.common.kernel import Kernel
from mascarpone.middleend.errors import ArgumentError, TargetError

#: the counters each rank reports after a call, in the order the kernel gathers them
STATS = ("bytes_sent", "bytes_received", "messages", "messages_received")


class Library:
    """The built kernel, loaded with ctypes (MPI calls happen only in the kernel and its stats)."""

    def __init__(self, path, name):
        self.path = path
        self.lib = ctypes.CDLL(path)
        i64p = ctypes.POINTER(ctypes.c_int64)
        self.argv = getattr(self.lib, f"{name}_argv")
        self.argv.argtypes = [ctypes.POINTER(ctypes.c_void_p), i64p, ctypes.c_int32]
        self.argv.restype = ctypes.c_int32
        self._rows = getattr(self.lib, f"{name}_rows")
        self._rows.argtypes = [ctypes.c_int32, ctypes.c_int64, ctypes.c_int64, i64p, i64p]
        self._rows.restype = ctypes.c_int32
        self._stats = getattr(self.lib, f"{name}_stats")
        self._stats.argtypes = [i64p, ctypes.c_int32]
        self._stats.restype = ctypes.c_int32
        self.set_threads = getattr(self.lib, f"{name}_set_num_threads")
        self.set_threads.argtypes = [ctypes.c_int32]

    def rows(self, argument, rank, nranks, values):
        """(dimension, lo, hi) of the block of argument `argument` rank `rank` holds, or None when every
        rank holds all of it."""
        params = (ctypes.c_int64 * max(len(values), 1))(*values)
        out = (ctypes.c_int64 * 2)()
        dim = self._rows(argument, rank, nranks, params, out)
        return None if dim < 0 else (dim, out[0], out[1])

    def stats(self, nranks):
        """[(status, counters...)] of every rank after the last call."""
        table = (ctypes.c_int64 * (5 * nranks))()
        n = self._stats(table, nranks)
        return [tuple(table[5 * r:5 * r + 5]) for r in range(min(n, nranks))]

    def call(self, arrays, values, comm_handle):
        ptrs = (ctypes.c_void_p * max(len(arrays), 1))(*[a.ctypes.data for a in arrays])
        params = (ctypes.c_int64 * max(len(values), 1))(*values)
        return self.argv(ptrs, params, comm_handle)


def stats_records(table):
    """One dict per rank from the gathered counters."""
    return [dict(rank=r, **dict(zip(STATS, row[1:]))) for r, row in enumerate(table)]


def _world():
    try:
        from mpi4py import MPI
    except ImportError:
        raise TargetError("calling an MPI kernel inside an MPI program needs mpi4py (pip install mpi4py); or "
                          "compile it with ranks=N to have it start mpiexec itself") from None
    return MPI.COMM_WORLD


def _describe(value):
    """What one rank tells the others about an argument."""
    if isinstance(value, np.ndarray):
        flags = value.flags
        return ("array", tuple(value.shape), value.dtype.str, bool(flags.c_contiguous and flags.aligned),
                bool(flags.writeable))
    if isinstance(value, (bool, np.bool_)):
        return ("other", type(value).__name__)
    if isinstance(value, (int, np.integer)):
        return ("int", int(value))
    return ("other", type(value).__name__)


class MPIKernel(Kernel):
    """A kernel of the "mpi" target called inside an MPI program: `k(comm=None, **arguments)`.

    Each rank passes its block of every distributed input and output (rows `k.block(name, rank,
    nranks, ...)` of the distributed dimension) and the whole of the others; sizes may be left out
    where the shapes tell them (a distributed dimension counts the blocks of all ranks). Outputs not
    passed are allocated and returned (this rank's blocks). `comm` is an mpi4py communicator
    (default COMM_WORLD). `k.stats()` gives, for the last call, each rank's bytes and messages sent
    and received by the kernel's exchanges. The kernel keeps its large buffers (the rank's boxes of
    the temporaries) from call to call: calls on one rank must not overlap.
    """

    target = "mpi"

    def __init__(self, lowered, dist, source, library_path, flags, *, num_threads=None):
        super().__init__(lowered)
        self.dist = dist
        self._source = source
        self.flags = list(flags)
        self.library_path = library_path
        self.library = Library(library_path, lowered.name)
        self.num_threads = num_threads
        self._last = []
        self._names = [b.name for b in lowered.arguments]

    def source(self, kind: str = "c") -> str:
        """The generated code: 'c' (C with MPI calls)."""
        if kind == "c":
            return self._source
        raise ValueError(f"unknown source kind {kind!r} for an MPI kernel; use 'c'")

    def stats(self):
        """[{'rank', 'bytes_sent', 'bytes_received', 'messages', 'messages_received'}] of the last call,
        one per rank: what the kernel's own messages carried (not the scatter and gather of a launched
        run)."""
        return [dict(s) for s in self._last]

    def with_ranks(self, ranks, *, hosts=None, timeout=600, workdir=None, repeat=1):
        """The same built kernel as one that starts `ranks` ranks itself on each call (LaunchedKernel);
        `repeat` runs the kernel that many times in each call (for timings: `last_seconds` is the
        median)."""
        return LaunchedKernel(self.lowered, self.dist, self._source, self.library_path, self.flags, ranks=ranks,
                              hosts=hosts, timeout=timeout, num_threads=self.num_threads, workdir=workdir,
                              repeat=repeat)

    def block(self, name, rank, nranks, **sizes):
        """(dimension, lo, hi): the block of argument `name` that rank `rank` of `nranks` holds (indices
        lo <= i < hi of that dimension), or None when every rank holds all of it. Sizes are given by
        keyword, as integers or through whole arrays whose shapes tell them."""
        if name not in self._names:
            raise ArgumentError(f"{self.name} has no argument {name!r}; it has {', '.join(self._names)}")
        shapes = [tuple(sizes[b].shape) if isinstance(sizes.get(b), np.ndarray) else None for b in self._names]
        ints = {k: v for k, v in sizes.items() if not isinstance(v, np.ndarray)}
        values = self._binder.sizes(ints, shapes)
        return self.library.rows(self._names.index(name), rank, nranks, [values[p] for p in self.lowered.params])

    # a call on every rank -------------------------------------------------------------------------------
    def __call__(self, comm=None, **kwargs):
        comm = comm if comm is not None else _world()
        nranks, rank = comm.Get_size(), comm.Get_rank()
        reports = comm.allgather({k: _describe(v) for k, v in kwargs.items()})
        values, problems = self._agree(reports, nranks)
        if problems:
            ranks = sorted(problems)
            detail = "; ".join(f"rank {r}: {problems[r]}" for r in ranks)
            raise ArgumentError(f"{self.name}() got bad arguments on rank{'s' if len(ranks) > 1 else ''} "
                                f"{', '.join(map(str, ranks))} of {nranks}: {detail}")
        ordered = [values[p] for p in self.lowered.params]
        self.check(ordered)
        arrays, outputs = self._arrays(kwargs, rank, nranks, ordered)
        status = self.launch_on(arrays, ordered, comm)
        if status:
            bad = [r for r, row in enumerate(self._table) if row[0]]
            raise MemoryError(f"{self.name}: a temporary buffer could not be allocated on rank(s) "
                              f"{', '.join(map(str, bad))} of {nranks}")
        return outputs[0] if self._single else tuple(outputs)

    def launch_on(self, arrays, values, comm) -> int:
        """Run the kernel on this rank's arrays; the status every rank agrees on."""
        self.library.set_threads(self.num_threads or 0)
        status = self.library.call(arrays, values, comm.py2f())
        self._table = self.library.stats(comm.Get_size())
        self._last = stats_records(self._table)
        return status

    def _agree(self, reports, nranks):
        """The size values and {rank: what is wrong}, computed alike on every rank from all ranks'
        argument reports."""
        problems = {}
        n_in = len(self.lowered.inputs)
        specs = self._binder.specs
        for r, rep in enumerate(reports):
            msgs = []
            unknown = [k for k in rep if k not in self._binder.known]
            if unknown:
                msgs.append(f"unexpected argument(s) {', '.join(map(repr, unknown))}")
            for pos, s in enumerate(specs):
                d = rep.get(s.name)
                if d is None:
                    if pos < n_in:
                        msgs.append(f"the input {s.name!r} is missing")
                elif d[0] != "array":
                    msgs.append(f"{s.name}: expected a numpy array, got {d[1] if d[0] == 'other' else 'an int'}")
                elif len(d[1]) != s.ndim:
                    msgs.append(f"{s.name}: expected {s.ndim} dimension(s), got shape {d[1]}")
                elif np.dtype(d[2]) != s.dtype:
                    msgs.append(f"{s.name}: expected dtype {s.dtype}, got {np.dtype(d[2])}")
                elif pos >= n_in and not (d[3] and d[4]):
                    msgs.append(f"{s.name}: an output array must be C-contiguous, aligned and writeable")
            for p in self.lowered.params:
                d = rep.get(p)
                if d is not None and d[0] != "int":
                    msgs.append(f"parameter {p}: expected an integer")
            if msgs:
                problems[r] = "; ".join(msgs)
        if problems:
            return None, problems
        # shapes as a whole: a distributed dimension adds up the ranks' blocks
        dims = self._distributed_dims()
        per_rank = []
        for r, rep in enumerate(reports):
            shapes = []
            for pos, s in enumerate(specs):
                d = rep.get(s.name)
                if d is None:
                    shapes.append(None)
                    continue
                shape = list(d[1])
                if dims[pos] is not None:
                    parts = [rr.get(s.name) for rr in reports]
                    if any(p is None for p in parts):
                        missing = [k for k, p in enumerate(parts) if p is None]
                        problems[r] = f"{s.name} is distributed but rank(s) {missing} did not pass their block"
                        break
                    shape[dims[pos]] = sum(p[1][dims[pos]] for p in parts)
                shapes.append(tuple(shape))
            else:
                ints = {k: d[1] for k, d in rep.items() if d[0] == "int"}
                try:
                    per_rank.append(self._binder.sizes(ints, shapes))
                except ArgumentError as err:
                    problems[r] = str(err)
        if problems:
            return None, problems
        values = per_rank[0]
        for r, v in enumerate(per_rank):
            if v != values:
                problems[r] = f"sizes {v} differ from rank 0's {values}"
        if problems:
            return None, problems
        ordered = [values[p] for p in self.lowered.params]
        shapes = self._binder.shapes(values)
        for r, rep in enumerate(reports):
            msgs = []
            for pos, s in enumerate(specs):
                d = rep.get(s.name)
                if d is None:
                    continue
                want = list(shapes[pos])
                rows = self.library.rows(pos, r, nranks, ordered)
                if rows is not None:
                    dim, lo, hi = rows
                    want[dim] = hi - lo
                if tuple(want) != tuple(d[1]):
                    msgs.append(f"{s.name}: expected shape {tuple(want)}"
                                f"{' (its block)' if rows is not None else ''}, got {tuple(d[1])}")
            if msgs:
                problems[r] = "; ".join(msgs)
        return values, problems

    def _distributed_dims(self):
        return [p.dim if p.dist is not None else None for p in self.dist.placements]

    def _arrays(self, kwargs, rank, nranks, values):
        """This rank's arrays in argument order (inputs made contiguous, outputs allocated where not
        given) and the outputs."""
        arrays = []
        specs = self._binder.specs
        shapes = None
        for pos, s in enumerate(specs):
            a = kwargs.get(s.name)
            if a is None:
                if shapes is None:
                    shapes = self._binder.shapes(dict(zip(self.lowered.params, values)))
                shape = list(shapes[pos])
                rows = self.library.rows(pos, rank, nranks, values)
                if rows is not None:
                    shape[rows[0]] = rows[2] - rows[1]
                a = (np.zeros if s.zero_init else np.empty)(tuple(shape), s.dtype)
            elif not s.output and not (a.flags.c_contiguous and a.flags.aligned):
                a = np.array(a, order="C", copy=True)
            arrays.append(a)
        # an input given as an output's memory (an array updated in place: Julia's `A` is the input
        # `A_in` and the output `A`) is read from a copy, by the rule of every target; then the outputs
        # the caller gave are zeroed where they start so
        self._binder.separate_given(arrays)
        for s, a in zip(specs, arrays):
            if s.output and s.zero_init and s.name in kwargs:
                a.fill(0)
        return arrays, [a for s, a in zip(specs, arrays) if s.output]

    def launch(self, arrays, values) -> int:
        raise TargetError("an MPI kernel runs on every rank of an MPI program: call it with comm=")


class LaunchedKernel(MPIKernel):
    """A kernel of the "mpi" target that starts its own ranks: `k(**arguments)` takes whole arrays,
    runs `mpiexec -n ranks` (on `hosts` when given) and returns whole outputs; an error on any rank
    raises here, naming the rank (a rank that fails or a run past `timeout` seconds never hangs the
    caller). `k.last_seconds` is the longest time a rank spent in the kernel in the last call (the
    median over `repeat` runs of it in that call)."""

    def __init__(self, lowered, dist, source, library_path, flags, *, ranks, hosts=None, timeout=600,
                 num_threads=None, workdir=None, repeat=1):
        super().__init__(lowered, dist, source, library_path, flags, num_threads=num_threads)
        self.ranks, self.hosts, self.timeout, self.workdir = ranks, hosts, timeout, workdir
        self.repeat = repeat
        self.last_seconds = None

    def __call__(self, **kwargs):
        from .launch import run_job
        arrays, values, outputs = self.bind(kwargs)
        self.check(values)
        result = run_job(self, arrays, values)
        for k, out in enumerate(outputs):
            out[...] = result["outputs"][k]
        self._last = stats_records(result["table"])
        self.last_seconds = result["seconds"]
        bad = [r for r, row in enumerate(result["table"]) if row[0]]
        if bad:
            raise MemoryError(f"{self.name}: a temporary buffer could not be allocated on rank(s) "
                              f"{', '.join(map(str, bad))} of {self.ranks}")
        return outputs[0] if self._single else tuple(outputs)
