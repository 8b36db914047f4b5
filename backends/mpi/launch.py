"""Running a launched kernel: a job folder, `mpiexec` with a time limit, and its failures by rank.

The job folder holds the inputs (`.npy`), the job description and, after the run, the outputs and
every rank's counters. It lies under the cache folder by default (`workdir=` picks another): ranks
on other hosts must see it (a shared file system), as they must see this Python and the kernel's
library, like any program started with mpiexec.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

import numpy as np

from mascarpone.backends.c.compiler import cache_dir
from mascarpone.middleend.errors import RankError

from .toolchain import mpiexec

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker.py")
_RANK_ERROR = re.compile(r"^mascarpone-rank-error (\d+) (.*)$", re.M)
_KILLED = re.compile(r"RANK (\d+) PID \d+ RUNNING AT (\S+)\s*=*\s*(KILLED BY SIGNAL: [^\n=]*|EXIT CODE: \d+)")


def command(ranks, hosts=None) -> list:
    """The mpiexec command line that runs the worker on `ranks` ranks (`hosts`: a hostfile path, or a
    list of host names, for hydra's -f / -hosts)."""
    cmd = [mpiexec(), "-n", str(ranks)]
    if isinstance(hosts, (list, tuple)):
        cmd += ["-hosts", ",".join(hosts)]
    elif hosts:
        cmd += ["-f", os.fspath(hosts)]
    return cmd + [sys.executable, WORKER]


def run_job(kernel, arrays, values) -> dict:
    """Run `kernel` (a LaunchedKernel) on whole `arrays` (argument order) and size `values`; returns
    {'outputs': [arrays], 'table': [per-rank (status, counters)], 'seconds': kernel time}."""
    root = kernel.workdir or os.path.join(os.path.dirname(cache_dir()), "mpi-jobs")
    os.makedirs(root, exist_ok=True)
    jobdir = tempfile.mkdtemp(prefix=f"{kernel.name}-", dir=root)
    try:
        n_in = len(kernel.lowered.inputs)
        args = []
        for k, (b, a) in enumerate(zip(kernel.lowered.arguments, arrays)):
            if k < n_in:
                np.save(os.path.join(jobdir, f"in{k}.npy"), a)
            args.append({"name": b.name, "dtype": a.dtype.str, "shape": list(a.shape), "output": k >= n_in,
                         "zero": bool(getattr(b, "zero_init", False))})
        job = {"library": kernel.library_path, "name": kernel.name, "params": [int(v) for v in values],
               "arguments": args, "threads": int(kernel.num_threads or 0), "repeat": int(kernel.repeat)}
        with open(os.path.join(jobdir, "job.json"), "w") as f:
            json.dump(job, f)
        _run(command(kernel.ranks, kernel.hosts) + [jobdir], kernel)
        with open(os.path.join(jobdir, "result.json")) as f:
            result = json.load(f)
        outputs = [np.load(os.path.join(jobdir, f"out{k}.npy")) for k in range(n_in, len(arrays))]
        return {"outputs": outputs, "table": [tuple(r) for r in result["table"]], "seconds": result["seconds"]}
    finally:
        shutil.rmtree(jobdir, ignore_errors=True)


def _run(cmd, kernel):
    """Run mpiexec; on failure or past the time limit raise RankError naming the ranks."""
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
    except OSError as err:
        raise RankError(f"{kernel.name}: could not start {cmd[0]}: {err}") from None
    try:
        out, err = proc.communicate(timeout=kernel.timeout)
    except subprocess.TimeoutExpired:
        _kill(proc)
        raise RankError(f"{kernel.name}: the run on {kernel.ranks} rank(s) did not finish within "
                        f"{kernel.timeout} s (timeout=); it was stopped") from None
    if proc.returncode == 0:
        return
    raise failure(kernel.name, kernel.ranks, proc.returncode, out + err)


def failure(name, ranks, returncode, text) -> RankError:
    """The RankError for a failed run from what mpiexec and the ranks printed: the ranks that reported
    an error, else those the launcher saw killed or exit, else the whole run."""
    reported = _RANK_ERROR.findall(text)
    if reported:
        ranks_seen = sorted({int(r) for r, _ in reported})
        detail = "; ".join(f"rank {r}: {msg.strip()}" for r, msg in reported)
        return RankError(f"{name}: failed on rank{'s' if len(ranks_seen) > 1 else ''} "
                         f"{', '.join(map(str, ranks_seen))} of {ranks}: {detail}", ranks_seen)
    killed = _KILLED.findall(text)
    if killed:
        ranks_seen = sorted({int(r) for r, _, _ in killed})
        detail = "; ".join(f"rank {r} on {host}: {why.strip().lower()}" for r, host, why in killed)
        return RankError(f"{name}: failed on rank{'s' if len(ranks_seen) > 1 else ''} "
                         f"{', '.join(map(str, ranks_seen))} of {ranks}: {detail}", ranks_seen)
    tail = "\n".join(text.strip().splitlines()[-8:])
    return RankError(f"{name}: mpiexec ended with status {returncode} before any rank reported:\n{tail}")


def _kill(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.communicate()
