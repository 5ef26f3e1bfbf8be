"""How far the validation verdict can be trusted on this machine (docs/timings.md).

    python -m localsite.validatebench [--baseline 5] [--unchanged 10] [--fractions 0.9,0.87]

runs ``--baseline`` validation sessions (``./bench validate``) and records them together as the
expectations (``python -m topofoam.validation record --sessions``: each expectation holds
every session's median, and is checked for a degraded session first), then runs the
validation selection ``--unchanged`` times with nothing changed (every FAIL there is a false
alarm), then once under each CPU quota fraction (localsite.cpuquota: a machine 1 / fraction
times slower in CPU time; the solver's measured change is what counts, as MPI's busy
polling meets CFS throttling), and prints per session the verdict, its counts,
the solver's measured change and the smallest worsening of each metric the verdict could
detect. Root only (the quota). Run it with nothing else on the machine: it is a timing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

from topofoam import paths

BENCH = str(paths.REPO / "bench")


def _session(tag: str, fraction: float | None, record: bool = False) -> dict:
    command = [BENCH, "validate", "--session-tag", tag] + (["--record"] if record else [])
    if fraction is not None:
        command = [sys.executable, "-m", "localsite.cpuquota", str(fraction), "--", *command]
    began = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, cwd=paths.REPO)
    took = time.monotonic() - began
    verdict_file = paths.results_dir() / "validation" / "verdict-local.json"
    if record or not verdict_file.exists():
        return {"tag": tag, "exit": done.returncode, "took": took}
    verdict = json.loads(verdict_file.read_text())
    solver = [j for j in verdict["judgements"] if j["check"] == "SolverValidation"]
    # Keyed by the whole measurement: the storage rates of shared and node-local storage,
    # and the fabric's levels, differ only in their setting.
    detectable = {
        f"{j['check']} {j['setting']} {j['metric']}": j.get("detectable", "")
        for j in verdict["judgements"]
    }
    return {
        "tag": tag,
        "exit": done.returncode,
        "took": took,
        "verdict": verdict["verdict"],
        "counts": verdict["counts"],
        "solver": (solver[0]["status"], solver[0]["ratio"]) if solver else None,
        "failed": [
            f"{j['check']} {j['metric']}" for j in verdict["judgements"] if j["status"] == "FAIL"
        ],
        "detectable": detectable,
    }


def _print(s: dict) -> None:
    if "verdict" not in s:
        print(f"{s['tag']:>14}: recorded (exit {s['exit']}), {s['took']:.0f} s", flush=True)
        return
    c = s["counts"]
    solver = (
        f"solver {s['solver'][0]} {100 * (s['solver'][1] - 1):+.1f} %"
        if s["solver"]
        else "no solver"
    )
    print(
        f"{s['tag']:>14}: {s['verdict']:<12} pass {c['PASS']} fail {c['FAIL']} inconclusive "
        f"{c['INCONCLUSIVE']}; {solver}; {s['took']:.0f} s"
        + (f"; failed: {', '.join(s['failed'])}" if s["failed"] else ""),
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m localsite.validatebench", description=__doc__.split("\n\n")[0]
    )
    # 5: with 3 sessions the prediction interval's half-width is about 5 spreads (t with 2
    # degrees of freedom), wider than the local solver's 10 % at this machine's 2 % spread.
    p.add_argument("--baseline", type=int, default=5, help="sessions recorded as the baseline")
    p.add_argument("--unchanged", type=int, default=10)
    p.add_argument("--fractions", default="0.9,0.87")
    args = p.parse_args(argv)
    if os.geteuid() != 0:
        print("validatebench: the CPU quota needs root -- run as root", file=sys.stderr)
        return 2
    stamp = time.strftime("%Y%m%dT%H%M%S")
    print(f"validatebench: results under {paths.results_dir()}, tags {stamp}-*", flush=True)
    tags = [f"{stamp}-base{i + 1}" for i in range(args.baseline)]
    for tag in tags:
        _print(_session(tag, None, record=True))
    recorded = subprocess.run(
        [sys.executable, "-m", "topofoam.validation", "record", "-C", "site-configs/local.py",
         "--sessions", f"?tag in {tuple(tags)!r}"],
        capture_output=True, text=True, cwd=paths.REPO,
    )  # fmt: skip
    print(f"validatebench: {(recorded.stdout + recorded.stderr).strip()}", flush=True)
    if recorded.returncode != 0:
        return 1
    unchanged = []
    for i in range(args.unchanged):
        unchanged.append(_session(f"{stamp}-same{i + 1}", None))
        _print(unchanged[-1])
    slowed = []
    for fraction in (float(f) for f in args.fractions.split(",") if f):
        slowed.append(_session(f"{stamp}-quota{fraction:g}", fraction))
        _print(slowed[-1])
    judged = [s for s in unchanged if "detectable" in s]
    for metric in sorted({m for s in judged for m in s["detectable"]}):
        seen = sorted(
            {s["detectable"][metric] for s in judged if s["detectable"].get(metric)},
            key=lambda d: float(d.split()[0]),
        )
        if seen:
            print(f"validatebench: {metric} detects from {seen[0]} to {seen[-1]} (by session)")
    false_alarms = sum(s.get("verdict") == "FAIL" for s in unchanged)
    print(
        f"validatebench: false alarms {false_alarms} of {len(unchanged)} unchanged sessions "
        f"(PASS {sum(s.get('verdict') == 'PASS' for s in unchanged)}, INCONCLUSIVE "
        f"{sum(s.get('verdict') == 'INCONCLUSIVE' for s in unchanged)}); detected slowdowns: "
        + ", ".join(
            f"quota {s['tag'].rsplit('quota', 1)[1]} -> {'yes' if s.get('solver', [''])[0] == 'FAIL' else 'no'}"
            for s in slowed
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
