"""Each rank's time on a core over its wall time: what the solver's validation judges beside
its wall time.

``PREFIX`` goes before each rank's solver in its launch (``SweepRun.time_on_core``): the
rank runs under ``oncore.sh``, which prints, when the solver ends, one line on the job's
stderr: ``oncore <rank> <host> wall <s> cpu <s>`` (the solver's user and system time).
``wall_over_cpu`` is the largest of the ranks' wall over CPU time: 1 when every rank was on a
core all the time, 1 / 0.86 when one had 86 % of it.

Why: Open MPI's ranks poll while they wait, so a rank that has its core all the time spends
CPU time for all its wall time, whatever the cores' speed. Time taken from a rank (another
process on its core, a CPU limit on the job's cgroup, a stray from an earlier job, a CPU
quota) is wall time without CPU time. A host whose cores run slower for a while (this VM's
drifted by +-20 % between sessions a minute apart, docs/timings.md ``validate.together``)
stretches both alike. So the wall time alone cannot tell a 15 % fault from the drift on
such a host, while this ratio, measured in the same run, spread 0.3 % between those
sessions and rose 14 % under a quota of 0.86 (docs/checks.md).
"""

from __future__ import annotations

import re
from pathlib import Path

#: What prefixes each rank's command: the script beside this module, through bash (a
#: checkout's file modes are not trusted).
PREFIX = f"bash {Path(__file__).with_name('oncore.sh')} "

_LINE = re.compile(r"^oncore (\S+) (\S+) wall (\S+) cpu (\S+)$", re.M)


class OnCoreError(ValueError):
    """The ranks' reports cannot give the ratio: the message says why."""


def reported(text: str) -> dict[str, tuple[str, float, float]]:
    """{rank: (host, wall s, cpu s)} from a job's stderr."""
    out = {}
    for rank, host, wall, cpu in _LINE.findall(text):
        try:
            out[rank] = (host, float(wall), float(cpu))
        except ValueError:
            continue  # a line cut by another rank's output; the count below says so
    return out


def least(text: str) -> str:
    """The rank with the least time on a core, as a perflog reads it: 'rank 1 on n1: 80.0 %
    of its wall' ('' when no rank reported): where time was taken, which rank lost it."""
    found = [(cpu / wall, rank, host) for rank, (host, wall, cpu) in reported(text).items()
             if wall > 0 and cpu >= 0]  # fmt: skip
    if not found:
        return ""
    share, rank, host = min(found)
    return f"rank {rank} on {host}: {share * 100:.1f} % of its wall"


def wall_over_cpu(text: str, ranks: int) -> float:
    """The largest of ``ranks`` ranks' wall time over their CPU time, from a job's stderr;
    OnCoreError when a rank did not report, or reported no time."""
    found = reported(text)
    if len(found) != ranks:
        raise OnCoreError(
            f"{len(found)} of {ranks} ranks reported their time on a core (oncore lines on "
            f"the job's stderr): a rank died before its solver ended, or the launch lost "
            f"its stderr"
        )
    worst = None
    for rank, (host, wall, cpu) in sorted(found.items()):
        if not (wall > 0 and cpu > 0):
            raise OnCoreError(f"rank {rank} on {host} reported wall {wall} s, CPU {cpu} s")
        ratio = wall / cpu
        worst = ratio if worst is None else max(worst, ratio)
    return worst
