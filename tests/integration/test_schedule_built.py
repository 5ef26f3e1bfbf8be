"""The reduction-schedule series of the flavours built from source on real MPI ranks:
OpenFOAM-12 (patches/org-12) and ESI v2512 (patches/esi-v2512). reduceTest compiled against
the cached build runs without a schedule (the series off: the stock code path), with one, and
with reductions along it (reductionScheduleSums 1: -opt-switch on v2512; OpenFOAM-12 has none
and reads it from the working folder's system/controlDict). Every reduction gives the result
without a schedule: exact for integers, 1e-12 relative for floating point. Skipped, saying
why, without the flavour's cached build."""

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from test_schedule_patch import assert_same_results, final_field, iterations, write_schedule

from cases import Prepared
from conftest import PYTHON, built_env
from localsite import flavours, reducetest
from topofoam.jobs import switches

FLAVOURS = ["org12", "v2512"]
#: The start-up line of the sums switch: OpenFOAM-12's series routes scalar sum/min, v2512's
#: every native all-reduction.
SUMS_LINE = {
    "org12": "reductionSchedule: scalar sum/min reductions follow the schedule",
    "v2512": "reductionSchedule: native all-reductions follow the schedule "
    "(reductionScheduleSums 1)",
}


def run_ok(name, ranks, folder, **kwargs) -> tuple[dict, str]:
    done = reducetest.built_run(name, ranks, folder, **kwargs)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return reducetest.results(done.stdout), done.stdout


@pytest.mark.parametrize("name", FLAVOURS)
@pytest.mark.parametrize("ranks", [2, 3, 4, 7, 8])
def test_reductions_along_the_schedule_equal_stock(name, ranks, tmp_path):
    built_env(name)
    schedule, edges = write_schedule(ranks, tmp_path)
    stock, log = run_ok(name, ranks, tmp_path / "stock")
    assert "reductionSchedule" not in log
    assert stock["nProcs"] == [str(ranks)]

    scheduled, log = run_ok(name, ranks, tmp_path / "schedule", schedule=schedule)
    assert_same_results(stock, scheduled)
    assert f'reductionSchedule: "{schedule}" for {ranks} ranks, edges by level' in log
    assert f"inter-node edges {edges[3]}" in log
    assert SUMS_LINE[name] not in log

    with_sums, log = run_ok(name, ranks, tmp_path / "sums", schedule=schedule, sums=True)
    assert_same_results(stock, with_sums)
    assert SUMS_LINE[name] in log


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


@pytest.mark.parametrize("name", FLAVOURS)
@pytest.mark.parametrize("case,fields", [("pitzDaily", ("U", "p")), ("laplacianFoam", ("T",))])
def test_solver_with_schedule_equals_stock(name, case, fields, tmp_path):
    """pitzDaily (GAMG: foamRun's incompressibleFluid on OpenFOAM-12, simpleFoam on v2512) and
    laplacianFoam (plain CG) on 3 ranks: with the schedule and reductions along it, the same
    iterations every step and final fields within 1e-8 of the run without. OpenFOAM-12 takes
    the switch from the case's controlDict (debug::controlDict reads ./system/controlDict, so
    each run starts in its case); v2512 from -opt-switch."""
    env = built_env(name)
    stock = _prepared(case, env, tmp_path)
    scheduled = tmp_path / "scheduled"
    shutil.copytree(stock, scheduled)
    esi = flavours.get(name).family == "esi"
    if not esi:
        switches.set_in_case(scheduled, {"reductionScheduleSums": 1})
    schedule, _ = write_schedule(3, tmp_path)
    solver = Prepared.load(stock).solver

    def run(folder, extra=(), **kwargs):
        done = reducetest.built_mpirun(name, 3, [solver, "-parallel", *extra], cwd=folder, **kwargs)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        return done.stdout

    plain = run(stock)
    ours = run(
        scheduled,
        ["-opt-switch", "reductionScheduleSums=1"] if esi else [],
        schedule=schedule,
    )
    assert "reductionSchedule" not in plain
    assert f'reductionSchedule: "{schedule}" for 3 ranks' in ours
    assert SUMS_LINE[name] in ours
    assert iterations(ours) == iterations(plain) != []
    end = max((p.name for p in (stock / "processor0").iterdir() if p.name != "constant"), key=float)
    for field in fields:
        a, b = final_field(stock, end, field), final_field(scheduled, end, field)
        np.testing.assert_allclose(b, a, rtol=1e-8, atol=1e-12 * np.abs(a).max(), err_msg=field)
