"""The three ways to run a distributed kernel: started from Python (mpiexec under the hood), called by
every rank of an MPI program (mpi4py), and as C linked into an MPI program; failures on one rank."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import mascarpone as ms
from mascarpone.backends.mpi.launch import command, failure
from mascarpone.backends.mpi.toolchain import mpicc, mpiexec

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "benchmarks"))
import mpi_programs  # noqa: E402
from test_copy_in import two_outputs  # noqa: E402

pytestmark = pytest.mark.skipif(any(not t.available for t in ms.targets() if t.name == "mpi"),
                                reason="needs the MPI tools (pip install 'mascarpone[mpi]')")


def spmd(ranks, case):
    """Run tests/mpi_spmd_program.py CASE on `ranks` ranks; {rank: what it printed after `[rank R] `}."""
    run = subprocess.run([mpiexec(), "-n", str(ranks), sys.executable, str(HERE / "mpi_spmd_program.py"), case],
                         capture_output=True, text=True, timeout=240)
    lines = dict(re.findall(r"\[rank (\d+)\] ([^\n]*?)(?=\[rank \d+\] |\n|$)", run.stdout))
    return run, {int(r): text for r, text in lines.items()}


@pytest.mark.parametrize("case,ranks", [("blur", 3), ("heat2d", 2)])
def test_every_rank_of_an_mpi_program_calls_the_kernel_on_its_blocks(case, ranks):
    run, said = spmd(ranks, case)
    assert run.returncode == 0, run.stderr[-2000:]
    assert sorted(said) == list(range(ranks))
    assert all(text.startswith(f"ok {case}") for text in said.values()), said
    # the end ranks have one neighbour, the others two
    sent = [int(said[r].split()[-1]) for r in range(ranks)]
    assert sent[0] == sent[-1] > 0 and all(s == 2 * sent[0] for s in sent[1:-1])


def test_a_bad_block_on_one_rank_raises_on_every_rank_naming_it():
    run, said = spmd(3, "bad")
    assert run.returncode == 0, run.stderr[-2000:]   # every rank caught it: none waits for the others
    assert sorted(said) == [0, 1, 2]
    for text in said.values():
        assert text.startswith("ArgumentError: blur() got bad arguments on rank 2 of 3"), text
        assert "img: expected shape (7, 16) (its block), got (6, 16)" in text


C_PROGRAM = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include "blur.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, nranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    const int64_t H = 29, W = 13;
    int64_t params[2] = {H, W}, in[2], out[2];
    if (blur_rows(0, rank, nranks, params, in) != 0 || blur_rows(1, rank, nranks, params, out) != 0) return 2;
    float *img = malloc(sizeof(float) * (in[1] - in[0]) * W);
    float *res = malloc(sizeof(float) * (out[1] - out[0]) * W + 1);
    for (int64_t y = in[0]; y < in[1]; y++)
        for (int64_t x = 0; x < W; x++) img[(y - in[0]) * W + x] = (float)((y * 31 + x * 17) % 101) / 100.0f;
    if (blur(img, res, H, W, MPI_COMM_WORLD) != 0) return 3;
    int count = (int)((out[1] - out[0]) * W), *counts = malloc(sizeof(int) * nranks), *at = malloc(sizeof(int) * nranks);
    MPI_Gather(&count, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    float *all = rank == 0 ? malloc(sizeof(float) * H * W) : NULL;
    if (rank == 0) for (int r = 0, k = 0; r < nranks; k += counts[r++]) at[r] = k;
    MPI_Gatherv(res, count, MPI_FLOAT, all, counts, at, MPI_FLOAT, 0, MPI_COMM_WORLD);
    int64_t stats[5 * 8];
    int n = blur_stats(stats, 8);
    if (rank == 0) {
        FILE *f = fopen(argv[1], "wb");
        fwrite(all, sizeof(float), H * W, f);
        fclose(f);
        for (int r = 0; r < n; r++) printf("rank %d sent %lld\n", r, (long long)stats[5 * r + 1]);
    }
    MPI_Finalize();
    return 0;
}
"""


def test_c_source_links_into_an_mpi_program(tmp_path):
    prog = mpi_programs.blur()
    paths = prog.function.compile_to_c(tmp_path / "blur.c", target="mpi", fp_contract=False)
    assert [os.path.basename(p) for p in paths] == ["blur.c", "blur.h"]
    header = (tmp_path / "blur.h").read_text()
    assert "MPI_Comm comm" in header and "blur_rows" in header and "blur_stats" in header
    (tmp_path / "main.c").write_text(C_PROGRAM)
    exe = tmp_path / "main"
    subprocess.run([mpicc(), "-std=c99", "-O2", "-fopenmp", "-ffp-contract=off", "-I", str(tmp_path),
                    str(tmp_path / "main.c"), paths[0], "-o", str(exe), "-lm"], check=True, timeout=180)
    result = tmp_path / "out.bin"
    run = subprocess.run([mpiexec(), "-n", "3", str(exe), str(result)], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    y, x = np.mgrid[0:29, 0:13]
    img = (((y * 31 + x * 17) % 101) / 100).astype(np.float32)
    got = np.fromfile(result, np.float32).reshape(29, 13)
    np.testing.assert_allclose(got, prog.reference({"img": img}), rtol=1e-6)
    assert "rank 1 sent 104" in run.stdout   # two rows of 13 floats, one to each neighbour


def test_launched_run_reports_a_crashed_rank_without_hanging():
    """What mpiexec prints when a rank dies becomes a RankError naming it."""
    text = ("===================================================================================\n"
            "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n"
            "=   RANK 2 PID 4242 RUNNING AT node7\n"
            "=   KILLED BY SIGNAL: 9 (Killed)\n"
            "===================================================================================\n")
    err = failure("blur", 4, 137, text)
    assert isinstance(err, ms.RankError)
    assert err.ranks == (2,) and "rank 2 on node7: killed by signal: 9 (killed)" in str(err)
    reported = failure("blur", 3, 1, "mascarpone-rank-error 1 OSError: cannot open the library\n")
    assert reported.ranks == (1,) and "rank 1: OSError: cannot open the library" in str(reported)


def test_launched_run_past_its_timeout_is_stopped(monkeypatch, tmp_path):
    """A run that does not finish in time is stopped and reported (here the ranks wait for input that
    never comes: an mpiexec whose worker blocks)."""
    prog = mpi_programs.cvt_color()
    k = prog.function.compile("mpi").with_ranks(2, timeout=3)
    slow = tmp_path / "slow.py"
    slow.write_text("import time\ntime.sleep(60)\n")
    monkeypatch.setattr("mascarpone.backends.mpi.launch.WORKER", str(slow))
    with pytest.raises(ms.MascarponeError, match="did not finish within 3 s"):
        k(**prog.inputs(4, 4, np.random.default_rng(0)))


def test_hosts_go_to_mpiexec():
    assert command(4, ["a", "b"])[1:5] == ["-n", "4", "-hosts", "a,b"]
    assert command(2, "hosts.txt")[1:5] == ["-n", "2", "-f", "hosts.txt"]


def test_a_host_that_cannot_be_reached_fails_the_call():
    prog = mpi_programs.nb()
    k = prog.function.compile("mpi").with_ranks(2, hosts=["nosuchhost.invalid"], timeout=60)
    with pytest.raises(ms.MascarponeError, match="(?s)mpiexec ended with status .*nosuchhost"):
        k(**prog.inputs(4, 4, np.random.default_rng(0)))


def test_arrays_that_share_memory_follow_the_rule_of_every_target():
    """A kernel called on one rank applies the overlap rule the other targets' calls apply
    (backends/common/arguments.py): outputs given as one array are refused, and an input given as an
    output's memory is read before that output is written."""
    kernel = two_outputs().compile("mpi")
    x = np.random.default_rng(3).random(64)
    shared = np.empty(64)
    with pytest.raises(ms.ArgumentError, match="outputs a and b share memory"):
        kernel(a_in=x, a=shared, b=shared)
    y, other = x.copy(), np.empty(64)
    kernel(a_in=y, a=other, b=y)
    np.testing.assert_array_equal(other, x * 2.0)
    np.testing.assert_array_equal(y, x + 1.0)
