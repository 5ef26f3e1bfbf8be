"""Fabric and node screening, proven by injecting the fault: one node under a CPU quota of
its own is named by the node screening, its peers not; on the emulated cluster (4 nodes, each a
network namespace), one node's link limited by a real token bucket (tc tbf, on both ends of
its veth pair) is named by the validation verdict, and its peers are not; under a fabric
profile, a link at half the profile's bandwidth and a doubled latency on another node are
each named, and the same profile unchanged passes; the cluster as it is passes, and its first
validation records its expectations. The screening program runs
through Slurm's srun on all idle nodes of the partition (ReFrame's flexible allocation)."""

import json
import os
import re
import statistics
import subprocess
from pathlib import Path

import pytest

from conftest import PYTHON, REPO, needs_root
from localsite import cpuquota
from topofoam.config import fabric

pytestmark = needs_root

SLOW = "node3"
RATE = "200mbit"  # about 25 MB/s; the veths carry over 1,000 MB/s here

#: TOPOFOAM_EMU_CPU's fraction that leaves node3 75 % of the CPU time each of its 3 peers
#: gets (the emulated nodes' probes run at once): its solver about 33 % slower.
SLOW_SHARE = cpuquota.of_peers(0.75, nodes=4)


def validate_emu(results, links="", cpu="", binds="", only="", profile="", latency=""):
    env = dict(os.environ, TOPOFOAM_RESULTS=str(results), TOPOFOAM_EMU_LINKS=links)
    env.update(TOPOFOAM_EMU_CPU=cpu, TOPOFOAM_EMU_BIND=binds, TOPOFOAM_FABRIC=profile)
    env.update(TOPOFOAM_EMU_LATENCY=latency)
    env.pop("SLURM_CONF", None)
    command = [PYTHON, "-m", "localsite.cli", "validate", "--partition", "emu", "--"]
    command += ["-t", "screening"] + (["-n", only] if only else [])
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)


def screened(results, check="FabricScreening", name="screening.json"):
    """The screening's figures: in the output folder when it passed, else (ReFrame keeps a
    failed test's stage folder) in the stage folder of its last try."""
    found = sorted(results.glob(f"reframe/output/local/emu/*/{check}*/{name}"))
    found = found or sorted(results.glob(f"reframe/stage/local/emu/*/{check}*/{name}"))
    assert found, f"no {name} under {results}"
    return json.loads(found[-1].read_text())


def test_the_cluster_as_it_is_passes(tmp_path):
    done = validate_emu(tmp_path)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "this session's are now its expectations" in done.stdout
    found = screened(tmp_path)
    assert sorted(found["nodes"]) == ["node1", "node2", "node3", "node4"]
    assert len(found["links"]) == 6 and found["outliers"] == []
    assert all(link["mbps"] > 0 and link["rtt_us"] > 0 for link in found["links"])
    # The perflog names the slowest node and link, and the one-line summary.
    (perflog,) = (tmp_path / "perflogs" / "local" / "emu").glob("FabricScreening*.log")
    text = perflog.read_text()
    assert "4 nodes, 6 links, 5 pass(es): bandwidth median" in text and "no outlier(s)" in text
    # Every node measured against its peers (the node screening's fault-free control).
    nodes = screened(tmp_path, "NodeScreening", "nodes.json")
    assert sorted(nodes["nodes"]) == ["node1", "node2", "node3", "node4"]
    assert nodes["outliers"] == [] and nodes["differences"] == []
    assert all(len(r["solver_s"]) == 5 for r in nodes["rounds"].values())
    assert sorted(nodes["fingerprints"]) == ["node1", "node2", "node3", "node4"]


def test_a_slow_node_and_a_node_unlike_its_peers_are_named(tmp_path):
    """Two faults among four nodes, each named and the two healthy peers not: node3 under a
    CPU quota of 75 % of the share of the cores each peer has (the emulated nodes' probes
    run at once: its solver about 33 % slower than theirs), and node2 whose /proc/meminfo says half the memory (a DIMM or channel missing:
    its fingerprint differs in one field)."""
    real = Path("/proc/meminfo").read_text()
    total = int(re.search(r"^MemTotal:\s+(\d+)", real, re.M).group(1))
    meminfo = tmp_path / "meminfo"
    meminfo.write_text(re.sub(r"^MemTotal:\s+\d+", f"MemTotal: {total // 2}", real, flags=re.M))
    results = tmp_path / "results"
    done = validate_emu(
        results,
        cpu=f"{SLOW}={SLOW_SHARE:.4f}",
        binds=f"node2={meminfo}:/proc/meminfo",
        only="NodeScreening",
    )
    assert done.returncode == 1, done.stdout[-4000:] + done.stderr[-2000:]
    fail = [line for line in done.stdout.splitlines() if line.startswith("FAIL: NodeScreening")]
    assert fail, done.stdout[-4000:]
    assert f"node {SLOW} is slow: solver time" in fail[0]
    half, full = round(total / 2 / (1 << 20)), round(total / (1 << 20))
    assert f"node node2: cpu.memory_gib is {half}, 3 of its 3 peers have {full}" in fail[0]
    for other in ("node1", "node4"):
        assert f"node {other}" not in fail[0].split(" (outlier:")[0]
    nodes = screened(results, "NodeScreening", "nodes.json")
    walls = {n: f["solver_s"] for n, f in nodes["nodes"].items()}
    assert walls[SLOW] > 1.15 * max(w for n, w in walls.items() if n != SLOW), walls


def test_a_slow_link_names_its_node_in_the_verdict(tmp_path):
    done = validate_emu(tmp_path, f"{SLOW}={RATE}", only="FabricScreening")
    assert done.returncode == 1, done.stdout[-4000:] + done.stderr[-2000:]
    assert "Validation verdict: FAIL" in done.stdout
    fail = [line for line in done.stdout.splitlines() if line.startswith("FAIL: FabricScreening")]
    assert fail and f"node {SLOW} is slow: bandwidth" in fail[0], done.stdout[-4000:]
    # Only the slow node is named: its links to healthy peers are explained by it.
    for other in ("node1", "node2", "node4"):
        assert f"node {other} is slow" not in fail[0] and f"link {other}" not in fail[0]
    assert "no expectations recorded for local" in done.stdout
    verdict = json.loads((tmp_path / "validation" / "verdict-local.json").read_text())
    assert verdict["verdict"] == "FAIL"
    found = screened(tmp_path)
    slow = [x["mbps"] for x in found["links"] if SLOW in (x["a"], x["b"])]
    fast = [x["mbps"] for x in found["links"] if SLOW not in (x["a"], x["b"])]
    assert max(slow) < 50 < min(fast), found  # the shaped rate, measured back (MB/s)


#: A fabric whose links cost what the profile says (the fabric interposer's latency, tc's
#: rate on every node's link): the half-speed link and doubled latency are injected on it.
PROFILE = "vsc5x30"


def test_under_a_fabric_profile_the_unchanged_links_pass(tmp_path):
    """The fault-free control of the two below: the same profile, nothing injected."""
    done = validate_emu(tmp_path, profile=PROFILE, only="FabricScreening")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    found = screened(tmp_path)
    assert found["outliers"] == [] and len(found["links"]) == 6, found
    # Every link carries the profile's bandwidth (tc's rate), not the bridge's.
    rate = fabric.profile(PROFILE).mbytes
    assert all(0.7 * rate < link["mbps"] < 1.1 * rate for link in found["links"]), found


def test_a_half_speed_link_and_a_doubled_latency_are_named(tmp_path):
    """Two faults of the size an admin hunts, on two of four nodes under the profile: node3's
    link at half the profile's bandwidth (a link trained at half width), node2's latency
    twice the profile's (the interposer's factor). Each is named by its figure; the two
    healthy nodes are not."""
    half = f"{round(fabric.profile(PROFILE).mbytes * 0.5 * 8000)}kbit"
    done = validate_emu(
        tmp_path, links=f"{SLOW}={half}", latency="node2=2", profile=PROFILE, only="FabricScreening"
    )
    assert done.returncode == 1, done.stdout[-4000:] + done.stderr[-2000:]
    fail = [line for line in done.stdout.splitlines() if line.startswith("FAIL: FabricScreening")]
    assert fail, done.stdout[-4000:]
    named = fail[0].split(" (outlier:")[0]
    assert (
        f"node {SLOW} is slow: bandwidth out" in named
        and f"node {SLOW} is slow: bandwidth in" in named
    )
    for other in ("node1", "node4"):
        assert f"node {other}" not in named
    found = screened(tmp_path)
    peers = statistics.median(found["nodes"][n]["mbps_in"] for n in ("node1", "node4"))
    assert found["nodes"][SLOW]["mbps_in"] < 0.6 * peers, found["nodes"]
    # The doubled latency, where this run's round trips resolve it. In one CI (2026-12-01)
    # their noise alone spread 72.5 % while node2's links measured +67 % over the others':
    # the waiting ranks' naps of 50 us landed in the measured pair's round trips. Since they
    # back off to 1 ms the noise was 7 to 30 % in 10 runs (timings.md, screen.links); where it
    # still exceeds the fault the rule names nothing, and says its resolution (the verdict's
    # rule line): reported, not asserted.
    if "node node2 is slow: round trip" not in named:
        mine = [x["rtt_us"] for x in found["links"] if "node2" in (x["a"], x["b"])]
        rest = [x["rtt_us"] for x in found["links"] if "node2" not in (x["a"], x["b"])]
        excess = statistics.median(mine) / statistics.median(rest) - 1
        noise = found["distance"]["round trip"][1]
        if noise >= excess:
            pytest.xfail(
                f"node2's links measured {excess:+.0%} over the others', and the round trips' "
                f"noise alone resolved only {noise:.0%} this run"
            )
    assert "node node2 is slow: round trip" in named, named


@pytest.mark.parametrize(
    "links, said",
    [
        ("node9=1gbit", "TOPOFOAM_EMU_LINKS='node9=1gbit': 'node9=1gbit' is not NODE=RATE"),
        ("node3=fast", "is not NODE=RATE"),
    ],
)
def test_a_bad_link_limit_is_one_line_before_anything_starts(tmp_path, links, said):
    done = validate_emu(tmp_path, links)
    assert done.returncode == 2 and said in done.stderr, done.stdout[-2000:] + done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "reframe").exists()
