"""The sessions a verdict is built on, read from ReFrame's own results store.

Every real ReFrame session is stored (site-configs/sitekit/common.py: ``storage``, under
``results/reframe/results.db``) with its test cases, their variables and performance values.
``reframe --describe-stored-sessions QUERY`` gives them back as JSON; QUERY is ReFrame's:
a session UUID, a time period (``20261101:20261102``, ``now-7d:now``), a filter on the
session's extras (``?tag=="after-bios"``, set with ``--session-extras tag=after-bios``), or
a period and a filter. Nothing here keeps a second store.

A session's *observations* are the samples of its passed test cases of the validation
selection (tagged ``validate``; fixtures left out), one
list per ``Key`` (check, partition, environment, setting, metric): the repeats of one
setting are the test cases that differ only in their ``repeat`` parameter. A check names the
metrics it wants judged in its ``validated_metrics`` variable (all of a judged unit if not).
"""

from __future__ import annotations

import json
import re
import statistics
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from topofoam.results import values as values_

#: Which way is better, by unit. Only these are judged: times and rates the checks measure
#: (derived figures such as FVOPS and T* repeat the wall time, counts are not performance).
LOWER = ("s", "ms", "us", "x")  # x: a time over another (the storage's over memory's)
HIGHER = ("MB/s", "GB/s")


class SessionError(RuntimeError):
    """A session cannot be read or does not exist: the message says which and the fix."""


@dataclass(frozen=True, order=True)
class Key:
    check: str
    partition: str  # system:partition
    environ: str
    setting: str
    metric: str

    def __str__(self) -> str:
        return f"{self.check} on {self.partition} ({self.environ}), {self.setting}: {self.metric}"

    def as_dict(self) -> dict:
        return {
            "check": self.check,
            "partition": self.partition,
            "environ": self.environ,
            "setting": self.setting,
            "metric": self.metric,
        }


@dataclass
class Session:
    uuid: str
    start: str  # ReFrame's time_start, e.g. 20261125T054358+0000
    extras: dict
    samples: dict[Key, list[float]] = field(default_factory=dict)
    units: dict[Key, str] = field(default_factory=dict)
    #: The practical margins the partitions stated (the checks' ``validate_margins``): the
    #: site's tolerance, used against a baseline of sessions.
    margins: dict[Key, float] = field(default_factory=dict)
    #: Those stated for a baseline of one session (``validate_margins_one_session``), which
    #: cannot see the drift between sessions; where none is stated, ``margins``.
    margins_one_session: dict[Key, float] = field(default_factory=dict)
    #: What each node was (NodeFingerprint's ``description``), by partition.
    nodes: dict[str, dict] = field(default_factory=dict)
    failed: list[str] = field(default_factory=list)
    #: Values the checks logged that cannot be measurements (NaN, negative...), one line each.
    invalid: list[str] = field(default_factory=list)
    #: Every partition the session ran a test case on, passed or not.
    partitions: set[str] = field(default_factory=set)
    #: Sessions judged together (``together``): each one's median by measurement, in
    #: ``units``; empty for one session.
    medians: dict[Key, list[float]] = field(default_factory=dict)
    #: Their labels, oldest first.
    members: tuple[str, ...] = ()

    def label(self) -> str:
        if self.members:
            return f"{len(self.members)} sessions, {self.members[0]} to {self.members[-1]}"
        tag = ", ".join(f"{k}={v}" for k, v in sorted(self.extras.items()))
        return f"{self.start} ({self.uuid[:8]}{', ' + tag if tag else ''})"


def together(group: list[Session]) -> Session:
    """Several sessions of one state judged as one (``judge --sessions``): against a
    baseline of sessions, their medians' mean is judged (the drift between sessions
    averages out over them); elsewhere, their repeats pooled. Named by the latest; its units
    and margins are the group's (others' values converted to its units)."""
    if len(group) < 2:
        raise SessionError(
            f"{len(group)} session(s) selected to judge together -- select 2 or more, or "
            f"judge one with --session"
        )
    latest = group[-1]
    out = Session(
        latest.uuid,
        latest.start,
        latest.extras,
        units=dict(latest.units),
        margins=dict(latest.margins),
        margins_one_session=dict(latest.margins_one_session),
        nodes=dict(latest.nodes),
        members=tuple(s.label() for s in group),
    )
    samples: dict[Key, list[float]] = defaultdict(list)
    medians: dict[Key, list[float]] = defaultdict(list)
    for s in group:
        out.failed += s.failed
        out.invalid += s.invalid
        out.partitions |= s.partitions
        for key, measured in s.samples.items():
            unit = out.units.setdefault(key, s.units[key])
            converted = [values_.convert(v, s.units[key], unit) for v in measured]
            if None in converted:
                raise SessionError(
                    f"{key} is in {s.units[key]} in session {s.label()} and {unit} in "
                    f"another -- judge sessions of one suite version together"
                )
            samples[key] += converted
            medians[key].append(statistics.median(converted))
    out.samples, out.medians = dict(samples), dict(medians)
    return out


#: The largest margin: how much worse than expected a measurement may be before it fails,
#: as a fraction of the ratio (0.1: a time 1.1 times, a rate 1 / 1.1 of the expected). Above
#: 10 times the check could not fail on anything a site would care about.
MAX_MARGIN = 10.0
MARGIN_RULE = (
    f"not a number from 0 to {MAX_MARGIN:g} (how much worse is tolerated: 0.1 lets a time be "
    f"1.1 times and a rate 1 / 1.1 of the expected)"
)


def valid_margin(margin) -> bool:
    return (
        isinstance(margin, (int, float))
        and not isinstance(margin, bool)
        and 0 <= margin <= MAX_MARGIN
    )


#: The judged units, as a message lists them.
UNITS = LOWER + HIGHER
#: The checks that record their partition's ``validate_margins`` with each measurement
#: (reframe/validate.py's ``Validated``): a partition may state margins of their own for them.
MARGIN_CHECKS = ("FabricValidation", "SolverValidation", "StorageValidation")


def margin_stated(margins: dict, check: str, unit: str):
    """The margin a partition's ``validate_margins`` states for one check's unit, None where
    it states none. A check's own (``{"FabricValidation": {"MB/s": 4.0}}``) comes before the
    unit's (``{"MB/s": 0.3}``): a fabric with states can be given room without blunting the
    storage rates, which are in MB/s too."""
    own = margins.get(check)
    if isinstance(own, dict) and unit in own:
        return own[unit]
    return margins.get(unit)


def margins_problem(margins) -> str | None:
    """What is wrong with a partition's ``validate_margins``, one phrase beginning with the
    entry at fault (the caller adds where and the fix); None when nothing is. Keys are units,
    or a check of MARGIN_CHECKS holding margins by unit of its own."""
    if not isinstance(margins, dict):
        return f"is {margins!r}, not margins by unit such as {{'s': 0.05, 'MB/s': 0.1}}"
    for key, value in margins.items():
        if key in MARGIN_CHECKS:
            if not isinstance(value, dict) or not value:
                return (
                    f"gives {key} {value!r}, not margins by unit of its own such as {{'MB/s': 4.0}}"
                )
            entries = [(f"{key}'s {unit!r}", unit, margin) for unit, margin in value.items()]
        else:
            entries = [(repr(key), key, value)]
        for name, unit, margin in entries:
            if unit not in UNITS:
                return (
                    f"names {name}, neither a unit ({', '.join(UNITS)}) nor a validated check "
                    f"({', '.join(MARGIN_CHECKS)})"
                )
            if not valid_margin(margin):
                return f"gives {name} the margin {margin!r}, {MARGIN_RULE}"
    return None


def better(unit: str) -> str | None:
    """'lower' or 'higher' for a judged unit, None for what is not judged."""
    return "lower" if unit in LOWER else "higher" if unit in HIGHER else None


_REPEAT = re.compile(r"\s*%repeat=\d+")
_HASH = re.compile(r"\s*/[0-9a-f]{8}$")


def setting_of(case: dict) -> str:
    """A test case's setting: its ``setting`` variable where the check sets one (the sweeps:
    case/size/layout/variant/binding/presets), else its display name without the repeat."""
    if case.get("setting"):
        return str(case["setting"])
    name = _HASH.sub("", _REPEAT.sub("", case.get("display_name") or case.get("name", "")))
    check = case.get("name", "").split()[0] if case.get("name") else ""
    rest = name[len(check) :].strip() if name.startswith(check) else name
    return rest or "-"


def from_record(record: dict) -> Session:
    """A stored session (one element of ``--describe-stored-sessions``) as observations."""
    info = record.get("session_info", {})
    reserved = set(_RESERVED)
    out = Session(
        uuid=info.get("uuid", "?"),
        start=info.get("time_start", "?"),
        extras={k: v for k, v in info.items() if k not in reserved},
    )
    samples: dict[Key, list[float]] = defaultdict(list)
    # A session's later runs are ReFrame's retries of what failed: a case's last run counts.
    last: dict[tuple, dict] = {}
    for run in record.get("runs", []):
        for case in run.get("testcases", []):
            last[
                case.get("unique_name"),
                case.get("system"),
                case.get("partition"),
                case.get("environ"),
            ] = case
    # A fixture's failure (a reference run placed on the wrong cores) is the validation's
    # own where a validated case could not run for it.
    failed_fixtures: dict[str, list[str]] = defaultdict(list)
    blocked: set[str] = set()
    for case in last.values():
        check = (case.get("name") or "?").split()[0]
        part = f"{case.get('system')}:{case.get('partition')}"
        if "validate" not in (case.get("tags") or []):
            if case.get("fixture") and case.get("result") in ("fail", "abort"):
                failed_fixtures[part].append(_failure(case, check, part))
            continue  # a session may run more than the validation selection: not judged
        out.partitions.add(part)
        if case.get("result") != "pass":
            if case.get("result") in ("fail", "abort"):
                out.failed.append(_failure(case, check, part))
            elif case.get("result") == "fail_deps":
                blocked.add(part)
                out.failed.append(
                    f"{case.get('display_name', check)} on {part}: not run: a fixture it needs "
                    f"failed"
                )
            continue
        if case.get("description"):
            out.nodes[part] = case["description"]
        if case.get("fixture"):
            continue  # a fixture's run (a reference for the fields) is not a repeat
        setting = setting_of(case)
        judged = case.get("validated_metrics") or None
        stated = case.get("validate_margins") or {}
        stated_one = case.get("validate_margins_one_session") or {}
        for name, given in (("validate_margins", stated),
                            ("validate_margins_one_session", stated_one)):  # fmt: skip
            problem = margins_problem(given)
            if problem:
                raise SessionError(
                    f"{part}'s {name} {problem} -- correct the partition in its site file"
                )
        for name, values in (case.get("perfvalues") or {}).items():
            metric = name.rsplit(":", 1)[-1]
            if judged is not None and metric not in judged:
                continue
            value, unit = values[0], values[4] if len(values) > 4 else ""
            if better(unit) is None:
                continue
            key = Key(check, part, case.get("environ", ""), setting, metric)
            why = _not_a_measurement(metric, value, unit)
            if why:
                out.invalid.append(f"{case.get('display_name', check)} on {part}: {why}")
                continue
            out.units[key] = reading = values_.reading_unit(metric, unit)
            samples[key].append(values_.convert(float(value), unit, reading))
            margin = margin_stated(stated, check, unit)
            if margin is not None:
                out.margins[key] = float(margin)
            one = margin_stated(stated_one, check, unit)
            if one is not None or margin is not None:
                out.margins_one_session[key] = float(margin if one is None else one)
    for part in sorted(blocked):
        out.failed[:0] = failed_fixtures[part]
    out.samples = dict(samples)
    return out


def _not_a_measurement(metric: str, value, unit: str) -> str | None:
    """Why a stored performance value cannot be a sample (None when it can): not a number,
    NaN, infinite, zero or negative, or in a unit of another quantity than its name's."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return f"{metric} is {value!r}, not a number"
    why = values_.unit_problem(metric, unit) or values_.performance(metric, unit, float(value))
    if why is None and value <= 0:
        why = f"{metric} is {values_.describe(float(value))}"
    return why and f"{why}, not a measurement"


def _failure(case: dict, check: str, part: str) -> str:
    return f"{case.get('display_name', check)} on {part}: {case.get('fail_reason') or case.get('result')}"


#: session_info keys ReFrame writes itself; the rest are --session-extras.
_RESERVED = (
    "data_version",
    "hostname",
    "uuid",
    "time_start",
    "time_start_unix",
    "time_end",
    "time_end_unix",
    "time_elapsed",
    "cmdline",
    "config_files",
    "log_files",
    "prefix_output",
    "prefix_stage",
    "user",
    "version",
    "workdir",
    "num_cases",
    "num_failures",
    "num_aborted",
    "num_skipped",
)


def stored(config: Path, query: str) -> list[dict]:
    """The stored sessions ``query`` selects, oldest first, through ReFrame's CLI."""
    reframe = Path(sys.executable).with_name("reframe")
    command = [
        str(reframe) if reframe.exists() else "reframe",
        "-C",
        str(config),
        "--describe-stored-sessions",
        query,
    ]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    except OSError as e:
        raise SessionError(
            f"cannot run ReFrame ({e.strerror}) -- install the project's .venv (./bench setup)"
        ) from None
    text = done.stdout.strip()
    if done.returncode != 0 or not text.startswith("["):
        why = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise SessionError(
            f"ReFrame could not give the sessions {query!r} from the store of "
            f"{config} ({why}) -- check the query (a UUID, a period such as "
            f'now-7d:now, or ?key=="value")'
        )
    try:
        records = json.loads(text)
    except json.JSONDecodeError:
        raise SessionError(
            f"ReFrame's answer for {query!r} is not JSON -- is the store "
            f"{config}'s results.db intact?"
        ) from None
    return sorted(records, key=lambda r: r.get("session_info", {}).get("time_start_unix", 0))


def validation_sessions(config: Path, query: str) -> list[Session]:
    """The sessions of ``query`` that ran a validation selection (a test tagged
    ``validate``), oldest first; an error when there is none."""
    found = []
    for record in stored(config, query):
        tagged = any(
            "validate" in (case.get("tags") or [])
            for run in record.get("runs", [])
            for case in run.get("testcases", [])
        )
        if tagged:
            found.append(from_record(record))
    if not found:
        raise SessionError(
            f"no stored session {query!r} ran the validation selection -- run "
            f"reframe -C {config} -c reframe -r -t validate first, or give "
            f"another session or period"
        )
    return found
