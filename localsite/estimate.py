"""How long a ``./bench run`` will take on this machine, said when it starts.

Every partition's ReFrame run is timed and recorded with what it selected (partition, tags,
OpenFOAM, repeats, cases compared, ReFrame options) in ``<cache>/durations.jsonl``: the cache
belongs to the machine and outlives results folders. A later run with the same selection is
estimated by the last like run on this machine. A first run has no such record: the default
selection is then estimated by docs/timings.md's current figures (its "Current figures" table:
the newest measurement of each partition's run and of each build, with its date and machine),
and says so; a selection nobody has timed, or a figure the table lacks, gets no number. No
figure is typed into the code: a newer measurement in the table is the next estimate.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from topofoam import paths
from topofoam.config import fabric
from topofoam.results.timings import current_figures

#: Keys of the current-figures table (topofoam.results.timings) the estimate reads: each
#: partition's default run (warm) and the builds a first run makes.
RUN_KEY = "run.{partition}"
BUILD_KEY = "build.{target}"


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
    } | (
        # What the emulated links cost decides how long its multi-node runs take.
        {"fabric": os.environ.get("TOPOFOAM_FABRIC", "").strip() or fabric.NONE}
        if partition == "emu"
        else {}
    )


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
        and chosen.get("fabric", fabric.BENCH_DEFAULT) == fabric.BENCH_DEFAULT
    )


def say(
    selections: list[dict],
    builds: list[str],
    path: Path | None = None,
    timings: Path | None = None,
) -> str:
    """One line: the whole run's estimate and where each figure comes from."""
    parts, total, unknown, sources, like_ended = [], 0.0, [], set(), []
    current = current_figures(timings)
    for chosen in selections:
        name = chosen["partition"]
        like = last_like(chosen, path)
        figure = current.get(RUN_KEY.format(partition=name))
        if like is not None:
            seconds = like["seconds"]
            like_ended.append(str(like["ended"]))
        elif is_default(chosen) and figure is not None:
            seconds = figure.seconds
            sources.add(
                f"first run of this selection here: as docs/timings.md's current figures "
                f"({figure.date}, {figure.machine})"
            )
        else:
            unknown.append(name)
            continue
        total += seconds
        parts.append(f"{name} {_minutes(seconds)}")
    for build in builds:
        figure = current.get(BUILD_KEY.format(target=build))
        if figure is None:
            unknown.append(f"building {build}")
            continue
        total += figure.seconds
        parts.append(f"building {build} {_minutes(figure.seconds)}")
        sources.add(f"builds as docs/timings.md's current figures ({figure.date})")
    if like_ended:
        sources.add(f"as the last like run here took ({', '.join(like_ended)})")
    if not parts:
        return (
            "bench: no estimate of how long this run takes: no earlier run of this selection "
            "on this machine (the next one will have one)"
        )
    line = f"bench: this run takes about {_minutes(total)} ({', '.join(parts)}; "
    line += "; ".join(sorted(sources)) + ")"
    if unknown:
        line += (
            f"; {', '.join(unknown)} not estimated (no earlier like run here, no current figure)"
        )
    return line
