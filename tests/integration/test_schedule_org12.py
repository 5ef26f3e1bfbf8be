"""The reduction-schedule patch of OpenFOAM-12 (patches/org-12) on real MPI ranks: reduceTest
compiled against the cached OpenFOAM-12 build, run without a schedule (the patch off: the
stock code path), with one, and with scalar sums along it (reductionScheduleSums 1 from the
working folder's system/controlDict: OpenFOAM-12 has no -opt-switch). Every reduction gives
the result without a schedule: exact for integers, 1e-12 relative for floating point.
Skipped, saying why, without the cached build."""

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from test_schedule_patch import assert_same_results, final_field, iterations, write_schedule

from cases import Prepared
from conftest import PYTHON, org12_env
from localsite import reducetest
from topofoam import switches


def run_ok(ranks, folder, **kwargs) -> tuple[dict, str]:
    done = reducetest.org12_run(ranks, folder, **kwargs)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return reducetest.results(done.stdout), done.stdout


@pytest.mark.parametrize("ranks", [2, 3, 4, 7, 8])
def test_reductions_along_the_schedule_equal_stock_on_openfoam12(ranks, tmp_path):
    org12_env()
    schedule, edges = write_schedule(ranks, tmp_path)
    stock, log = run_ok(ranks, tmp_path / "stock")
    assert "reductionSchedule" not in log
    assert stock["nProcs"] == [str(ranks)]

    scheduled, log = run_ok(ranks, tmp_path / "schedule", schedule=schedule)
    assert_same_results(stock, scheduled)
    assert f'reductionSchedule: "{schedule}" for {ranks} ranks, edges by level' in log
    assert f"inter-node edges {edges[3]}" in log
    assert "scalar sum/min reductions follow the" not in log

    with_sums, log = run_ok(ranks, tmp_path / "sums", schedule=schedule, sums=True)
    assert_same_results(stock, with_sums)
    assert "reductionSchedule: scalar sum/min reductions follow the" in log


def _prepared(case: str, env: dict, tmp_path) -> Path:
    out = subprocess.run(
        [PYTHON, "-m", "cases", "prepare", case, "--size", "ci", "-n", "3", "--out", "c"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return tmp_path / "c"


@pytest.mark.parametrize("case,fields", [("pitzDaily", ("U", "p")), ("laplacianFoam", ("T",))])
def test_solver_with_schedule_equals_stock_on_openfoam12(case, fields, tmp_path):
    """foamRun (incompressibleFluid, GAMG) and the legacy laplacianFoam (plain CG) on 3 ranks:
    with the schedule and scalar sums along it, the same iterations every step and final
    fields within 1e-8 of the run without. The sums are switched on in the case's controlDict,
    which OpenFOAM-12 merges into its switches from the working folder (debug::controlDict
    reads ./system/controlDict), so each run starts in its case."""
    env = org12_env()
    stock = _prepared(case, env, tmp_path)
    scheduled = tmp_path / "scheduled"
    shutil.copytree(stock, scheduled)
    switches.set_in_case(scheduled, {"reductionScheduleSums": 1})
    schedule, _ = write_schedule(3, tmp_path)
    solver = Prepared.load(stock).solver

    def run(folder, **kwargs):
        done = reducetest.org12_mpirun(3, [solver, "-parallel"], cwd=folder, **kwargs)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        return done.stdout

    plain, ours = run(stock), run(scheduled, schedule=schedule)
    assert "reductionSchedule" not in plain
    assert f'reductionSchedule: "{schedule}" for 3 ranks' in ours
    assert "scalar sum/min reductions follow the schedule" in ours
    assert iterations(ours) == iterations(plain) != []
    end = max((p.name for p in (stock / "processor0").iterdir() if p.name != "constant"), key=float)
    for field in fields:
        a, b = final_field(stock, end, field), final_field(scheduled, end, field)
        np.testing.assert_allclose(b, a, rtol=1e-8, atol=1e-12 * np.abs(a).max(), err_msg=field)
