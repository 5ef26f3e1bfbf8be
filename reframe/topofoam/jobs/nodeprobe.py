"""What one node does, to be set beside its peers: the node screening's probe.

    python -m topofoam.jobs.nodeprobe --case DIR --solver laplacianFoam --ranks R \
        [--rounds N] [--round-from K] [--fingerprint]

run on every node of an allocation (NodeScreening: all at once; where the nodes share a
machine's cores, each on a slice of them, localsite.cpuquota), it measures in each round, on
``R`` cores at once, in this order:

- the solver: R serial runs of the prepared case's solver, each on its own copy in the
  node's temporary folder, at the same time; the round's figure is their median wall time:
  a CPU stuck in a power-capped state, or cores of another speed, show here;
- the memory bandwidth: R processes each copy-and-scale-and-add arrays far larger than any
  cache (STREAM's triad, a[:] = b + s * c), all starting each pass together; a pass's
  bandwidth is the bytes all of them moved over the time from the first start to the last
  end, and the figure is the best of the passes: a memory channel down shows here;

and prints one line per round, ``nodeprobe <host> round <n> solver_s <t> membw_MBps <b>``,
and with ``--fingerprint`` one line ``nodeprint <host> <json>`` (topofoam.jobs.fingerprint's
record). A probe that cannot measure says why in one line and exits 2.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from topofoam.jobs import fingerprint

#: Elements of each triad array: 3 x 16 M doubles = 384 MiB a process, past any cache.
ELEMENTS = 16 * 1024 * 1024
PASSES = 5
#: Bytes a pass moves in each process: two passes over memory (c read, a written; a and b
#: read, a written), 5 streams of 8 bytes an element, as measured, not STREAM's 3.
PASS_BYTES = 5 * 8 * ELEMENTS


class ProbeError(RuntimeError):
    """The node cannot be measured: the message says why and the fix."""


def _triad(start, out) -> None:
    import numpy as np

    b = np.ones(ELEMENTS)
    c = np.full(ELEMENTS, 2.0)
    a = np.zeros(ELEMENTS)
    a[:] = 1.0  # touched: the first pass times streaming, not page faults
    spans = []
    for _ in range(PASSES):
        start.wait()
        t0 = time.perf_counter()
        np.multiply(c, 3.0, out=a)
        np.add(a, b, out=a)
        spans.append((t0, time.perf_counter()))
    out.put(spans)


def memory_bandwidth(ranks: int) -> float:
    """MB/s of ``ranks`` processes streaming at once: in each pass, the bytes all of them
    moved over the time from the first one's start to the last one's end; the best pass.

    Not each process's own best pass, summed: those need not overlap (a process that starts
    late streams alone and gets the memory system to itself), and the sum would then count
    bandwidth the processes never had together."""
    context = multiprocessing.get_context("fork")
    start, out = context.Barrier(ranks), context.Queue()
    procs = [context.Process(target=_triad, args=(start, out)) for _ in range(ranks)]
    for p in procs:
        p.start()
    spans = [out.get(timeout=600) for _ in procs]
    for p in procs:
        p.join()
    if any(p.exitcode for p in procs):
        raise ProbeError("a memory-bandwidth process failed (out of memory?)")
    # perf_counter is CLOCK_MONOTONIC: one clock for all processes of the node.
    return max(
        ranks * PASS_BYTES / (max(s[k][1] for s in spans) - min(s[k][0] for s in spans)) / 1e6
        for k in range(PASSES)
    )


def solver_time(case: Path, solver: str, ranks: int, scratch: Path) -> float:
    """The median wall time of ``ranks`` serial runs of ``solver`` at once, each on its own
    copy of ``case``."""
    copies = []
    for n in range(ranks):
        copy = scratch / f"run{n}"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(case, copy, ignore=shutil.ignore_patterns("processor*", "log.*"))
        copies.append(copy)
    started, procs = time.perf_counter(), []
    for copy in copies:
        log = open(copy / "log.probe", "w")
        # Run from the copy: OpenFOAM reads the working folder (through $PWD) and refuses
        # one with a space in its name, which a job's stage folder may have.
        env = dict(os.environ, PWD=str(copy))
        run = [solver, "-case", str(copy)]
        procs.append((subprocess.Popen(run, stdout=log, stderr=log, cwd=copy, env=env), log))
    ended: dict[int, float] = {}
    while len(ended) < len(procs):  # each run's own end, whichever ends first
        for n, (proc, _) in enumerate(procs):
            if n not in ended and proc.poll() is not None:
                ended[n] = time.perf_counter() - started
        time.sleep(0.005)
    walls = [ended[n] for n in range(len(procs))]
    for proc, log in procs:
        code = proc.returncode
        log.close()
        if code != 0:
            tail = (Path(log.name).read_text(errors="replace").strip().splitlines() or ["?"])[-1]
            raise ProbeError(f"{solver} failed on {socket.gethostname()} (exit {code}): {tail}")
    return statistics.median(walls)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m topofoam.jobs.nodeprobe")
    p.add_argument("--case", type=Path, required=True, help="a prepared case (its root)")
    p.add_argument("--solver", required=True)
    p.add_argument(
        "--ranks", type=int, required=True, help="cores measured at once (0: the task's CPUs)"
    )
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--round-from", type=int, default=1, help="the first round's number")
    p.add_argument("--fingerprint", action="store_true")
    args = p.parse_args(argv)
    host = socket.gethostname()
    try:
        if args.ranks < 0 or args.rounds < 1:
            raise ProbeError(
                f"--ranks {args.ranks} and --rounds {args.rounds}: 0 (the task's CPUs) or more "
                f"ranks, 1 or more rounds"
            )
        ranks = args.ranks or len(os.sched_getaffinity(0))
        if not (args.case / "system" / "controlDict").is_file():
            raise ProbeError(f"{args.case} is not a prepared case (no system/controlDict)")
        if shutil.which(args.solver) is None:
            raise ProbeError(f"{args.solver} is not on PATH -- load the OpenFOAM environment")
        if args.fingerprint:
            print(f"nodeprint {host} {json.dumps(fingerprint.probe(), sort_keys=True)}")
        base = os.environ.get("TMPDIR") or "/tmp"
        if any(c.isspace() for c in base):
            base = "/tmp"  # OpenFOAM refuses a case path with a space in it
        with tempfile.TemporaryDirectory(prefix="nodeprobe-", dir=base) as scratch:
            for n in range(args.round_from, args.round_from + args.rounds):
                # The solver first: where nodes share a machine (an emulated partition), their
                # probes start each round together, and a slowed node's triad, run first,
                # went on beside its peers' solvers (peers 10 % slower in some rounds).
                wall = solver_time(args.case, args.solver, ranks, Path(scratch))
                bandwidth = memory_bandwidth(ranks)
                print(f"nodeprobe {host} round {n} solver_s {wall:.4f} membw_MBps {bandwidth:.1f}")
                sys.stdout.flush()
    except (ProbeError, fingerprint.ProbeError, OSError) as e:
        print(f"nodeprobe: {host}: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
