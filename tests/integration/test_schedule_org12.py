"""The reduction-schedule patch of OpenFOAM-12 (patches/org-12) on real MPI ranks: reduceTest
compiled against the cached OpenFOAM-12 build, run without a schedule (the patch off: the
stock code path), with one, and with scalar sums along it (reductionScheduleSums 1 from the
working folder's system/controlDict: OpenFOAM-12 has no -opt-switch). Every reduction gives
the result without a schedule: exact for integers, 1e-12 relative for floating point.
Skipped, saying why, without the cached build."""

import pytest
from test_schedule_patch import assert_same_results, write_schedule

from conftest import org12_env
from localsite import reducetest


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
