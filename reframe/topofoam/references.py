"""Turn a baseline run into a site's performance references.

    python -m topofoam.references results/perflogs/vsc5 --out site-configs/references/vsc5.yaml

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
import sys
from collections import defaultdict
from pathlib import Path

import yaml

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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m topofoam.references", description=__doc__.split("\n\n")[0]
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
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(
            f"# Written by python -m topofoam.references from {args.perflogs}\n"
            + yaml.safe_dump(data, sort_keys=False)
        )
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
