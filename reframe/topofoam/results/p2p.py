"""The p2p check's measurements as a latency table rankmap takes as its cost vector.

    python -m topofoam.results.p2p results/perflogs/vsc5 --out results/p2p-vsc5.csv
    python -m rankmap map CASE --topology vsc5 --nodes 4 --cost-table results/p2p-vsc5.csv \
        --cost-system vsc5:zen3_0512 --cost-size 1000 --out map

writes, per partition (``system:partition``) and message size, the round-trip time of each
hardware level's passed runs (merged by the suite's one rule, topofoam.results.merge), in
the format of seed 000 Table 2 (rankmap/p2p_latency_us.csv); a level the partition lacks
stays empty.
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections import defaultdict
from pathlib import Path

from rankmap.topology import LEVELS
from topofoam import output
from topofoam.results import perflog
from topofoam.results.merge import robust


def table(perflogs: Path, notes: list[str] | None = None, keep=None) -> list[dict]:
    """The rows of the latency table; what of the perflogs was left out, and why, is added to
    ``notes`` (rows rejected by the reader, rows without a known hardware level). ``keep``:
    a predicate on perflog rows (the runs under one fabric profile)."""
    times = defaultdict(list)  # (partition, size, level) -> [us]
    logs = perflog.read_system(perflogs, checks=("PingPongRun",))
    unknown: dict[str, int] = defaultdict(int)
    for row in logs.rows:
        if row.get("result") != "pass" or (keep and not keep(row)):
            continue
        level = row.get("level")
        if level not in LEVELS:
            unknown[repr(level) if level else "none"] += 1
            continue
        part = f"{row['system']}:{row['partition']}"
        for key, value in row.items():
            size = key[len("rtt_") :]
            if key.startswith("rtt_") and size.isdigit() and isinstance(value, float):
                times[part, int(size), level].append(value)
    if notes is not None:
        notes += logs.notes
        if unknown:
            notes.append(
                f"{perflogs}: {sum(unknown.values())} passed PingPongRun row(s) name no known "
                f"hardware level ({', '.join(f'{k}: {n}' for k, n in sorted(unknown.items()))}; "
                f"the levels are {', '.join(LEVELS)}); left out"
            )
    rows = {}
    for (part, size, level), values in sorted(times.items()):
        row = rows.setdefault(
            (part, size), {"system": part, "size": size, **dict.fromkeys(LEVELS, "")}
        )
        row[level] = round(robust(values), 3)
    return list(rows.values())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m topofoam.results.p2p", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("perflogs", type=Path, help="one system's perflog folder")
    parser.add_argument("--out", type=Path, required=True, help="CSV table to write")
    args = parser.parse_args(argv)
    notes: list[str] = []
    rows = table(args.perflogs, notes) if args.perflogs.is_dir() else []
    for note in notes:
        print(f"p2p: left out: {note}", file=sys.stderr)
    if not rows:
        print(
            f"p2p: no passed PingPongRun rows under {args.perflogs} -- run "
            f"'reframe ... -t p2p' first, and give the system folder of the perflogs",
            file=sys.stderr,
        )
        return 2
    try:
        with output.replacing(args.out, "--out", newline="") as f:
            f.write(
                f"# Round-trip time in us by hardware level, measured by reframe/p2p.py "
                f"({args.perflogs}); passed runs merged by topofoam.results.merge.\n"
            )
            writer = csv.DictWriter(f, fieldnames=["system", "size", *LEVELS])
            writer.writeheader()
            writer.writerows(rows)
    except output.OutputError as e:
        print(f"p2p: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(
            f"p2p: cannot write {args.out} ({e.strerror}) -- give --out a path in a folder "
            f"you can write",
            file=sys.stderr,
        )
        return 2
    print(
        f"p2p: wrote {args.out} ({len(rows)} rows: "
        f"{', '.join(sorted({r['system'] for r in rows}))})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
