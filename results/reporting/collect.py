"""Perflogs and ReFrame run reports -> one tidy table per site (one row per run).

Perflogs (``<results>/perflogs/<system>/<partition>/<Check>.log``, '|'-separated with a
header line) are the record: ReFrame appends a row for every run of a performance check,
passed or failed, and starts a new file (the old one becomes ``.log.h0``, ``.h1``...) when
the column set changes. Each file is read with its own header, so logs of older suite
versions mix with new ones; a column a file lacks is empty in its rows.

The run reports (``<results>/reframe/reports/*.json``) add why a run failed, and the runs
that failed before ReFrame logged them.
"""

from __future__ import annotations

import csv
import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

#: Columns turned into numbers (besides the performance values).
INTEGER = ('nodes', 'ppn', 'num_tasks', 'num_tasks_per_node', 'expected_cells',
           'expected_steps', 'write_every')
#: Columns of every tidy table, first; the checks' own columns follow, sorted.
FIRST = ('system', 'partition', 'check', 'result', 'fail_phase', 'fail_reason', 'time',
         'setting', 'case', 'size', 'nodes', 'ppn', 'variant', 'binding', 'ucx', 'coll',
         'ucx_inter', 'nps')
EMPTY = ('', 'None', 'null')
_LOG = re.compile(r'^(?P<check>\w+)\.log(\.h\d+)?$')


@dataclass
class Collection:
    """The runs of one system, and what could not be read (said in the report)."""
    system: str
    rows: list[dict] = field(default_factory=list)
    perf: dict[str, str] = field(default_factory=dict)     # performance variable -> unit
    notes: list[str] = field(default_factory=list)

    def columns(self) -> list[str]:
        seen = {k for row in self.rows for k in row}
        return [c for c in FIRST if c in seen] + sorted(seen - set(FIRST))

    def write_csv(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        columns = self.columns()
        with open(path, 'w', newline='') as f:
            out = csv.DictWriter(f, columns, extrasaction='ignore')
            out.writeheader()
            for row in self.rows:
                out.writerow({k: '' if row.get(k) is None else row[k] for k in columns})
        return path


def _number(text: str):
    try:
        return float(text)
    except ValueError:
        return None


def read_perflog(path: Path, system: str, partition: str, coll: Collection) -> None:
    """Append the rows of one perflog file; a line that does not fit its header is noted."""
    match = _LOG.match(path.name)
    check = match['check']
    try:
        lines = path.read_text(errors='replace').splitlines()
    except OSError as e:
        coll.notes.append(f'{path}: cannot read ({e.strerror})')
        return
    if not lines:
        return
    header = lines[0].split('|')
    if 'result' not in header:
        coll.notes.append(f'{path}: no header line with a "result" column; file skipped '
                          f'(not a perflog of this suite)')
        return
    bad = 0
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        values = line.split('|')
        if len(values) == len(header) + 1 and values[-1] == '':
            values.pop()        # a trailing separator
        if len(values) != len(header):
            bad += 1
            continue
        raw = dict(zip(header, values))
        row = {'system': system, 'partition': partition, 'check': check,
               'time': raw.pop('job_completion_time', None),
               'source': f'{path.name}:{number}'}
        for key, value in raw.items():
            if key.endswith('_unit'):
                if value not in EMPTY and not coll.perf.get(key[:-5]):
                    coll.perf[key[:-5]] = value
                continue
            if key.endswith('_value'):
                row[key[:-6]] = None if value in EMPTY else _number(value)
                coll.perf.setdefault(key[:-6], '')
                continue
            if value in EMPTY:
                row[key] = None
            elif key in INTEGER:
                row[key] = int(float(value)) if _number(value) is not None else value
            else:
                row[key] = value
        coll.rows.append(row)
    if bad:
        coll.notes.append(f'{path}: {bad} line(s) do not match the header\'s '
                          f'{len(header)} columns and were left out (a line cut by a '
                          f'crash, or edited by hand)')


def _report_cases(reports: Path, system: str, notes: list[str], since: str) -> list[dict]:
    cases = []
    for path in sorted(reports.glob('*.json')) if reports.is_dir() else []:
        try:
            data = json.loads(path.read_text())
            runs = data['runs']
            started = time.strftime('%Y-%m-%dT%H:%M:%S', time.localtime(
                float(data['session_info']['time_start_unix'])))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            notes.append(f'{path}: not a ReFrame run report; skipped')
            continue
        if started < since:
            continue
        for run in runs:
            for case in run.get('testcases', []):
                if case.get('system') == system:
                    cases.append(dict(case, _report=path.name, _started=started))
    return cases


def _key(partition, hashcode, unix) -> tuple:
    try:
        return partition, hashcode, round(float(unix), 1)
    except (TypeError, ValueError):
        return partition, hashcode, None


def add_failures(coll: Collection, reports: Path, since: str = '') -> None:
    """Fail reasons from the run reports; a failed run no perflog holds (a fixture, or a
    run that failed before ReFrame logged it) becomes a row of its own."""
    logged = {_key(r['partition'], r.get('hashcode'), r.get('job_completion_time_unix')): r
              for r in coll.rows}
    for case in _report_cases(reports, coll.system, coll.notes, since):
        if case.get('result') in ('pass', 'xfail'):
            continue
        reason = ' '.join(str(case.get('fail_reason') or '').split())
        if case.get('result') == 'fail_deps' and not reason:
            reason = 'not run: a test it depends on failed'
        key = _key(case.get('partition'), case.get('hashcode'),
                   case.get('job_completion_time_unix'))
        row = logged.get(key)
        if row is None:
            row = {'system': coll.system, 'partition': case.get('partition'),
                   'check': str(case.get('name', '?')).split()[0],
                   'time': (case.get('job_completion_time') or '')[:19] or case['_started'],
                   'source': case['_report'],
                   **{k: case.get(k) for k in ('setting', 'case', 'size', 'nodes', 'ppn',
                                               'variant', 'binding', 'ucx', 'coll',
                                               'ucx_inter', 'display_name', 'hashcode',
                                               'outputdir') if k in case}}
            coll.rows.append(row)
            logged[key] = row
        row['result'] = case.get('result')
        row['fail_phase'] = case.get('fail_phase')
        row['fail_reason'] = reason


def collect(results: Path, system: str, since: str = '') -> Collection:
    """Every run of ``system`` under ``results`` (perflogs/<system>, reframe/reports);
    with ``since`` (YYYY-MM-DDTHH:MM:SS, the machine's local time as the perflogs write
    it), only the runs that ended then or later and the reports of sessions started then."""
    coll = Collection(system)
    root = results / 'perflogs' / system
    if not root.is_dir():
        coll.notes.append(f'no perflogs for system {system!r} under {results / "perflogs"}')
    else:
        for part in sorted(p for p in root.iterdir() if p.is_dir()):
            for path in sorted(part.iterdir()):
                if _LOG.match(path.name):
                    read_perflog(path, system, part.name, coll)
    if since:
        coll.rows = [r for r in coll.rows if (r.get('time') or '') >= since]
    add_failures(coll, results / 'reframe' / 'reports', since)
    coll.rows.sort(key=lambda r: (r['partition'] or '', r['check'], r.get('time') or ''))
    return coll


def systems(results: Path) -> list[str]:
    """The systems with perflogs under ``results``."""
    root = results / 'perflogs'
    return sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
