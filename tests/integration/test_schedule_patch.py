"""The reduction-schedule patch (patches/esi-v1912) on real MPI ranks.

The patched libOpenFOAM/libPstream are built once into the cache (12-17 min cold on 2 cores;
seconds warm). One reduceTest binary, compiled against the stock headers and libraries, runs
with the stock libraries and with the patched ones plus a rankmap schedule: every reduction must
give the stock result (exact for integers, 1e-12 relative for floating point).
"""

import re
from pathlib import Path

import numpy as np
import pytest

from localsite import reducetest
from rankmap import graph, mapping, scheduledict, topology
from rankmap.schedule import hierarchical

# 8 cores per node in 2 domains x 2 NUMA nodes: rank counts below 8 leave levels uneven.
MACHINE = "pack:2 numa:2 core:2 pu:1"
FLOATS = ("scalarSum", "scalarMin", "scalarMax", "pairSum", "vectorSum", "vectorMin", "vectorMax")
EXACT = ("nProcs", "labelSum", "labelMin", "labelMax", "boolOr", "boolAnd", "gatherScatterList")


def write_schedule(ranks: int, folder: Path) -> tuple[Path, list[int]]:
    """rankmap's schedule for ``ranks`` ranks on as few 8-core nodes as hold them."""
    nodes = 1 if ranks <= 8 else 2
    placement = mapping.hierarchical(graph.grid(ranks, 1), topology.load(MACHINE), nodes)
    schedule = hierarchical(placement)
    path = scheduledict.write(schedule, folder / f"reductionSchedule.{ranks}", "rankmap")
    return path, schedule.edges_per_level()


def run_ok(ranks, **kwargs) -> tuple[dict, str]:
    done = reducetest.run(ranks, **kwargs)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return reducetest.results(done.stdout), done.stdout


def assert_same_results(stock: dict, other: dict) -> None:
    for name in EXACT:
        assert other[name] == stock[name], name
    for name in FLOATS:
        np.testing.assert_allclose(
            [float(x) for x in other[name]],
            [float(x) for x in stock[name]],
            rtol=1e-12,
            atol=0,
            err_msg=name,
        )


@pytest.mark.parametrize("ranks", [2, 3, 4, 7, 8])
def test_reductions_along_the_schedule_equal_stock(ranks, tmp_path):
    schedule, edges = write_schedule(ranks, tmp_path)
    stock, stock_log = run_ok(ranks, patched=False)
    assert "reductionSchedule" not in stock_log
    assert stock["nProcs"] == [str(ranks)]

    scheduled, log = run_ok(ranks, patched=True, schedule=schedule)
    assert_same_results(stock, scheduled)
    line = (
        f'reductionSchedule: "{schedule}" for {ranks} ranks, edges by level '
        f"(intraNumaNode interNumaNode interNumaDomain interNode) "
        f"4({' '.join(map(str, edges))}), inter-node edges {edges[3]}"
    )
    assert line in log
    assert "scalar sum/min reductions follow the schedule" not in log

    with_sums, log = run_ok(ranks, patched=True, schedule=schedule, sums=True)
    assert_same_results(stock, with_sums)
    assert "scalar sum/min reductions follow the schedule (reductionScheduleSums 1)" in log


def test_patched_without_schedule_is_stock():
    stock, _ = run_ok(4, patched=False)
    patched, log = run_ok(4, patched=True)
    assert patched == stock
    assert "reductionSchedule" not in log


def test_schedule_for_another_rank_count_warns_and_uses_the_stock_tree(tmp_path):
    schedule, _ = write_schedule(4, tmp_path)
    stock, _ = run_ok(3, patched=False)
    other, log = run_ok(3, patched=True, schedule=schedule)
    assert_same_results(stock, other)
    assert re.search(
        rf'Reduction schedule "{re.escape(str(schedule))}" is for 4 ranks, this run '
        r"has 3\s+Using the standard communication tree",
        log,
    )
    assert "reductionSchedule:" not in log


def fatal(done) -> str:
    assert done.returncode != 0
    return done.stdout + done.stderr


def test_malformed_schedule_is_fatal_and_names_file_and_line(tmp_path):
    schedule, _ = write_schedule(4, tmp_path)
    broken = tmp_path / "broken"
    broken.write_text(schedule.read_text().replace("above       4(", "above       4(x "))
    out = fatal(reducetest.run(4, patched=True, schedule=broken))
    assert "FOAM FATAL IO ERROR" in out
    assert "Wrong token type - expected label (int32), found on line 16: word 'x'" in out
    assert f"file: {broken}.above at line 16." in out


def test_inconsistent_tree_is_fatal(tmp_path):
    schedule, _ = write_schedule(4, tmp_path)
    text = schedule.read_text()
    above = re.search(r"above\s+4\((.*?)\);", text).group(1).split()
    bad_above = ["-1"] + ["1" if a == "0" else a for a in above[1:]]
    bad = tmp_path / "bad"
    bad.write_text(text.replace(f"4({' '.join(above)})", f"4({' '.join(bad_above)})", 1))
    out = fatal(reducetest.run(4, patched=True, schedule=bad))
    assert re.search(
        rf'Reduction schedule "{re.escape(str(bad))}": rank \d+ is in \'below\' of '
        r"rank 0 but does not send to it",
        out,
    )


def test_missing_schedule_file_is_fatal(tmp_path):
    out = fatal(reducetest.run(2, patched=True, schedule=tmp_path / "none"))
    assert f'Cannot open the reduction schedule "{tmp_path / "none"}"' in out


def test_a_folder_named_as_the_schedule_is_fatal_and_says_so(tmp_path):
    """IFstream reads a folder as an empty file: without the check, the run stopped at a
    missing 'nProcs' keyword, blaming the schedule's content."""
    out = fatal(reducetest.run(2, patched=True, schedule=tmp_path))
    assert f'The reduction schedule "{tmp_path}" is a directory' in out
    assert "name the file rankmap wrote" in out
    assert "nProcs" not in out


def solver_case(name: str, dest: Path) -> tuple[Path, str, str]:
    """A small case decomposed by SCOTCH into 3 subdomains: (folder, solver, end time)."""
    import gzip
    import shutil
    import subprocess

    from foamlib import FoamFile

    from conftest import foam_env
    from localsite.openfoam import EXAMPLES

    env = foam_env()
    if name == "pitzDaily":
        # 20 SIMPLE iterations, residual control off so both runs do the same work.
        shutil.copytree(EXAMPLES / "incompressible/simpleFoam/pitzDaily", dest)
        solver, end, steps = "simpleFoam", "20", [["blockMesh"]]
        del FoamFile(dest / "system/fvSolution")[("SIMPLE", "residualControl")]
    else:
        # 20 steps of 0.005 s, PCG on T; written at the end (writeControl runTime).
        shutil.copytree(EXAMPLES / "basic/laplacianFoam/flange", dest)
        (dest / "flange.ans").write_bytes(gzip.decompress((dest / "flange.ans.gz").read_bytes()))
        solver, end, steps = (
            "laplacianFoam",
            "0.1",
            [["ansysToFoam", "flange.ans", "-scale", "0.001"]],
        )
    control = FoamFile(dest / "system/controlDict")
    control["endTime"] = float(end)
    control["writeInterval"] = float(end)
    decompose = FoamFile(dest / "system/decomposeParDict")
    decompose["numberOfSubdomains"] = 3
    decompose["method"] = "scotch"
    for cmd in steps + [["decomposePar", "-force"]]:
        done = subprocess.run(
            cmd + ["-case", str(dest)],
            cwd=dest,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stdout[-2000:]
    return dest, solver, end


def iterations(log: str) -> list[tuple[str, str]]:
    return re.findall(
        r"Solving for (\w+), Initial residual = \S+, Final residual = \S+, "
        r"No Iterations (\d+)",
        log,
    )


def final_field(case: Path, end: str, field: str) -> np.ndarray:
    from foamlib import FoamFieldFile

    values = [
        np.atleast_1d(np.asarray(FoamFieldFile(p / end / field).internal_field, dtype=float))
        for p in sorted(case.glob("processor*"), key=lambda p: int(p.name[9:]))
    ]
    return np.concatenate([v.reshape(-1) for v in values])


@pytest.mark.parametrize("name,fields", [("pitzDaily", ("U", "p")), ("flange", ("T",))])
def test_solver_with_schedule_equals_stock(name, fields, tmp_path):
    """Same iterations every step, final fields within 1e-8, scalar sums along the schedule."""
    import shutil

    case, solver, end = solver_case(name, tmp_path / "stock")
    shutil.copytree(case, tmp_path / "scheduled")
    schedule, _ = write_schedule(3, tmp_path)

    stock = reducetest.mpirun(3, [solver, "-case", str(case)], patched=False)
    assert stock.returncode == 0, stock.stdout[-2000:]
    ours = reducetest.mpirun(
        3,
        [solver, "-case", str(tmp_path / "scheduled")],
        patched=True,
        schedule=schedule,
        sums=True,
    )
    assert ours.returncode == 0, ours.stdout[-2000:]
    assert f'reductionSchedule: "{schedule}" for 3 ranks' in ours.stdout
    assert "scalar sum/min reductions follow the schedule" in ours.stdout

    assert iterations(ours.stdout) == iterations(stock.stdout) != []
    for field in fields:
        a, b = final_field(case, end, field), final_field(tmp_path / "scheduled", end, field)
        np.testing.assert_allclose(b, a, rtol=1e-8, atol=1e-12 * np.abs(a).max(), err_msg=field)
