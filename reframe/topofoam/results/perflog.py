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
    ``--dry-run`` writes such rows: nothing ran; the suite's site files log no rows in a
    dry run in the first place).

What is a row but cannot be a measurement is *rejected* with a reason (topofoam.results.values:
a time that is NaN, infinite, negative or zero; a node count that is not a whole number...):
it enters no statistic, and ``notes`` counts the rejections by reason.

Every run counts once. A row's identity is ReFrame's: the test case's hash code, partition,
environment, job id and completion time (``run_identity``); rows logged without those are
identified by their whole line. Exact copies of one run's row (logs concatenated, a file
copied beside itself) are merged into one, with a note; two different rows claiming to be
the same run are both rejected.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from topofoam.results import values

#: The columns that identify one run (ReFrame's test case and job), besides the check.
IDENTITY = ("partition", "environ", "hashcode", "jobid", "job_completion_time_unix")
#: How an empty value is written.
EMPTY = ("", "None", "null")
#: A perflog file: ``<Check>.log`` or an older column set's ``<Check>.log.hN``.
FILE = re.compile(r"^(?P<check>\w+)\.log(\.h\d+)?$")


@dataclass
class Perflogs:
    """The rows read, what could not be read, each performance variable's unit, and the
    rows rejected (row, reason) with the copies merged."""

    rows: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    units: dict[str, str] = field(default_factory=dict)
    rejected: list[tuple[dict, str]] = field(default_factory=list)
    merged: int = 0

    def rejections(self) -> Counter:
        """Rejected rows by reason."""
        return Counter(reason for _, reason in self.rejected)


def _number(text: str):
    try:
        return float(text)
    except ValueError:
        return None


def _unit(units: dict[str, str], metric: str, logged: str) -> tuple[str, str | None]:
    """The unit a row logged ``metric`` in, and why the row cannot be read (None when it
    can). The metric's unit of this reading (``units``) is the suite's for it
    (values.reading_unit): a row in another unit of the same quantity is converted to it,
    a row in a unit of another quantity, or of a name's other quantity, is rejected."""
    logged = "" if logged in EMPTY else logged
    if not logged:
        units.setdefault(metric, "")
        return "", None
    problem = values.unit_problem(metric, logged)
    if problem:
        return logged, problem
    if not units.get(metric):
        units[metric] = values.reading_unit(metric, logged)
    if values.convert(1.0, logged, units[metric]) is None:
        return logged, f"{metric} is in {logged}, other rows in {units[metric]}"
    return logged, None


def run_identity(row: dict, line: str) -> tuple:
    """What makes ``row`` one run: ReFrame's test case and job columns where the row has
    them, else its whole line."""
    ids = tuple(row.get(k) for k in IDENTITY)
    if row.get("hashcode") and (row.get("jobid") or row.get("job_completion_time_unix")):
        return (row["system"], row["check"], *ids)
    return (row["system"], row["check"], row["partition"], line)


def rejection_note(counts: Counter) -> str:
    """'3 row(s) rejected: wall is NaN (2), wall is negative (1)'."""
    total = sum(counts.values())
    said = ", ".join(f"{reason} ({n})" for reason, n in counts.most_common())
    return f"{total} row(s) rejected: {said}"


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
    if "environ" not in header:
        # Every comparison stays within one environment: without the column, the file's rows
        # are taken as one environment, and the report says so.
        out.notes.append(
            f'{path}: no "environ" column; its rows are compared as one environment (log '
            f"with sitekit's perflog format, site-configs/sitekit/common.py, to tell them apart)"
        )
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
        fields = line.split("|")
        if len(fields) == len(header) + 1 and fields[-1] == "":
            fields.pop()  # a trailing separator
        if len(fields) != len(header):
            cut += 1
            continue
        raw = dict(zip(header, fields))
        row = {
            "system": raw.get("system") or system,
            "partition": raw.get("partition") or partition,
            "check": check,
            "time": raw.pop("job_completion_time", None),
            "source": f"{path.name}:{number}",
        }
        measured = False
        invalid = None
        for key, value in raw.items():
            if key in ("system", "partition"):
                continue
            if key.endswith("_unit"):
                continue  # read with its value
            if key.endswith("_value"):
                metric = key[:-6]
                unit, why = _unit(out.units, metric, raw.get(f"{metric}_unit", ""))
                if value in EMPTY:
                    row[metric] = None
                    continue
                number_ = _number(value)
                if number_ is None:
                    invalid = invalid or f"{metric} is {value!r}, not a number"
                elif why:
                    invalid = invalid or why
                else:
                    invalid = invalid or values.performance(metric, unit, number_)
                    number_ = values.convert(number_, unit, out.units[metric])
                row[metric] = number_
                measured |= number_ is not None
                continue
            if value in EMPTY:
                row[key] = None
                continue
            row[key], why = values.column(key, value)
            invalid = invalid or why
        if row.get("result") == "pass" and not measured and performance and not invalid:
            empty += 1
            continue
        if invalid:
            out.rejected.append((row, invalid))
            continue
        if row.get("outputdir"):
            row["outputdir"] = _moved(row["outputdir"], path)
        row["_identity"] = run_identity(row, f"{header_line}\n{line}")
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


def _moved(outputdir: str, perflog: Path) -> str:
    """A run's output folder, where the results folder was moved or copied since (a report
    written on another machine): the same place under the results folder the perflog is in
    now (<results>/perflogs/<system>/<partition>/<file>; ReFrame's <results>/reframe/output)."""
    given = Path(outputdir)
    if given.is_dir() or len(perflog.parents) < 4:
        return outputdir
    parts = given.parts
    for i in range(len(parts) - 1):
        if parts[i : i + 2] == ("reframe", "output"):
            here = perflog.parents[3].joinpath(*parts[i:])
            return str(here) if here.is_dir() else outputdir
    return outputdir


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
    merge_copies(out)
    if out.rejected:
        out.notes.append(
            f"{root}: {rejection_note(out.rejections())}; they enter no statistic "
            f"(their files: {', '.join(sorted({r['source'].split(':')[0] for r, _ in out.rejected}))})"
        )
    return out


def _content(row: dict) -> tuple:
    """A row's values but where it was read from."""
    return tuple(sorted((k, repr(v)) for k, v in row.items() if k not in ("source", "_identity")))


def merge_copies(out: Perflogs) -> None:
    """One row per run (see the module's text): exact copies merged, conflicting rows of one
    run rejected."""
    by_run: dict[tuple, list[dict]] = {}
    for row in out.rows:
        by_run.setdefault(row.pop("_identity"), []).append(row)
    kept = []
    for rows in by_run.values():
        if len({_content(r) for r in rows}) > 1:
            for row in rows:
                out.rejected.append((row, "one run logged twice with different values"))
            continue
        kept.append(rows[0])
        if len(rows) > 1:
            out.merged += len(rows) - 1
    out.rows = kept
    if out.merged:
        out.notes.append(
            f"{out.merged} copied row(s) of runs already read were merged: every run counts "
            f"once (logs concatenated or copied)"
        )


def passed(rows: list[dict], metric: str) -> list[dict]:
    """The rows that passed sanity and measured ``metric``."""
    return [r for r in rows if r.get("result") == "pass" and isinstance(r.get(metric), float)]
