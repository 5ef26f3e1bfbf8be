"""A run killed with SIGKILL leaves its job scripts, mpirun and solver ranks computing; the
next ./bench run stops them before it times anything, and refuses to share the folder with
a run that is still going on."""

import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from cases import CASES
from conftest import PYTHON, REPO, bench_cli, free_port
from localsite import strays

SOLVERS = {"mpirun", "simpleFoam", "icoFoam", "interFoam", "laplacianFoam", "orted"}


def start_run(env, *reframe_args):
    return subprocess.Popen(
        [
            PYTHON,
            "-m",
            "localsite.cli",
            "run",
            "--partition",
            "cpu",
            "--tag",
            "fast",
            *(["--", *reframe_args] if reframe_args else []),
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def kill_bench_and_reframe(bench):
    """SIGKILL ./bench and its ReFrame, as a crash or 'kill -9' would: they cannot stop what
    they started, and the job goes on."""
    for pid in [bench.pid] + [
        int(p.name)
        for p in Path("/proc").iterdir()
        if p.name.isdigit() and _parent(int(p.name)) == bench.pid
    ]:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    bench.wait()


def _parent(pid):
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def wait_for_solvers(stage, timeout=600):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        running = [s for s in strays.find(stage) if s.name in SOLVERS]
        if running:
            return running
        time.sleep(0.5)
    pytest.fail(f"no solver started under {stage} within {timeout} s")


@pytest.fixture
def env(tmp_path):
    return dict(
        os.environ,
        TOPOFOAM_RESULTS=str(tmp_path / "results"),
        TOPOFOAM_RUN=str(tmp_path / "run"),
        TOPOFOAM_SLURMCTLD_PORT=str(free_port()),
        TOPOFOAM_SLURMD_PORT=str(free_port()),
    )


def test_a_killed_runs_solvers_are_stopped_before_the_next_run_times(env, tmp_path):
    stage = tmp_path / "results" / "reframe" / "stage"
    # A case whose solver runs for a while (216,000 cells), so that it is still computing.
    first = start_run(env, "-n", "cavity3D", "-S", "PreparedCase.size=small")
    try:
        wait_for_solvers(stage)
    finally:
        kill_bench_and_reframe(first)
    time.sleep(1)
    left = strays.find(stage)
    assert {s.name for s in left} & SOLVERS, "the kill left no solver behind to test with"

    done = bench_cli("run", "--partition", "cpu", "--tag", "fast", env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    said = [line for line in done.stdout.splitlines() if "earlier, killed run" in line]
    assert len(said) == 1 and said[0].startswith("bench: stopped "), done.stdout[:2000]
    assert said[0].endswith("before timing anything")
    # nothing of the first run is computing any more (the second run's own are done too)
    assert [s for s in strays.find(stage) if s.pid in {p.pid for p in left}] == []


def test_a_run_still_going_on_is_not_killed_but_named(env, tmp_path):
    stage = tmp_path / "results" / "reframe" / "stage"
    first = start_run(env)
    try:
        wait_for_solvers(stage)
        done = bench_cli("run", "--partition", "cpu", "--tag", "fast", env=env)
        assert done.returncode == 2
        assert done.stderr.startswith(
            f"bench: another run of the suite is going on in {tmp_path / 'results'} "
            f"(./bench run, pid {first.pid}) -- wait for it, stop it, or give this run its "
            f"own folder with TOPOFOAM_RESULTS"
        ), done.stderr
        assert first.poll() is None  # untouched
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
        strays.stop(strays.find(stage))


def passed_rows(results):
    """Passed rows of every check on cpu: the cases and the preparations they used."""
    logs = (results / "perflogs" / "local" / "cpu").glob("*.log")
    return sum("|pass|" in line for log in logs for line in log.read_text().splitlines()[1:])


def passed_case_runs(results):
    path = results / "perflogs" / "local" / "cpu" / "CaseRun.log"
    if not path.exists():
        return 0
    return sum("|pass|" in line for line in path.read_text().splitlines()[1:])


def test_resume_reruns_what_did_not_pass_and_never_claims_what_did_not_run(env, tmp_path):
    """A run killed after some cases passed: --resume reruns only the others (the ones that
    never ran included), reports all of them, and a second --resume has nothing left."""
    results = tmp_path / "results"
    first = start_run(env)
    try:
        deadline = time.monotonic() + 600
        while passed_case_runs(results) < 2 and time.monotonic() < deadline:
            time.sleep(0.5)
        assert passed_case_runs(results) >= 2, "no case passed before the kill"
    finally:
        kill_bench_and_reframe(first)
        time.sleep(1)
    before = passed_case_runs(results)
    before_rows = passed_rows(results)
    assert before < len(CASES), "every case passed before the kill: nothing to resume"

    done = bench_cli("run", "--resume", env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    said = next(line for line in done.stdout.splitlines() if "--resume" in line)
    passed = int(re.search(r"local:cpu: (\d+) test case\(s\) passed", said).group(1))
    assert passed == before_rows  # the cases and the preparations they used
    # exactly the cases that had not passed ran now (each with its preparation), and passed
    rerun = 2 * (len(CASES) - before)
    assert f"  local:cpu: {rerun}/{rerun} test cases passed" in done.stdout, done.stdout[-2000:]
    assert passed_case_runs(results) == len(CASES)

    again = bench_cli("run", "--resume", env=env)
    assert again.returncode == 0, again.stdout[-2000:]
    assert "local:cpu: nothing left to rerun: what it selects passed before" in again.stdout


def test_restoring_a_session_whose_stage_folders_are_gone(tmp_path):
    """ReFrame's --restore-session of a run whose stage folders were removed says which file
    it lacks, in one line, and runs nothing; it never reports the old results as new."""
    env = dict(os.environ, TOPOFOAM_RESULTS=str(tmp_path), TOPOFOAM_RUN=str(tmp_path / "run"))
    subprocess.run([PYTHON, "-m", "localsite.facts"], cwd=REPO, env=env, check=True)
    reframe = [str(Path(PYTHON).parent / "reframe"), "-C", "site-configs/local.py"]
    first = subprocess.run(
        [*reframe, "-c", "reframe/p2p.py", "-r", "--system", "local:cpu"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert first.returncode == 0, first.stdout[-2000:]
    [report] = (tmp_path / "reframe" / "reports").glob("*.json")
    for folder in ("stage", "output"):
        shutil.rmtree(tmp_path / "reframe" / folder, ignore_errors=True)
    again = subprocess.run(
        [*reframe, "-c", "reframe/p2p.py", f"--restore-session={report}", "-r",
         "--system", "local:cpu", "-n", "PingPongRun"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    text = again.stdout + again.stderr
    assert again.returncode != 0 and "Traceback" not in text
    assert re.search(
        r"could not restore testcase .*No such file or directory: .*rfm_testcase", text
    )
    assert "PASSED" not in text
