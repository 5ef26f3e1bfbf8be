"""A site file's every check on its twin, then the planner and the report on what ran: the
full run of a twin (docs/timings.md, ``twin.*``).

    python -m localsite.twinbench hpc2 v1912 [--nodes 2] [--results DIR]

lists the checks the site file registers (ReFrame's own listing: nothing typed in here),
runs the first case of each (ReFrame's ``NAME@0``: its first parameter values, the site's own
ranks per node and case sizes; its fixtures with it) on the twin with the given build
standing in, then the planner and the report on the twin's results, and prints per check the
cases passed, the time, the machine's memory peak and the report's path. Emulated: every
timing is labelled so, and what a twin cannot verify is in docs/clusters.md. Root only.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from localsite import meminfo, twin
from localsite.benchrun import as_root, logged_run
from localsite.cli import summarise_report
from topofoam import paths
from topofoam.validation import screening

#: A rerun of a failed case (Open MPI 4.1's start-up race under srun meets a site's ranks
#: per node far more often than 8 ranks), each named in the output.
RETRIES = 1


def checks(site: str) -> list[str]:
    """The check classes the site file registers, from ReFrame's listing of it."""
    with tempfile.TemporaryDirectory(prefix="twinbench-list-") as scratch:
        done = subprocess.run(
            [str(Path(sys.executable).parent / "reframe"), "-C", str(twin.site_file(site)),
             "--system", site, "-c", "reframe", "-l"],
            cwd=paths.REPO, capture_output=True, text=True, timeout=600,
            env={"PATH": os.environ["PATH"], "HOME": scratch, "TOPOFOAM_RESULTS": scratch,
                 "SLURM_CONF": os.devnull},
        )  # fmt: skip
    found = sorted(set(re.findall(r"^- (\w+)", done.stdout, re.M)))
    if done.returncode != 0 or not found:
        raise SystemExit(f"twinbench: ReFrame listed no checks of {site}:\n{done.stdout[-2000:]}")
    return found


def timed(say: str, command: list[str], env: dict, log: Path) -> tuple[int, float]:
    """(exit status, seconds) of a command whose output goes to log, said first."""
    print(f"twinbench: {say} (log {log})", flush=True)
    return logged_run(command, env, log)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m localsite.twinbench", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("site", choices=twin.SITES)
    p.add_argument("openfoam", choices=sorted(twin.STAND_INS), help="the build that runs")
    p.add_argument(
        "--nodes",
        type=int,
        default=screening.MIN_NODES,
        help=f"twin nodes a partition (default {screening.MIN_NODES}: the screenings' least)",
    )
    p.add_argument("--results", type=Path, help="results folder (default: a new one)")
    args = p.parse_args(argv)
    if not as_root("twinbench"):
        return 2
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    results = args.results or Path(tempfile.mkdtemp(prefix=f"twinbench-{args.site}-"))
    results.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, TOPOFOAM_RESULTS=str(results))
    names = checks(args.site)
    # where the site file's reports go (sitekit.common), so that the report reads it too
    report = (
        results
        / "reframe"
        / "reports"
        / f"run-report-twinbench-{time.strftime('%Y%m%dT%H%M%S')}.json"
    )
    command = [
        str(paths.REPO / "bench"), "twin", args.site, "run", "--nodes", str(args.nodes),
        "--openfoam", args.openfoam, "--", *(a for n in names for a in ("-n", f"{n}@0")),
        "--report-file", str(report), "--max-retries", str(RETRIES),
        # The screenings take the site's largest node count, more than a twin has: every
        # idle node of the twin instead (the checks' own switch, 0), 3 at least
        "-S", "FabricScreening.screen_nodes=0", "-S", "NodeScreening.screen_nodes=0",
    ]  # fmt: skip
    peak = meminfo.Peak()
    peak.start()
    try:
        code, took = timed(
            f"{args.site} twin, {args.nodes} nodes a partition, {args.openfoam}: the first case "
            f"of each of its {len(names)} checks",
            command, env, results / "twin.log",
        )  # fmt: skip
        cases, failed, lines = summarise_report(report, code)
        plan_code, plan_took = timed(
            "the planner on the site's whole default selection",
            [sys.executable, "-m", "topofoam.prediction.plan", "-C",
             str(twin.site_file(args.site))],
            env, results / "plan.log",
        )  # fmt: skip
        report_code, report_took = timed(
            "the report on the twin's results",
            [sys.executable, "-m", "topofoam.reporting", "--results", str(results),
             "--system", args.site, "--out", str(results / "report")],
            env, results / "report.log",
        )  # fmt: skip
    except KeyboardInterrupt:
        print(f"twinbench: interrupted; the twin stopped; logs in {results}", file=sys.stderr)
        return 130
    finally:
        peak.done.set()
        peak.join()
    per_check = Counter()
    for line in lines:
        if line.startswith("FAILED"):
            per_check[line.split()[1]] += 1
    for name in names:
        print(f"  {name:<22} {'FAILED' if per_check[name] else 'passed'}")
    for line in lines:  # a reason may hold a command's whole output: one line each
        print(f"  {' '.join(line.split())[:300]}")
    plan = (results / "plan.log").read_text().splitlines()
    planned = next((ln for ln in plan if re.match(r"plan: \d+ jobs planned", ln)), "no plan")
    print(
        f"twinbench: {args.site} twin, {args.openfoam}: {cases - failed} of {cases} test cases "
        f"passed (fixtures among them), exit {code}, {took / 60:.1f} min, memory peak "
        f"{peak.peak:,} MiB above the start; planner exit {plan_code} in {plan_took:.0f} s "
        f"({planned}); report exit {report_code} in {report_took:.0f} s, in "
        f"{results / 'report'}",
        flush=True,
    )
    return 0 if code == plan_code == report_code == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
