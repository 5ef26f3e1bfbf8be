"""The quota that leaves one emulated node a share of what each peer gets
(localsite.cpuquota.of_peers), the node screening's positive control, and the slices of the
machine its probes run on (``--slice I/N``): whatever the machine's cores, the node's CPU
time is that share of a peer's, each peer on a slice of its own."""

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, needs_root
from localsite import cpuquota


@pytest.mark.parametrize("cores", [1, 2, 3, 4, 8, 128])
@pytest.mark.parametrize("share", [0.5, 0.75, 0.8, 0.95])
@pytest.mark.parametrize("nodes", [3, 4, 7])
def test_the_slow_node_gets_its_share_of_a_peer_s_cpu_time(cores, share, nodes):
    fraction = cpuquota.of_peers(share, nodes, cores)
    assert 0 < fraction <= 1
    mine = fraction * cores  # cores' worth of CPU time the quota lets it have
    peer = 1 / math.ceil(nodes / cores)  # a slice: one core, shared evenly by its probes
    assert mine == pytest.approx(share * peer)


def _in_slice(spec: str, parent: Path | None = None) -> subprocess.CompletedProcess:
    """What a command sees on slice ``spec``: its cgroup's quota, period and its CPUs."""
    show = (
        "import os, pathlib; "
        "g = [l.split(':', 2)[2].strip() for l in open('/proc/self/cgroup') if ':cpu:' in l][0]; "
        "d = pathlib.Path('/sys/fs/cgroup/cpu' + g); "
        "print(g, (d / 'cpu.cfs_quota_us').read_text().strip(), "
        "(d / 'cpu.cfs_period_us').read_text().strip(), *sorted(os.sched_getaffinity(0)))"
    )
    command = [sys.executable, "-m", "localsite.cpuquota", "--slice", spec, "--"]
    command += [sys.executable, "-c", show]

    def inside() -> None:
        if parent:
            (parent / "cgroup.procs").write_text(str(os.getpid()))

    return subprocess.run(
        command, cwd=REPO, capture_output=True, text=True, timeout=60, preexec_fn=inside
    )


@needs_root
@pytest.mark.parametrize("index, count", [(0, 4), (1, 4), (3, 4), (0, 1), (2, 3)])
def test_a_slice_is_one_cpu_and_an_even_share_of_it(index, count):
    done = _in_slice(f"{index}/{count}")
    assert done.returncode == 0, done.stderr
    group, quota, period, *cpus = done.stdout.split()
    allowed = sorted(os.sched_getaffinity(0))
    assert len(cpus) == 1 and int(cpus[0]) in allowed  # one CPU at a time (slice_cpu's)
    assert int(quota) == round(int(period) / math.ceil(count / len(allowed)))
    assert group.startswith("/topofoam-slice-")
    assert not (cpuquota.CPU_CGROUP / group.strip("/")).exists()  # removed when it ended


@needs_root
def test_a_slice_inside_a_quota_keeps_the_quota():
    """A node under a quota (TOPOFOAM_EMU_CPU) gets no more on its slice: the slice's group
    sits inside the node's, its quota at most the node's (the kernel refuses more)."""
    node = cpuquota.make(0.1, f"topofoam-test-node-{os.getpid()}")
    try:
        done = _in_slice("0/1", node)
        assert done.returncode == 0, done.stderr
        group, quota, period, _ = done.stdout.split()
        assert group.startswith(f"/{node.name}/topofoam-slice-")
        assert int(quota) / int(period) == pytest.approx(
            int((node / "cpu.cfs_quota_us").read_text()) / 100_000
        )
    finally:
        cpuquota.remove(node)
    assert not node.exists()


def _cpu_group_of(pid: int) -> str:
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "cpu" in controllers.split(","):
            return path
    raise AssertionError(f"no cpu cgroup for {pid}")


@needs_root
def test_what_a_removed_slice_leaves_running_stays_under_its_node_s_quota():
    """A slice removed while something of it still runs (a killed probe's child): that
    process goes to the node's group, not to the root, where no quota would hold it."""
    node = cpuquota.make(0.1, f"topofoam-test-node-{os.getpid()}")
    inner = cpuquota.make(0.05, "topofoam-slice-left", node, cpuquota.SLICE_PERIOD_US)
    left = subprocess.Popen(["sleep", "60"], preexec_fn=lambda: cpuquota.enter(inner))
    try:
        assert _cpu_group_of(left.pid) == f"/{node.name}/{inner.name}"
        cpuquota.remove(inner)
        assert not inner.exists()
        assert _cpu_group_of(left.pid) == f"/{node.name}"
    finally:
        left.kill()
        left.wait()
        cpuquota.remove(node)
    assert not node.exists()


@pytest.mark.parametrize("cpus", [[0, 1], [2, 5, 7], [3]])
@pytest.mark.parametrize("count", [1, 2, 4, 7])
def test_slices_are_dealt_evenly_over_the_cpus_and_each_meets_every_cpu_and_peer(cpus, count):
    """At every step each CPU holds as many slices as the others, give or take one; over
    many steps each slice is about as long on every CPU and beside every other slice."""
    steps = [(k + 0.5) * cpuquota.ROTATE_S for k in range(600)]
    on = {(i, c): 0 for i in range(count) for c in cpus}
    met = {(i, j): 0 for i in range(count) for j in range(i + 1, count)}
    for now in steps:
        at = [cpuquota.slice_cpu(i, count, cpus, now) for i in range(count)]
        held = [at.count(c) for c in cpus]
        assert max(held) - min(held) <= 1 and set(at) <= set(cpus)
        for i, c in enumerate(at):
            on[i, c] += 1
        for i, j in met:
            met[i, j] += at[i] == at[j]
    assert all(abs(n / len(steps) - 1 / len(cpus)) < 0.08 for n in on.values()), on
    if met and count > len(cpus):
        assert max(met.values()) - min(met.values()) < 0.2 * len(steps), met


@pytest.mark.parametrize(
    "argv, said",
    [
        (["--slice", "4/4", "--", "true"], "slice 4/4: give I/N with 0 <= I < N"),
        (["--slice", "x", "--", "true"], "--slice 'x': give I/N, e.g. 0/4"),
        (["--slice", "--", "true"], "--slice '': give I/N"),
        (["fast", "--", "true"], "'fast' is not a fraction"),
        (["0.5", "true"], "usage: python -m localsite.cpuquota"),
    ],
)
def test_a_bad_slice_or_fraction_is_one_line(argv, said):
    done = subprocess.run(
        [sys.executable, "-m", "localsite.cpuquota", *argv],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and said in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.splitlines()) == 1
