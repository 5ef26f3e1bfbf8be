"""The OpenFOAM HPC community's figures of merit, from what a run logged.

The OpenFOAM HPC Technical Committee and its first HPC Challenge (OHC-1) compare systems by:
  - time per iteration  t = wall / steps (a time step, or a SIMPLE iteration);
  - FVOPS = cells / t, finite-volume operations per second (Galeazzo et al. 2024, the
    definition OHC-1's analysis uses);
  - FVOPS per node = FVOPS / nodes;
  - T* = t x cores / cells, the normalised time: core-seconds per cell and iteration
    (= cores / FVOPS; lower is better, and equal on two systems that do equal work per core);
  - RSD, the relative standard deviation of a configuration's repeats (sample standard
    deviation / mean of their wall times);
  - improvement factors of an optimised run against the standard one: TTSF = T_std / T_opt
    (time to solution) and CTSF = C_std / C_opt (cost to solution, in node-hours); above 1
    is better. Their confidence intervals are the Hodges-Lehmann intervals of the time
    ratio (topofoam.results.stats), inverted.

A figure that cannot be formed (no cell count, no step count, a time of 0, a single repeat for
an RSD) is "n/a" with the reason; it is never a number made up. docs/references.md states
these once, with their sources.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from topofoam.results import stats, values

#: The perflog units of the figures the sweep checks log (topofoam.results.values knows them).
UNITS = {"FVOPS": "cells/s", "FVOPS_per_node": "cells/s", "T_star": "core-s/cell"}


@dataclass(frozen=True)
class Figure:
    """A figure of merit: its value, or None and why it has none."""

    value: float | None
    reason: str = ""
    low: float | None = None
    high: float | None = None

    def text(self, digits: int = 3) -> str:
        """'1.23e+06', '1.08 [1.02, 1.15]', or 'n/a (no cell count)'."""
        if self.value is None:
            return f"n/a ({self.reason})"
        said = f"{self.value:.{digits}g}"
        if self.low is not None and self.high is not None:
            said += f" [{self.low:.{digits}g}, {self.high:.{digits}g}]"
        return said


def _na(reason: str) -> Figure:
    return Figure(None, reason)


def _why_not(**quantities) -> str:
    """Why these quantities cannot form a figure ('' when they can)."""
    for name, value in quantities.items():
        if value is None:
            return f"no {name}"
        try:
            number = float(value)
        except (TypeError, ValueError):
            return f"{name} {value!r} is not a number"
        if not math.isfinite(number) or number <= 0:
            return f"{name} is {values.describe(number)}"
    return ""


def time_per_iteration(wall, steps) -> Figure:
    why = _why_not(**{"time": wall, "step count": steps})
    return _na(why) if why else Figure(float(wall) / float(steps))


def fvops(cells, steps, wall) -> Figure:
    """Cells / time per iteration."""
    why = _why_not(**{"cell count": cells, "step count": steps, "time": wall})
    return _na(why) if why else Figure(float(cells) * float(steps) / float(wall))


def fvops_per_node(cells, steps, wall, nodes) -> Figure:
    why = _why_not(**{"cell count": cells, "step count": steps, "time": wall, "node count": nodes})
    return _na(why) if why else Figure(float(cells) * float(steps) / float(wall) / float(nodes))


def t_star(cells, steps, wall, cores) -> Figure:
    """Time per iteration x cores / cells: core-seconds per cell and iteration."""
    why = _why_not(**{"cell count": cells, "step count": steps, "time": wall, "core count": cores})
    if why:
        return _na(why)
    return Figure(float(wall) / float(steps) * float(cores) / float(cells))


def rsd(repeats) -> Figure:
    """Sample standard deviation / mean of the repeats."""
    got = [float(v) for v in repeats]
    if len(got) < 2:
        return _na(f"{len(got)} repeat(s); an RSD needs 2")
    mean = statistics.fmean(got)
    if not math.isfinite(mean) or mean <= 0:
        return _na(f"the mean time is {mean:g}")
    return Figure(statistics.stdev(got) / mean)


def improvement(standard, optimised) -> Figure:
    """standard / optimised of two sets of repeats (TTSF from times, CTSF from node-hours):
    the inverse of the Hodges-Lehmann ratio optimised / standard, with its CI inverted."""
    if not standard or not optimised:
        return _na("no passed run on " + ("either side" if not standard else "the optimised side"))
    c = stats.compare(standard, optimised)
    if c.ratio is None:
        return _na(c.verdict.removeprefix("no verdict (").rstrip(")"))
    low = 1 / c.high if c.high else None
    high = 1 / c.low if c.low else None
    return Figure(1 / c.ratio, "", low, high)


def cores_of(get) -> int | None:
    """The cores a run used: its task count, else nodes x ranks per node."""
    tasks = get("num_tasks")
    if tasks:
        return tasks
    nodes, ppn = get("nodes"), get("ppn") or get("num_tasks_per_node")
    return nodes * ppn if nodes and ppn else None


def of_run(get, wall) -> dict[str, Figure]:
    """The figures of one run (or of a configuration's merged wall time): ``get`` reads the
    run's columns (a row's ``get`` or a Group's), ``wall`` is its time in seconds."""
    cells, steps, nodes = get("expected_cells"), get("expected_steps"), get("nodes")
    return {
        "time per iteration": time_per_iteration(wall, steps),
        "FVOPS": fvops(cells, steps, wall),
        "FVOPS per node": fvops_per_node(cells, steps, wall, nodes),
        "T*": t_star(cells, steps, wall, cores_of(get)),
    }
