"""The current figures of docs/timings.md: the newest measurement of each timed thing.

``./bench run``'s start-up estimate (localsite/estimate.py) and the build fixture's time limit
(topofoam.checks.fixtures) read them, so that no duration is typed into the code: a newer
measurement in the table is the next figure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from topofoam import paths

#: Where the current figures are: the first table of docs/timings.md, under this heading.
TIMINGS = paths.REPO / "docs" / "timings.md"
HEADING = "## Current figures"


@dataclass(frozen=True)
class Figure:
    seconds: float
    date: str
    machine: str


def _seconds(text: str) -> float | None:
    """'1 h 2 min', '8 min 57 s', '21 s' -> seconds; None for anything else."""
    units = {"h": 3600, "min": 60, "s": 1}
    parts = re.findall(r"(\d+(?:\.\d+)?)\s*(h|min|s)\b", text)
    rest = re.sub(r"(\d+(?:\.\d+)?)\s*(h|min|s)\b", "", text).strip(" *")
    if not parts or rest:
        return None
    return sum(float(n) * units[u] for n, u in parts)


def _rows(path: Path | None) -> list[list[str]]:
    """The cells of each data row of the current-figures table (its header and separator
    left out); [] when the file or the heading is missing."""
    try:
        text = (path or TIMINGS).read_text()
    except OSError:
        return []
    _, found, rest = text.partition(HEADING + "\n")
    if not found:
        return []
    rows = []
    for line in rest.split("\n## ")[0].splitlines():
        if not line.startswith("|") or line.startswith("| ---") or line.startswith("| key "):
            continue
        rows.append([c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))])
    return rows


def current_figures(path: Path | None = None) -> dict[str, Figure]:
    """The rows of the current-figures table whose key is in backticks and whose figure is a
    time: {key: Figure}. A row that does not read as one is left out (no number for it)."""
    figures = {}
    for cells in _rows(path):
        if len(cells) < 5 or not re.fullmatch(r"`[\w.-]+`", cells[0]):
            continue
        seconds = _seconds(cells[2])
        if seconds is not None:
            figures[cells[0].strip("`")] = Figure(seconds, cells[3], cells[4])
    return figures


def misfits(path: Path | None = None) -> list[str]:
    """What is wrong with the current-figures table: a row that is not one key in backticks
    and its 6 cells (a history row put in the wrong table), or a key given twice (a newer
    figure added beside the older instead of replacing it). [] when it is whole."""
    wrong, seen = [], set()
    for cells in _rows(path):
        key = cells[0]
        if len(cells) != 6 or not re.fullmatch(r"`[\w.-]+`", key):
            wrong.append(f"not a current-figures row ({len(cells)} cells): {key[:60]}")
        elif key in seen:
            wrong.append(f"{key} given twice: a newer figure replaces its row")
        seen.add(key)
    return wrong
