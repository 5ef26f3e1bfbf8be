"""Seed 001's optimizations in the patched OpenFOAM (patches/esi-v1912 0004-0006), run for
real on 2 ranks: what they remove (MPI calls counted by the PMPI interposer), and that the
results stay those of stock OpenFOAM.

Counts per time step or per iteration come from two runs that differ only in the number of
steps or iterations: set-up calls cancel."""

import re
import shutil
import subprocess

import numpy as np
import pytest
from foamlib import FoamFile

from conftest import PYTHON, REPO, foam_env
from topofoam.jobs import mpicount, solvers
from topofoam.results import fields


@pytest.fixture(scope="module")
def patched():
    """Environment with the patched libraries and interFoam first (built once, cached)."""
    from localsite import openfoam

    lib = openfoam.ensure_built("patched")
    env = foam_env()
    env["LD_LIBRARY_PATH"] = f"{lib}:{env['LD_LIBRARY_PATH']}"
    env["PATH"] = f"{lib.parent / 'bin'}:{env['PATH']}"
    return env


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return mpicount.build(tmp_path_factory.mktemp("mpicount"))


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    """Prepared cases (cached by the cases package), copied per test."""
    root = tmp_path_factory.mktemp("prepared")
    made = {}

    def get(case, steps, converge=False):
        key = (case, steps, converge)
        if key not in made:
            dest = root / f"{case}-{steps}-{int(converge)}"
            cmd = [
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
            ] + (["--converge"] if converge else [])
            done = subprocess.run(
                cmd, cwd=REPO, env=foam_env(), capture_output=True, text=True, timeout=900
            )
            assert done.returncode == 0, done.stderr[-2000:]
            made[key] = dest
        return made[key]

    return get


def run(env, lib, case, dest, solver, *opts):
    """The solver on 2 ranks in a copy of case; (MPI calls, log)."""
    shutil.copytree(case, dest)
    out = dest / "counts"
    run_env = dict(env, **mpicount.preload(lib, out))
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
            "-x",
            "PATH",
            solver,
            "-parallel",
            "-case",
            str(dest),
            *opts,
        ],
        env=run_env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    return mpicount.read(out, ranks=2), done.stdout


def set_iterations(case, names, iterations):
    solution = FoamFile(case / "system" / "fvSolution")
    for name in names:
        solution["solvers", name, "minIter"] = iterations
        solution["solvers", name, "maxIter"] = iterations


OPT_MULES = ("-opt-switch", "mulesNeighbourExchange=1")


# -- optMULES ---------------------------------------------------------------------------


def test_optmules_removes_the_size_exchange(patched, lib, cases, tmp_path):
    """damBreak2D (nLimiterIter 3): stock MULES makes MPI_Alltoall calls on every step,
    the neighbour-only exchange none after set-up."""
    per_step = {}
    for name, opts in (("stock", ()), ("optMULES", OPT_MULES)):
        calls = {}
        for steps in (2, 4):
            got, log = run(
                patched,
                lib,
                cases("damBreak2D", steps),
                tmp_path / f"{name}{steps}",
                "interFoam",
                *opts,
            )
            calls[steps] = got.get("MPI_Alltoall", 0)
            assert ("MULES: limiter exchanged with neighbouring processors only" in log) == (
                name == "optMULES"
            )
        per_step[name] = (calls[4] - calls[2]) / 2 / 2  # 2 more steps, per rank
    assert per_step["stock"] >= 3, per_step
    assert per_step["optMULES"] == 0, per_step


def test_optmules_fields_equal_stock(patched, lib, cases, tmp_path):
    """The same final fields to 1e-12 relative (a min of the same numbers)."""
    case = cases("damBreak2D", 4)
    run(patched, lib, case, tmp_path / "stock", "interFoam")
    run(patched, lib, case, tmp_path / "opt", "interFoam", *OPT_MULES)
    diffs = fields.differences(tmp_path / "stock", tmp_path / "opt")
    assert {"alpha.water", "p_rgh", "U"} <= set(diffs)
    assert max(diffs.values()) <= 1e-12, diffs


# -- PiPePCG and RePiPePCG ----------------------------------------------------------------


@pytest.mark.parametrize("solver", ["PiPePCG", "RePiPePCG"])
def test_pipelined_pcg_makes_no_blocking_reduction_per_iteration(
    patched, lib, cases, tmp_path, solver
):
    """hpcCavity3D, p at fixed iterations: 4 more iterations per solve add no MPI_Allreduce
    (stock PCG adds 3 per iteration: test_mpicount.py) and one MPI_Iallreduce each; RePiPePCG
    tests each iteration's reduction at least once."""
    runs = {}
    for k in (5, 9):
        case = tmp_path / f"case{k}"
        shutil.copytree(cases("hpcCavity3D", 2), case)
        assert solvers.use(case, solver) == ["p"]  # pFinal takes $p
        set_iterations(case, ("p", "pFinal"), k)
        calls, log = run(patched, lib, case, tmp_path / f"run{k}", "icoFoam")
        solves = re.findall(rf"DIC{solver}:\s+Solving for p,.*No Iterations (\d+)", log)
        assert solves and all(int(n) == k for n in solves), log[-2000:]
        runs[k] = calls, len(solves)
    (c5, n5), (c9, n9) = runs[5], runs[9]
    assert n5 == n9
    extra = lambda name: (c9.get(name, 0) - c5.get(name, 0)) / 2 / (n5 * 4)  # noqa: E731
    assert extra("MPI_Allreduce") == 0, (c5, c9)
    assert extra("MPI_Iallreduce") == 1, (c5, c9)
    # RePiPePCG tests the reduction between chunks until it has completed: at least once per
    # iteration on each rank, more when the reduction takes longer, so how many varies from run
    # to run. PiPePCG never tests.
    for k, (calls, solves) in runs.items():
        tests = calls.get("MPI_Test", 0)
        if solver == "RePiPePCG":
            assert tests >= 2 * solves * k, (k, calls)
        else:
            assert tests == 0, (k, calls)


def pressure_with(case, dest, solver, preconditioner):
    """A copy of case whose pressure equations use solver (PCG first where it had GAMG)."""
    shutil.copytree(case, dest)
    solution = FoamFile(dest / "system" / "fvSolution")
    for name in ("p", "pFinal"):
        if name in solution["solvers"] and solution["solvers"][name].get("solver") == "GAMG":
            solution["solvers", name, "solver"] = "PCG"
    solvers.use(dest, solver, preconditioner)
    return dest


@pytest.mark.parametrize("preconditioner", ["DIC", "diagonal"])
@pytest.mark.parametrize("case, app", [("hpcCavity3D", "icoFoam"), ("pitzDaily", "simpleFoam")])
def test_pipelined_pcg_fields_and_iterations_match_pcg(
    patched, lib, cases, tmp_path, case, app, preconditioner
):
    """Final fields within 1e-6 relative of PCG's (fixed iterations), and, solving to the
    case's tolerances, iteration counts within 10% of PCG's."""
    fixed = cases(case, 5)
    converged = cases(case, 5, converge=True)
    for solver in ("PCG", "PiPePCG", "RePiPePCG"):
        run(
            patched,
            lib,
            pressure_with(fixed, tmp_path / f"f-{solver}", solver, preconditioner),
            tmp_path / f"fr-{solver}",
            app,
        )
    for solver in ("PiPePCG", "RePiPePCG"):
        diffs = fields.differences(tmp_path / "fr-PCG", tmp_path / f"fr-{solver}")
        assert max(diffs.values()) <= 1e-6, (solver, diffs)
    iterations = {}
    for solver in ("PCG", "PiPePCG", "RePiPePCG"):
        _, log = run(
            patched,
            lib,
            pressure_with(converged, tmp_path / f"c-{solver}", solver, preconditioner),
            tmp_path / f"cr-{solver}",
            app,
        )
        found = re.findall(rf"{solver}:\s+Solving for p,.*No Iterations (\d+)", log)
        assert found, log[-2000:]
        iterations[solver] = sum(map(int, found))
    for solver in ("PiPePCG", "RePiPePCG"):
        assert abs(iterations[solver] - iterations["PCG"]) <= 0.1 * iterations["PCG"], iterations


@pytest.mark.parametrize("solver", ["PiPePCG", "RePiPePCG"])
def test_not_converging_is_reported_as_pcg_reports_it(patched, lib, cases, tmp_path, solver):
    """maxIter reached short of the tolerance: the same iteration count and a final residual
    above the tolerance, as PCG prints; the run still ends normally."""
    logs = {}
    for name in ("PCG", solver):
        case = tmp_path / f"case-{name}"
        shutil.copytree(cases("hpcCavity3D", 2), case)
        solution = FoamFile(case / "system" / "fvSolution")
        for entry in ("p", "pFinal"):
            solution["solvers", entry, "solver"] = name
            solution["solvers", entry, "minIter"] = 0
            solution["solvers", entry, "maxIter"] = 3
            solution["solvers", entry, "tolerance"] = 1e-30
        _, logs[name] = run(patched, lib, case, tmp_path / f"run-{name}", "icoFoam")
    pattern = (
        r"(\w+):\s+Solving for p, Initial residual = (\S+), Final residual = (\S+), "
        r"No Iterations (\d+)"
    )
    stock = re.findall(pattern, logs["PCG"])
    ours = re.findall(pattern, logs[solver])
    assert len(stock) == len(ours) > 0
    for (_, init0, final0, n0), (name, init1, final1, n1) in zip(stock, ours):
        assert name == f"DIC{solver}" and n0 == n1 == "3"
        assert float(final1) > 1e-30
        assert np.isclose(float(init0), float(init1), rtol=1e-6)
        assert np.isclose(float(final0), float(final1), rtol=1e-3)
