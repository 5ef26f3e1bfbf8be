"""Write the cost-performance report of each system with runs under the results folder.

    python -m reporting [--results DIR] [--system NAME ...] [--since TIME] [--config FILE]
                        [--no-images]

prints the path of each report (Markdown and HTML, under <results>/report/<system>/) and its
tidy table of runs (runs.csv). Errors are one line, "report: <cause> -- <fix>", exit code 2.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

from reporting.build import build
from reporting.collect import systems
from reporting.site import REPO


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog='python -m reporting', description=__doc__.split('\n\n')[0])
    p.add_argument('--results', type=Path,
                   default=Path(os.environ.get('TOPOFOAM_RESULTS', REPO / 'results')),
                   help='where the perflogs and run reports are (default: $TOPOFOAM_RESULTS '
                        'or results/)')
    p.add_argument('--system', action='append',
                   help='report only this system (default: every system with perflogs)')
    p.add_argument('--config', type=Path,
                   help='site configuration (default: site-configs/<system>.py)')
    p.add_argument('--out', type=Path, help='report folder (default: <results>/report/<system>)')
    p.add_argument('--since', default='', metavar='YYYY-MM-DDTHH:MM:SS',
                   help='only runs that ended then or later (local time; ./bench run passes '
                        'its start)')
    p.add_argument('--no-images', action='store_true',
                   help='leave out the ParaView images of the final fields')
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if not args.results.is_dir():
        print(f'report: {args.results} is not a folder -- give the results folder with '
              f'--results (it holds perflogs/ and reframe/reports/)', file=sys.stderr)
        return 2
    if args.since and not re.fullmatch(r'\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d', args.since):
        print(f'report: --since {args.since!r} is not YYYY-MM-DDTHH:MM:SS -- e.g. '
              f'--since 2026-11-22T14:00:00', file=sys.stderr)
        return 2
    names = args.system or systems(args.results)
    if not names:
        print(f'report: no perflogs under {args.results / "perflogs"} -- run the suite first '
              f'(./bench run, or reframe -C site-configs/<site>.py -c reframe -r)',
              file=sys.stderr)
        return 2
    if args.out and len(names) > 1:
        print('report: --out names one folder but several systems have runs -- add '
              '--system', file=sys.stderr)
        return 2
    for name in names:
        report = build(args.results, name, args.out, images=not args.no_images,
                       config=args.config, since=args.since)
        print(f'report: {report.markdown}')
        print(f'report: {report.html}')
        print(f'report: runs table {report.table}')
        for note in report.notes:
            print(f'report: missing: {note}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
