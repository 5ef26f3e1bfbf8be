"""What a selection of checks would submit, before anything is submitted.

    python -m topofoam.prediction.plan -C site-configs/vsc5.py -t intra2 [other reframe options]

runs ``reframe -c reframe --dry-run`` with the options given, into a scratch results folder:
ReFrame writes every job script the selection makes and submits none. From those scripts it
prints, per check, the number of batch jobs, the nodes they ask for, the node-hours they
may spend at most (nodes x time limit) and the node-hours they are expected to spend, and the
totals; jobs that run on the login node (builds, ``local`` fixtures) are counted apart.

The expected node-hours of a job are its nodes times the run time ReFrame measured for the
same test on the same partition in this site's earlier runs (its run reports under
results/reframe/reports), else the median of that check's measured runs there, else its time
limit; the plan says how many jobs each figure came from. ``--budget NODE_HOURS`` refuses a
selection whose expected cost is above it, naming its largest checks.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import runpy
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from topofoam.paths import CHECKS, REPO, results_dir


@dataclass
class Job:
    check: str  # the test's class name
    partition: str
    nodes: int  # 0: not a batch job (runs where ReFrame runs)
    hours: float  # time limit
    name: str = ""  # the test's unique name (its stage folder)

    @property
    def node_hours(self) -> float:
        return self.nodes * self.hours


def _time_hours(value: str) -> float:
    """Slurm's --time ([D-]H:M:S as ReFrame writes it) in hours."""
    days, _, clock = value.rpartition("-")
    h, m, s = (int(x) for x in clock.split(":"))
    return int(days or 0) * 24 + h + m / 60 + s / 3600


def read_job(script: Path) -> Job:
    """The job of one generated rfm_job.sh (its folder: stage/<system>/<partition>/...)."""
    text = script.read_text()
    sbatch = dict(re.findall(r"^#SBATCH --([\w-]+)(?:=(.*))?$", text, re.M))
    name = script.parent.name
    check = re.sub(r"_[0-9a-f]{8}$", "", name)
    partition = script.parts[-4]
    if not sbatch:
        return Job(check, partition, 0, 0.0, name)
    if "nodes" in sbatch:
        nodes = int(sbatch["nodes"].split("-")[0])
    else:
        ntasks = int(sbatch.get("ntasks", 1))
        nodes = math.ceil(ntasks / int(sbatch.get("ntasks-per-node", ntasks)))
    hours = _time_hours(sbatch["time"]) if "time" in sbatch else 0.0
    return Job(check, partition, nodes, hours, name)


def measured_hours(results: Path, system: str) -> dict[tuple[str, str], list[float]]:
    """Run times (hours) of passed test cases of ``system`` in its run reports, keyed by
    (unique name, partition) and by (check, partition). Unreadable reports are left out: an
    estimate falls back to the time limit, never fails the plan."""
    found: dict[tuple[str, str], list[float]] = defaultdict(list)
    for path in sorted((results / "reframe" / "reports").glob("*.json")):
        try:
            runs = json.loads(path.read_text())["runs"]
            cases = [c for run in runs for c in run["testcases"]]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        for case in cases:
            if not isinstance(case, dict) or case.get("system") != system:
                continue
            seconds = case.get("time_run")
            if case.get("result") != "pass" or not isinstance(seconds, int | float):
                continue
            if not math.isfinite(seconds) or seconds <= 0:
                continue
            name = str(case.get("unique_name", ""))
            partition = str(case.get("partition", ""))
            found[name, partition].append(seconds / 3600)
            found[re.sub(r"_[0-9a-f]{8}$", "", name), partition].append(seconds / 3600)
    return found


@dataclass
class Expected:
    node_hours: dict[str, float]  # per check
    from_test: int  # jobs priced by a measured run of the same test
    from_check: int  # by the median of their check's measured runs
    at_limit: int  # by their time limit

    @property
    def total(self) -> float:
        return sum(self.node_hours.values())


def expected(jobs: list[Job], measured: dict[tuple[str, str], list[float]]) -> Expected:
    """The node-hours each check's batch jobs are expected to spend (see the module's doc)."""
    out = Expected(defaultdict(float), 0, 0, 0)
    for job in jobs:
        if not job.nodes:
            continue
        same, alike = (
            measured.get((job.name, job.partition)),
            measured.get((job.check, job.partition)),
        )
        if same:
            hours, out.from_test = statistics.median(same), out.from_test + 1
        elif alike:
            hours, out.from_check = statistics.median(alike), out.from_check + 1
        else:
            hours, out.at_limit = job.hours, out.at_limit + 1
        # A job cannot run past its limit (Slurm ends it there).
        out.node_hours[job.check] += job.nodes * (min(hours, job.hours) if job.hours else hours)
    return out


def _reframe() -> str:
    """The reframe command of this Python environment (else the one on PATH)."""
    beside = Path(sys.executable).parent / "reframe"
    found = str(beside) if beside.exists() else shutil.which("reframe")
    if not found:
        raise SystemExit(
            "plan: no reframe command -- run ./bench setup, or pip install reframe-hpc"
        )
    return found


def plan_env(scratch: Path) -> dict:
    """The dry run's environment: results into ``scratch``, and a Slurm that asks nobody.

    ReFrame runs ``srun --version`` for every job it writes (whether srun takes
    --cpus-per-task). On a machine without a Slurm configuration (a laptop, this project's CI)
    that srun looks its controller up through DNS, off the machine, once per test: seconds
    each, thousands of times. A plan submits nothing, so where the machine has no
    configuration srun gets an empty one and answers at once (ReFrame then assumes a current
    Slurm, which changes no job's nodes or time)."""
    env = dict(os.environ, TOPOFOAM_RESULTS=str(scratch))
    if "SLURM_CONF" not in env and not Path("/etc/slurm/slurm.conf").exists():
        env["SLURM_CONF"] = os.devnull
    return env


def dry_run(reframe_args: list[str], scratch: Path) -> list[Job]:
    env = plan_env(scratch)
    # The local site reads what ./bench setup found of this machine beside the results.
    facts = results_dir() / "local-site.json"
    if facts.is_file():
        shutil.copy2(facts, scratch / facts.name)
    policy = [] if _option(reframe_args, "--exec-policy") else ["--exec-policy", "serial"]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "topofoam.checks.dryrun",
            "-c",
            str(CHECKS),
            "--dry-run",
            *policy,
            *reframe_args,
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        raise SystemExit(f"plan: reframe --dry-run failed:\n{tail}")
    return [read_job(p) for p in sorted(scratch.glob("reframe/stage/*/*/*/*/rfm_job.sh"))]


def table(jobs: list[Job], expect: Expected) -> str:
    rows = defaultdict(lambda: [0, 0, 0.0, 0])
    for job in jobs:
        row = rows[job.check]
        if job.nodes:
            row[0] += 1
            row[1] = max(row[1], job.nodes)
            row[2] += job.node_hours
        else:
            row[3] += 1
    lines = [
        f"{'check':<28} {'jobs':>5} {'max nodes':>9} {'node-hours (max)':>16} {'local':>5} "
        f"{'node-hours (expected)':>21}"
    ]
    for check, (n, most, nh, local) in sorted(rows.items()):
        lines.append(
            f"{check:<28} {n:>5} {most:>9} {nh:>16.1f} {local:>5} "
            f"{expect.node_hours.get(check, 0.0):>21.1f}"
        )
    batch = [j for j in jobs if j.nodes]
    lines.append(
        f"{'total':<28} {len(batch):>5} {max((j.nodes for j in batch), default=0):>9} "
        f"{sum(j.node_hours for j in batch):>16.1f} {len(jobs) - len(batch):>5} "
        f"{expect.total:>21.1f}"
    )
    return "\n".join(lines)


def expected_line(expect: Expected, results: Path) -> str:
    """What the expected figure rests on, in one line."""
    batch = expect.from_test + expect.from_check + expect.at_limit
    return (
        f"plan: expected {expect.total:.1f} node-hours: {expect.from_test} of {batch} jobs "
        f"priced by a measured run of the same test, {expect.from_check} by their check's "
        f"measured runs, {expect.at_limit} at their time limit (measured: run reports in "
        f"{results / 'reframe' / 'reports'})"
    )


def over_budget(expect: Expected, budget: float) -> str | None:
    """The refusal of a selection above ``budget`` node-hours, naming its largest checks."""
    if expect.total <= budget:
        return None
    largest = sorted(expect.node_hours.items(), key=lambda kv: -kv[1])[:3]
    named = ", ".join(f"{check} {hours:.1f}" for check, hours in largest)
    return (
        f"plan: the selection is expected to cost {expect.total:.1f} node-hours, over the "
        f"budget of {budget:g} -- narrow it (-t, -n, -x NAME, --system SYSTEM:PARTITION); "
        f"its largest checks: {named}"
    )


def _node_hours(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of node-hours above 0")
    return value


def _option(args: list[str], *names: str) -> str | None:
    """The value of a reframe option given as '-C X', '--config-file X' or '--config-file=X'."""
    for i, arg in enumerate(args):
        for name in names:
            if arg == name and i + 1 < len(args):
                return args[i + 1]
            if arg.startswith(f"{name}="):
                return arg.split("=", 1)[1]
    return None


def site_system(config: str) -> str:
    """The system a site configuration describes. Off the cluster ReFrame would pick its own
    'generic' system instead (no login node name matches), and list nothing of the site:
    the plan is for the site's system wherever it is made. Site files are declarative, so
    loading one here does nothing else."""
    path = Path(config)
    if not path.is_file():
        raise SystemExit(
            f"plan: {config} does not exist -- give a site configuration, e.g. "
            f"-C site-configs/vsc5.py"
        )
    try:
        systems = runpy.run_path(str(path))["site_configuration"]["systems"]
        return systems[0]["name"]
    except SystemExit as e:
        raise SystemExit(f"plan: {e}") from None
    except Exception as e:  # a broken site file: say where, in one line
        raise SystemExit(
            f"plan: {config} does not load ({type(e).__name__}: {e}) -- fix the site configuration"
        ) from None


def known_tags(reframe_args: list[str], scratch: Path) -> str:
    done = subprocess.run(
        [_reframe(), "-c", str(CHECKS), "--list-tags", *reframe_args],
        cwd=REPO,
        env=plan_env(scratch),
        capture_output=True,
        text=True,
    )
    found = re.search(r"^\[List of unique tags\]\n(.*)$", done.stdout, re.M)
    return found.group(1).replace("'", "") if found else "(none found)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m topofoam.prediction.plan",
        description=__doc__.split("\n\n")[0],
        epilog="Every other option goes to reframe as it is (-C, -t, -n, -S, --system ...).",
    )
    parser.add_argument(
        "--budget",
        type=_node_hours,
        metavar="NODE_HOURS",
        help="refuse a selection expected to cost more node-hours than this",
    )
    known, rest = parser.parse_known_args(argv)
    config = _option(rest, "-C", "--config-file")
    if config is None:
        print(
            "plan: no site configuration -- give one with -C, e.g. -C site-configs/vsc5.py",
            file=sys.stderr,
        )
        return 2
    system = _option(rest, "--system")
    if system is None:
        system = site_system(config)
        rest += ["--system", system]
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="topofoam-plan-") as scratch:
        jobs = dry_run(rest, Path(scratch))
        if not jobs:
            selection = [a for a in rest if a not in ("--system", system)]
            base = ["-C", config, "--system", system]
            print(
                f"plan: the selection ({' '.join(selection)}) makes no jobs on {system} -- "
                f"check its tags (-t) and names (-n); the checks' tags here: "
                f"{known_tags(base, Path(scratch))}",
                file=sys.stderr,
            )
            return 2
    expect = expected(jobs, measured_hours(results_dir(), system))
    print(f"plan: {system}, from {config}")
    print(table(jobs, expect))
    print(expected_line(expect, results_dir()))
    print(f"plan: {len(jobs)} jobs planned in {time.monotonic() - began:.1f} s")
    if known.budget is not None:
        refused = over_budget(expect, known.budget)
        if refused:
            print(refused, file=sys.stderr)
            return 2
        print(f"plan: within the budget of {known.budget:g} node-hours")
    began = time.monotonic()
    for line in model_lines(config, system):
        print(f"plan: model: {line}")
    print(f"plan: the model took {time.monotonic() - began:.2f} s")
    return 0


def model_lines(config: str, system: str) -> list[str]:
    """Which variants the time-per-step model expects to pay on the site, from its own
    multi-node runs at its own scale (their calls and decompositions) and its link costs: the
    p2p check's, else the site file's ``published_costs`` (docs/model.md). A partition's scale
    is the most ranks a node its jobs run (``ppn``); runs with fewer (the multi-node check's
    default 2 a node) give no line under the site's name, nor do another machine's runs: a
    line says what is missing instead."""
    from topofoam.prediction import modelcheck

    partitions = runpy.run_path(config)["site_configuration"]["systems"][0]["partitions"]
    published = {p["name"]: p.get("extras", {}).get("published_costs", "") for p in partitions}
    perflogs = results_dir() / "perflogs" / system
    lines, _ = modelcheck.check(perflogs, published=published) if perflogs.is_dir() else ([], [])
    scale = {p["name"]: _ranks_per_node(p) for p in partitions}
    below = sorted(
        {
            (ln.partition, ln.scale)
            for ln in lines
            if ln.scale.ranks_per_node < scale.get(ln.partition, 0)
        }
    )
    lines = [ln for ln in lines if (ln.partition, ln.scale) not in below]

    def missing(part: str, what: str, costs: bool = True) -> str:
        return (
            f"no prediction at {system}'s scale for {part}: {what}"
            + ("" if costs else ", and no link costs")
            + f" -- reframe -C {config} -c reframe -r -t multinode -S "
            f"PreparedCavityRanks.ranks_per_node={scale[part]} (one and two nodes are enough)"
            + ("" if costs else "; and -t p2p there, or name its published_costs")
        )

    said = [
        missing(part, f"its multi-node runs are {ran}, its jobs {scale[part]} ranks a node")
        for part, ran in below
    ]
    ran = {ln.partition for ln in lines} | {part for part, _ in below}
    cache: dict = {}
    for part in partitions:
        name = part["name"]
        if "multinode" not in part.get("features", []) or name in ran:
            continue
        costs, _ = modelcheck.partition_costs(perflogs, name, "none", False, cache, published)
        what = f"no multi-node run of it to count the solver's calls at {scale[name]} ranks a node"
        said.append(missing(name, what, bool(costs)))
    return (
        said
        + modelcheck.pays(lines)
        + modelcheck.where_the_time_goes(lines)
        + [f"no prediction: {r}" for r in modelcheck.reasons(lines)]
    )


def _ranks_per_node(partition: dict) -> int:
    """The most ranks a node the partition's jobs run (its ``ppn``, else its cores)."""
    extras = partition.get("extras", {})
    ppn = extras.get("ppn") or [extras.get("cores") or 0]
    return max(int(n) for n in ppn)


if __name__ == "__main__":
    sys.exit(main())
