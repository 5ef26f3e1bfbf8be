"""Validate a system from its stored sessions (ReFrame's results store).

    python -m topofoam.validation judge   -C site-configs/vsc5.py [--session QUERY | --sessions QUERY]
    python -m topofoam.validation record  -C site-configs/vsc5.py [--session QUERY] [--add]
    python -m topofoam.validation record  -C site-configs/vsc5.py --sessions QUERY
    python -m topofoam.validation compare -C site-configs/vsc5.py --before QUERY [--after QUERY]
    python -m topofoam.validation history [--system vsc5] [--metric wall]
    python -m topofoam.validation published --system vsc5 --partition vsc5:zen3_0512 \
        --environ openfoam-org12-patched --out site-configs/expectations/vsc5.yaml

``judge``: the latest validation session (or QUERY's) against the system's expectations
(topofoam.paths.expectations_file, or --expectations); ``--sessions QUERY``: several
sessions of one state judged together (sessions.together); with --record-first, a system without
expectations gets them recorded from this session instead, and is told so. ``record``: a
session's measurements as expectations; with ``--sessions QUERY``, a baseline of several
sessions (3 at least, each checked as healthy against the others), judged later against
their session-to-session spread. ``compare``: regressions of one session against an
earlier one, with what changed on the nodes. ``history``: each measurement's judgements
over the kept verdicts (one per session), the session it first regressed in marked.
``published``: seed 000 Table 2's latencies of a
system as expectations, before any baseline session exists. QUERY is ReFrame's: a session UUID, a period
(``20261101:20261102``, ``now-30d:now``) or a filter on --session-extras (``?tag=="bios"``).
The verdict is printed and written as JSON and JUnit XML under <results>/validation.
Exit status: 0 PASS, 1 FAIL, 3 INCONCLUSIVE, 2 bad input.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from topofoam import output, paths
from topofoam.validation import expectations, history, judge, outputs, regressions, sessions

EXIT = {judge.PASS: 0, judge.FAIL: 1, judge.INCONCLUSIVE: 3}
#: The sessions searched when none is named: the last year's.
RECENT = "now-365d:now"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m topofoam.validation", description=__doc__.split("\n\n")[0]
    )
    verbs = p.add_subparsers(dest="verb", required=True)
    pub = verbs.add_parser("published")
    pub.add_argument("--system", required=True, help="a system of rankmap/p2p_latency_us.csv")
    pub.add_argument("--partition", required=True, help="system:partition they apply to")
    pub.add_argument("--environ", required=True, help="the environment FabricValidation runs in")
    pub.add_argument("--topology", required=True, help="the partition's topology (rankmap preset)")
    pub.add_argument("--out", type=Path, required=True)
    hist = verbs.add_parser("history")
    hist.add_argument("--system", help="default: every system with kept verdicts")
    hist.add_argument("--metric", default="", help="only measurements whose name holds this")
    for name in ("judge", "record", "compare"):
        v = verbs.add_parser(name)
        v.add_argument(
            "-C", "--config", type=Path, required=True, help="the site's ReFrame configuration"
        )
        v.add_argument(
            "--session",
            "--after",
            dest="session",
            default="",
            help="the session to judge (default: the latest validation session)",
        )
        if name == "judge":
            v.add_argument(
                "--expectations", type=Path, help="default: the system's (topofoam.paths)"
            )
            v.add_argument(
                "--sessions",
                metavar="QUERY",
                help="judge every validation session QUERY selects together (2 or more of "
                "one state, e.g. three after a maintenance): against a baseline of sessions "
                "their medians' mean is judged, so the drift between sessions averages out",
            )
            v.add_argument(
                "--record-first",
                action="store_true",
                help="without expectations, record them from this session (local)",
            )
        if name == "record":
            v.add_argument("--out", type=Path, help="default: <results>/expectations/<system>.yaml")
            v.add_argument(
                "--add", action="store_true", help="keep the file's expectations, add the new"
            )
            v.add_argument(
                "--sessions",
                metavar="QUERY",
                help=f"a baseline of several sessions: every validation session QUERY selects "
                f"({expectations.MIN_SESSIONS} at least, on other allocations or days); each "
                f"expectation holds their medians and is judged against their spread",
            )
        if name == "compare":
            v.add_argument(
                "--before", required=True, help="the earlier session (a UUID, period or filter)"
            )
        v.add_argument("--out-dir", type=Path, help="default: <results>/validation")
    return p


def _history(args) -> int:
    """Each measurement's judgements over the kept verdicts, the first regressed marked."""
    results = paths.results_dir()
    names = [args.system] if args.system else history.systems(results)
    if not names:
        print(
            f"validation: no kept verdicts under {results / 'validation'} -- validate first "
            f"(./bench validate, or python -m topofoam.validation judge)",
            file=sys.stderr,
        )
        return 2
    for system in names:
        notes: list[str] = []
        verdicts = history.kept(results, system, notes)
        if not verdicts:
            known = ", ".join(history.systems(results)) or "none"
            print(
                f"validation: no kept verdicts of {system!r} under {results / 'validation'} "
                f"(systems with verdicts: {known}) -- give one of those with --system",
                file=sys.stderr,
            )
            return 2
        for line in history.lines(system, verdicts, args.metric):
            print(line)
        for note in notes:
            print(f"note: {note}")
    return 0


def _session(config: Path, query: str) -> sessions.Session:
    """The latest validation session of ``query`` (the last year's when empty)."""
    return sessions.validation_sessions(config, query or RECENT)[-1]


def _system(session: sessions.Session) -> str:
    systems = {p.split(":")[0] for p in session.partitions}
    if len(systems) != 1:
        raise sessions.SessionError(
            f"session {session.label()} ran on {len(systems)} systems ({', '.join(sorted(systems)) or 'none'}) "
            f"-- give a session of one system"
        )
    return systems.pop()


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return output.main("validation", lambda: _main(args))


def _main(args) -> int:
    if args.verb == "published":
        output.file(args.out, "--out")
        try:
            found = expectations.published(args.system, args.partition, args.environ, args.topology)
        except expectations.ExpectationsError as e:
            print(f"validation: {e}", file=sys.stderr)
            return 2
        expectations.write(args.out, args.system, found, "seed 000 Table 2's round-trip times")
        print(
            f"validation: wrote {len(found)} published expectation(s) of {args.system} to {args.out}"
        )
        return 0
    if args.verb == "history":
        return _history(args)
    if not args.config.is_file():
        print(
            f"validation: {args.config}: no such site configuration -- give site-configs/<site>.py",
            file=sys.stderr,
        )
        return 2
    try:
        return _run(args)
    except (sessions.SessionError, expectations.ExpectationsError) as e:
        print(f"validation: {e}", file=sys.stderr)
        return 2


def _run(args) -> int:
    if args.verb == "record" and args.sessions:
        return _record_baseline(args)
    if args.verb == "judge" and args.sessions:
        if args.session:
            raise sessions.SessionError("give --session or --sessions, not both")
        session = sessions.together(sessions.validation_sessions(args.config, args.sessions))
    else:
        session = _session(args.config, args.session)
    system = _system(session)
    if args.verb == "record":
        where = args.out or paths.results_dir() / "expectations" / f"{system}.yaml"
        return _record(session, system, output.file(where, "--out"), args.add)
    # Every output is checked before anything is judged.
    out_dir = output.folder(args.out_dir or paths.results_dir() / "validation", "--out-dir")
    if args.verb == "compare":
        before = _session(args.config, args.before)
        if before.uuid == session.uuid:
            raise sessions.SessionError(
                f"--before {args.before!r} selects the session being judged -- give an earlier one"
            )
        v = regressions.compare(before, session)
        changed = regressions.changes(before, session)
        lines = regressions.lines(v, before, changed)
        return _hand_in(v, lines, out_dir / f"regressions-{system}", session, changed)
    path = args.expectations or paths.expectations_file(system)
    if path.is_dir():
        raise expectations.ExpectationsError(
            f"{path} is a folder, not an expectations file -- give its YAML file"
        )
    if not path.exists() and session.members:
        raise expectations.ExpectationsError(
            f"no expectations for {system} ({path}) to judge {len(session.members)} sessions "
            f"against -- record a baseline first (record -C {args.config} --sessions QUERY)"
        )
    if not path.exists() and args.record_first and not args.expectations:
        output.file(path, "expectations")
        if session.failed:
            # A session with failed checks sets no expectations: its verdict is FAIL.
            v = judge.judge([], session)
            why = (
                f"validation: no expectations recorded for {system}: {len(session.failed)} test "
                f"case(s) of this session failed -- mend what they name and validate again"
            )
            return _hand_in(v, [*v.lines(), why], out_dir / f"verdict-{system}", session)
        _record(session, system, path, False)
        print(
            f"validation: no expectations for {system} yet: this session's are now its "
            f"expectations ({path}); the next validation run is judged against them"
        )
        return 0
    expected = expectations.load(path, system)
    try:
        v = judge.judge(expected, session)
    except expectations.ExpectationsError as e:
        raise expectations.ExpectationsError(f"{path}: {e}") from None
    counts = v.counts()
    tally = (
        f"{counts[judge.PASS]} pass, {counts[judge.FAIL]} fail, {counts[judge.INCONCLUSIVE]} inconclusive "
        f"of {len(v.judgements) + len(v.missing) + len(v.failed_cases)}; expectations: {path}"
    )
    lines = [*v.lines(), tally]
    if any(e.samples for e in expected):
        lines.append(
            f"note: {path} holds a one-session baseline: it cannot see the drift between "
            f"sessions -- after {expectations.MIN_SESSIONS} sessions on other allocations or "
            f"days, record them together (python -m topofoam.validation record -C "
            f"{args.config} --sessions QUERY --out {path})"
        )
    moved = expectations.margins_moved(expected, session)
    if moved:
        lines.append(
            f"validation: {path} holds other margins than the partition states now for "
            f"{len(moved)} expectation(s), and the verdict used the file's ({moved[0]}"
            f"{'; ...' if len(moved) > 1 else ''}) -- record the expectations again "
            f"(python -m topofoam.validation record ... --out {path}) or edit their margin"
        )
    return _hand_in(v, lines, out_dir / f"verdict-{system}", session)


def _hand_in(v, lines: list[str], stem: Path, session: sessions.Session, changed=None) -> int:
    """Print the verdict's lines, write it as JSON and JUnit XML, and return its exit
    status. Written twice: ``stem.json``/``.xml``, the latest verdict (what a site's CI
    reads), and ``stem/<session start>-<uuid>.json``/``.xml``, kept for every session (the
    report's verdict section and the history read those)."""
    for line in lines:
        print(line)
    written = outputs.write(v, stem.parent, stem.name, changed)
    kept = outputs.session_stem(session.start, session.uuid)
    if session.members:  # beside, not over, the latest session's own verdict
        kept += f"-with-{len(session.members) - 1}-earlier"
    written += outputs.write(v, stem, kept, changed)
    print(f"written: {', '.join(map(str, written))}")
    return EXIT[v.status]


def _record_baseline(args) -> int:
    """``record --sessions QUERY``: the sessions' medians as expectations, after each was
    checked as a healthy baseline (expectations.degraded)."""
    found = sessions.validation_sessions(args.config, args.sessions)
    systems = {_system(s) for s in found}
    if len(systems) != 1:
        raise sessions.SessionError(
            f"--sessions {args.sessions!r} selects sessions of {len(systems)} systems "
            f"({', '.join(sorted(systems))}) -- select one system's"
        )
    system = systems.pop()
    where = args.out or paths.results_dir() / "expectations" / f"{system}.yaml"
    path = output.file(where, "--out")
    # Published values the file holds (a cluster site's) check the sessions too.
    held = expectations.load(path, system) if path.exists() else []
    new = expectations.from_sessions(found, published=held)
    if args.add:
        known = {e.key for e in new}
        new += [e for e in held if e.key not in known]
    expectations.write(path, system, new, f"a baseline of {len(found)} sessions")
    print(
        f"validation: recorded {len(new)} expectation(s) of {system} in {path} from "
        f"{len(found)} sessions ({found[0].label()} to {found[-1].label()})"
    )
    for line in expectations.recurring(found):
        print(f"note: {line}")
    return 0


def _record(session: sessions.Session, system: str, path: Path, add: bool) -> int:
    new = expectations.from_session(session)
    if not new:
        raise sessions.SessionError(
            f"session {session.label()} measured nothing to expect -- run the validation selection"
        )
    if add and path.exists():
        kept = expectations.load(path, system)
        known = {e.key for e in kept}
        new = kept + [e for e in new if e.key not in known]
    expectations.write(path, system, new, f"from session {session.label()}")
    print(f"validation: recorded {len(new)} expectation(s) of {system} in {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
