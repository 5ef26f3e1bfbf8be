"""The verdict for a site's own CI: JSON (everything) and JUnit XML (one test case per
expectation; FAIL is a failure, and so is INCONCLUSIVE, its message saying why: most CI
dashboards show a skipped test green, and a verdict that could not be reached is not a pass)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from xml.etree import ElementTree as ET

from topofoam import output
from topofoam.validation.judge import FAIL, INCONCLUSIVE, METHOD, Verdict


def as_json(v: Verdict, changes: list[str] | None = None) -> dict:
    return {
        "verdict": v.status,
        "session": v.session,
        "partitions": v.partitions,
        "counts": v.counts(),
        "method": METHOD,
        "failed_test_cases": v.failed_cases,
        "missing": [k.as_dict() for k in v.missing],
        "judgements": [j.as_dict() for j in v.judgements],
        "not_judged": [k.as_dict() for k in v.unexpected],
        "changes": changes or [],
    }


def junit(v: Verdict) -> ET.ElementTree:
    counts = v.counts()
    suite = ET.Element(
        "testsuite",
        name=f"topofoam validation {v.session}",
        tests=str(len(v.judgements) + len(v.failed_cases) + len(v.missing)),
        failures=str(counts[FAIL] + counts[INCONCLUSIVE]),
        skipped="0",
    )
    for case in v.failed_cases:
        tc = ET.SubElement(suite, "testcase", classname="test case", name=case.split(":")[0])
        ET.SubElement(tc, "failure", message=case)
    for k in v.missing:
        tc = ET.SubElement(
            suite, "testcase", classname=f"{k.check}.{k.partition}", name=f"{k.setting}: {k.metric}"
        )
        ET.SubElement(tc, "failure", message="expected but not measured")
    for j in v.judgements:
        k = j.key
        tc = ET.SubElement(
            suite, "testcase", classname=f"{k.check}.{k.partition}", name=f"{k.setting}: {k.metric}"
        )
        if j.status == FAIL:
            ET.SubElement(tc, "failure", message=j.line())
        elif j.status == INCONCLUSIVE:
            ET.SubElement(tc, "failure", message=f"INCONCLUSIVE (not a pass): {j.line()}")
        else:
            ET.SubElement(tc, "system-out").text = j.line()
    return ET.ElementTree(suite)


def session_stem(start: str, uuid: str) -> str:
    """A session's file name: its start (ReFrame's time_start, so names sort by time) and the
    first 8 characters of its uuid; unsafe characters become '-'."""
    return re.sub(r"[^A-Za-z0-9+._-]", "-", f"{start}-{uuid[:8]}")


def write(v: Verdict, folder: Path, stem: str, changes: list[str] | None = None) -> list[Path]:
    """``<folder>/<stem>.json`` and ``.xml``, each written whole or not at all."""
    folder = output.folder(folder, "verdict folder")
    out = []
    for suffix, write_to in (
        (".json", lambda f: f.write(json.dumps(as_json(v, changes), indent=1) + "\n")),
        (".xml", lambda f: junit(v).write(f, encoding="unicode", xml_declaration=True)),
    ):
        path = folder / f"{stem}{suffix}"
        with output.replacing(path, "verdict file") as f:
            write_to(f)
        out.append(path)
    return out
