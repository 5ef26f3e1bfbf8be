"""Perflogs and ReFrame run reports -> one tidy table per site (one row per run).

The perflogs (read by topofoam.results.perflog) are the record. The run reports
(``<results>/reframe/reports/*.json``) add why a run failed, and the runs that failed
before ReFrame logged them.
"""

from __future__ import annotations

import csv
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from topofoam import output
from topofoam.results import perflog

#: Columns of every tidy table, first; the checks' own columns follow, sorted.
FIRST = (
    "system",
    "partition",
    "check",
    "stage",
    "result",
    "fail_phase",
    "fail_reason",
    "time",
    "setting",
    "case",
    "size",
    "nodes",
    "ppn",
    "variant",
    "binding",
    "ucx",
    "coll",
    "ucx_inter",
    "nps",
)


@dataclass
class Collection:
    """The runs of one system, and what could not be read (said in the report)."""

    system: str
    rows: list[dict] = field(default_factory=list)
    perf: dict[str, str] = field(default_factory=dict)  # performance variable -> unit
    notes: list[str] = field(default_factory=list)
    rejected: list[tuple[dict, str]] = field(default_factory=list)  # (row, why): no statistic
    merged: int = 0  # copies of rows of runs already read

    def columns(self) -> list[str]:
        seen = {k for row in self.rows for k in row}
        return [c for c in FIRST if c in seen] + sorted(seen - set(FIRST))

    def write_csv(self, path: Path) -> Path:
        columns = self.columns()
        with output.replacing(path, "runs table", newline="") as f:
            out = csv.DictWriter(f, columns, extrasaction="ignore")
            out.writeheader()
            for row in self.rows:
                out.writerow({k: "" if row.get(k) is None else row[k] for k in columns})
        return path


def _report_cases(reports: Path, system: str, notes: list[str], since: str) -> list[dict]:
    cases = []
    for path in sorted(reports.glob("*.json")) if reports.is_dir() else []:
        try:
            data = json.loads(path.read_text())
            runs = data["runs"]
            started = time.strftime(
                "%Y-%m-%dT%H:%M:%S", time.localtime(float(data["session_info"]["time_start_unix"]))
            )
            if not isinstance(runs, list) or not all(isinstance(r, dict) for r in runs):
                raise TypeError("runs is not a list of runs")
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            notes.append(f"{path}: not a ReFrame run report; skipped")
            continue
        if started < since:
            continue
        for run in runs:
            testcases = run.get("testcases", [])
            for case in testcases if isinstance(testcases, list) else []:
                if isinstance(case, dict) and case.get("system") == system:
                    cases.append(dict(case, _report=path.name, _started=started))
    return cases


def _key(partition, hashcode, unix) -> tuple:
    try:
        return partition, hashcode, round(float(unix), 1)
    except (TypeError, ValueError):
        return partition, hashcode, None


def add_failures(coll: Collection, reports: Path, since: str = "") -> None:
    """Fail reasons from the run reports; a failed run no perflog holds (a fixture, or a
    run that failed before ReFrame logged it) becomes a row of its own."""
    logged = {
        _key(r["partition"], r.get("hashcode"), r.get("job_completion_time_unix")): r
        for r in coll.rows
    }
    for case in _report_cases(reports, coll.system, coll.notes, since):
        if case.get("result") in ("pass", "xfail"):
            continue
        reason = " ".join(str(case.get("fail_reason") or "").split())
        if case.get("result") == "fail_deps" and not reason:
            reason = "not run: a test it depends on failed"
        key = _key(
            case.get("partition"), case.get("hashcode"), case.get("job_completion_time_unix")
        )
        row = logged.get(key)
        if row is None:
            row = {
                "system": coll.system,
                "partition": case.get("partition"),
                "check": str(case.get("name", "?")).split()[0],
                "time": (case.get("job_completion_time") or "")[:19] or case["_started"],
                "source": case["_report"],
                **{
                    k: case.get(k)
                    for k in (
                        "setting",
                        "case",
                        "size",
                        "nodes",
                        "ppn",
                        "variant",
                        "binding",
                        "ucx",
                        "coll",
                        "ucx_inter",
                        "display_name",
                        "hashcode",
                        "outputdir",
                    )
                    if k in case
                },
            }
            coll.rows.append(row)
            logged[key] = row
        row["result"] = case.get("result")
        row["fail_phase"] = case.get("fail_phase")
        row["fail_reason"] = reason


def collect(results: Path, system: str, since: str = "") -> Collection:
    """Every run of ``system`` under ``results`` (perflogs/<system>, reframe/reports);
    with ``since`` (YYYY-MM-DDTHH:MM:SS, the machine's local time as the perflogs write
    it), only the runs that ended then or later and the reports of sessions started then."""
    coll = Collection(system)
    logs = perflog.read_system(results / "perflogs" / system, system)
    coll.rows, coll.notes, coll.perf = logs.rows, logs.notes, logs.units
    coll.rejected, coll.merged = logs.rejected, logs.merged
    if since:
        coll.rows = [r for r in coll.rows if (r.get("time") or "") >= since]
    add_failures(coll, results / "reframe" / "reports", since)
    coll.rows.sort(key=lambda r: (r["partition"] or "", r["check"], r.get("time") or ""))
    return coll


def systems(results: Path) -> list[str]:
    """The systems with perflogs under ``results``."""
    root = results / "perflogs"
    return sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
