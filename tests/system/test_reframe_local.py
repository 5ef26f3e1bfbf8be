"""The main job for real: ./bench run drives ReFrame on the local partitions; check its perflog."""

import csv
import os
import re
from pathlib import Path

import pytest

from cases import CASES, background_cells
from conftest import FEWER_STEPS, IS_ROOT, REPO, as_nobody, bench_cli, free_port

PARTITIONS = ["cpu", "slurm", "emu"] if IS_ROOT else ["cpu"]


def expected(name: str) -> tuple[int, int | None, str]:
    """Steps, cells (None where snappyHexMesh decides) and solver of a case at ci size."""
    case = CASES[name]
    size = case.sizes["ci"]
    cells = background_cells(case, size.params) if case.mesher == "blockMesh" else None
    return size.steps, cells, case.solver


@pytest.fixture(scope="module")
def local_run(tmp_path_factory):
    results = tmp_path_factory.mktemp("results")
    env = dict(
        os.environ,
        TOPOFOAM_RESULTS=str(results),
        TOPOFOAM_RUN=str(results / "run"),
        TOPOFOAM_SLURMCTLD_PORT=str(free_port()),
        TOPOFOAM_SLURMD_PORT=str(free_port()),
        TOPOFOAM_EMU_SLURMCTLD_PORT=str(free_port()),
        TOPOFOAM_EMU_SUBNET="10.77.9",
    )
    done = bench_cli("run", *(f"--partition={p}" for p in PARTITIONS), "--tag", "fast", env=env)
    return done, results


def read_perflog(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f, delimiter="|"))


def test_run_passes_and_says_where_results_are(local_run):
    done, results = local_run
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    for partition in PARTITIONS:
        # A preparation fixture and a run per case.
        assert re.search(
            rf"^  local:{partition}: {2 * len(CASES)}/{2 * len(CASES)} test cases "
            rf"passed",
            done.stdout,
            re.M,
        )
    assert f"  perflogs: {results / 'perflogs' / 'local'}" in done.stdout


@pytest.mark.parametrize("partition", PARTITIONS)
def test_perflog_holds_the_solver_log_figures(local_run, partition):
    """One row per case, every column a loggable parameter, values as the solver printed them."""
    _, results = local_run
    rows = read_perflog(results / "perflogs" / "local" / partition / "CaseRun.log")
    by_case = {row["case"]: row for row in rows}
    assert sorted(by_case) == sorted(CASES)
    for case in CASES:
        steps, cells, solver = expected(case)
        row = by_case[case]
        assert row["size"] == "ci"
        if cells is None:  # the motorbike: snappyHexMesh refines its background mesh
            cells = int(row["expected_cells"])
            assert cells > background_cells(CASES[case], CASES[case].sizes["ci"].params)
        assert (row["result"], row["partition"], row["environ"], row["num_tasks"]) == (
            "pass",
            partition,
            "openfoam-v1912",
            "2",
        )
        assert row["timing"] == ("emulated" if partition == "emu" else "measured")
        assert (int(row["expected_steps"]), int(row["expected_cells"]), row["solver"]) == (
            steps,
            cells,
            solver,
        )
        log = (Path(row["outputdir"]) / "rfm_job.out").read_text()
        exec_times = re.findall(r"^ExecutionTime = (\S+) s\s+ClockTime = (\S+) s", log, re.M)
        assert len(exec_times) == steps
        assert float(row["ExecutionTime_value"]) == float(exec_times[-1][0])
        assert float(row["ClockTime_value"]) == float(exec_times[-1][1])
        assert row["seconds_per_step_unit"] == "s/step"
        assert float(row["seconds_per_step_value"]) == pytest.approx(
            float(exec_times[-1][0]) / steps
        )


def test_slurm_stopped_after_the_run(local_run):
    _, results = local_run
    pid_files = list((results / "run" / "slurm" / "pids").glob("*.pid"))
    assert pid_files == []
    assert not (results / "run" / "cluster" / "state.json").exists()


def test_missing_geometry_fails_its_case_clearly(tmp_path):
    """The motorbike's geometry comes from the installation's tutorials: without them its
    preparation fails with the file and the fix, and its run is reported as not run."""
    env = dict(os.environ, TOPOFOAM_RESULTS=str(tmp_path), TOPOFOAM_TUTORIALS=str(tmp_path / "no"))
    done = bench_cli(
        "run",
        "--partition",
        "cpu",
        "--tag",
        "cases",
        "--",
        "-n",
        "CaseRun%prepared.case=motorbike",
        env=env,
    )
    assert done.returncode == 1
    assert (
        "sanity error: python -m cases prepare printed no case folder (see its stderr)"
        in done.stdout
    )
    stderr = next(tmp_path.glob("reframe/stage/local/cpu/*/PreparedCase_*/rfm_job.err"))
    assert stderr.read_text().splitlines()[-1] == (
        f"cases: meshing: {tmp_path}/no/resources/geometry/motorBike.obj.gz is missing "
        f"(TOPOFOAM_TUTORIALS={tmp_path}/no) -- point TOPOFOAM_TUTORIALS at the OpenFOAM "
        f"tutorials, or unset it"
    )
    assert "local:cpu: 0/2 test cases passed" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr


def test_unknown_partition():
    done = bench_cli("run", "--partition", "gpu")
    assert done.returncode == 2
    assert done.stderr == (
        "bench: unknown partition 'gpu' -- choose from cpu, slurm, emu, ompi5 "
        "(site-configs/local.py)\n"
    )


def test_ompi5_partition_only_with_v2512(tmp_path):
    """ompi5 runs the v2512 build on Open MPI 5: asked for with another OpenFOAM, it is
    refused in one line before anything runs."""
    env = dict(os.environ, TOPOFOAM_RESULTS=str(tmp_path))
    done = bench_cli("run", "--partition", "ompi5", env=env)
    assert done.returncode == 2
    assert done.stderr == (
        "bench: partition 'ompi5' runs OpenFOAM v2512 only -- add '--openfoam v2512' (or all)\n"
    )


@pytest.mark.skipif(not IS_ROOT, reason="needs root to switch to an unprivileged user")
@pytest.mark.parametrize("partition", ["slurm", "emu"])
def test_slurm_partitions_need_root(partition):
    done = as_nobody(
        [
            str(REPO / ".venv" / "bin" / "python"),
            "-m",
            "localsite.cli",
            "run",
            "--partition",
            partition,
        ],
        cwd=REPO,
    )
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"bench: partition '{partition}' needs root (its Slurm "
        f"daemons run as root) -- rerun as root, or choose "
        f"'--partition cpu'"
    )


def test_reduction_schedule_check(tmp_path):
    """The patched environment: build fixture (cached), three variants per case, all pass; the
    scheduled runs' logs carry the patch's start-up line."""
    env = dict(os.environ, TOPOFOAM_RESULTS=str(tmp_path))
    done = bench_cli("run", "--partition", "cpu", "--tag", "schedule", env=env, timeout=3600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    # The build, a preparation per case and three variants per case.
    assert "local:cpu: 13/13 test cases passed" in done.stdout
    rows = read_perflog(tmp_path / "perflogs" / "local" / "cpu" / "ReductionScheduleRun.log")
    assert sorted((r["case"], r["variant"], r["result"], r["environ"]) for r in rows) == [
        (case, variant, "pass", "openfoam-v1912-patched")
        for case in ("cavity2D", "laplacianFoam", "pitzDaily")
        for variant in ("global", "global+sums", "standard")
    ]
    for row in rows:
        log = (Path(row["outputdir"]) / "rfm_job.out").read_text()
        scheduled = re.search(r"^reductionSchedule: \S+ for 2 ranks", log, re.M) is not None
        assert scheduled == (row["variant"] != "standard")


@pytest.mark.skipif(not IS_ROOT, reason="the emulated cluster needs root")
def test_multinode_check_on_the_emulated_cluster(tmp_path):
    """1, 2 and 4 nodes x 2 ranks, four variants, srun and mpirun: every rank on the host
    its mapping gives, timings labelled emulated, cores verified only where they can be, the
    MPI calls counted; global+sums takes the scalar sums off MPI_Allreduce."""
    env = dict(
        os.environ,
        TOPOFOAM_RESULTS=str(tmp_path),
        TOPOFOAM_RUN=str(tmp_path / "run"),
        TOPOFOAM_EMU_SLURMCTLD_PORT=str(free_port()),
        TOPOFOAM_EMU_SUBNET="10.77.10",
        TOPOFOAM_FABRIC="none",  # the links as they are: placement and calls, not costs
    )
    done = bench_cli(
        "run", "--partition", "emu", "--tag", "multinode", "--", "-S", FEWER_STEPS,
        env=env, timeout=1800,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    # 24 runs, 3 prepared cases, the patched build and the MPI call counter's build
    assert "local:emu: 29/29 test cases passed" in done.stdout
    logged = read_perflog(tmp_path / "perflogs" / "local" / "emu" / "MultiNodeRun.log")
    # ./bench run reruns a failed run once on emu: its first attempt's row stays in the log
    # (a rank crashed at start-up once in 18, session 21); every combination passes once.
    rows = [r for r in logged if r["result"] == "pass"]
    failed = [(r["variant"], r["launcher_kind"], r["nodes"]) for r in logged if r not in rows]
    assert len(failed) == len(set(failed)) and len(failed) <= 1, failed
    assert sorted((r["variant"], r["launcher_kind"], r["nodes"]) for r in rows) == sorted(
        (v, k, n)
        for v in ("standard", "global", "global+sums", "local+global")
        for k in ("srun", "mpirun")
        for n in ("1", "2", "4")
    )
    for r in rows:
        assert (r["result"], r["timing"], r["expected_steps"]) == ("pass", "emulated", "3")
        # Counted under srun and mpirun alike; v1912 has no node-aware reductions, and
        # global+sums takes its scalar sums (all of icoFoam's all-reduces) off MPI_Allreduce.
        sums = r["variant"] == "global+sums"
        assert (int(r["allreduce_value"]) == 0) == sums and int(r["reduce_value"]) == 0, r
        verified = r["variant"] == "local+global" and r["launcher_kind"] == "mpirun"
        assert r["core_binding"] == ("verified" if verified else "not verifiable on this partition")
        log = (Path(r["outputdir"]) / "rfm_job.out").read_text()
        if r["variant"] != "standard":
            edges = re.search(r"inter-node edges (\d+)", log).group(1)
            assert int(edges) == int(r["nodes"]) - 1
    # The scalar sums along the schedule are point-to-point: fewer all-reduces than global's
    # on the same launch and nodes, where there is more than one rank to reduce over.
    calls = {
        (r["variant"], r["launcher_kind"], r["nodes"]): int(r["allreduce_value"]) for r in rows
    }
    for (variant, kind, nodes), n in calls.items():
        if variant == "global+sums":
            assert n < calls["global", kind, nodes], (kind, nodes, n, calls["global", kind, nodes])
    assert not (tmp_path / "run" / "cluster" / "state.json").exists()


@pytest.mark.skipif(not IS_ROOT, reason="needs root to switch to an unprivileged user")
def test_default_run_as_another_user(tmp_path):
    """Not root: only 'cpu' is chosen, saying why; a build cache it cannot read is refused
    with the folder and the fix, not a traceback."""
    tmp_path.chmod(0o777)
    cache = Path.home() / ".cache" / "topofoam"  # root's: not readable by nobody
    done = as_nobody(
        [str(REPO / ".venv" / "bin" / "python"), "-m", "localsite.cli", "run", "--tag", "fast"],
        cwd=REPO,
        env=dict(os.environ, TOPOFOAM_RESULTS=str(tmp_path / "results"), TOPOFOAM_CACHE=str(cache)),
    )
    assert done.returncode == 1
    assert done.stdout == (
        "bench: not root: partitions 'slurm' and 'emu' left out (their "
        "Slurm daemons run as root); running 'cpu' only\n"
    )
    assert done.stderr.startswith(f"bench: cannot use the build cache {cache} (Permission denied: ")
    assert done.stderr.rstrip().endswith("-- set TOPOFOAM_CACHE to a folder you can write")
    assert "Traceback" not in done.stderr
