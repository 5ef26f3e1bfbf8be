"""The p2p check's measurements as a latency table rankmap takes as its cost vector.

    python -m topofoam.p2p results/perflogs/vsc5 --out results/p2p-vsc5.csv
    python -m rankmap map CASE --topology vsc5 --nodes 4 --cost-table results/p2p-vsc5.csv \
        --cost-system vsc5:zen3_0512 --cost-size 1000 --out map

writes, per partition (``system:partition``) and message size, the median round-trip time
of each hardware level's passed runs, in the format of seed 000 Table 2
(rankmap/p2p_latency_us.csv); a level the partition lacks stays empty.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from rankmap.topology import LEVELS


def table(perflogs: Path) -> list[dict]:
    times = defaultdict(list)       # (partition, size, level) -> [us]
    for log in sorted(perflogs.glob('*/PingPongRun.log')):
        with open(log, newline='') as f:
            for row in csv.DictReader(f, delimiter='|'):
                if row.get('result') != 'pass':
                    continue
                part = f"{row['system']}:{row['partition']}"
                for key, value in row.items():
                    if key.startswith('rtt_') and key.endswith('_value') and value:
                        size = int(key[len('rtt_'):-len('_value')])
                        times[part, size, row['level']].append(float(value))
    rows = {}
    for (part, size, level), values in sorted(times.items()):
        row = rows.setdefault((part, size), {'system': part, 'size': size,
                                             **dict.fromkeys(LEVELS, '')})
        row[level] = round(statistics.median(values), 3)
    return list(rows.values())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog='python -m topofoam.p2p',
                                     description=__doc__.split('\n\n')[0])
    parser.add_argument('perflogs', type=Path, help="one system's perflog folder")
    parser.add_argument('--out', type=Path, required=True, help='CSV table to write')
    args = parser.parse_args(argv)
    rows = table(args.perflogs) if args.perflogs.is_dir() else []
    if not rows:
        print(f'p2p: no passed PingPongRun rows under {args.perflogs} -- run '
              f"'reframe ... -t p2p' first, and give the system folder of the perflogs",
              file=sys.stderr)
        return 1
    with open(args.out, 'w', newline='') as f:
        f.write(f'# Round-trip time in us by hardware level, measured by reframe/p2p.py '
                f'({args.perflogs}); median of the passed runs.\n')
        writer = csv.DictWriter(f, fieldnames=['system', 'size', *LEVELS])
        writer.writeheader()
        writer.writerows(rows)
    print(f'p2p: wrote {args.out} ({len(rows)} rows: '
          f"{', '.join(sorted({r['system'] for r in rows}))})")
    return 0


if __name__ == '__main__':
    sys.exit(main())
