"""Run the solver of a prepared case with mpirun and judge the run (CLI and tests; the
ReFrame checks launch through the partition's launcher instead)."""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from cases.prepare import Prepared
from cases.sanity import check_log

# Passed to every rank: the libraries and the installation the solver needs.
FORWARDED = (
    "LD_LIBRARY_PATH",
    "WM_PROJECT_DIR",
    "FOAM_REDUCTION_SCHEDULE",
    # the MPI call counter (topofoam.jobs.mpicount), where a run is counted
    "LD_PRELOAD",
    "TOPOFOAM_MPICOUNT_DIR",
)


@dataclass
class Outcome:
    seconds: float
    log: Path
    problems: list[str]


def solver_command(prepared: Prepared, env: dict) -> list[str]:
    cmd = [prepared.solver, "-case", str(prepared.path)]
    if prepared.subdomains == 1:
        return cmd
    launch = ["mpirun", "-np", str(prepared.subdomains), "--oversubscribe"]
    for var in FORWARDED:
        if var in env:
            launch += ["-x", var]
    return launch + cmd + ["-parallel"]


def run(prepared: Prepared, env: dict | None = None, timeout: float = 1800) -> Outcome:
    """Run the solver on the case (in place) and check the log against the case's sanity."""
    env = dict(os.environ if env is None else env)
    log = prepared.path / f"log.{prepared.solver}"
    started = time.monotonic()
    with open(log, "w") as out:
        try:
            done = subprocess.run(
                solver_command(prepared, env),
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=timeout,
            )
            code = done.returncode
        except subprocess.TimeoutExpired:
            code = None
    seconds = time.monotonic() - started
    problems = check_log(log.read_text(errors="replace"), prepared.steps, prepared.checks)
    if code is None:
        problems.insert(0, f"the solver did not finish within {timeout:g} s")
    elif code != 0:
        problems.insert(0, f"the solver exited with {code}")
    return Outcome(seconds, log, problems)
