"""Carry a tuning stage's best settings into the next one (seed 002's staged method).

    python -m topofoam.tuning results/perflogs/oci --out results/tuning-oci.json
    export TOPOFOAM_TUNING=results/tuning-oci.json      # the next stages read it

reads the perflogs of the stages run so far (``<perflogs>/<partition>/<Stage>Run.log``) and
writes, per partition, the settings with the shortest solver wall time (the median of the
repeats of a combination; failed runs are left out):

  intra1  processes per node
  intra2  placement, UCX preset, collectives (at the intra1 ppn)
  inter1  UCX inter-node preset per node count

An existing file is updated, so stages can be added one at a time.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

#: Stage -> (perflog, the columns it decides, the columns that group its choice).
STAGES = {
    'intra1': ('Intra1Run.log', ('ppn',), ()),
    'intra2': ('Intra2Run.log', ('binding', 'ucx', 'coll'), ()),
    'inter1': ('Inter1Run.log', ('ucx_inter',), ('nodes',)),
}


def read_rows(path: Path) -> list[dict]:
    with open(path, newline='') as f:
        return list(csv.DictReader(f, delimiter='|'))


def best(rows: list[dict], decides: tuple, groups: tuple) -> dict:
    """{group values: {column: value}} of the fastest combination (median wall time)."""
    times = defaultdict(list)
    for row in rows:
        if row.get('result') != 'pass' or not row.get('wall_value'):
            continue
        key = tuple(row[c] for c in groups), tuple(row[c] for c in decides)
        times[key].append(float(row['wall_value']))
    chosen: dict = {}
    for (group, combo), walls in sorted(times.items()):
        median = statistics.median(walls)
        if group not in chosen or median < chosen[group][0]:
            chosen[group] = (median, dict(zip(decides, combo)))
    return {group: settings for group, (_, settings) in chosen.items()}


def update(tuning: dict, perflogs: Path) -> list[str]:
    """Fold every stage found under ``perflogs`` into ``tuning``; what was decided."""
    said = []
    for partition in sorted(p for p in perflogs.iterdir() if p.is_dir()):
        entry = tuning.setdefault(partition.name, {})
        for stage, (log, decides, groups) in STAGES.items():
            path = partition / log
            if not path.exists():
                continue
            for group, settings in best(read_rows(path), decides, groups).items():
                if stage == 'inter1':       # one preset per node count
                    entry.setdefault('ucx_inter', {})[group[0]] = settings['ucx_inter']
                else:
                    entry.update({k: int(v) if k == 'ppn' else v for k, v in settings.items()})
                said.append(f'{partition.name} {stage}: '
                            + ', '.join(f'{k}={v}' for k, v in settings.items())
                            + (f' at {groups[0]}={group[0]}' if groups else ''))
    return said


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog='python -m topofoam.tuning',
                                     description=__doc__.split('\n\n')[0])
    parser.add_argument('perflogs', type=Path, help='the system folder of the perflogs')
    parser.add_argument('--out', type=Path, required=True, help='tuning file to write/update')
    args = parser.parse_args(argv)
    if not args.perflogs.is_dir():
        print(f'tuning: {args.perflogs} is not a folder -- give the system folder of the '
              f'perflogs, e.g. results/perflogs/oci', file=sys.stderr)
        return 2
    tuning = {}
    if args.out.exists():
        try:
            tuning = json.loads(args.out.read_text())
        except ValueError as e:
            print(f'tuning: {args.out} is not JSON ({e}) -- remove it or fix it',
                  file=sys.stderr)
            return 2
    said = update(tuning, args.perflogs)
    if not said:
        print(f'tuning: no passed intra1/intra2/inter1 runs under {args.perflogs}',
              file=sys.stderr)
        return 1
    args.out.write_text(json.dumps(tuning, indent=1, sort_keys=True) + '\n')
    print('\n'.join(said))
    print(f'tuning: wrote {args.out}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
