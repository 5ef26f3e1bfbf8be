"""Run a command on a slower machine: a real CPU quota (cgroup v1 ``cpu`` controller).

    python -m localsite.cpuquota 0.8 -- ./bench validate

gives the command and everything it starts ``fraction`` of this machine's cores' time (CFS
bandwidth control: quota = fraction x cores x period), so CPU-bound work runs about
1 / fraction times as long. It is the validation's positive control for "a slower machine":
the regression verdict must name the slowdown. Root only; the cgroup
(``/sys/fs/cgroup/cpu/topofoam-quota-<pid>``) is removed when the command ends.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

CPU_CGROUP = Path("/sys/fs/cgroup/cpu")
PERIOD_US = 100_000


class QuotaError(RuntimeError):
    pass


def make(fraction: float, name: str) -> Path:
    """A cgroup ``name`` whose processes share ``fraction`` of this machine's cores' time;
    QuotaError when the fraction or the machine does not allow it."""
    if not 0 < fraction <= 1:
        raise QuotaError(f"the fraction is {fraction}, not in (0, 1] -- give e.g. 0.8")
    if not (CPU_CGROUP / "cpu.cfs_quota_us").exists():
        raise QuotaError(
            f"no cgroup v1 cpu controller at {CPU_CGROUP} -- this positive control needs "
            f"CFS bandwidth control (cgroup v1 'cpu')"
        )
    group = CPU_CGROUP / name
    try:
        group.mkdir(exist_ok=True)
    except PermissionError:
        raise QuotaError(f"cannot create {group} -- run as root") from None
    (group / "cpu.cfs_period_us").write_text(str(PERIOD_US))
    quota = round(fraction * (os.cpu_count() or 1) * PERIOD_US)
    (group / "cpu.cfs_quota_us").write_text(str(quota))
    return group


def of_peers(share: float, nodes: int, cores: int | None = None) -> float:
    """The fraction (``make``'s) that leaves one of ``nodes`` emulated nodes ``share`` of the
    CPU time each of its peers gets, their probes running at once, one process each, on
    this machine's ``cores``: q = share x min(1, (cores - q) / (nodes - 1)) cores."""
    cores = cores or os.cpu_count() or 1
    q = share * cores / (nodes - 1 + share)  # the peers share what q leaves them
    return (q if (cores - q) / (nodes - 1) < 1 else share) / cores


def enter(group: Path) -> None:
    """Put the calling process (and so all it starts later) into ``group``."""
    with open(group / "cgroup.procs", "w") as f:
        f.write(str(os.getpid()))


def remove(group: Path) -> None:
    """Remove ``group``; whatever still runs in it goes back to the root group first."""
    if not group.is_dir():
        return
    for pid in (group / "cgroup.procs").read_text().split():
        try:
            (CPU_CGROUP / "cgroup.procs").write_text(pid)
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


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 3 or argv[1] != "--":
        print("usage: python -m localsite.cpuquota FRACTION -- COMMAND...", file=sys.stderr)
        return 2
    try:
        return run(float(argv[0]), argv[2:])
    except ValueError:
        print(f"cpuquota: {argv[0]!r} is not a fraction -- give e.g. 0.8", file=sys.stderr)
        return 2
    except QuotaError as e:
        print(f"cpuquota: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
