"""One rank of a launched MPI kernel: `mpiexec -n R python worker.py JOBDIR`.

Run as a script (it imports only numpy, mpi4py and ctypes). Rank 0 reads the job's whole inputs
from JOBDIR, sends each rank its blocks (the replicated inputs to all), every rank runs the kernel
on its blocks, rank 0 collects the output blocks and writes them to JOBDIR with every rank's
status and message counts. A rank that fails writes one line `mascarpone-rank-error RANK TYPE:
MESSAGE` to stderr and aborts the run (so no rank waits for it).
"""
import ctypes
import json
import os
import sys
import time

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, nranks = comm.Get_rank(), comm.Get_size()


def main(jobdir):
    with open(os.path.join(jobdir, "job.json")) as f:
        job = json.load(f)
    lib = ctypes.CDLL(job["library"])
    name = job["name"]
    i64p = ctypes.POINTER(ctypes.c_int64)
    rows_fn = getattr(lib, f"{name}_rows")
    rows_fn.argtypes = [ctypes.c_int32, ctypes.c_int64, ctypes.c_int64, i64p, i64p]
    rows_fn.restype = ctypes.c_int32
    params = (ctypes.c_int64 * max(len(job["params"]), 1))(*job["params"])

    def rows(k, r):
        out = (ctypes.c_int64 * 2)()
        dim = rows_fn(k, r, nranks, params, out)
        return None if dim < 0 else (dim, out[0], out[1])

    def block_of(whole, k, r):
        dim, lo, hi = rows(k, r)
        return np.ascontiguousarray(whole[(slice(None),) * dim + (slice(lo, hi),)])

    arrays = []
    for k, arg in enumerate(job["arguments"]):
        dtype, shape = np.dtype(arg["dtype"]), tuple(arg["shape"])
        mine = rows(k, rank)
        local = list(shape)
        if mine is not None:
            local[mine[0]] = mine[2] - mine[1]
        if arg["output"]:
            arrays.append((np.zeros if arg["zero"] else np.empty)(tuple(local), dtype))
            continue
        whole = np.load(os.path.join(jobdir, f"in{k}.npy"), mmap_mode="r") if rank == 0 else None
        if mine is None:   # every rank holds all of it
            a = np.ascontiguousarray(whole) if rank == 0 else np.empty(shape, dtype)
            comm.Bcast(a, root=0)
        elif rank == 0:
            for r in range(1, nranks):
                comm.Send(block_of(whole, k, r), dest=r, tag=k)
            a = block_of(whole, k, 0)
        else:
            a = np.empty(tuple(local), dtype)
            comm.Recv(a, source=0, tag=k)
        arrays.append(a)

    run = getattr(lib, f"{name}_argv")
    run.argtypes = [ctypes.POINTER(ctypes.c_void_p), i64p, ctypes.c_int32]
    run.restype = ctypes.c_int32
    getattr(lib, f"{name}_set_num_threads")(ctypes.c_int32(job["threads"]))
    ptrs = (ctypes.c_void_p * max(len(arrays), 1))(*[a.ctypes.data for a in arrays])
    runs = []
    for _ in range(job.get("repeat", 1)):   # the last run's outputs are returned; each run's time kept
        comm.Barrier()
        start = time.perf_counter()
        run(ptrs, params, comm.py2f())
        runs.append(comm.reduce(time.perf_counter() - start, op=MPI.MAX, root=0))
    seconds = sorted(runs)[len(runs) // 2] if rank == 0 else None
    stats_fn = getattr(lib, f"{name}_stats")
    stats_fn.argtypes = [i64p, ctypes.c_int32]
    table = (ctypes.c_int64 * (5 * nranks))()
    stats_fn(table, nranks)

    for k, arg in enumerate(job["arguments"]):
        if not arg["output"]:
            continue
        mine = rows(k, rank)
        if mine is None:
            if rank == 0:
                np.save(os.path.join(jobdir, f"out{k}.npy"), arrays[k])
            continue
        if rank != 0:
            comm.Send(arrays[k], dest=0, tag=1000 + k)
            continue
        whole = np.empty(tuple(arg["shape"]), np.dtype(arg["dtype"]))
        for r in range(nranks):
            dim, lo, hi = rows(k, r)
            part = whole[(slice(None),) * dim + (slice(lo, hi),)]
            if r == 0:
                part[...] = arrays[k]
            else:
                got = np.empty(part.shape, part.dtype)
                comm.Recv(got, source=r, tag=1000 + k)
                part[...] = got
        np.save(os.path.join(jobdir, f"out{k}.npy"), whole)
    if rank == 0:
        with open(os.path.join(jobdir, "result.json"), "w") as f:
            json.dump({"table": [list(table[5 * r:5 * r + 5]) for r in range(nranks)], "seconds": seconds,
                       "runs": runs}, f)


if __name__ == "__main__":
    try:
        main(sys.argv[1])
    except BaseException as err:   # any failure ends the whole run: no rank may wait for this one
        message = str(err).replace("\n", " ")
        sys.stderr.write(f"mascarpone-rank-error {rank} {type(err).__name__}: {message}\n")
        sys.stderr.flush()
        comm.Abort(1)
