"""The PMPI interposer counts the MPI calls of real OpenFOAM runs (2 ranks, Debian's v1912).

Counts per time step and per solver iteration come from two runs that differ only in their
step count: the difference holds the steady per-step calls (set-up and the first step's
calls cancel). They are the baseline seed 001's optimizations remove: stock MULES exchanges
message sizes with an MPI_Alltoall on every limiter iteration, stock PCG makes three
blocking reductions per iteration (two dot products and the residual)."""

import re
import shutil
import subprocess

import pytest

from conftest import PYTHON, REPO, foam_env
from topofoam.jobs import mpicount


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return mpicount.build(tmp_path_factory.mktemp("mpicount"))


def prepare(case, steps, dest):
    done = subprocess.run(
        [
            PYTHON,
            "-m",
            "cases",
            "prepare",
            case,
            "--size",
            "ci",
            "-n",
            "2",
            "--steps",
            str(steps),
            "--out",
            str(dest),
        ],
        cwd=REPO,
        env=foam_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return dest


def counted_run(lib, case_dir, solver):
    out = case_dir / "counts"
    env = dict(foam_env(), **mpicount.preload(lib, out))
    done = subprocess.run(
        [
            "mpirun",
            "-np",
            "2",
            "--oversubscribe",
            "-x",
            "LD_PRELOAD",
            "-x",
            "TOPOFOAM_MPICOUNT_DIR",
            "-x",
            "WM_PROJECT_DIR",
            "-x",
            "LD_LIBRARY_PATH",
            solver,
            "-parallel",
            "-case",
            str(case_dir),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return mpicount.read(out, ranks=2), done.stdout


def test_every_rank_writes_its_counts(lib, tmp_path):
    case = prepare("hpcCavity3D", 2, tmp_path / "case")
    calls, log = counted_run(lib, case, "icoFoam")
    assert "End" in log
    assert calls["MPI_Allreduce"] > 0 and calls.get("MPI_Isend", 0) > 0
    assert len(list((case / "counts").glob("mpicount.*"))) == 2


def with_iterations(case, dest, iterations):
    """A copy of ``case`` whose pressure solves do exactly ``iterations`` iterations."""
    from foamlib import FoamFile

    shutil.copytree(case, dest)
    solution = FoamFile(dest / "system" / "fvSolution")
    for name in ("p", "pFinal"):
        if name in solution["solvers"]:
            solution["solvers", name, "minIter"] = iterations
            solution["solvers", name, "maxIter"] = iterations
    return dest


def test_stock_pcg_makes_three_blocking_reductions_per_iteration(lib, tmp_path):
    """hpcCavity3D solves p with PCG+DIC at fixed iterations: two runs that differ only in
    that count differ by 3 MPI_Allreduce calls per extra iteration (per rank): wA.rA and
    wA.pA, and the residual's gSumMag."""
    case = prepare("hpcCavity3D", 2, tmp_path / "case")
    runs = {}
    for k in (5, 9):
        calls, log = counted_run(lib, with_iterations(case, tmp_path / f"k{k}", k), "icoFoam")
        solves = re.findall(r"DICPCG:\s+Solving for p,.*No Iterations (\d+)", log)
        assert solves and all(int(n) == k for n in solves), solves
        runs[k] = calls["MPI_Allreduce"], len(solves)
    (a5, solves), (a9, solves9) = runs[5], runs[9]
    assert solves == solves9
    per_iteration = (a9 - a5) / 2 / (solves * (9 - 5))
    assert per_iteration == 3, (a5, a9, solves)


def test_stock_mules_exchanges_sizes_every_limiter_iteration(lib, tmp_path):
    """damBreak2D (interFoam, nLimiterIter 3): MPI_Alltoall on every step, not only the
    first: the redundant size exchange optMULES removes."""
    per_run = {}
    for steps in (2, 4):
        case = prepare("damBreak2D", steps, tmp_path / f"s{steps}")
        calls, log = counted_run(lib, case, "interFoam")
        per_run[steps] = calls.get("MPI_Alltoall", 0)
    per_step = (per_run[4] - per_run[2]) / 2 / 2  # 2 more steps, 2 ranks
    assert per_step >= 3, per_run


PEERS = r"""
#include <mpi.h>
int main(int argc, char** argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, x = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    MPI_Request q;
    if (rank == 0)
    {
        for (int r = 1; r < size; r++) MPI_Send(&x, 1, MPI_INT, r, 0, MPI_COMM_WORLD);
        MPI_Send(&x, 1, MPI_INT, 1, 1, half);            /* world rank 2 */
        MPI_Isend(&x, 1, MPI_INT, 3, 2, MPI_COMM_WORLD, &q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        MPI_Send(&x, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD);
    }
    else
    {
        MPI_Recv(&x, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (rank == 2) MPI_Recv(&x, 1, MPI_INT, 0, 1, half, MPI_STATUS_IGNORE);
        if (rank == 3) MPI_Recv(&x, 1, MPI_INT, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Finalize();
    return 0;
}
"""


def test_sends_are_counted_per_destination_in_world_ranks(lib, tmp_path):
    """Point-to-point sends per destination, a split communicator's ranks translated to
    MPI_COMM_WORLD's, MPI_PROC_NULL left out; by host, the messages that crossed nodes."""
    (tmp_path / "peers.c").write_text(PEERS)
    subprocess.run(["mpicc", "-o", str(tmp_path / "peers"), str(tmp_path / "peers.c")], check=True)
    out = tmp_path / "counts"
    env = dict(foam_env(), **mpicount.preload(lib, out))
    done = subprocess.run(
        ["mpirun", "-np", "4", "--oversubscribe", "-x", "LD_PRELOAD", "-x",
         "TOPOFOAM_MPICOUNT_DIR", str(tmp_path / "peers")],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert mpicount.read(out, ranks=4)["MPI_Send"] == 5  # the counts by kind as before
    assert mpicount.peers(out) == {
        ("MPI_Send", 0, 1): 1,
        ("MPI_Send", 0, 2): 2,
        ("MPI_Send", 0, 3): 1,
        ("MPI_Isend", 0, 3): 1,
    }
    across = mpicount.by_host(mpicount.peers(out), ["a", "a", "b", "b"])
    assert across == {"MPI_Send": (3, 1), "MPI_Isend": (1, 0)}
    with pytest.raises(mpicount.CountError, match="the placement has 2 ranks"):
        mpicount.by_host(mpicount.peers(out), ["a", "b"])
