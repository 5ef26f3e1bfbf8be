"""Carry a tuning stage's best settings into the next one (seed 002's staged method).

    python -m topofoam.results.tuning results/perflogs/oci --out results/tuning-oci.json
    export TOPOFOAM_TUNING=results/tuning-oci.json      # the next stages read it

reads the perflogs of the stages run so far (the rows whose ``stage`` column names one) and
writes, per partition, the settings with the shortest median solver wall time when they are
significantly faster than the partition's defaults (Mann-Whitney U at the 5 % level,
topofoam.results.stats), and otherwise keeps the defaults, saying so; failed runs are left
out:

  intra1  processes per node
  intra2  placement, UCX preset, collectives (at the intra1 ppn)
  inter1  UCX inter-node preset per node count

An existing file is updated, so stages can be added one at a time.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

from topofoam import output
from topofoam.results import perflog, stats
from topofoam.results.stages import STAGES, TUNED, parse_defaults


def best(rows: list[dict], decides: tuple, groups: tuple) -> dict:
    """{group values: (settings, reason)}: per group, the settings the stage keeps
    (stats.choose: the fastest only when significantly faster than the run's defaults)."""
    times = defaultdict(lambda: defaultdict(list))
    defaults = {}
    for row in perflog.passed(rows, "wall"):
        group = tuple(row[c] for c in groups)
        times[group][tuple(str(row[c]) for c in decides)].append(row["wall"])
        want = parse_defaults(row.get("defaults"))
        if want and all(c in want for c in decides):
            defaults.setdefault(group, tuple(want[c] for c in decides))
    chosen: dict = {}
    for group, by_combo in sorted(times.items(), key=str):
        choice = stats.choose(defaults.get(group), by_combo)
        chosen[group] = (dict(zip(decides, choice.chosen)), choice.reason)
    return chosen


def update(tuning: dict, perflogs: Path) -> tuple[list[str], list[str]]:
    """Fold every stage found under ``perflogs`` into ``tuning``; what was decided, and
    what of the perflogs could not be read."""
    logs = perflog.read_system(perflogs)
    notes = list(logs.notes)
    said = []
    by_partition = defaultdict(list)
    for row in logs.rows:
        by_partition[row["partition"]].append(row)
    for partition, rows in sorted(by_partition.items()):
        entry = tuning.setdefault(partition, {})
        for stage in TUNED:
            decides, groups = STAGES[stage]
            staged = [r for r in rows if r.get("stage") == stage]
            lacking = [r for r in staged if any(r.get(c) is None for c in decides + groups)]
            if lacking:
                columns = sorted({c for r in lacking for c in decides + groups if r.get(c) is None})
                notes.append(
                    f"{partition} {stage}: {len(lacking)} row(s) without "
                    f"{', '.join(columns)} (a perflog of another check or an older suite); "
                    f"they decide nothing"
                )
                staged = [r for r in staged if r not in lacking]
            for group, (settings, reason) in best(staged, decides, groups).items():
                if stage == "inter1":  # one preset per node count
                    entry.setdefault("ucx_inter", {})[str(group[0])] = settings["ucx_inter"]
                else:
                    entry.update({k: int(v) if k == "ppn" else v for k, v in settings.items()})
                said.append(
                    f"{partition} {stage}: "
                    + ", ".join(f"{k}={v}" for k, v in settings.items())
                    + (f" at {groups[0]}={group[0]}" if groups else "")
                    + f" -- {reason}"
                )
    return said, notes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m topofoam.results.tuning", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("perflogs", type=Path, help="the system folder of the perflogs")
    parser.add_argument("--out", type=Path, required=True, help="tuning file to write/update")
    args = parser.parse_args(argv)
    if not args.perflogs.is_dir():
        print(
            f"tuning: {args.perflogs} is not a folder -- give the system folder of the "
            f"perflogs, e.g. results/perflogs/oci",
            file=sys.stderr,
        )
        return 2
    tuning = {}
    if args.out.is_dir():
        print(
            f"tuning: --out {args.out} is a folder -- give the tuning file's path, e.g. "
            f"{args.out / 'tuning.json'}",
            file=sys.stderr,
        )
        return 2
    if args.out.exists():
        try:
            tuning = json.loads(args.out.read_text())
        except (OSError, ValueError) as e:
            print(
                f"tuning: {args.out} cannot be read as JSON ({e}) -- remove it or fix it",
                file=sys.stderr,
            )
            return 2
        if not isinstance(tuning, dict) or not all(isinstance(v, dict) for v in tuning.values()):
            print(
                f"tuning: {args.out} is not a tuning file (an object keyed by partition) -- "
                f"remove it or give another --out",
                file=sys.stderr,
            )
            return 2
    said, notes = update(tuning, args.perflogs)
    for note in notes:
        print(f"tuning: left out: {note}", file=sys.stderr)
    if not said:
        print(
            f"tuning: no passed intra1/intra2/inter1 runs under {args.perflogs} -- run those "
            f"stages first (reframe ... -t intra1), and give the system folder of the perflogs",
            file=sys.stderr,
        )
        return 2
    try:
        output.write_text(args.out, json.dumps(tuning, indent=1, sort_keys=True) + "\n", "--out")
    except output.OutputError as e:
        print(f"tuning: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(
            f"tuning: cannot write {args.out} ({e.strerror}) -- give --out a path in a "
            f"folder you can write",
            file=sys.stderr,
        )
        return 2
    print("\n".join(said))
    print(f"tuning: wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
