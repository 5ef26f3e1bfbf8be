"""A system's validation history (topofoam.validation.history): every kept verdict read
back, oldest first, each measurement's judgements across them, and the session it first
regressed in marked, once. The verdicts are written by topofoam.validation's own outputs
from TEST DATA sessions (seeded draws), as `judge` writes them after each session."""

import os
import subprocess

from test_validation import draws, expect, key, session

from conftest import PYTHON, REPO
from topofoam.validation import history, judge, outputs


def keep_verdicts(results, factors):
    """One kept verdict per session, the solver's time scaled by each factor in turn."""
    expected = [expect(draws(10.0, 0.01, seed=100))]
    folder = results / "validation" / "verdict-site"
    for n, factor in enumerate(factors):
        s = session({key(): draws(10.0 * factor, 0.01, seed=n)})
        s.start = f"2026112{n}T000000+0000"
        outputs.write(judge.judge(expected, s), folder, outputs.session_stem(s.start, s.uuid))


def test_the_first_regressed_session_is_marked_once(tmp_path):
    keep_verdicts(tmp_path, [1.0, 1.0, 1.3, 1.3, 1.0, 1.4])
    verdicts = history.kept(tmp_path, "site", [])
    (points,) = history.series(verdicts).values()
    assert [p.status for p in points] == ["PASS", "PASS", "FAIL", "FAIL", "PASS", "FAIL"]
    assert [p.first_regressed for p in points] == [False, False, True, False, False, False]
    assert points[2].session.startswith("20261122T000000+0000")


def test_the_history_command_prints_each_session_and_the_mark(tmp_path):
    keep_verdicts(tmp_path, [1.0, 1.3])
    (tmp_path / "validation" / "verdict-site" / "junk.json").write_text("[1, 2]")
    env = dict(os.environ, TOPOFOAM_RESULTS=str(tmp_path))
    done = subprocess.run(
        [PYTHON, "-m", "topofoam.validation", "history", "--metric", "wall"],
        cwd=REPO, capture_output=True, text=True, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    assert out[0].startswith("History of site: 2 verdict(s), 20261120T000000+0000")
    assert out[1] == "SolverValidation on site:part: wall of case/1x2"
    assert out[2].startswith("  20261120T000000+0000") and "PASS" in out[2]
    assert "FAIL" in out[3] and out[3].endswith("  <- first regressed")
    assert any(line.startswith("note: ") and "junk.json: not a verdict" in line for line in out)


def test_a_system_without_verdicts_is_one_line(tmp_path):
    keep_verdicts(tmp_path, [1.0])
    env = dict(os.environ, TOPOFOAM_RESULTS=str(tmp_path))
    done = subprocess.run(
        [PYTHON, "-m", "topofoam.validation", "history", "--system", "vsc5"],
        cwd=REPO, capture_output=True, text=True, env=env,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"validation: no kept verdicts of 'vsc5' under {tmp_path / 'validation'} (systems with "
        f"verdicts: site) -- give one of those with --system"
    )
