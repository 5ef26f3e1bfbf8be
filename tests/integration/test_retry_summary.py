"""The run summary after ReFrame's --max-retries (what ./bench run passes on the emulated
cluster): a case that failed once and passed when rerun is counted as passed and named, with
the first attempt's reason; a case that failed every attempt is a failure. A real ReFrame run
of two small checks (test data: one fails on its first attempt only, one always)."""

import subprocess
import sys
from pathlib import Path

from localsite import cli

REFRAME = str(Path(sys.executable).parent / "reframe")

CHECKS = '''
import os
import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import run_after, sanity_function


@rfm.simple_test
class FlakyOnce(rfm.RunOnlyRegressionTest):
    """Test data: fails on its first attempt, passes on the next (a marker file)."""
    valid_systems = ["*"]
    valid_prog_environs = ["*"]
    executable = "echo"
    executable_opts = ["hello"]
    marker = variable(str, value="")

    @sanity_function
    def passes_second_time(self):
        first = not os.path.exists(self.marker)
        open(self.marker, "a").close()
        return sn.assert_false(first, msg="first attempt fails by design")


@rfm.simple_test
class AlwaysFails(rfm.RunOnlyRegressionTest):
    """Test data: fails on every attempt."""
    valid_systems = ["*"]
    valid_prog_environs = ["*"]
    executable = "echo"
    executable_opts = ["hello"]

    @sanity_function
    def never(self):
        return sn.assert_true(False, msg="fails by design")
'''


def test_summary_counts_a_rerun_pass_and_names_it(tmp_path):
    checks = tmp_path / "flaky_checks.py"
    checks.write_text(CHECKS)
    report = tmp_path / "report.json"
    cmd = [
        REFRAME,
        "-c",
        str(checks),
        "--prefix",
        str(tmp_path / "rfm"),
        "--report-file",
        str(report),
        "--max-retries",
        "1",
        "-S",
        f"FlakyOnce.marker={tmp_path / 'marker'}",
        "-r",
    ]
    done = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0, done.stdout  # AlwaysFails fails
    cases, failures, lines = cli.summarise_report(report, done.returncode)
    assert (cases, failures) == (2, 1), lines
    assert [line for line in lines if line.startswith("FAILED")] == [
        "FAILED AlwaysFails @default: fail in sanity: sanity error: fails by design"
    ]
    rerun = [line for line in lines if line.startswith("RERUN")]
    assert len(rerun) == 1
    assert "FlakyOnce" in rerun[0]
    assert (
        "passed on attempt 2; first fail in sanity: sanity error: first attempt fails by design"
        in rerun[0]
    )


def test_emulated_cluster_alone_is_rerun():
    report = Path("/nonexistent.json")
    emu = cli._reframe_command("emu", report, [], [], cli.EMU_RETRIES)
    cpu = cli._reframe_command("cpu", report, [], [])
    assert emu[emu.index("--max-retries") + 1] == "1"
    assert "--max-retries" not in cpu
