"""An MPI program calling distributed kernels on its own blocks (run by tests/test_mpi_ways.py as
`mpiexec -n R python tests/mpi_spmd_program.py CASE`): each rank passes its rows, the kernel
exchanges the halos, rank 0 gathers the blocks and checks them against numpy; it prints one line per
rank, `[rank R] ok ...` or `[rank R] ArgumentError: ...`."""
import sys
from pathlib import Path

import numpy as np
from mpi4py import MPI

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import mpi_programs  # noqa: E402

comm = MPI.COMM_WORLD
rank, nranks = comm.Get_rank(), comm.Get_size()


def rows(a, dim, lo, hi):
    return np.ascontiguousarray(a[(slice(None),) * dim + (slice(lo, hi),)])


def gather(block, dim):
    parts = comm.gather(block, root=0)
    return np.concatenate(parts, axis=dim) if rank == 0 else None


def run(name, height, width):
    """Every rank builds the same inputs, passes its blocks and checks the gathered result."""
    prog = mpi_programs.ALL[name]()
    k = prog.function.compile("mpi")
    inputs = prog.inputs(height, width, np.random.default_rng(7))
    mine = {}
    for key, value in inputs.items():
        if isinstance(value, np.ndarray):
            where = k.block(key, rank, nranks, **inputs)
            mine[key] = value if where is None else rows(value, *where)
        else:
            mine[key] = value
    out = k(comm=comm, **mine)
    dim = k.block(k.lowered.outputs[0].name, rank, nranks, **inputs)[0]
    whole = gather(out, dim)
    stats = k.stats()
    if rank == 0:
        want = prog.reference(inputs)
        got = whole[inputs["T"] % 2] if name == "heat2d" else whole
        assert np.allclose(got, want, rtol=prog.tol, atol=1e-6), f"{name}: wrong result"
    sent = stats[rank]["bytes_sent"]
    print(f"[rank {rank}] ok {name} sent {sent}", flush=True)


def bad_input_on_last_rank():
    """The last rank passes a block one row short: every rank raises the same ArgumentError."""
    prog = mpi_programs.blur()
    k = prog.function.compile("mpi")
    img = np.random.default_rng(3).random((20, 16), dtype=np.float32)
    _, lo, hi = k.block("img", rank, nranks, img=img)
    if rank == nranks - 1:
        hi -= 1
    try:
        k(comm=comm, img=img[lo:hi], H=20)
        print(f"[rank {rank}] no error", flush=True)
    except Exception as err:   # the test reads the type and message
        print(f"[rank {rank}] {type(err).__name__}: {err}", flush=True)


if __name__ == "__main__":
    case = sys.argv[1]
    if case == "bad":
        bad_input_on_last_rank()
    else:
        run(case, 21, 18)
