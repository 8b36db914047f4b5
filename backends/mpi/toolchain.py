"""The MPI tools: `mpicc` and `mpiexec` (from the `mpich` wheel in this environment, or $MPICC,
$MPIEXEC, the PATH), and mpi4py for running kernels inside an MPI program."""
from __future__ import annotations

import importlib.util
import os
import shutil
import sys

INSTALL = "pip install 'mascarpone[mpi]'  (the mpich and mpi4py wheels)"


def _tool(env, name) -> str | None:
    given = os.environ.get(env)
    if given:
        return given
    here = os.path.join(sys.prefix, "bin", name)   # the mpich wheel installs next to this Python
    if os.access(here, os.X_OK):
        return here
    return shutil.which(name)


def mpicc() -> str | None:
    """The MPI C compiler wrapper, or None."""
    return _tool("MPICC", "mpicc")


def mpiexec() -> str | None:
    """The MPI launcher, or None."""
    return _tool("MPIEXEC", "mpiexec")


def has_mpi4py() -> bool:
    return importlib.util.find_spec("mpi4py") is not None


def missing() -> str | None:
    """What this machine lacks to build and run MPI kernels, or None."""
    lacking = [what for what, ok in (("mpicc", mpicc()), ("mpiexec", mpiexec()), ("mpi4py", has_mpi4py()))
               if not ok]
    return ", ".join(lacking) if lacking else None
