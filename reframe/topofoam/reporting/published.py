"""The seeds' published figures for the seeds' own systems, shown beside measured ones and
labelled as published. Copies of ../shared/reference/*.csv (sources in each file's header)."""

from __future__ import annotations

import csv
from pathlib import Path

HERE = Path(__file__).with_name("published")
#: Our case names -> seed 000's.
CASE_NAMES = {"laplacianFoam": "laplacian"}


def _rows(name: str) -> tuple[list[dict], str]:
    lines = (HERE / name).read_text().splitlines()
    source = " ".join(line.lstrip("# ") for line in lines if line.startswith("#"))
    return list(csv.DictReader(line for line in lines if not line.startswith("#"))), source


TABLE4 = HERE / "runtime_decrease_seed000.csv"


class PublishedError(ValueError):
    """A published table that cannot be read; the message names the file, the cell and the fix."""


def _numeric(path: Path, keys: tuple[str, str], prefix: str, fix: str) -> dict:
    """A published table whose first two columns are ``keys`` and whose others are numbers
    under a ``prefix``ed count (n2, c12): {(key 1, key 2): {count: number}}. An empty cell is
    a configuration not run; a cell that is not a finite number, a row short of the header's
    columns or another header is refused in one line."""
    try:
        lines = path.read_text().splitlines()
    except OSError as e:
        raise PublishedError(f"cannot read {path} ({e.strerror}) -- {fix}") from None
    rows = list(csv.reader(line for line in lines if not line.startswith("#")))
    if not rows or tuple(rows[0][:2]) != keys:
        raise PublishedError(f"{path}: the header is not '{','.join(keys)},{prefix}...' -- {fix}")
    header = rows[0]
    for name in header[2:]:
        if not (name.startswith(prefix) and name.removeprefix(prefix).isdigit()):
            raise PublishedError(
                f"{path}: the header's column {name!r} is not {prefix}<count> -- {fix}"
            )
    table = {}
    for number, row in enumerate(rows[1:], start=2):
        if len(row) != len(header):
            raise PublishedError(
                f"{path}: row {number} ({','.join(row[:2])}) has {len(row)} cells, the header "
                f"{len(header)} -- {fix}"
            )
        cells = {}
        for name, text in zip(header[2:], row[2:]):
            if not text.strip():
                continue
            try:
                value = float(text)
            except ValueError:
                raise PublishedError(
                    f"{path}: {row[0]} on {row[1]}, column {name}, is {text!r}, not a number "
                    f"-- {fix}"
                ) from None
            if value != value or abs(value) == float("inf"):
                raise PublishedError(f"{path}: {row[0]} on {row[1]}, {name}, is {text} -- {fix}")
            cells[int(name.removeprefix(prefix))] = value
        table[(row[0], row[1])] = cells
    return table


def table4(path: Path | str = TABLE4) -> dict[tuple[str, str], dict[int, float]]:
    """Seed 000 Table 4 as {(our case name, system): {nodes: % decrease}}."""
    fix = f"correct it from seed 000 Table 4 (the copy is {TABLE4})"
    ours = {v: k for k, v in CASE_NAMES.items()}
    table = _numeric(Path(path), ("case", "system"), "n", fix)
    return {(ours.get(case, case), system): cells for (case, system), cells in table.items()}


SCALING = HERE / "scaling_seed001.csv"


def scaling(path: Path | str = SCALING) -> dict[tuple[str, str], dict[int, float]]:
    """Seed 001 Tables 8 and 10 as {(case, solution): {cores: runtime seconds}}."""
    fix = f"correct it from seed 001 Tables 8 and 10 (the copy is {SCALING})"
    table = _numeric(Path(path), ("case", "solution"), "c", fix)
    for (case, solution), cells in table.items():
        bad = [c for c, v in cells.items() if v <= 0]
        if bad:
            raise PublishedError(
                f"{path}: {case} {solution} at {bad[0]} cores is {cells[bad[0]]:g} s, not a "
                f"runtime -- {fix}"
            )
    return table


def decrease(system: str, case: str) -> dict[int, float]:
    """Seed 000 Table 4: local+global vs standard, % by node count ({} elsewhere)."""
    return table4().get((case, system), {})


NODE_SECONDS = HERE / "oci_node_hours_seed002.csv"


def node_seconds(system: str, path: Path | str = NODE_SECONDS) -> dict[int, tuple[float, float]]:
    """Seed 002 section 4 (OCI, HPC_motorbike Small) as {nodes: (solver seconds, node
    seconds)} ({} for other systems). The node seconds are the solver's times the nodes, and must agree with
    them to the paper's rounding (half a second a node); a missing, non-numeric or
    disagreeing cell is refused in one line."""
    if system != "oci":
        return {}
    path = Path(path)
    fix = f"correct it from seed 002 section 4 (the copy is {NODE_SECONDS})"
    try:
        lines = path.read_text().splitlines()
    except OSError as e:
        raise PublishedError(f"cannot read {path} ({e.strerror}) -- {fix}") from None
    rows = list(csv.DictReader(line for line in lines if not line.startswith("#")))
    if not rows:
        raise PublishedError(f"{path}: no rows -- {fix}")
    table = {}
    for number, row in enumerate(rows, start=2):
        try:
            nodes = int(row["nodes"])
            solver, node_s = float(row["solver_seconds"]), float(row["node_seconds"])
        except (KeyError, TypeError, ValueError):
            raise PublishedError(
                f"{path}: row {number} ({','.join(str(v) for v in row.values())}) is not "
                f"nodes,solver_seconds,node_seconds as numbers -- {fix}"
            ) from None
        if nodes < 1 or not 0 < solver < float("inf") or nodes in table:
            raise PublishedError(f"{path}: row {number} has {nodes} node(s), {solver} s -- {fix}")
        if abs(node_s - solver * nodes) > 0.5 * nodes:
            raise PublishedError(
                f"{path}: row {number}: {node_s:g} node seconds is not {solver:g} s x {nodes} "
                f"nodes -- {fix}"
            )
        table[nodes] = (solver, node_s)
    return table


def tuning(system: str) -> list[dict]:
    """Seed 002's best settings per stage (OCI)."""
    if system != "oci":
        return []
    rows, _ = _rows("oci_tuning_seed002.csv")
    return rows


def system(name: str) -> dict:
    """The seeds' description of one of their systems (CPU, cores, network, MPI, OpenFOAM),
    by the suite's name of it ({} for other systems)."""
    rows, _ = _rows("systems_seeds.csv")
    return next((r for r in rows if r["suite"] == name), {})
