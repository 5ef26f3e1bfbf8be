"""A timed-out PMIx fence ends its job, on the emulated cluster and the site twins.

Slurm's PMIx plugin (mpi/pmix_v4, Slurm 22.05) gives up on a fence after ``PMIxTimeout``
seconds since its last contribution and logs ``collective timeout`` from slurmstepd into the
node's slurmd log. It tells only the ranks of that node, and Open MPI 4.1's MPI_Init ignores
the fence's status: its ranks carry on without their peers' addresses, then crash (the step
ends: KillOnBadExit) or spin until the job's time limit. On VSC-5's twin, 256 OpenFOAM ranks
spun for 35 minutes that way, the machine nearly unresponsive (session 57).

This watcher runs beside the cluster's daemons (started and stopped with them). It follows
the nodes' slurmd logs; for each job whose fence timed out it cancels the job, waits for it to
end, and appends one line to the job's stderr saying why (a line written earlier could be
overwritten by the job's own last writes). It prints what it did to its own log.

    python -m localsite.fencewatch <cluster root>
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

#: slurmstepd's line, in the slurmd log of the node it ran on:
#: ``[12.0] error:  mpi/pmix_v4: pmixp_coll_ring_reset_if_to: node1 [0]: ...: 0x..:
#: collective timeout seq=0`` (the tree collective logs the same words).
TIMEOUT_LINE = re.compile(
    r"\[(?P<job>\d+)\.(?P<step>[\w+]+)\] error:\s+mpi/pmix\S*: \S+: (?P<host>\S+) \[\d+\]:"
    r".*collective timeout seq=\d+"
)
#: Seconds between two reads of the logs, and the longest wait for a cancelled job to end.
POLL = 1.0
END_WAIT = 60.0


@dataclass(frozen=True)
class FenceTimeout:
    job: str
    step: str
    host: str


def timeouts(text: str) -> list[FenceTimeout]:
    """The fence timeouts slurmstepd logged in ``text`` (whole lines of a slurmd log)."""
    return [
        FenceTimeout(m.group("job"), m.group("step"), m.group("host"))
        for m in TIMEOUT_LINE.finditer(text)
    ]


def pmix_timeout(root: Path) -> str:
    """The fence's timeout the cluster's mpi.conf sets (Slurm's default when it sets none)."""
    try:
        m = re.search(r"^PMIxTimeout=(\d+)", (root / "mpi.conf").read_text(), re.M)
    except OSError:
        m = None
    return m.group(1) if m else "300"


class LogFollower:
    """New whole lines of every ``slurmd-*.log`` in a folder, as they are written."""

    def __init__(self, log_dir: Path):
        self.log_dir = log_dir
        self.offsets: dict[Path, int] = {}

    def new_text(self) -> str:
        text = []
        for log in sorted(self.log_dir.glob("slurmd-*.log")):
            try:
                with open(log, "rb") as f:
                    f.seek(self.offsets.get(log, 0))
                    chunk = f.read()
            except OSError:
                continue
            whole = chunk[: chunk.rfind(b"\n") + 1]  # a line being written waits for its end
            self.offsets[log] = self.offsets.get(log, 0) + len(whole)
            text.append(whole.decode(errors="replace"))
        return "".join(text)


#: Job states in which a job still holds its nodes.
ACTIVE = ("PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED")


def job_field(job: str, field: str) -> str | None:
    """A field of ``scontrol show job`` ('' when the job or the field is gone), or None when
    the controller did not answer (a twin's slurmctld starved by its ranks)."""
    try:
        done = subprocess.run(
            ["scontrol", "-o", "show", "job", job], capture_output=True, text=True, timeout=60
        )
    except subprocess.TimeoutExpired:
        return None
    if done.returncode != 0 and "Invalid job id" not in done.stderr:
        return None
    m = re.search(rf"\b{field}=(\S*)", done.stdout)
    return m.group(1) if m else ""


def end_job(t: FenceTimeout, timeout: str, root: Path) -> str | None:
    """Cancel the job of a timed-out fence; once it ended, say why in its stderr file.
    Returns what was done, for the watcher's log, or None when the controller did not
    answer (the watcher tries again)."""
    stderr = job_field(t.job, "StdErr")
    state = job_field(t.job, "JobState")
    if stderr is None or state is None:
        return None
    if state not in ACTIVE:
        return f"job {t.job}'s fence timed out on {t.host}; the job had already ended ({state or 'gone'})"
    try:
        subprocess.run(["scancel", t.job], capture_output=True, timeout=60)
    except subprocess.TimeoutExpired:
        return None
    deadline = time.monotonic() + END_WAIT
    while time.monotonic() < deadline and job_field(t.job, "JobState") in (*ACTIVE, None):
        time.sleep(POLL)
    line = (
        f"topofoam: step {t.job}.{t.step}'s PMIx fence timed out on {t.host} after "
        f"{timeout} s, so job {t.job} was cancelled: its ranks would have waited for their "
        f"peers until the time limit -- if they were only slow to start, raise PMIxTimeout "
        f"in {root / 'mpi.conf'}"
    )
    path = Path(stderr)
    if stderr and path.is_file():
        with open(path, "a") as f:
            f.write(line + "\n")
        return f"{line} (written to {path})"
    return line


def watch(root: Path) -> None:
    follower = LogFollower(root / "log")
    follower.new_text()  # what was logged before the watcher started is not its business
    pending: dict[str, FenceTimeout] = {}
    handled: set[str] = set()
    retrying: set[str] = set()
    while True:
        for t in timeouts(follower.new_text()):
            if t.job not in handled:
                pending.setdefault(t.job, t)
        for job, t in list(pending.items()):
            done = end_job(t, pmix_timeout(root), root)
            if done is None:
                if job not in retrying:
                    retrying.add(job)
                    print(
                        f"job {job}'s fence timed out; slurmctld does not answer, retrying",
                        flush=True,
                    )
                continue
            print(done, flush=True)
            handled.add(job)
            del pending[job]
        time.sleep(POLL)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not Path(args[0], "log").is_dir():
        print("usage: python -m localsite.fencewatch <cluster root with log/>", file=sys.stderr)
        return 2
    if "SLURM_CONF" not in os.environ:
        print("fencewatch: SLURM_CONF is not set -- start it from the cluster", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        watch(Path(args[0]))
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
