"""Processes an earlier, killed run of the suite left behind on this machine.

A run killed with SIGKILL cannot stop its children: ReFrame's job scripts, ``mpirun`` and the
solver ranks keep computing, and the next run would share the cores with them and record
slower times without notice. What the suite starts runs in a stage folder under
``<results>/reframe/stage``; before it times anything, ``./bench run`` stops every process
whose working folder is there (they are the suite's own: nothing else works in that folder),
unless they belong to a ReFrame that still runs (another run, going on: then it refuses).
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Stray:
    pid: int
    name: str
    cwd: Path


def find(stage_root: Path) -> list[Stray]:
    """Processes of this user working under ``stage_root`` (not this process)."""
    root = stage_root.resolve()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cwd = Path(os.readlink(entry / "cwd"))
            name = (entry / "comm").read_text().strip()
        except OSError:
            continue  # gone, or not ours to read
        if cwd == root or root in cwd.parents:
            found.append(Stray(int(entry.name), name, cwd))
    return found


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def _is_reframe(pid: int) -> bool:
    """Whether the process runs ReFrame itself (its command names the reframe script; a job
    script under results/reframe/stage does not count)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:2]
    except OSError:
        return False
    return any(Path(arg.decode(errors="replace")).name == "reframe" for arg in argv)


def running_reframe(strays: list[Stray]) -> int | None:
    """The PID of a live ReFrame that some of ``strays`` descend from: then they are not left
    behind but another run, still going."""
    for stray in strays:
        pid = _parent(stray.pid)
        while pid > 1:
            if pid != os.getpid() and _is_reframe(pid):
                return pid
            pid = _parent(pid)
    return None


def stop(strays: list[Stray], timeout: float = 10.0) -> list[Stray]:
    """SIGTERM, then SIGKILL what is left after ``timeout``; returns those that were stopped."""
    stopped = []
    for stray in strays:
        try:
            os.kill(stray.pid, signal.SIGTERM)
            stopped.append(stray)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(_alive(s.pid) for s in stopped):
        time.sleep(0.1)
    for stray in stopped:
        if _alive(stray.pid):
            try:
                os.kill(stray.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    return stopped


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1][0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def summary(stopped: list[Stray]) -> str:
    """'mpirun, simpleFoam x2'"""
    counts: dict[str, int] = {}
    for stray in stopped:
        counts[stray.name] = counts.get(stray.name, 0) + 1
    return ", ".join(f"{n} x{c}" if c > 1 else n for n, c in sorted(counts.items()))
