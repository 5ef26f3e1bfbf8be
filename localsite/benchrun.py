"""One ``./bench run`` of the benchmark scripts (localsite.*bench), in a results folder of its
own, with settings variables of its own, timed; and the screenings' controls, measured."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from topofoam import paths

BENCH = str(paths.REPO / "bench")


def multinode_cases(
    *, variant: str = ".*", launcher: str = ".*", nodes: str = r"\d+", repeat: str = r"\d+"
) -> str:
    """ReFrame's ``-n`` pattern for the multi-node check's cases (reframe/multinode.py), each
    argument a regular expression of one parameter's value, in the order of the case names:
    ``MultiNodeRun%repeat=0%variant=global%launcher_kind=srun%...%prepared.nodes=2``."""
    return (
        rf"^MultiNodeRun%repeat=({repeat})%variant=({variant})%launcher_kind=({launcher})"
        rf".*%prepared.nodes=({nodes})\b"
    )


def bench_run(results: Path, partition: str, tag: str, *reframe_args: str, **settings: str):
    """(the finished process, its seconds): ``./bench run --partition P --tag T [-- ARGS]``
    with TOPOFOAM_RESULTS=results and the given variables (TOPOFOAM_FABRIC="vsc5x100", ...).
    The emulated links are free unless a variable or the caller's environment prices them:
    a bench times what it names, not ./bench run's default profile."""
    env = dict(os.environ, TOPOFOAM_RESULTS=str(results), **settings)
    env.setdefault("TOPOFOAM_FABRIC", "none")
    began = time.monotonic()
    done = subprocess.run(
        [BENCH, "run", "--partition", partition, "--tag", tag]
        + (["--", *reframe_args] if reframe_args else []),
        env=env,
        capture_output=True,
        text=True,
        cwd=paths.REPO,
    )
    return done, time.monotonic() - began


def as_root(prog: str, what: str = "a twin") -> bool:
    """Whether this runs as root; if not, says so in one line (twins and the emulated
    cluster make network namespaces)."""
    if os.geteuid() == 0:
        return True
    print(f"{prog}: {what} needs root -- run as root", file=sys.stderr)
    return False


def logged_run(command: list[str], env: dict, log: Path) -> tuple[int, float]:
    """(exit status, seconds) of a command whose output goes to ``log``. An interrupt (Ctrl-C,
    or a SIGTERM turned into one) is passed on as a SIGTERM, waited for (a twin stops
    itself first) and raised again."""
    began = time.monotonic()
    with open(log, "w") as out:
        child = subprocess.Popen(
            command, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=paths.REPO
        )
        try:
            child.wait()
        except KeyboardInterrupt:
            child.send_signal(signal.SIGTERM)
            child.wait()
            raise
    return child.returncode, time.monotonic() - began


def controls(
    prog: str,
    node: str,
    unchanged: int,
    faults: list[tuple[str, dict[str, str]]],
    run: Callable[[Path, str, dict[str, str]], dict],
    show: Callable[[dict], str],
) -> int:
    """A screening's controls, measured: ``run(scratch, label, settings)`` ``unchanged`` times
    with no fault (each finding there is a false alarm), then once per (label, settings) of
    ``faults``; each result (a dict with ``label`` and ``findings``, or ``error``) printed as
    it comes by ``show``, then the tally: false alarms, and whether ``node`` was named under
    each fault. Each run has a scratch folder of its own; root only (the emulated cluster)."""
    if not as_root(prog, "the emulated cluster"):
        return 2
    labels = ", ".join(label for label, _ in faults)
    print(f"{prog}: {unchanged} unchanged runs, then {node} with {labels}", flush=True)
    same, faulty = [], []
    with tempfile.TemporaryDirectory(prefix=f"{prog}-") as scratch:
        for i in range(unchanged):
            same.append(run(Path(scratch), f"same{i + 1}", {}))
            print(f"{same[-1]['label']:>14}: {_shown(same[-1], show)}", flush=True)
        for label, settings in faults:
            faulty.append(run(Path(scratch), label, settings))
            print(f"{label:>14}: {_shown(faulty[-1], show)}", flush=True)
    alarms = sum(bool(r.get("findings") or r.get("error")) for r in same)
    print(
        f"{prog}: false alarms {alarms} of {len(same)} unchanged runs; {node} named at "
        + ", ".join(
            f"{r['label']}: {'yes' if any(node in f for f in r.get('findings', [])) else 'no'}"
            for r in faulty
        ),
        flush=True,
    )
    return 0


def _shown(result: dict, show: Callable[[dict], str]) -> str:
    if "error" in result:
        return f"no screening (exit {result['exit']}): {result['error']!r}"
    return (
        f"{'; '.join(result['findings']) or 'no finding'}; {show(result)}; {result['took']:.0f} s"
    )
