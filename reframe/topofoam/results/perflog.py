"""The one reader of the suite's perflogs.

A perflog (``<perflogs>/<system>/<partition>/<Check>.log``, see sitekit/common.py) is
'|'-separated with a header line; ReFrame appends a row for every run of a performance check,
passed or failed, and starts a new file (the old one becomes ``.log.h0``, ``.h1``...) when
the column set changes. Each file is read with its own header, so logs of older suite
versions mix with new ones; a column a file lacks is absent from its rows.

What is not a run is never a row, and is said in ``notes``:
  - a line with another number of fields than the header (cut by a crash, edited by hand,
    or another format);
  - the header line repeated inside the file (logs concatenated);
  - a performance check's row that claims to have passed but holds no value (a
    ``--dry-run`` writes such rows: nothing ran; the suite's site files send them to
    ``perflogs-dry-run/`` in the first place).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

#: Columns turned into integers (besides the performance values, which are floats).
INTEGER = (
    "nodes",
    "ppn",
    "num_tasks",
    "num_tasks_per_node",
    "expected_cells",
    "expected_steps",
    "write_every",
)
#: Columns turned into floats.
FLOAT = ("node_hour_price",)
#: How an empty value is written.
EMPTY = ("", "None", "null")
#: A perflog file: ``<Check>.log`` or an older column set's ``<Check>.log.hN``.
FILE = re.compile(r"^(?P<check>\w+)\.log(\.h\d+)?$")


@dataclass
class Perflogs:
    """The rows read, what could not be read, and each performance variable's unit."""

    rows: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    units: dict[str, str] = field(default_factory=dict)


def _number(text: str):
    try:
        return float(text)
    except ValueError:
        return None


def _typed(key: str, value: str):
    if value in EMPTY:
        return None
    if key in INTEGER and _number(value) is not None:
        return int(float(value))
    if key in FLOAT:
        return _number(value)
    return value


def read_file(path: Path, out: Perflogs, *, system: str = "", partition: str = "") -> None:
    """Append the runs of one perflog file to ``out``."""
    match = FILE.match(path.name)
    check = match["check"] if match else path.stem
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError as e:
        out.notes.append(f"{path}: cannot read ({e.strerror})")
        return
    if not lines:
        return
    header_line = lines[0]
    header = header_line.split("|")
    if "result" not in header:
        out.notes.append(
            f'{path}: no header line with a "result" column; file skipped '
            f"(not a perflog of this suite)"
        )
        return
    # A performance check's file has value columns; a passed row of it without any value is
    # not a measurement. (Fixtures and builds log rows without values: those are kept.)
    performance = any(key.endswith("_value") for key in header)
    cut = repeated = empty = 0
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        if line == header_line:
            repeated += 1
            continue
        values = line.split("|")
        if len(values) == len(header) + 1 and values[-1] == "":
            values.pop()  # a trailing separator
        if len(values) != len(header):
            cut += 1
            continue
        raw = dict(zip(header, values))
        row = {
            "system": raw.get("system") or system,
            "partition": raw.get("partition") or partition,
            "check": check,
            "time": raw.pop("job_completion_time", None),
            "source": f"{path.name}:{number}",
        }
        measured = False
        for key, value in raw.items():
            if key in ("system", "partition"):
                continue
            if key.endswith("_unit"):
                if value not in EMPTY and not out.units.get(key[:-5]):
                    out.units[key[:-5]] = value
                continue
            if key.endswith("_value"):
                number_ = None if value in EMPTY else _number(value)
                row[key[:-6]] = number_
                measured |= number_ is not None
                out.units.setdefault(key[:-6], "")
                continue
            row[key] = _typed(key, value)
        if row.get("result") == "pass" and not measured and performance:
            empty += 1
            continue
        out.rows.append(row)
    if cut:
        out.notes.append(
            f"{path}: {cut} line(s) do not match the header's {len(header)} "
            f"columns and were left out (a line cut by a crash, or edited by "
            f"hand)"
        )
    if repeated:
        out.notes.append(
            f"{path}: the header line is repeated {repeated} time(s) inside the "
            f"file (logs concatenated); those lines were skipped"
        )
    if empty:
        out.notes.append(
            f"{path}: {empty} passed row(s) without any measured value were left "
            f"out (written by a --dry-run, where nothing ran)"
        )


def read_system(root: Path, system: str = "", *, checks: tuple[str, ...] = ()) -> Perflogs:
    """Every perflog under one system's folder (``<perflogs>/<system>``), partition by
    partition; with ``checks``, only the files of those checks."""
    out = Perflogs()
    if not root.is_dir():
        out.notes.append(f"no perflogs under {root}")
        return out
    for part in sorted(p for p in root.iterdir() if p.is_dir()):
        for path in sorted(part.iterdir()):
            match = FILE.match(path.name)
            if match and (not checks or match["check"] in checks):
                read_file(path, out, system=system or root.name, partition=part.name)
    return out


def passed(rows: list[dict], metric: str) -> list[dict]:
    """The rows that passed sanity and measured ``metric``."""
    return [r for r in rows if r.get("result") == "pass" and isinstance(r.get(metric), float)]
