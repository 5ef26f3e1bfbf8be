"""Each rank's time on a core (topofoam.checks.oncore): the real oncore.sh around real
processes, one that computes and one that sleeps; the exit status kept; a signal to the
wrapper ends its command; the ranks' reports read, a missing or empty one refused. And the
verdict's reading of the ratio beside the wall time (topofoam.validation.judge)."""

import os
import signal
import subprocess
import sys
import time

import pytest

from topofoam.checks import oncore
from topofoam.validation import judge
from topofoam.validation.expectations import Expectation
from topofoam.validation.sessions import Key, Session

SPIN = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.6: pass"


def wrapped(*command, env=None):
    return subprocess.run(
        ["bash", "-c", oncore.PREFIX + " ".join(command)],
        capture_output=True,
        text=True,
        env=dict(os.environ, OMPI_COMM_WORLD_RANK="3", **(env or {})),
        timeout=60,
    )


def test_a_rank_that_computes_is_on_its_core_and_one_that_sleeps_is_not():
    spin = wrapped(sys.executable, "-c", f"'{SPIN}'")
    nap = wrapped("sleep", "0.6")
    assert spin.returncode == 0 and nap.returncode == 0, spin.stderr + nap.stderr
    ((rank, (host, wall, cpu)),) = oncore.reported(spin.stderr).items()
    assert rank == "3" and host == os.uname().nodename
    assert cpu >= 0.6 and wall >= cpu * 0.95
    # The sleeper's CPU time is a few ms: its ratio is far above any computing rank's.
    assert oncore.wall_over_cpu(nap.stderr, 1) > 10 * oncore.wall_over_cpu(spin.stderr, 1)


def test_the_commands_exit_status_is_kept():
    assert wrapped("bash", "-c", "'exit 7'").returncode == 7


def test_a_signal_to_the_wrapper_ends_its_command():
    """A launcher ending the job signals the rank's process, the wrapper: the solver under it
    must not run on alone."""
    runs = subprocess.Popen(
        ["bash", "-c", oncore.PREFIX + "sleep 30"], stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 10
    child = None
    while child is None and time.monotonic() < deadline:
        found = subprocess.run(["pgrep", "-P", str(runs.pid), "-x", "sleep"],
                               capture_output=True, text=True)  # fmt: skip
        child = int(found.stdout.split()[0]) if found.stdout.split() else None
        time.sleep(0.05)
    assert child, "the wrapper did not start its command"
    os.kill(runs.pid, signal.SIGTERM)
    runs.wait(timeout=10)
    gone = time.monotonic() + 5
    while time.monotonic() < gone and os.path.exists(f"/proc/{child}"):
        time.sleep(0.05)
    assert not os.path.exists(f"/proc/{child}"), "the command ran on after its wrapper ended"
    assert runs.returncode != 0


REPORTS = "oncore 0 n1 wall 2.000 cpu 1.990\nsome solver line\noncore 1 n1 wall 2.000 cpu 1.600\n"


def test_the_largest_ratio_of_all_ranks_is_the_measurement_and_its_rank_is_named():
    assert oncore.wall_over_cpu(REPORTS, 2) == pytest.approx(1.25)
    assert oncore.least(REPORTS) == "rank 1 on n1: 80.0 % of its wall"
    assert oncore.least("no report\n") == ""


@pytest.mark.parametrize(
    "text, said",
    [
        (REPORTS, "2 of 3 ranks reported"),
        ("oncore 0 n1 wall 2.000 cpu 0.000\n", "rank 0 on n1 reported wall 2.0 s, CPU 0.0 s"),
        ("", "0 of 1 ranks reported"),
    ],
)
def test_a_missing_or_empty_report_is_refused(text, said):
    ranks = 3 if text == REPORTS else 1
    with pytest.raises(oncore.OnCoreError, match=said):
        oncore.wall_over_cpu(text, ranks)


# -- the verdict's reading ----------------------------------------------------------------


def _key(metric):
    return Key("SolverValidation", "site:part", "env", "case/1x2", metric)


def _verdict(wall, ratio):
    """The wall expected at 10 s and the ratio at 1.05 (8 repeats each, 1 % apart), judged
    against a session's ``wall`` and ``ratio`` (8 repeats each)."""

    def spread(x):
        return [x * (1 + 0.01 * (i - 3.5) / 3.5) for i in range(8)]

    wanted = [
        Expectation(_key("wall"), "s", "lower", 0.10, "test", tuple(spread(10.0))),
        Expectation(_key("wall_over_cpu"), "x", "lower", 0.10, "test", tuple(spread(1.05))),
    ]
    s = Session("u" * 36, "20261202T000000+0000", {"tag": "t"})
    s.samples = {_key("wall"): spread(wall), _key("wall_over_cpu"): spread(ratio)}
    s.units = {_key("wall"): "s", _key("wall_over_cpu"): "x"}
    s.partitions, s.failed, s.nodes = {"site:part"}, [], {}
    return {j.key.metric: j for j in judge.judge(wanted, s).judgements}


def test_time_taken_from_the_ranks_fails_saying_so():
    j = _verdict(wall=11.6, ratio=1.05 / 0.86)
    assert j["wall_over_cpu"].status == "FAIL"
    assert "time was taken from the ranks" in j["wall_over_cpu"].line()


def test_a_slower_wall_whose_ranks_kept_their_cores_says_the_cores_speed_moved():
    j = _verdict(wall=13.0, ratio=1.05)
    assert (j["wall"].status, j["wall_over_cpu"].status) == ("FAIL", "PASS")
    assert "the ranks kept their cores (wall_over_cpu PASS)" in j["wall"].line()
    # Where time was taken too, the wall's line does not blame the cores' speed.
    j = _verdict(wall=13.0, ratio=1.3)
    assert j["wall"].status == "FAIL" and "kept their cores" not in j["wall"].line()
