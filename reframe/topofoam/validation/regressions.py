"""Regressions between two sessions of a system: the earlier session's repeats are the
expectations of the later one (topofoam.validation.judge, Holm across all measurements), and
beside the result, what changed on the nodes between the two (NodeFingerprint's record)."""

from __future__ import annotations

from topofoam.validation import expectations, judge
from topofoam.validation.sessions import Session

#: How the judgement reads between two sessions.
WORDS = {judge.FAIL: "regressed", judge.PASS: "unchanged", judge.INCONCLUSIVE: "inconclusive"}


def compare(before: Session, after: Session) -> judge.Verdict:
    baseline = expectations.from_session(before)
    return judge.judge(baseline, after)


def changes(before: Session, after: Session) -> list[str]:
    """'local:cpu: software.ucx 1.13.1 -> 1.14.0', one line per field that differs."""
    out = []
    for part in sorted(set(before.nodes) | set(after.nodes)):
        a, b = _flat(before.nodes.get(part, {})), _flat(after.nodes.get(part, {}))
        if not a or not b:
            out.append(f"{part}: no node record in the {'earlier' if not a else 'later'} session")
            continue
        for field in sorted(set(a) | set(b)):
            if field == "node":
                continue
            if a.get(field) != b.get(field):
                out.append(f"{part}: {field} {a.get(field, '-')} -> {b.get(field, '-')}")
    return out


def _flat(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = ", ".join(map(str, v)) if isinstance(v, list) else v
    return out


def lines(v: judge.Verdict, before: Session, what_changed: list[str]) -> list[str]:
    head = {judge.FAIL: "REGRESSED", judge.PASS: "UNCHANGED", judge.INCONCLUSIVE: "INCONCLUSIVE"}
    out = [f"Regressions: {head[v.status]}: session {v.session} against {before.label()}"]
    improved = [j for j in v.judgements if j.faster]
    for line in v.lines()[1:]:
        out.append(line)
    if improved:
        out.append(f"improved (significant): {len(improved)}")
    out.append(
        "what changed on the nodes: "
        + ("; ".join(what_changed) if what_changed else "nothing recorded differs")
    )
    return out
