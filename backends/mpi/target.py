"""The "mpi" target: a distributed function as C with MPI calls, built by mpicc, run on MPI ranks."""
from __future__ import annotations

from mascarpone.middleend.errors import TargetError
from mascarpone.middleend.targets import Target

from .toolchain import INSTALL, missing


class MPITarget(Target):
    name = "mpi"
    description = "C with MPI + OpenMP per rank, built by mpicc; run inside mpiexec or started with ranks=N"
    options = {
        "ranks": "start this many ranks with mpiexec on each call (default None: the kernel is called by "
                 "every rank of an MPI program, with mpi4py)",
        "hosts": "with ranks: a hostfile path, or a list of host names, for mpiexec",
        "timeout": "with ranks: seconds a call may take before its ranks are stopped (default 600)",
        "workdir": "with ranks: a folder every host sees, for the arrays of a call (default: the cache)",
        "num_threads": "threads of parallel loops per rank (default: the node's cores shared among its ranks)",
        "fast_math": "the compiler's -ffast-math (default False)",
        "fp_contract": "allow a float multiply and add to be one FMA (default True)",
        "arch": "the compiler's -march: 'native' (default) or a CPU name",
    }
    write_options = {"fp_contract": options["fp_contract"]}
    install = INSTALL

    def missing(self):
        lack = missing()
        return None if lack is None else f"the MPI tools ({lack})"

    def compile(self, lowered, **options):
        ranks = options.get("ranks")
        if ranks is not None and (isinstance(ranks, bool) or not isinstance(ranks, int) or ranks < 1):
            raise TargetError(f"target 'mpi': ranks must be a positive integer, got {ranks!r}")
        timeout = options.get("timeout", 600)
        if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0:
            raise TargetError(f"target 'mpi': timeout must be a positive number of seconds, got {timeout!r}")
        from . import compile_mpi
        return compile_mpi(lowered, **options)

    def write(self, lowered, path, **options):
        from . import write_mpi
        return write_mpi(lowered, path, **options)


TARGET = MPITarget()
