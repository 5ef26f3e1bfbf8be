"""Long builds at the lowest CPU priority (localsite/lowpriority.py): nice 19 in a session of
their own whose autogroup is at nice 19 too, and stopped with us."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO
from localsite import lowpriority

AUTOGROUPS = Path("/proc/sys/kernel/sched_autogroup_enabled")


def test_the_command_runs_demoted_in_a_session_of_its_own(tmp_path):
    out = tmp_path / "out"
    script = "cat /proc/self/autogroup 2>/dev/null; ps -o ni=,sid= -p $$"
    with out.open("w") as f:
        assert lowpriority.run(["sh", "-c", script], stdout=f) == 0
    lines = out.read_text().splitlines()
    nice, sid = lines[-1].split()
    assert int(nice) == 19
    assert int(sid) != os.getsid(0)
    if AUTOGROUPS.is_file() and AUTOGROUPS.read_text().strip() == "1":
        assert lines[0].endswith("nice 19"), lines


def test_its_exit_status_is_returned():
    assert lowpriority.run(["sh", "-c", "exit 3"]) == 3


def test_a_sigterm_of_ours_stops_all_it_started(tmp_path):
    """The build's session does not get our terminal's signals: a stop of ours (SIGTERM)
    stops its process group, the compilers too, and we exit as interrupted."""
    pidfile = tmp_path / "pid"
    code = (
        "import sys; from localsite import lowpriority\n"
        "try:\n"
        f"    lowpriority.run(['sh', '-c', 'sleep 300 & echo $! > {pidfile}; wait'])\n"
        "except KeyboardInterrupt:\n"
        "    sys.exit(130)\n"
    )
    ours = subprocess.Popen([sys.executable, "-c", code], cwd=REPO)
    for _ in range(100):
        if pidfile.is_file() and pidfile.read_text().strip():
            break
        time.sleep(0.1)
    grandchild = int(pidfile.read_text())
    ours.send_signal(signal.SIGTERM)
    assert ours.wait(timeout=30) == 130
    time.sleep(0.2)
    assert not Path(f"/proc/{grandchild}").exists() or "Z" in _state(grandchild)


#: The two ways a long build of ours runs: our own builds, and Spack's (./bench spack).
BUILDS = {
    "build": "from localsite import lowpriority\nlowpriority.run(['sh', '-c', {loop!r}])\n",
    "spack": "from pathlib import Path\nfrom localsite import cli\n"
    "cli._spack_run(['sh', '-c', {loop!r}], {{}}, Path('/nonexistent'))\n",
}


@pytest.mark.parametrize("how", BUILDS)
def test_a_pause_of_ours_pauses_all_it_started_and_a_continue_continues_them(tmp_path, how):
    """A SIGSTOP cannot reach the build's own session; a SIGTSTP of ours pauses it (the
    compilers too) and us, and a SIGCONT continues both: the way to pause a build beside a
    timing. The build's command counts while it runs, so a pause shows in its count."""
    pidfile, counter = tmp_path / "pid", tmp_path / "count"
    loop = f"echo $$ > {pidfile}; while :; do echo x >> {counter}; sleep 0.05; done"
    code = BUILDS[how].format(loop=loop)
    ours = subprocess.Popen([sys.executable, "-c", code], cwd=REPO)
    build = None
    try:
        for _ in range(100):
            if pidfile.is_file() and pidfile.read_text().strip():
                break
            time.sleep(0.1)
        build = int(pidfile.read_text())
        assert os.getsid(build) != os.getsid(ours.pid)  # its own session: SIGSTOP misses it
        ours.send_signal(signal.SIGTSTP)
        time.sleep(0.5)
        assert _state(build) == "T" and _state(ours.pid) == "T"
        paused = counter.stat().st_size
        time.sleep(0.5)
        assert counter.stat().st_size == paused  # nothing ran while paused
        ours.send_signal(signal.SIGCONT)
        time.sleep(0.5)
        assert _state(build) != "T" and _state(ours.pid) != "T"
        assert counter.stat().st_size > paused
    finally:
        ours.send_signal(signal.SIGCONT)  # a stopped process takes its SIGTERM once continued
        ours.send_signal(signal.SIGTERM)
        ours.wait(timeout=30)
        if build and Path(f"/proc/{build}").exists():
            os.killpg(build, signal.SIGKILL)  # where the pause was not ours to undo


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[1].split()[0]
    except OSError:
        return "Z"


def test_a_stop_from_outside_is_told_from_a_failure():
    """The build's script killed by a job's end or an admin (SIGTERM, SIGKILL; directly, or
    a shell reporting its child's signal as 128 + n) is a stop, which the next run continues;
    an exit of its own, or a crash (SIGSEGV), is a failure (flavours.build says which)."""
    statuses = {
        "bash -c 'kill -TERM $$'": "SIGTERM",
        "bash -c 'kill -KILL $$'": "SIGKILL",
        "bash -c 'sh -c \"kill -TERM \\$\\$\"; exit $?'": "SIGTERM",  # 143 from the shell
        "bash -c 'exit 2'": None,
        "bash -c 'kill -SEGV $$'": None,
    }
    for command, stop in statuses.items():
        status = lowpriority.run(["sh", "-c", command])
        assert lowpriority.stopped_by(status) == stop, (command, status)
