"""Long builds at the lowest CPU priority, so that they never take cores from a run beside them.

``nice`` alone does not do it on Debian: the kernel's autogroup scheduling (on by default,
``/proc/sys/kernel/sched_autogroup_enabled``) shares the CPU between sessions first, and a
process's nice value counts only against the processes of its own session. A nice-19 build
started from another terminal (or by ``setsid``) took as much CPU as the benchmark it ran
beside (measured: two compiles at nice 19 and two of another session at SCHED_IDLE, about
50 % of a core each). So the build runs in a session of its own whose autogroup is at nice
19 too; it then gets what the others leave.

That session does not get the terminal's Ctrl-C: ours stops it (its whole process group), and
so does a SIGTERM of ours. Nor does it get a pause of ours: a SIGTSTP of ours (Ctrl-Z, or
``kill -TSTP``) pauses it (SIGSTOP to its process group) and then us, and our SIGCONT
continues it. A SIGSTOP of ours cannot be caught: it pauses us and not the compilers, which
ran on beside timings that way for three days (docs/timings.md).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

NICE = 19


def say(line: str) -> None:
    """A build's progress or problem line, as every build of ours prints it."""
    print(f"build: {line}", file=sys.stderr, flush=True)


def demote() -> None:
    """In a child, before it runs its command: a session of its own, nice 19, and the
    session's autogroup at nice 19 (where the kernel has autogroups)."""
    os.setsid()
    os.nice(NICE - os.nice(0))
    try:
        Path("/proc/self/autogroup").write_text(str(NICE))
    except OSError:
        pass  # no autogroups (a kernel without them, or switched off): nice is what counts


@contextlib.contextmanager
def started(cmd: list[str], **popen) -> Iterator[subprocess.Popen]:
    """``cmd`` started at the lowest priority (demote), for the block's length: an interrupt
    of ours, or a SIGTERM (a job's or a session's stop), stops its whole session first and is
    raised again as KeyboardInterrupt; a SIGTSTP of ours pauses it and us, a SIGCONT
    continues both. The block waits for it (or reads its output) itself."""
    main = threading.current_thread() is threading.main_thread()
    signals = (signal.SIGTERM, signal.SIGTSTP, signal.SIGCONT)
    old = {sig: signal.getsignal(sig) for sig in signals} if main else {}
    try:
        with subprocess.Popen(cmd, preexec_fn=demote, **popen) as child:
            if main:
                signal.signal(signal.SIGTERM, signal.default_int_handler)
                signal.signal(signal.SIGTSTP, lambda *_: _pause(child))
                signal.signal(signal.SIGCONT, lambda *_: _signal_group(child, signal.SIGCONT))
            try:
                yield child
            except KeyboardInterrupt:
                stop(child)
                raise
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


def run(cmd: list[str], **popen) -> int:
    """Run ``cmd`` to its end at the lowest priority (``started``); its exit status."""
    with started(cmd, **popen) as child:
        return child.wait()


def _signal_group(child: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(child.pid, sig)
    except ProcessLookupError:
        pass


def _pause(child: subprocess.Popen) -> None:
    """Pause the demoted child's whole process group, then ourselves (SIGCONT undoes both)."""
    _signal_group(child, signal.SIGSTOP)
    os.kill(os.getpid(), signal.SIGSTOP)


def stopped_by(status: int) -> str | None:
    """The signal that stopped a command whose exit status is ``status`` (negative: Python's
    way; 128 + n: a shell's, as when the build's script was signalled), if a stop's: SIGTERM,
    SIGINT, SIGHUP or SIGKILL, as a job's end, a closed session or an admin sends. None for
    any other status: the command failed of itself."""
    stops = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGKILL)
    number = -status if status < 0 else status - 128 if status > 128 else None
    return signal.Signals(number).name if number in stops else None


def stop(child: subprocess.Popen) -> None:
    """Stop a demoted child and everything it started (they share its process group)."""
    try:
        os.killpg(child.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    child.wait()
