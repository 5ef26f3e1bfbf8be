"""A site's results in the fields of an OpenFOAM HPC Challenge (OHC-1) submission, as CSV and
JSON, so that they can be set beside the community's published results.

    python -m topofoam.reporting.export [--results DIR] --system NAME [--out DIR]
                              [--system-info FILE] [--affiliation TEXT]

One row per configuration of solver runs (its repeats merged, as in the report): OHC-1's
per-simulation fields (nodes, CPU cores, cells, wall-clock time, time per iteration, FVOPS,
FVOPS per node, energy where known) beside the system's metadata (CPU model, cores, sockets,
memory, last-level cache, interconnect, file system, MPI, OpenFOAM flavour, decomposition and
renumbering). Field names are OHC-1's (its OHCParser's columns) where it has them.

Where the system metadata comes from:
  - the local system (``local``: every partition runs on this machine): read from this
    machine (/proc/cpuinfo, /proc/meminfo, sysfs, the mount table);
  - the seeds' systems (vsc5, hpc2, oci): the seeds' published description;
  - ``--system-info FILE`` (JSON): what the site knows better (its memory, file system...),
    over both. A field nobody knows is null in JSON and empty in CSV, and named in the
    JSON's ``unknown``.
Energy is never measured by the suite: "Run Consumed Energy [kWh]" is null.

Errors are one line, "export: <cause> -- <fix>", exit code 2.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import sys
from datetime import UTC, datetime
from pathlib import Path

from topofoam import output, paths
from topofoam.jobs import fingerprint
from topofoam.reporting import analysis, published
from topofoam.reporting.collect import collect, systems
from topofoam.results.merge import group

#: The systems whose partitions all run on the machine the export runs on.
PROBED = ("local",)

#: System fields, in OHC-1's names where it has them, and the ``--system-info`` key of each.
SYSTEM_FIELDS = {
    "cpu": "Hardware Spec (CPU)",
    "sockets": "Number of Sockets",
    "cores_per_node": "Cores per Node",
    "memory_gib": "Memory per Node [GiB]",
    "llc": "Last-Level Cache",
    "interconnect": "Network Interconnect",
    "filesystem": "Storage File-System",
    "mpi": "MPI",
    "os": "Operating System",
    "affiliation": "Contributor Affiliation",
}
#: Per-simulation fields, in OHC-1's names (the suite's own after them).
SIMULATION_FIELDS = (
    "System",
    "Partition",
    "Check",
    "Case",
    "Mesh",
    "Track",
    "Configuration",
    "Variant",
    "Placement",
    "OpenFOAM Flavor",
    "Decomposition Method",
    "Renumbering Method",
    "Number of Nodes",
    "Number of CPU Cores",
    "Number of GPU Devices",
    "Number of Cells",
    "Steps",
    "Run Wall-Clock Time [s]",
    "Time per Iteration [s]",
    "FVOPS",
    "FVOPS per Node",
    "T* [core-s/cell]",
    "RSD [%]",
    "Repeats",
    "Run Consumed Energy [kWh]",
    "Timing",
)
#: OpenFOAM's renumberMesh without a renumberMeshDict (how cases/prepare.py calls it).
RENUMBERING = "renumberMesh (CuthillMcKee, its default)"


class ExportError(RuntimeError):
    """One line: what is wrong and the fix."""


# -- the system ---------------------------------------------------------------------------


def _cpuinfo() -> dict:
    models, sockets, cores = set(), set(), set()
    physical = "0"
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return {}
    for line in text.splitlines():
        key, _, value = (part.strip() for part in line.partition(":"))
        if key == "model name":
            models.add(value)
        elif key == "physical id":
            physical = value
            sockets.add(value)
        elif key == "core id":
            cores.add((physical, value))
    return {
        "cpu": " / ".join(sorted(models)) or None,
        "sockets": len(sockets) or None,
        "cores_per_node": len(cores) or os.cpu_count(),
    }


def _memory_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 1)
    except (OSError, ValueError, IndexError):
        pass
    return None


def _llc() -> str | None:
    caches = sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"))
    best = None
    for index in caches:
        try:
            level = int((index / "level").read_text())
            size = (index / "size").read_text().strip()
        except (OSError, ValueError):
            continue
        if best is None or level > best[0]:
            best = (level, size)
    return f"L{best[0]} {best[1]} (per cpu0's cache domain)" if best else None


def _filesystem(folder: Path) -> str | None:
    """The type of the file system ``folder`` is on, from the mount table."""
    try:
        mounts = [line.split() for line in Path("/proc/mounts").read_text().splitlines()]
    except OSError:
        return None
    target = str(folder.resolve())
    best = max(
        (m for m in mounts if len(m) > 2 and (target + "/").startswith(m[1].rstrip("/") + "/")),
        key=lambda m: len(m[1]),
        default=None,
    )
    return f"{best[2]} ({best[1]})" if best else None


def probe(results: Path) -> dict:
    """This machine, as the export can read it."""
    return {
        **_cpuinfo(),
        "memory_gib": _memory_gib(),
        "llc": _llc(),
        "interconnect": "none: one machine (shared memory)",
        "filesystem": _filesystem(results),
        "mpi": f"Open MPI {version}" if (version := fingerprint.open_mpi()) else None,
        "os": f"{platform.system()} {platform.release()}",
    }


def seeds(system: str) -> dict:
    """A seed system's published description."""
    row = published.system(system)
    if not row:
        return {}
    return {
        "cpu": row["cpu"],
        "sockets": int(row["sockets"]),
        "cores_per_node": int(row["cores_per_node"]),
        "interconnect": row["network"],
        "mpi": row["mpi"],
    }


def read_system_info(path: Path) -> dict:
    """``--system-info``: a JSON object of SYSTEM_FIELDS keys."""
    try:
        data = json.loads(path.read_text())
    except OSError as e:
        raise ExportError(f"{path}: cannot read ({e.strerror}) -- give an existing file") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ExportError(
            f"{path}: not JSON ({e}) -- write an object such as "
            f'{{"memory_gib": 512, "filesystem": "Lustre"}}'
        ) from None
    if not isinstance(data, dict):
        raise ExportError(f'{path}: not a JSON object -- write {{"key": value, ...}}')
    unknown = sorted(set(data) - set(SYSTEM_FIELDS))
    if unknown:
        raise ExportError(
            f"{path}: unknown key(s) {', '.join(unknown)} -- use {', '.join(SYSTEM_FIELDS)}"
        )
    for key in ("sockets", "cores_per_node"):
        value = data.get(key)
        if value is not None and (
            not isinstance(value, int) or isinstance(value, bool) or value < 1
        ):
            raise ExportError(f"{path}: {key} is {value!r} -- give a whole number of 1 or more")
    value = data.get("memory_gib")
    if value is not None and (
        not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 < value < 1e7
    ):
        raise ExportError(f"{path}: memory_gib is {value!r} -- give the GiB per node, above 0")
    for key, value in data.items():
        if key not in ("sockets", "cores_per_node", "memory_gib") and not isinstance(
            value, (str, type(None))
        ):
            raise ExportError(f"{path}: {key} is {value!r} -- give it as text")
    return data


def system_info(system: str, results: Path, info: dict, affiliation: str) -> dict:
    known = probe(results) if system in PROBED else seeds(system)
    merged = dict.fromkeys(SYSTEM_FIELDS) | {k: v for k, v in known.items() if v is not None}
    merged |= {k: v for k, v in info.items() if v is not None}
    if affiliation:
        merged["affiliation"] = affiliation
    return merged


# -- the simulations ----------------------------------------------------------------------


def _flavour(text) -> str | None:
    """'esi v1912' -> 'ESI v1912'; 'org 12' -> 'Foundation 12'."""
    if not text:
        return None
    kind, _, version = str(text).partition(" ")
    return {"esi": f"ESI {version}", "org": f"Foundation {version}"}.get(kind, str(text))


def _number(figure):
    return figure.value if figure is not None and figure.value is not None else None


def simulations(results: Path, system: str) -> tuple[list[dict], list[str]]:
    coll = collect(results, system)
    groups = group(coll.rows, set(coll.perf))
    rows = []
    for m in analysis.merits(groups):
        g = m.group
        metric = analysis.metric(g)
        variant = g.get("variant") or "standard"
        binding = g.get("binding")
        hardware = variant == "standard" and binding in (None, "block")
        rsd = m.figures["RSD"].value
        openfoam = g.get("openfoam") or g.first("openfoam")
        rows.append(
            {
                "System": system,
                "Partition": g.key[0],
                "Check": g.key[1],
                "Case": g.get("case"),
                "Mesh": g.get("size"),
                # OHC-1: the hardware track runs the reference setup, the software track
                # modified solvers or decompositions (the suite's optimised variants).
                "Track": "hardware" if hardware else "software",
                "Configuration": g.get("setting") or analysis.label(g),
                "Variant": variant,
                "Placement": binding,
                "OpenFOAM Flavor": _flavour(openfoam),
                "Decomposition Method": g.get("method") or "scotch",
                "Renumbering Method": RENUMBERING,
                "Number of Nodes": g.get("nodes"),
                "Number of CPU Cores": g.get("num_tasks"),
                "Number of GPU Devices": 0,
                "Number of Cells": g.get("expected_cells"),
                "Steps": g.get("expected_steps"),
                "Run Wall-Clock Time [s]": g.value(metric),
                "Time per Iteration [s]": _number(m.figures["time per iteration"]),
                "FVOPS": _number(m.figures["FVOPS"]),
                "FVOPS per Node": _number(m.figures["FVOPS per node"]),
                "T* [core-s/cell]": _number(m.figures["T*"]),
                "RSD [%]": None if rsd is None else 100 * rsd,
                "Repeats": len(g.passed),
                "Run Consumed Energy [kWh]": None,
                "Timing": g.get("timing") or "measured",
            }
        )
    return rows, coll.notes


def export(
    results: Path, system: str, out: Path, info: dict | None = None, affiliation: str = ""
) -> tuple[Path, Path, int]:
    """Write ``ohc1-<system>.csv`` and ``.json`` under ``out``; their paths and row count."""
    rows, notes = simulations(results, system)
    if not rows:
        raise ExportError(
            f"no solver run of {system} under {results} -- run the suite first "
            f"(./bench run, or reframe ... -r), or give --results"
        )
    meta = system_info(system, results, info or {}, affiliation)
    out = output.folder(out, "--out")
    columns = [SYSTEM_FIELDS[k] for k in SYSTEM_FIELDS] + list(SIMULATION_FIELDS)
    csv_path = out / f"ohc1-{system}.csv"
    with output.replacing(csv_path, "--out", newline="") as f:
        writer = csv.DictWriter(f, columns)
        writer.writeheader()
        for row in rows:
            named = {SYSTEM_FIELDS[k]: v for k, v in meta.items()} | row
            writer.writerow({k: "" if v is None else v for k, v in named.items()})
    json_path = out / f"ohc1-{system}.json"
    document = {
        "format": "OpenFOAM HPC Challenge (OHC-1) submission fields, from TopoFOAM bench",
        "generated": datetime.now(UTC).isoformat(timespec="seconds"),
        "results": str(results),
        "system": {SYSTEM_FIELDS[k]: v for k, v in meta.items()},
        "unknown": [SYSTEM_FIELDS[k] for k, v in meta.items() if v is None]
        + ["Run Consumed Energy [kWh] (the suite does not measure energy)"],
        "notes": notes,
        "simulations": rows,
    }
    output.write_text(json_path, json.dumps(document, indent=1) + "\n", "--out")
    return csv_path, json_path, len(rows)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m topofoam.reporting.export", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("--results", type=Path, default=paths.results_dir())
    p.add_argument("--system", help="the system to export (default: the only one with perflogs)")
    p.add_argument("--out", type=Path, help="folder of the files (default: <results>/export)")
    p.add_argument("--system-info", type=Path, help="JSON of what the site knows of its nodes")
    p.add_argument("--affiliation", default="", help="the contributor's affiliation")
    args = p.parse_args(argv)
    return output.main("export", lambda: _main(args))


def _main(args) -> int:
    try:
        if not args.results.is_dir():
            raise ExportError(
                f"{args.results} is not a folder -- give the results folder with --results"
            )
        system = args.system
        if system is None:
            found = systems(args.results)
            if len(found) != 1:
                raise ExportError(
                    f"{args.results} holds runs of {', '.join(found) or 'no system'} -- "
                    f"name one with --system"
                )
            system = found[0]
        info = read_system_info(args.system_info) if args.system_info else {}
        out = output.folder(args.out or args.results / "export", "--out")  # before the work
        csv_path, json_path, n = export(args.results, system, out, info, args.affiliation)
    except ExportError as e:
        print(f"export: {e}", file=sys.stderr)
        return 2
    print(f"export: {n} configuration(s) of {system}: {csv_path}, {json_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
