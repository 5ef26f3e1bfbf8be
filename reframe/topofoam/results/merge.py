"""Repeats of one configuration merged into one value, with their confidence interval: the one
rule every tool uses (the report, the tuning file, the performance references, the latency
table).

Rule (stated in the report): a configuration's runs that passed sanity are its repeats; its
value is their median, with the nonparametric 95 % confidence interval of the median
(topofoam.results.stats). Failed runs never enter a value; they are counted and listed.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from topofoam.results import stats

RULE = (
    "repeats that passed sanity; the median, with the nonparametric 95 % confidence "
    "interval of the median from 6 repeats (with 3 to 5, the range at its own lower level)"
)

#: Columns that differ between repeats of one configuration (who/when/where it ran).
IDENTITY = {
    "system",
    "time",
    "source",
    "result",
    "fail_phase",
    "fail_reason",
    "reframe version",
    "descr",
    "display_name",
    "name",
    "unique_name",
    "short_name",
    "hashcode",
    "jobid",
    "job_completion_time_unix",
    "job_exitcode",
    "job_nodelist",
    "job_submit_time",
    "outputdir",
    "stagedir",
    "nodelist",
    "tags",
    "time_limit",
    "core_binding",
    "num_cpus_per_task",
    "node_hour_price",
    "currency",
    "defaults",
    "repeat",
}


def robust(values: list[float]) -> float:
    """The merged value of a configuration's passed repeats: their median (see RULE)."""
    return statistics.median(values)


@dataclass
class Group:
    """The runs of one configuration on one partition."""

    key: tuple
    runs: list[dict] = field(default_factory=list)

    @property
    def config(self) -> dict:
        return dict(self.key[2:])

    def get(self, column, default=None):
        for name, value in self.key[2:]:
            if name == column:
                return value
        return default

    @property
    def passed(self) -> list[dict]:
        return [r for r in self.runs if r.get("result") == "pass"]

    @property
    def failed(self) -> list[dict]:
        return [r for r in self.runs if r.get("result") not in ("pass", "xfail")]

    def values(self, metric: str) -> list[float]:
        return [r[metric] for r in self.passed if isinstance(r.get(metric), float)]

    def value(self, metric: str) -> float | None:
        got = self.values(metric)
        return robust(got) if got else None

    def summary(self, metric: str) -> stats.Summary | None:
        """n, median, its CI and the spread of the passed repeats."""
        got = self.values(metric)
        return stats.summarise(got) if got else None

    def spread(self, metric: str) -> tuple[float, float] | None:
        got = self.values(metric)
        return (min(got), max(got)) if got else None

    def first(self, column):
        """A column that does not tell configurations apart (the site's price and currency,
        the stage's defaults): its value in the newest run that has one."""
        for run in sorted(self.runs, key=lambda r: r.get("time") or "", reverse=True):
            if run.get(column) is not None:
                return run[column]
        return None

    @property
    def newest(self) -> str:
        return max((r.get("time") or "" for r in self.runs), default="")


def config_key(row: dict, perf: set[str]) -> tuple:
    items = tuple(
        sorted(
            (k, v)
            for k, v in row.items()
            if k not in IDENTITY
            and k not in perf
            and k not in ("partition", "check")
            and v is not None
        )
    )
    return (row["partition"], row["check"]) + items


def group(rows: list[dict], perf: set[str]) -> list[Group]:
    """Rows grouped by partition, check and every column that describes the run."""
    groups: dict[tuple, Group] = {}
    for row in rows:
        key = config_key(row, perf)
        groups.setdefault(key, Group(key)).runs.append(row)
    return list(groups.values())
