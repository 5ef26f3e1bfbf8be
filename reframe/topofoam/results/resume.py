"""Rerun what of an interrupted or failed run did not pass, on any site.

    reframe -C site-configs/vsc5.py -c reframe -r -t intra1 \\
        $(python -m topofoam.results.resume results/perflogs/vsc5 --since 2026-11-22T14:00:00)

prints the ReFrame options (``-x /<hash>`` per test case) that leave out every test case
that passed since the run started, so the same selection runs only the rest: the failed ones
and the ones that never ran. What passed is read from the perflogs, where ReFrame writes a
test's row when the test finishes, so a run killed without a run report resumes too.
(ReFrame's own ``--restore-session --failed`` knows only what its run report lists: after an
interruption it can report success for tests that never ran.) ``./bench run --resume`` does
this for the local site.
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from pathlib import Path

from topofoam.results import perflog


def passed_hashes(perflogs: Path, since: str, partition: str | None = None) -> list[str]:
    """Hash codes of the test cases that passed at or after ``since`` (on ``partition``)."""
    rows = perflog.read_system(perflogs).rows
    return sorted(
        {
            r["hashcode"]
            for r in rows
            if r.get("result") == "pass"
            and r.get("hashcode")
            and (r.get("time") or "") >= since
            and (partition is None or r.get("partition") == partition)
        }
    )


def exclude_options(hashes: list[str]) -> list[str]:
    return [opt for h in hashes for opt in ("-x", f"/{h}")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m topofoam.results.resume", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "perflogs", type=Path, help="one system's perflogs, e.g. results/perflogs/vsc5"
    )
    parser.add_argument(
        "--since", required=True, metavar="YYYY-MM-DDTHH:MM:SS", help="when the run started"
    )
    parser.add_argument("--partition", help="only this partition's test cases")
    args = parser.parse_args(argv)
    if not args.perflogs.is_dir():
        print(
            f"resume: {args.perflogs} is not a folder -- give the system folder of the "
            f"perflogs, e.g. results/perflogs/vsc5",
            file=sys.stderr,
        )
        return 2
    try:
        datetime.strptime(args.since, "%Y-%m-%dT%H:%M:%S")
    except ValueError:
        print(
            f"resume: --since {args.since!r} is not a time YYYY-MM-DDTHH:MM:SS -- give the "
            f"run's start, e.g. 2026-11-22T14:00:00",
            file=sys.stderr,
        )
        return 2
    hashes = passed_hashes(args.perflogs, args.since, args.partition)
    print(" ".join(exclude_options(hashes)))
    print(
        f"resume: {len(hashes)} test case(s) passed since {args.since}; the options above "
        f"leave them out",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
