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


def decrease(system: str, case: str) -> dict[int, float]:
    """Seed 000 Table 4: local+global vs standard, % by node count ({} elsewhere)."""
    rows, _ = _rows("runtime_decrease_seed000.csv")
    want = CASE_NAMES.get(case, case)
    for row in rows:
        if row["system"] == system and row["case"] == want:
            return {int(k[1:]): float(v) for k, v in row.items() if k.startswith("n") and v}
    return {}


def node_seconds(system: str) -> list[dict]:
    """Seed 002 section 4 (OCI, HPC_motorbike Small): nodes, solver and node seconds."""
    if system != "oci":
        return []
    rows, _ = _rows("oci_node_hours_seed002.csv")
    return rows


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
