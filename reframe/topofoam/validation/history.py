"""A system's validation over time: the verdict kept for every session
(``<results>/validation/verdict-<system>/<session start>-<uuid>.json``, topofoam.validation's
outputs) read back, oldest first, and each measurement's judgements across them, with the
first session from which it regressed marked: after a maintenance, which session started it.

    python -m topofoam.validation history [--system local] [--metric wall]

The report's history section is made from the same rows.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

#: How a regression's first session is marked.
FIRST = "first regressed"


def kept(results: Path, system: str, notes: list[str]) -> list[dict]:
    """Every kept verdict of ``system``, oldest first (``{"path", "data"}``): one file per
    session under validation/verdict-<system>/, or (results written before those were kept)
    the one latest file validation/verdict-<system>.json. A file that is not a verdict is
    left out with a note."""
    found_files = sorted((results / "validation" / f"verdict-{system}").glob("*.json"))
    if not found_files:
        latest = results / "validation" / f"verdict-{system}.json"
        found_files = [latest] if latest.exists() else []
    found = []
    for path in found_files:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            notes.append(f"{path}: the validation verdict could not be read ({e})")
            continue
        if (
            not isinstance(data, dict)
            or not isinstance(data.get("verdict"), str)
            or not isinstance(data.get("partitions"), list)
        ):
            notes.append(
                f"{path}: not a verdict of topofoam.validation (no verdict and partitions "
                f"list); left out"
            )
            continue
        found.append({"path": path, "data": data})
    return found


def systems(results: Path) -> list[str]:
    """The systems with kept verdicts under ``results``."""
    folder = results / "validation"
    names = {p.name.removeprefix("verdict-") for p in folder.glob("verdict-*") if p.is_dir()}
    names |= {p.stem.removeprefix("verdict-") for p in folder.glob("verdict-*.json")}
    return sorted(names)


@dataclass
class Point:
    """One measurement's judgement in one session."""

    session: str
    status: str
    measured: str
    change: str
    first_regressed: bool = False


def measurement(j: dict) -> str:
    return f"{j.get('check')} on {j.get('partition')}: {j.get('metric')} of {j.get('setting')}"


def series(verdicts: list[dict], metric: str = "") -> dict[str, list[Point]]:
    """Each measurement's points over the sessions, oldest first; the first FAIL after a
    session that did not fail it (or the first FAIL of all) is marked. ``metric`` keeps the
    measurements whose name contains it."""
    out: dict[str, list[Point]] = {}
    for v in verdicts:
        data = v["data"]
        for j in data.get("judgements", []):
            if not isinstance(j, dict):
                continue
            name = measurement(j)
            if metric and metric not in name:
                continue
            out.setdefault(name, []).append(
                Point(
                    str(data.get("session", "?")),
                    str(j.get("status", "?")),
                    str(j.get("measured", "")),
                    str(j.get("change") or ""),
                )
            )
    for points in out.values():
        for before, point in zip([None, *points], points):
            failed_before = before is not None and before.status == "FAIL"
            if point.status == "FAIL" and not failed_before:
                point.first_regressed = True
                break  # one mark: the session the regression started in
    return out


def lines(system: str, verdicts: list[dict], metric: str = "") -> list[str]:
    if not verdicts:
        return [f"History of {system}: no kept verdicts"]
    found = series(verdicts, metric)
    first, last = verdicts[0]["data"].get("session", "?"), verdicts[-1]["data"].get("session")
    out = [f"History of {system}: {len(verdicts)} verdict(s), {first} to {last}"]
    for name, points in sorted(found.items()):
        out.append(name)
        for p in points:
            mark = f"  <- {FIRST}" if p.first_regressed else ""
            out.append(f"  {p.session}  {p.status:<12} {p.measured}  {p.change}{mark}")
    if metric and not found:
        out.append(f"no measurement named like {metric!r}")
    return out
