"""Turn a baseline run into a site's performance references.

    python -m topofoam.results.references results/perflogs/vsc5 --out site-configs/references/vsc5.yaml

reads the sweep perflogs of one system (``<perflogs>/<partition>/<Check>.log``) and writes,
for every check, partition and setting (case/size/layout/variant/placement/presets), the
solver wall time of its passed, measured runs (merged by the suite's one rule,
topofoam.results.merge) as ReFrame's external reference
(``$index: [$partition, setting]``). Later runs slower than that by more than the tolerance
(default 10 %) fail their performance stage; faster is never a failure. Review the file
before committing it: it states what this system is expected to do.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import defaultdict
from pathlib import Path

import yaml

from topofoam import output, yamlfile
from topofoam.results import perflog
from topofoam.results.merge import robust


def baseline(perflogs: Path) -> tuple[dict, list[str]]:
    """{check: {partition fullname: {setting: [wall seconds]}}} of passed, measured rows,
    and what of the perflogs could not be read."""
    walls: dict = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    logs = perflog.read_system(perflogs)
    for row in perflog.passed(logs.rows, "wall"):
        if row["check"].endswith("Reference"):
            continue  # the standard runs behind the fields check: no references
        if row.get("timing") != "measured" or not row.get("setting"):
            continue
        part = f"{row['system']}:{row['partition']}"
        walls[row["check"]][part][row["setting"]].append(row["wall"])
    return walls, logs.notes


def references(walls: dict, tolerance: float) -> dict:
    out = {}
    for check, parts in sorted(walls.items()):
        entry = {"$index": ["$partition", "setting"]}
        for part, settings in sorted(parts.items()):
            entry[part] = {
                setting: {"wall": [round(robust(values), 4), None, tolerance, "s"]}
                for setting, values in sorted(settings.items())
            }
        out[check] = entry
    return out


def problem(path: Path) -> str | None:
    """Why a references file cannot be used as it is (None when it can): it must load as YAML,
    and every reference be [value, lower, upper, unit] with a finite value above zero and
    finite bounds. ReFrame would otherwise judge every run against a NaN."""
    try:
        data = yamlfile.load(path)
    except yamlfile.YamlError as e:
        return f"{e} (or write it again with python -m topofoam.results.references)"
    if not isinstance(data, dict):
        return f"{path} is not a references file (an object keyed by check) -- write it again"
    for check, entry in data.items():
        if not isinstance(entry, dict):
            return f"{path}: {check} is not an object of partitions -- write it again"
        for part, settings in entry.items():
            if part == "$index":
                continue
            for setting, refs in (
                (settings or {}).items() if isinstance(settings, dict) else [(None, None)]
            ):
                for name, ref in (refs or {}).items() if isinstance(refs, dict) else [(None, refs)]:
                    if not _reference_ok(ref):
                        return (
                            f"{path}: {check} on {part}, {setting}: the reference {name} is "
                            f"{ref!r}, not [value > 0, lower, upper, unit] -- write it again "
                            f"with python -m topofoam.results.references, or fix it"
                        )
    return None


def _reference_ok(ref) -> bool:
    if not (isinstance(ref, list) and len(ref) in (3, 4)):
        return False
    value, *bounds = ref[:3]
    numbers = [value] + [b for b in bounds if b is not None]
    if not all(isinstance(x, int | float) and not isinstance(x, bool) for x in numbers):
        return False
    return all(math.isfinite(x) for x in numbers) and value > 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m topofoam.results.references", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "perflogs", type=Path, help="one system's perflog folder, e.g. results/perflogs/vsc5"
    )
    parser.add_argument("--out", type=Path, required=True, help="references file to write")
    parser.add_argument(
        "--tolerance",
        type=float,
        default=0.10,
        help="how much slower a run may be, as a fraction (default 0.10)",
    )
    args = parser.parse_args(argv)
    if not args.perflogs.is_dir():
        print(
            f"references: {args.perflogs} is not a folder -- give the system folder of the "
            f"perflogs, e.g. results/perflogs/vsc5",
            file=sys.stderr,
        )
        return 2
    if not 0 < args.tolerance < 10:
        print(
            f"references: --tolerance {args.tolerance} is not a fraction such as 0.1",
            file=sys.stderr,
        )
        return 2
    walls, notes = baseline(args.perflogs)
    for note in notes:
        print(f"references: left out: {note}", file=sys.stderr)
    if not walls:
        print(
            f"references: no passed, measured sweep runs under {args.perflogs} -- run a "
            f"baseline first, and give the system folder of the perflogs",
            file=sys.stderr,
        )
        return 2
    data = references(walls, args.tolerance)
    try:
        output.write_text(
            args.out,
            f"# Written by python -m topofoam.results.references from {args.perflogs}\n"
            + yaml.safe_dump(data, sort_keys=False),
            "--out",
        )
    except output.OutputError as e:
        print(f"references: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(
            f"references: cannot write {args.out} ({e.strerror}) -- give --out a path you "
            f"can write",
            file=sys.stderr,
        )
        return 2
    count = sum(len(s) for parts in walls.values() for s in parts.values())
    print(
        f"references: {count} settings of {len(walls)} check(s) in {args.out} "
        f"(slower by more than {args.tolerance:.0%} fails)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
