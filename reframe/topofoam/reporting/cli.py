"""Write the cost-performance report of each system with runs under the results folder.

    python -m topofoam.reporting [--results DIR] [--system NAME ...] [--since TIME]
                                 [--no-images]

prints the path of each report (Markdown and HTML, under <results>/report/<system>/) and its
tidy table of runs (runs.csv). Errors are one line, "report: <cause> -- <fix>", exit code 2.
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from pathlib import Path

from topofoam import output, paths
from topofoam.reporting.build import NoRuns, build
from topofoam.reporting.collect import systems


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m topofoam.reporting", description=__doc__.split("\n\n")[0]
    )
    p.add_argument(
        "--results",
        type=Path,
        default=paths.results_dir(),
        help="where the perflogs and run reports are (default: $TOPOFOAM_RESULTS or results/)",
    )
    p.add_argument(
        "--system",
        action="append",
        help="report only this system (default: every system with perflogs)",
    )
    p.add_argument("--out", type=Path, help="report folder (default: <results>/report/<system>)")
    p.add_argument(
        "--since",
        default="",
        metavar="YYYY-MM-DDTHH:MM:SS",
        help="only runs that ended then or later (local time; ./bench run passes its start)",
    )
    p.add_argument(
        "--no-images", action="store_true", help="leave out the ParaView images of the final fields"
    )
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return output.main("report", lambda: _main(args))


def _main(args) -> int:
    if not args.results.is_dir():
        print(
            f"report: {args.results} is not a folder -- give the results folder with "
            f"--results (it holds perflogs/ and reframe/reports/)",
            file=sys.stderr,
        )
        return 2
    if args.since and not _is_time(args.since):
        print(
            f"report: --since {args.since!r} is not a time YYYY-MM-DDTHH:MM:SS -- e.g. "
            f"--since 2026-11-22T14:00:00",
            file=sys.stderr,
        )
        return 2
    found = systems(args.results)
    unknown = [s for s in args.system or [] if s not in found]
    if unknown:
        print(
            f"report: no perflogs of system {unknown[0]!r} under {args.results / 'perflogs'} "
            f"-- choose from {', '.join(found) or 'none (run the suite first)'}",
            file=sys.stderr,
        )
        return 2
    names = list(dict.fromkeys(args.system or [])) or found  # a system named twice is one
    if not names:
        print(
            f"report: no perflogs under {args.results / 'perflogs'} -- run the suite first "
            f"(./bench run, or reframe -C site-configs/<site>.py -c reframe -r)",
            file=sys.stderr,
        )
        return 2
    if args.out and len(names) > 1:
        print(
            "report: --out names one folder but several systems have runs -- add --system",
            file=sys.stderr,
        )
        return 2
    for name in names:  # every report folder checked before any is written
        output.folder(args.out or args.results / "report" / name, "--out")
    for name in names:
        try:
            report = build(
                args.results, name, args.out, images=not args.no_images, since=args.since
            )
        except NoRuns as e:
            print(f"report: {e}", file=sys.stderr)
            return 2
        except OSError as e:  # a report folder that cannot be written
            where = e.filename or args.out or args.results / "report" / name
            print(
                f"report: cannot write {where} ({e.strerror}) -- give --out a folder you can write",
                file=sys.stderr,
            )
            return 2
        except KeyboardInterrupt:
            print(
                "report: interrupted; each file written is whole, but the report may mix this "
                "run's files with the last one's -- run it again",
                file=sys.stderr,
            )
            return 130
        print(f"report: {report.markdown}")
        print(f"report: {report.html}")
        print(f"report: runs table {report.table}")
        for note in report.notes:
            print(f"report: missing: {note}")
    return 0


def _is_time(text: str) -> bool:
    try:
        datetime.strptime(text, "%Y-%m-%dT%H:%M:%S")
    except ValueError:
        return False
    return True


if __name__ == "__main__":
    sys.exit(main())
