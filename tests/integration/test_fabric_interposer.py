"""The emulated fabric's latency (reframe/src/fabric), on real MPI ranks: the project's
ping-pong between two ranks of this machine, each in a UTS namespace of its own with a host
name of its own, so that the interposer sees two nodes (as on the emulated cluster, whose
nodes differ by host name). Open MPI itself still sees one machine.

- a message between the two "nodes" leaves L later: a round trip gains at least 2 L, a
  one-scalar all-reduce and all-to-all between 2 nodes at least L; and by the interposer's own
  account (TOPOFOAM_FABRIC_ACCOUNT_DIR) each send and collective got exactly one L, no more:
  what the code controls, where a wall-clock upper bound would fail whenever anything else
  ran on the machine (it did, twice, in CI);
- a node given a latency factor (TOPOFOAM_FABRIC_LATENCY_FACTORS, the doubled-latency
  control of the fabric screening) makes every send and collective that touches it wait
  that multiple of L, by the same account;
- ranks that share a host name gain nothing (the account says no delay was added);
- stacked with the call counter (fabric first in LD_PRELOAD), the counts are exactly those
  without it: every call reaches the next library.
"""

import re
import subprocess

import pytest

from conftest import REPO, needs_root
from topofoam.config import fabric
from topofoam.jobs import mpicount

pytestmark = needs_root

L_US = 100.0
PINGPONG = REPO / "reframe/src/pingpong/pingpong.c"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fabric")
    program = folder / "pingpong"
    done = subprocess.run(
        ["mpicc", "-O2", "-o", str(program), str(PINGPONG)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return {
        "fabric": fabric.build(folder / "libfabric.so"),
        "count": mpicount.build(folder / "count"),
        "program": program,
    }


def pingpong(
    built, *, preload=(), latency=L_US, own_hosts=True, counts=None, account=None, factors=""
):
    env_args = ["-x", f"TOPOFOAM_FABRIC_LATENCY_US={latency}"]
    if factors:
        env_args += ["-x", f"TOPOFOAM_FABRIC_LATENCY_FACTORS={factors}"]
    if account:
        env_args += ["-x", f"TOPOFOAM_FABRIC_ACCOUNT_DIR={account}"]
    if preload:
        env_args += ["-x", "LD_PRELOAD=" + ":".join(str(built[p]) for p in preload)]
    if counts:
        env_args += ["-x", f"TOPOFOAM_MPICOUNT_DIR={counts}"]
    program = f"{built['program']} 10"
    if own_hosts:  # host names rank0, rank1: two nodes to the interposer
        program = f"unshare -u sh -c 'hostname rank$OMPI_COMM_WORLD_RANK; exec {program}'"
    done = subprocess.run(
        ["mpirun", "-np", "2", "--oversubscribe", "--allow-run-as-root", *env_args]
        + ["sh", "-c", program],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    figures = {
        "rtt": r"^pingpong size 10 rtt_us (\S+)",
        "allreduce": r"^collective allreduce us (\S+)",
        "alltoall": r"^collective alltoall us (\S+)",
    }
    return {k: float(re.search(p, done.stdout, re.M).group(1)) for k, p in figures.items()}


def test_messages_between_nodes_arrive_a_latency_later(built, tmp_path):
    delayed = pingpong(built, preload=["fabric"], account=tmp_path)
    # Waits only lengthen under load, so these lower bounds hold on a busy machine too.
    assert delayed["rtt"] >= 2 * L_US, delayed
    for collective in ("allreduce", "alltoall"):  # 2 nodes: one round of L
        assert delayed[collective] >= L_US, delayed
    # and not more than that: each send and collective one L, as the interposer scheduled it
    added = fabric.account(tmp_path, ranks=2)
    assert added["sends_delayed"] > 0 and added["collectives_delayed"] > 0, added
    assert added["send_delay_us"] == pytest.approx(added["sends_delayed"] * L_US), added
    assert added["collective_delay_us"] == pytest.approx(added["collectives_delayed"] * L_US)


def test_a_node_with_a_latency_factor_makes_its_messages_wait_that_multiple(built, tmp_path):
    delayed = pingpong(built, preload=["fabric"], account=tmp_path, factors="rank1=2,other=5")
    assert delayed["rtt"] >= 4 * L_US, delayed
    added = fabric.account(tmp_path, ranks=2)
    assert added["sends_delayed"] > 0 and added["collectives_delayed"] > 0, added
    assert added["send_delay_us"] == pytest.approx(added["sends_delayed"] * 2 * L_US), added
    assert added["collective_delay_us"] == pytest.approx(added["collectives_delayed"] * 2 * L_US)


def test_ranks_of_one_node_gain_nothing(built, tmp_path):
    pingpong(built, preload=["fabric"], own_hosts=False, account=tmp_path)
    added = fabric.account(tmp_path, ranks=2)
    assert added == {
        "sends_delayed": 0,
        "send_delay_us": 0,
        "collectives_delayed": 0,
        "collective_delay_us": 0,
    }


def test_stacked_with_the_counter_every_call_is_counted(built, tmp_path):
    alone, stacked, account = tmp_path / "alone", tmp_path / "stacked", tmp_path / "account"
    for folder in (alone, stacked, account):
        folder.mkdir()
    pingpong(built, preload=["count"], counts=alone)
    delayed = pingpong(built, preload=["fabric", "count"], counts=stacked, account=account)
    assert delayed["rtt"] >= 2 * L_US
    counted = mpicount.read(stacked, ranks=2)
    assert counted == mpicount.read(alone, ranks=2)
    assert counted["MPI_Send"] > 10_000 and counted["MPI_Allreduce"] > 10_000, counted
    # Every send of the two ranks crosses "nodes": each one was delayed, once.
    sends = sum(counted.get(f, 0) for f in ("MPI_Send", "MPI_Isend", "MPI_Ssend", "MPI_Bsend"))
    assert fabric.account(account, ranks=2)["sends_delayed"] == sends
