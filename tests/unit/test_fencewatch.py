"""The fence watcher's reading of slurmd logs (localsite/fencewatch.py); its action on a real
job is tested on the emulated cluster (tests/system/test_cluster.py); its patience with a
controller that does not answer, here, against one that is not there."""

import os
import subprocess
import sys
import time

from conftest import REPO
from localsite.fencewatch import FenceTimeout, LogFollower, pmix_timeout, timeouts

#: Lines as Slurm 22.05's slurmstepd wrote them into an emulated node's slurmd log.
RING = (
    "[2026-12-02T05:44:24.970] [12.0] error:  mpi/pmix_v4: pmixp_coll_ring_reset_if_to: "
    "node1 [0]: pmixp_coll_ring.c:741: 0x7fa5b801fcd0: collective timeout seq=0\n"
)
TREE = (
    "[2026-12-02T05:44:24.026] [7.batch] error:  mpi/pmix_v4: pmixp_coll_tree_reset_if_to: "
    "node3 [2]: pmixp_coll_tree.c:1301: 0x7fe108006260: collective timeout seq=4\n"
)
NOISE = (
    "[2026-12-02T05:44:24.970] [12.0] error:  mpi/pmix_v4: pmixp_coll_log: node1 [0]: "
    "pmixp_coll.c:281: Dumping collective state\n"
    "[2026-12-02T05:43:47.861] [1.0] error: rmdir_recursive: could not open /tmp/x\n"
)


def test_both_collectives_timeouts_are_read_with_their_job_step_and_node():
    assert timeouts(NOISE + RING + TREE) == [
        FenceTimeout("12", "0", "node1"),
        FenceTimeout("7", "batch", "node3"),
    ]


def test_other_pmix_errors_are_not_timeouts():
    assert timeouts(NOISE) == []


def test_a_line_still_being_written_waits_for_its_end(tmp_path):
    (tmp_path / "slurmd-node1.log").write_text(NOISE + RING[:60])
    follower = LogFollower(tmp_path)
    assert timeouts(follower.new_text()) == []
    with open(tmp_path / "slurmd-node1.log", "a") as f:
        f.write(RING[60:])
    assert timeouts(follower.new_text()) == [FenceTimeout("12", "0", "node1")]
    assert follower.new_text() == ""  # read once


def test_the_timeout_is_mpi_confs_or_slurms_default(tmp_path):
    assert pmix_timeout(tmp_path) == "300"
    (tmp_path / "mpi.conf").write_text("PMIxTimeout=1800\n")
    assert pmix_timeout(tmp_path) == "1800"


def test_a_controller_that_does_not_answer_is_asked_again_and_said_once(tmp_path):
    """The watcher, a real process, with a real scontrol against a slurmctld that is not
    there (a twin's, starved by its ranks, answers as late): it cancels nothing, says so once,
    and keeps asking."""
    (tmp_path / "log").mkdir()
    log = tmp_path / "log" / "slurmd-node1.log"
    log.write_text("")
    conf = tmp_path / "slurm.conf"
    # A port on loopback nothing listens on: scontrol's connect is refused at once.
    conf.write_text(
        "ClusterName=gone\nSlurmctldHost=localhost\nSlurmctldPort=9\nMessageTimeout=2\n"
    )
    watcher = subprocess.Popen(
        [sys.executable, "-m", "localsite.fencewatch", str(tmp_path)],
        cwd=REPO,
        env=dict(os.environ, SLURM_CONF=str(conf)),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        time.sleep(2)  # it starts reading where the log ends
        with open(log, "a") as f:
            f.write(RING)
        time.sleep(15)  # several rounds of asking: 2 scontrol calls of about 2 s each
        assert watcher.poll() is None, "the watcher gave up"
    finally:
        watcher.terminate()
        out, _ = watcher.communicate(timeout=30)
    said = [line for line in out.splitlines() if line]
    assert said == ["job 12's fence timed out; slurmctld does not answer, retrying"], out
