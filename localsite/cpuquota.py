"""Run a command on a slower machine: a real CPU quota (cgroup v1 ``cpu`` controller).

    python -m localsite.cpuquota 0.8 -- ./bench validate

gives the command and everything it starts ``fraction`` of this machine's cores' time (CFS
bandwidth control: quota = fraction x cores x period), so CPU-bound work runs about
1 / fraction times as long. It is the validation's positive control for "a slower machine":
the regression verdict must name the slowdown. Root only; the cgroup
(``/sys/fs/cgroup/cpu/topofoam-quota-<pid>``) is removed when the command ends.

    python -m localsite.cpuquota --slice I/N -- COMMAND

runs the command on slice I (from 0) of N equal slices of this machine: on one CPU at a
time, with 1 / ceil(N / CPUs) of its time, inside the caller's own cgroup (so a quota on an
emulated node still holds); every 0.2 s the slices are dealt anew over the CPUs
(``slice_cpu``). Emulated nodes measured at once share this machine's cores; on a cluster a
node's speed does not depend on its neighbour's. Left to float, 4 probes on 2 cores got
uneven shares; pinned but uncapped, a node under a quota lent its unused time to the node
beside it on its CPU; pinned for good, the two nodes on a CPU that slowed for a while were
slower together. A slice gets its share, no more, on every CPU alike.
"""

from __future__ import annotations

import math
import os
import random
import re
import subprocess
import sys
import time
from pathlib import Path

CPU_CGROUP = Path("/sys/fs/cgroup/cpu")
PERIOD_US = 100_000
#: A slice's period: short, so that two slices of one CPU take turns finely; at 100 ms, one
#: slice that had run ahead sat throttled while its CPU idled.
SLICE_PERIOD_US = 10_000
#: Seconds a slice stays on one CPU: this virtual machine's CPUs slow down by 10 to 20 %
#: each, for seconds at a time, with no steal time shown (its host's other work on the
#: same cores); pinned for good, the nodes on the slowed CPU were slower in that round.
ROTATE_S = 0.2


class QuotaError(RuntimeError):
    pass


def make(fraction: float, name: str, parent: Path = CPU_CGROUP, period_us: int = PERIOD_US) -> Path:
    """A cgroup ``name`` (under ``parent``) whose processes share ``fraction`` of this
    machine's cores' time; QuotaError when the fraction or the machine does not allow it."""
    if not 0 < fraction <= 1:
        raise QuotaError(f"the fraction is {fraction}, not in (0, 1] -- give e.g. 0.8")
    if not (CPU_CGROUP / "cpu.cfs_quota_us").exists():
        raise QuotaError(
            f"no cgroup v1 cpu controller at {CPU_CGROUP} -- this positive control needs "
            f"CFS bandwidth control (cgroup v1 'cpu')"
        )
    group = parent / name
    try:
        group.mkdir(exist_ok=True)
    except PermissionError:
        raise QuotaError(f"cannot create {group} -- run as root") from None
    (group / "cpu.cfs_period_us").write_text(str(period_us))
    quota = round(fraction * (os.cpu_count() or 1) * period_us)
    if parent != CPU_CGROUP:
        # The kernel refuses a quota above the parent's (EINVAL), which limits it anyway.
        above = int((parent / "cpu.cfs_quota_us").read_text())
        if above > 0:
            period = int((parent / "cpu.cfs_period_us").read_text())
            quota = min(quota, above * period_us // period)
    (group / "cpu.cfs_quota_us").write_text(str(quota))
    return group


def own_group() -> Path:
    """The cpu cgroup the calling process is in: an emulated node's, or the root."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "cpu" in controllers.split(","):
            return CPU_CGROUP / path.strip("/")
    return CPU_CGROUP


def of_a_core(count: int, cpus: int) -> float:
    """The share of one CPU a slice gets when ``count`` slices are dealt over ``cpus``:
    each CPU holds ceil(count / cpus) of them at a time (``slice_cpu``)."""
    return 1 / math.ceil(count / cpus)


def a_slice(index: int, count: int) -> float:
    """The fraction of the machine's cores' time (``make``'s) of slice ``index`` of
    ``count`` equal slices of this machine (``of_a_core`` of the CPUs it may run on)."""
    if not 0 <= index < count:
        raise QuotaError(f"slice {index}/{count}: give I/N with 0 <= I < N, e.g. 0/4")
    return of_a_core(count, len(os.sched_getaffinity(0))) / (os.cpu_count() or 1)


def slice_cpu(index: int, count: int, cpus: list[int], now: float | None = None) -> int:
    """The CPU slice ``index`` of ``count`` runs on at ``now`` (CLOCK_MONOTONIC, one clock
    for the whole machine): every ROTATE_S the slices are dealt anew over ``cpus``, each
    CPU as many as the others (give or take one), in an order drawn from the step's number,
    the same in every slice. Over a round of seconds, each slice spends about as long on
    every CPU and beside every other slice: what slows one CPU, or the two slices that share
    it, for a while slows all alike. (Dealt in a fixed order, the two slices that always
    shared a CPU were slower or faster together by 10 % in a round.)"""
    step = int((time.monotonic() if now is None else now) / ROTATE_S)
    order = list(range(count))
    random.Random(step).shuffle(order)
    return cpus[(order.index(index) + step) % len(cpus)]  # + step: fewer slices than CPUs


def of_peers(share: float, nodes: int, cores: int | None = None) -> float:
    """The fraction (``make``'s) that leaves one of ``nodes`` emulated nodes ``share`` of the
    CPU time each of its peers gets, each node's probe on a slice of this machine's
    ``cores`` (``of_a_core``)."""
    cores = cores or os.cpu_count() or 1
    return share * of_a_core(nodes, cores) / cores


def enter(group: Path) -> None:
    """Put the calling process (and so all it starts later) into ``group``."""
    with open(group / "cgroup.procs", "w") as f:
        f.write(str(os.getpid()))


def remove(group: Path) -> None:
    """Remove ``group`` and the groups inside it (a slice left by a killed command);
    whatever still runs in them goes to ``group``'s parent first: a slice's leftovers stay
    under its emulated node's quota, not free of it in the root group."""
    if not group.is_dir():
        return
    for inner in (d for d in group.iterdir() if d.is_dir()):
        remove(inner)
    for pid in (group / "cgroup.procs").read_text().split():
        try:
            (group.parent / "cgroup.procs").write_text(pid)
        except OSError:
            pass
    try:
        group.rmdir()
    except OSError:
        pass


def run(fraction: float, command: list[str], **kwargs) -> int:
    """``command``'s exit status, run under the quota."""
    group = make(fraction, f"topofoam-quota-{os.getpid()}")
    try:
        return subprocess.run(command, preexec_fn=lambda: enter(group), **kwargs).returncode
    finally:
        remove(group)  # every process of the command has ended


def run_on_slice(index: int, count: int, command: list[str]) -> int:
    """``command``'s exit status, run on slice ``index`` of ``count`` (``a_slice``'s share,
    ``slice_cpu``'s CPU, in a group inside the caller's own)."""
    cpus = sorted(os.sched_getaffinity(0))
    group = make(
        a_slice(index, count), f"topofoam-slice-{os.getpid()}", own_group(), SLICE_PERIOD_US
    )

    def start() -> None:  # on its slice from its first instruction
        enter(group)
        os.sched_setaffinity(0, {slice_cpu(index, count, cpus)})

    proc = subprocess.Popen(command, preexec_fn=start)
    try:
        while proc.poll() is None:
            cpu = slice_cpu(index, count, cpus)
            for task in (group / "tasks").read_text().split():
                try:
                    os.sched_setaffinity(int(task), {cpu})
                except OSError:
                    pass  # it ended meanwhile
            try:
                proc.wait(timeout=ROTATE_S - time.monotonic() % ROTATE_S + 0.001)
            except subprocess.TimeoutExpired:
                pass
        return proc.returncode
    finally:
        remove(group)


USAGE = "usage: python -m localsite.cpuquota FRACTION|--slice I/N -- COMMAND..."


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--" not in argv or argv.index("--") not in (1, 2) or argv[-1] == "--":
        print(USAGE, file=sys.stderr)
        return 2
    head, command = argv[: argv.index("--")], argv[argv.index("--") + 1 :]
    try:
        if head[0] == "--slice":
            if len(head) != 2 or not re.fullmatch(r"\d+/\d+", head[1]):
                raise QuotaError(f"--slice {' '.join(head[1:])!r}: give I/N, e.g. 0/4")
            return run_on_slice(*map(int, head[1].split("/")), command)
        if len(head) != 1:
            print(USAGE, file=sys.stderr)
            return 2
        return run(float(head[0]), command)
    except ValueError:
        print(f"cpuquota: {head[0]!r} is not a fraction -- give e.g. 0.8", file=sys.stderr)
        return 2
    except QuotaError as e:
        print(f"cpuquota: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
