"""The local Slurm: real munged/slurmctld/slurmd, started and stopped by PID, clear failures."""

import socket
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, as_nobody, needs_root
from localsite.slurm import LocalSlurm, SlurmError, detect_layout

pytestmark = needs_root


@pytest.fixture
def cluster(tmp_path, slurm_ports):
    slurm = LocalSlurm(tmp_path / "slurm")
    yield slurm
    slurm.stop()


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1][0]
    except OSError:
        return False
    return state != "Z"


def test_start_run_job_stop(cluster):
    cluster.start()
    pids = cluster.running()
    assert set(pids) == {"munged", "slurmctld", "slurmd"}

    env = cluster.client_env()
    # The node is declared as hwloc sees this machine.
    cpus = subprocess.run(
        ["sinfo", "-h", "-N", "-o", "%c %z"], env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    layout = detect_layout()
    assert cpus == [
        str(layout.cpus),
        f"{layout.sockets}:{layout.cores_per_socket}:{layout.threads_per_core}",
    ]

    # A real batch job with two tasks, through sbatch and srun.
    out = cluster.root / "job.out"
    subprocess.run(
        [
            "sbatch",
            "--wait",
            "-n",
            "2",
            f"--output={out}",
            "--wrap",
            "srun bash -c 'echo task $SLURM_PROCID on $(hostname)'",
        ],
        env=env,
        check=True,
        capture_output=True,
        timeout=60,
    )
    host = socket.gethostname().split(".")[0]
    assert sorted(out.read_text().split("\n")[:2]) == [f"task 0 on {host}", f"task 1 on {host}"]

    assert sorted(cluster.stop()) == ["munged", "slurmctld", "slurmd"]
    assert not any(alive(pid) for pid in pids.values())
    assert cluster.running() == {}
    assert not list((cluster.root / "pids").glob("*.pid"))


def test_start_is_idempotent(cluster):
    cluster.start()
    first = cluster.running()
    cluster.start()
    assert cluster.running() == first


def test_port_in_use_is_refused(tmp_path, slurm_ports):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", slurm_ports[0]))
        taken.listen()
        slurm = LocalSlurm(tmp_path / "slurm")
        with pytest.raises(
            SlurmError,
            match=rf"port {slurm_ports[0]} for slurmctld is already "
            r"in use .* -- stop it, or choose free ports",
        ):
            slurm.start()
        assert slurm.running() == {}


def test_controller_failure_shows_its_log_and_leaves_nothing_running(tmp_path, slurm_ports):
    # A controller host name that is not this machine: slurmctld refuses to run.
    slurm = LocalSlurm(tmp_path / "slurm", hostname="not-this-host")
    with pytest.raises(SlurmError) as failure:
        slurm.start(timeout=30)
    message = str(failure.value)
    assert message.startswith("slurmctld exited -- see ")
    assert "slurmctld.log; its last lines:" in message
    assert "not-this-host" in message or "not a valid controller" in message
    assert slurm.running() == {}


def test_stop_leaves_a_foreign_process_alone(cluster):
    """A PID file pointing at a process we did not start (recycled PID) is not signalled."""
    cluster.write_config()
    stranger = subprocess.Popen(["sleep", "30"])
    try:
        (cluster.root / "pids" / "slurmd.pid").write_text(f"{stranger.pid}\n")
        assert cluster.running() == {}
        cluster.stop()
        assert stranger.poll() is None
    finally:
        stranger.kill()
        stranger.wait()


def test_cli_refuses_non_root():
    done = as_nobody(
        [str(REPO / ".venv" / "bin" / "python"), "-m", "localsite.cli", "slurm", "start"], cwd=REPO
    )
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "bench: not root -- the local Slurm daemons run as root; run as root (or with sudo), "
        "or use the 'cpu' partition only"
    )
