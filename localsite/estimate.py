"""How long a ``./bench run`` will take on this machine, said when it starts.

Every partition's ReFrame run is timed and recorded with what it selected (partition, tags,
OpenFOAM, repeats, cases compared, ReFrame options) in ``<cache>/durations.jsonl``: the cache
belongs to the machine and outlives results folders. A later run with the same selection is
estimated by the last like run on this machine. A first run has no such record: it is
estimated by the reference run of the default selection (docs/timings.md, a 2-core machine),
and says so; a selection nobody has timed gets no number. Builds that are not cached yet are
said apart, with their reference time.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from topofoam import paths

#: The default ``./bench run`` on the reference machine (docs/timings.md, 2026-11-23: 2 cores,
#: builds cached), per partition, in seconds.
REFERENCE = {"cpu": 8 * 60 + 57, "slurm": 4 * 60 + 7, "emu": 5 * 60 + 28}
#: What the reference machine is, as said beside its figures.
REFERENCE_MACHINE = "the 2-core reference machine of docs/timings.md"
#: Builds the run makes if they are not cached, and their time on the reference machine.
BUILD_MINUTES = {"scotch": 2, "patched": 15}


def record_file() -> Path:
    return paths.cache_dir() / "durations.jsonl"


def selection(partition: str, args) -> dict:
    """What decides how long a partition's run takes."""
    return {
        "partition": partition,
        "tags": sorted(args.tag or []),
        "openfoam": args.openfoam,
        "repeats": args.repeats or int(os.environ.get("TOPOFOAM_REPEATS") or 0) or None,
        "compare_all": bool(args.compare_all or os.environ.get("TOPOFOAM_COMPARE") == "all"),
        "reframe_args": list(args.reframe_args or []),
    }


def record(chosen: dict, seconds: float, cases: int, path: Path | None = None) -> None:
    """Append one partition's run (a full run only: a resumed one is a part)."""
    path = path or record_file()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a") as f:
            f.write(
                json.dumps(
                    {
                        "selection": chosen,
                        "seconds": round(seconds, 1),
                        "cases": cases,
                        "cores": os.cpu_count(),
                        "ended": time.strftime("%Y-%m-%dT%H:%M:%S"),
                    }
                )
                + "\n"
            )
    except OSError:
        pass  # an estimate is a courtesy: never a reason to fail the run


def last_like(chosen: dict, path: Path | None = None) -> dict | None:
    """The newest recorded run with this selection on this machine."""
    path = path or record_file()
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return None
    found = None
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # a line cut by a crash
        if isinstance(entry, dict) and entry.get("selection") == chosen:
            found = entry
    return found


def _minutes(seconds: float) -> str:
    return f"{max(1, round(seconds / 60))} min"


def is_default(chosen: dict) -> bool:
    return (
        not chosen["tags"]
        and chosen["openfoam"] == "v1912"
        and chosen["repeats"] in (None, 5)
        and not chosen["compare_all"]
        and not chosen["reframe_args"]
    )


def say(selections: list[dict], builds: list[str], path: Path | None = None) -> str:
    """One line: the whole run's estimate and where each figure comes from."""
    parts, total, unknown, sources = [], 0.0, [], set()
    for chosen in selections:
        name = chosen["partition"]
        like = last_like(chosen, path)
        if like is not None:
            seconds = like["seconds"]
            sources.add(f"as the last like run here took ({like['ended']})")
        elif is_default(chosen) and name in REFERENCE:
            seconds = REFERENCE[name]
            sources.add(f"first run of this selection here: as on {REFERENCE_MACHINE}")
        else:
            unknown.append(name)
            continue
        total += seconds
        parts.append(f"{name} {_minutes(seconds)}")
    for build in builds:
        minutes = BUILD_MINUTES[build]
        total += 60 * minutes
        parts.append(f"building {build} {minutes} min")
        sources.add(f"builds as on {REFERENCE_MACHINE}")
    if not parts:
        return (
            "bench: no estimate of how long this run takes: no earlier run of this selection "
            "on this machine (the next one will have one)"
        )
    line = f"bench: this run takes about {_minutes(total)} ({', '.join(parts)}; "
    line += "; ".join(sorted(sources)) + ")"
    if unknown:
        line += f"; {', '.join(unknown)} not estimated (no earlier like run here)"
    return line
