"""A site's expectations: what each validated measurement should be, with its spread, its
practical margin and where it came from.

    site-configs/expectations/<system>.yaml    reviewed and committed (clusters)
    results/expectations/<system>.yaml         recorded by the first validation run here

Each expectation names its measurement (check, partition, environment, setting, metric), its
unit and which way is better, and either the ``samples`` of a baseline session (the repeats,
so that a later session is compared with them by the project's rank test) or one published
``value`` (a paper's table: the later session's median is tested against it by a sign test).
``margin`` is the practical margin: a change smaller than that is never a failure.
"""

from __future__ import annotations

import csv
import datetime
import math
import statistics
from dataclasses import dataclass
from pathlib import Path

import yaml

from topofoam import output, yamlfile
from topofoam.results import values
from topofoam.validation.sessions import (
    MARGIN_RULE,
    UNITS,
    Key,
    Session,
    SessionError,
    better,
    valid_margin,
)

#: The file format; a file of another version is stale and must be recorded again.
FORMAT = 1
#: Practical margins by unit, unless an expectation states its own: solver times are the
#: steadiest (and what an admin pays for), latencies and rates vary more between runs.
MARGINS = {"s": 0.05, "ms": 0.10, "us": 0.10, "MB/s": 0.10, "GB/s": 0.10, "x": 0.10}


class ExpectationsError(RuntimeError):
    """The file cannot be used: the message names it, what is wrong and the fix."""


@dataclass(frozen=True)
class Expectation:
    key: Key
    unit: str
    better: str
    margin: float
    source: str
    samples: tuple[float, ...] = ()
    value: float | None = None
    #: A baseline of several sessions: each one's median (MIN_SESSIONS at least).
    sessions: tuple[float, ...] = ()


def _fix(path: Path) -> str:
    return (
        f"record them again (python -m topofoam.validation record ... --out {path}) "
        f"or correct the file"
    )


def load(path: Path, system: str) -> list[Expectation]:
    """The expectations of ``system`` in ``path``; ExpectationsError when the file is
    missing, malformed, stale (another format or system) or empty."""
    path = Path(path)
    if not path.is_file():
        raise ExpectationsError(
            f"{path}: no such expectations file -- record them from a baseline session "
            f"(python -m topofoam.validation record -C <site> --out {path})"
        )
    try:
        data = yamlfile.load(path)
    except yamlfile.YamlError as e:
        raise ExpectationsError(str(e)) from None
    if not isinstance(data, dict) or not isinstance(data.get("expectations"), list):
        raise ExpectationsError(f"{path}: no 'expectations' list -- {_fix(path)}")
    if data.get("format") != FORMAT:
        raise ExpectationsError(
            f"{path}: format {data.get('format')!r}, this suite reads format {FORMAT} (stale) "
            f"-- {_fix(path)}"
        )
    if data.get("system") != system:
        raise ExpectationsError(
            f"{path}: expectations of system {data.get('system')!r}, not {system!r} -- give "
            f"the file of {system}"
        )
    out = []
    for n, entry in enumerate(data["expectations"], start=1):
        out.append(_entry(path, n, entry))
    if not out:
        raise ExpectationsError(f"{path}: the expectations list is empty -- {_fix(path)}")
    keys = [e.key for e in out]
    if len(set(keys)) != len(keys):
        dup = next(k for k in keys if keys.count(k) > 1)
        raise ExpectationsError(f"{path}: {dup} is expected twice -- keep one")
    return out


def _entry(path: Path, n: int, entry) -> Expectation:
    where = f"{path}: expectation {n}"
    if not isinstance(entry, dict):
        raise ExpectationsError(f"{where} is not a mapping -- {_fix(path)}")
    try:
        key = Key(*(str(entry[k]) for k in ("check", "partition", "environ", "setting", "metric")))
        unit = str(entry["unit"])
        source = str(entry["source"])
    except KeyError as e:
        raise ExpectationsError(f"{where} has no {e.args[0]!r} -- {_fix(path)}") from None
    way = better(unit)
    problem = values.unit_problem(key.metric, unit)
    if problem:
        raise ExpectationsError(f"{where} ({key}): {problem} -- correct its unit")
    if way is None:
        raise ExpectationsError(
            f"{where} ({key}): unit {unit!r} is not judged ({', '.join(UNITS)}) -- correct it"
        )
    margin = entry.get("margin", MARGINS[unit])
    if not _number(margin) or not valid_margin(margin):
        raise ExpectationsError(
            f"{where} ({key}): margin {margin!r} is {MARGIN_RULE} -- correct it"
        )
    samples, value, medians = entry.get("samples"), entry.get("value"), entry.get("sessions")
    if sum(x is not None for x in (samples, value, medians)) != 1:
        raise ExpectationsError(
            f"{where} ({key}): give one of 'sessions' (a baseline's session medians), "
            f"'samples' (one session's repeats) or one published 'value' -- correct it"
        )
    if medians is not None:
        if (
            not isinstance(medians, list)
            or len(medians) < MIN_SESSIONS
            or not all(_positive(v) for v in medians)
        ):
            raise ExpectationsError(
                f"{where} ({key}): sessions {medians!r} are not {MIN_SESSIONS} or more positive "
                f"numbers -- {_fix(path)}"
            )
        return Expectation(
            key, unit, way, float(margin), source, sessions=tuple(float(v) for v in medians)
        )
    if samples is not None:
        if not isinstance(samples, list) or not samples or not all(_positive(v) for v in samples):
            raise ExpectationsError(
                f"{where} ({key}): samples {samples!r} are not positive numbers -- {_fix(path)}"
            )
        return Expectation(key, unit, way, float(margin), source, tuple(float(v) for v in samples))
    if not _positive(value):
        raise ExpectationsError(
            f"{where} ({key}): value {value!r} is not a positive number -- correct it"
        )
    return Expectation(key, unit, way, float(margin), source, value=float(value))


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _positive(x) -> bool:
    return _number(x) and x > 0


def from_session(session: Session, host: str = "") -> list[Expectation]:
    """A baseline session's observations as expectations, each with the margin its partition
    stated for a one-session baseline (validate_margins_one_session, else validate_margins),
    else its unit's."""
    if session.invalid:
        raise SessionError(
            f"session {session.label()} logged {len(session.invalid)} value(s) that are not "
            f"measurements ({session.invalid[0]}) -- mend the check or its node and record "
            f"from a session without them"
        )
    source = f"baseline session {session.label()}" + (f" on {host}" if host else "")
    out = []
    for key, measured in sorted(session.samples.items()):
        unit = session.units[key]
        margin = session.margins_one_session.get(key, MARGINS[unit])
        out.append(Expectation(key, unit, better(unit), margin, source, tuple(measured)))
    return out


def margins_moved(expected: list[Expectation], session: Session) -> list[str]:
    """The expectations recorded from a baseline whose margin is not the one the judged
    session's partition states now, as 'key: held, stated'. A file keeps the margins it was
    recorded with (the verdict uses them); a site that changed ``validate_margins`` since is
    told, not silently judged by the old ones. A one-session baseline is compared with the
    margins stated for one (validate_margins_one_session), a baseline of sessions with
    validate_margins. Published values keep their own margin."""
    out = []
    for e in expected:
        if e.samples:
            stated = session.margins_one_session.get(e.key)
        elif e.sessions:
            stated = session.margins.get(e.key)
        else:
            continue
        if stated is not None and stated != e.margin:
            out.append(f"{e.key}: {e.margin:g} held, {stated:g} stated")
    return out


#: A baseline's sessions at least: with 3, the between-session spread has 2 degrees of
#: freedom, and a change of about 3.4 spreads is detectable; fewer cannot estimate it.
MIN_SESSIONS = 3
#: How many scaled MADs of the other sessions a baseline session may be worse by (the
#: screening's rule, topofoam.validation.screening.K).
DEGRADED_K = 3.5
#: How many sessions alike a worse state needs to be the host's, not one degraded session.
RECURS = 2


def from_sessions(
    baseline: list[Session], host: str = "", published: list[Expectation] = ()
) -> list[Expectation]:
    """A baseline of several sessions (MIN_SESSIONS at least, each on another allocation or
    day) as expectations: for every measurement all of them made, each session's median.
    SessionError when there are too few, or one of them is no healthy baseline
    (``degraded``, against the others and the ``published`` values)."""
    if len(baseline) < MIN_SESSIONS:
        raise SessionError(
            f"a baseline is {MIN_SESSIONS} sessions at least, on different allocations or "
            f"days; {len(baseline)} selected -- validate again later, then record them together"
        )
    problems = degraded(baseline, published)
    if problems:
        raise SessionError(
            f"{problems[0]}{f' (and {len(problems) - 1} more)' if len(problems) > 1 else ''} "
            f"-- a baseline must be healthy: validate again and add the new session to the "
            f"query (a state the host stays in recurs, and is kept), or leave that session out"
        )
    latest = baseline[-1]
    labels = ", ".join(s.label().split(" (")[0] for s in baseline)
    source = f"baseline of {len(baseline)} sessions ({labels})" + (f" on {host}" if host else "")
    out = []
    for key in sorted(set.intersection(*(set(s.samples) for s in baseline))):
        unit = latest.units[key]
        margin = latest.margins.get(key, MARGINS[unit])
        medians = tuple(_median_in(s, key, unit) for s in baseline)
        out.append(Expectation(key, unit, better(unit), margin, source, sessions=medians))
    if not out:
        raise SessionError(
            f"the {len(baseline)} sessions have no measurement in common -- record sessions "
            f"that ran the same validation selection"
        )
    return out


def _median_in(session: Session, key, unit: str) -> float:
    return values.convert(statistics.median(session.samples[key]), session.units[key], unit)


def degraded(baseline: list[Session], published: list[Expectation] = ()) -> list[str]:
    """Why sessions of a would-be baseline cannot be part of it, one line each: failed test
    cases (a screening that named an outlier node or link among them), values that are not
    measurements, a measurement worse than the other sessions' (``worse_states``) that no
    other session shares (a slow first session would otherwise become what is expected),
    or worse than a ``published`` value (an expectation with a value) by more than that
    value's margin."""
    out = []
    for s in baseline:
        if s.failed or s.invalid:
            out.append(f"session {s.label()}: {(s.failed + s.invalid)[0]}")
    for e in (e for e in published if e.value is not None):
        for s in (s for s in baseline if e.key in s.samples):
            m = _median_in(s, e.key, e.unit)
            ratio = m / e.value if e.better == "lower" else e.value / m
            if ratio > 1 + e.margin:
                out.append(
                    f"session {s.label()}: {e.key} is {m:.4g} {e.unit}, {ratio:.2f} times "
                    f"worse than {e.source}'s {e.value:.4g} {e.unit} (margin "
                    f"{e.margin * 100:g} %)"
                )
    for key, margin, how, states in worse_states(baseline):
        lone = sorted(member for state in states if len(state) < RECURS for member in state)
        for i, fraction in lone:  # oldest first
            out.append(
                f"session {baseline[i].label()}: {key} is {fraction * 100:.1f} % {how} than "
                f"the other sessions' median (margin {margin * 100:g} %)"
            )
    return out


def recurring(baseline: list[Session]) -> list[str]:
    """The worse states a baseline keeps, one line each: a measurement on which RECURS or
    more sessions are alike and worse than the others' (``worse_states``). A host whose
    cores alternate between two states (a shared virtual machine's) shows its slower one in
    several sessions, and a baseline of the faster state alone would judge its normal
    variation as worse; kept, the slower state widens the baseline's spread, and with it the
    smallest change every verdict line states it detects."""
    out = []
    for key, _margin, how, states in worse_states(baseline):
        for state in (state for state in states if len(state) >= RECURS):
            out.append(
                f"{key}: {len(state)} of {len(baseline)} sessions "
                f"({', '.join(baseline[i].label().split(' (')[0] for i, _ in state)}) are "
                f"{min(f for _, f in state) * 100:.1f} to {max(f for _, f in state) * 100:.1f} "
                f"% {how} than the other "
                f"sessions' median, alike: a state of the host that recurred, kept in the "
                f"baseline"
            )
    return out


def worse_states(baseline: list[Session]):
    """For each measurement all sessions made: (key, margin, how, states), ``how`` the word
    for worse ("slower" for a time, "lower" for a rate). A session is unusual when it is
    worse than the other sessions' median by more than DEGRADED_K scaled MADs of theirs, and
    flagged when it is also worse by more than the margin. Each state starts at a flagged
    session and takes, in turn, the next worse unusual session that is within the margin of
    it (a ratio of 1 + margin at most) and nearer to it than to the others' median: a slower
    state is seldom one level, and a session 21 % slower beside one 31 % slower, at a 25 %
    margin, is the same state. Each state lists its sessions as (index, fraction worse),
    least worse first: one session alone is a degraded one; RECURS or more are a state of
    the host."""
    for key in sorted(set.intersection(*(set(s.samples) for s in baseline))):
        unit = baseline[-1].units[key]
        way = better(unit)
        margin = baseline[-1].margins.get(key, MARGINS[unit])
        worse = [  # larger is worse
            m if way == "lower" else 1 / m for m in (_median_in(s, key, unit) for s in baseline)
        ]
        centre, unusual = [], []
        for i in range(len(baseline)):
            others = worse[:i] + worse[i + 1 :]
            centre.append(statistics.median(others))
            mad = 1.4826 * statistics.median(abs(v - centre[i]) for v in others)
            unusual.append(worse[i] > centre[i] + DEGRADED_K * mad and worse[i] > centre[i])

        fraction = [  # a time this much longer, a rate this much lower
            w / c - 1 if way == "lower" else 1 - c / w for w, c in zip(worse, centre)
        ]
        states = []
        for i in sorted(range(len(baseline)), key=lambda i: -worse[i]):  # worst first
            if not unusual[i]:
                continue
            if states:
                last = worse[states[-1][-1]]
                if last <= worse[i] * (1 + margin) and last / worse[i] < worse[i] / centre[i]:
                    states[-1].append(i)
                    continue
            if worse[i] > centre[i] * (1 + margin):
                states.append([i])
        if states:
            yield (
                key,
                margin,
                "slower" if way == "lower" else "lower",
                [[(i, fraction[i]) for i in reversed(state)] for state in reversed(states)],
            )


#: A published value's margin. Seed 000 Table 2 measured OpenFOAM's own exchange (Pstream)
#: among all ranks of a hardware level; FabricValidation measures a two-rank C ping-pong
#: through MPI, another quantity, on another MPI, another day. The published values are
#: therefore indicative: only a level at more than twice the paper's round trip is judged a
#: fault, and agreement closer than that is not claimed.
PUBLISHED_MARGIN = 1.0
#: What every published expectation's source says of it.
INDICATIVE = (
    "indicative: the paper measured OpenFOAM's exchange among all ranks of a level, this a "
    "two-rank ping-pong"
)


def published(system: str, partition: str, environ: str, topology_name: str) -> list[Expectation]:
    """Seed 000 Table 2's round-trip times of ``system`` (rankmap/p2p_latency_us.csv) as
    FabricValidation's expectations on ``partition``: one per message size and hardware level
    that the partition's topology has, priced as rankmap prices them (a level the paper
    lacks takes the next faster level's time: on hpc2 a NUMA domain is one NUMA node)."""
    from rankmap import analysis, topology
    from rankmap.errors import InputError

    try:
        node = topology.load(topology_name)
        with open(analysis.LATENCY_CSV) as f:
            rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
        sizes = sorted({int(r["size"]) for r in rows if r["system"] == system})
        costs = {size: analysis.cost_vector(system, size) for size in sizes}
    except InputError as e:
        raise ExpectationsError(f"{e} -- give a system and topology rankmap knows") from None
    if not sizes:
        raise ExpectationsError(
            f"{analysis.LATENCY_CSV}: no published round-trip times of {system!r} -- give a "
            f"system of its 'system' column"
        )
    out = []
    for level_index, level in enumerate(topology.LEVELS):
        if topology.core_pair(node, level) is None and level != "inter_node":
            continue  # the partition's nodes have no such pair: FabricValidation skips it
        for size in sizes:
            key = Key("FabricValidation", partition, environ, f"%level={level}", f"rtt_{size}")
            value = costs[size][level_index]
            out.append(
                Expectation(
                    key,
                    "us",
                    "lower",
                    PUBLISHED_MARGIN,
                    f"seed 000 Table 2 ({system}; {INDICATIVE})",
                    value=value,
                )
            )
    return out


def _rounded(v: float) -> float:
    """Six significant digits: a round trip in s keeps its digits as one in us does."""
    return float(f"{v:.6g}")


def write(path: Path, system: str, expectations: list[Expectation], note: str) -> None:
    """Write ``expectations`` for review; a header says what the file is."""
    entries = []
    for e in expectations:
        entry = {**e.key.as_dict(), "unit": e.unit, "better": e.better, "margin": e.margin}
        if e.sessions:
            entry["sessions"] = [_rounded(v) for v in e.sessions]
        elif e.samples:
            entry["samples"] = [_rounded(v) for v in e.samples]
        else:
            entry["value"] = e.value
        entry["source"] = e.source
        entries.append(entry)
    header = (
        f"# Validation expectations of {system}: {note}.\n"
        f"# Written {datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z} by python -m "
        f"topofoam.validation. Review before committing:\n"
        f"# a later session fails an expectation only when it is significantly worse "
        f"(Holm-adjusted)\n# AND worse by more than its margin.\n"
    )
    body = yaml.safe_dump(
        {"format": FORMAT, "system": system, "expectations": entries}, sort_keys=False, width=100
    )
    output.write_text(path, header + body, "expectations file")
