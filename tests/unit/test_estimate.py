"""The start-of-run estimate of ./bench run (localsite/estimate.py): the last like run on this
machine, else docs/timings.md's current figures for the default selection, else no number."""

from argparse import Namespace

from localsite import estimate
from topofoam.results import timings as current


def args(**given):
    base = dict(tag=[], openfoam="v1912", repeats=None, compare_all=False, reframe_args=[])
    return Namespace(**(base | given))


TABLE = """# Measured timings

## Current figures

| key | what | newest | date | machine | notes |
| --- | --- | --- | --- | --- | --- |
| `run.cpu` | TEST DATA | 8 min 57 s | 2026-11-23 | 2-core VM | |
| `run.slurm` | TEST DATA | 4 min 7 s | 2026-11-23 | 2-core VM | |
| `run.emu` | TEST DATA | about a while | 2026-11-23 | 2-core VM | not a time: no number |
| `build.patched` | TEST DATA | 1 h 2 min | 2026-11-28 | 2-core VM | |

## History

| `run.cpu` | a row outside the table | 99 min | | | |
"""


def test_first_default_run_is_estimated_by_the_current_figures(tmp_path, monkeypatch):
    monkeypatch.delenv("TOPOFOAM_REPEATS", raising=False)
    monkeypatch.delenv("TOPOFOAM_COMPARE", raising=False)
    timings = tmp_path / "timings.md"
    timings.write_text(TABLE)
    figures = current.current_figures(timings)
    assert {k: f.seconds for k, f in figures.items()} == {
        "run.cpu": 537,
        "run.slurm": 247,
        "build.patched": 3720,
    }
    chosen = [estimate.selection(p, args()) for p in ("cpu", "slurm", "emu")]
    line = estimate.say(chosen, ["patched", "scotch"], tmp_path / "none.jsonl", timings)
    total = 537 + 247 + 3720
    assert line.startswith(f"bench: this run takes about {round(total / 60)} min (cpu 9 min")
    assert "building patched 62 min" in line
    assert "as docs/timings.md's current figures (2026-11-23, 2-core VM)" in line
    assert line.endswith("emu, building scotch not estimated (no earlier like run here, no "
                         "current figure)")  # fmt: skip


def test_the_current_figures_table_gives_the_default_runs_and_builds():
    """The estimate's figures are docs/timings.md's, not constants in the code."""
    figures = current.current_figures()
    for key in ("run.cpu", "run.slurm", "run.emu", "build.scotch", "build.patched"):
        assert key in figures and figures[key].seconds > 0, sorted(figures)


def test_a_like_run_recorded_here_gives_the_estimate(tmp_path, monkeypatch):
    monkeypatch.delenv("TOPOFOAM_REPEATS", raising=False)
    path = tmp_path / "durations.jsonl"
    chosen = estimate.selection("cpu", args(tag=["variants"]))
    assert "no estimate" in estimate.say([chosen], [], path)
    estimate.record(chosen, 125.0, 14, path)
    other = estimate.selection("cpu", args(tag=["variants"], repeats=3))
    estimate.record(other, 600.0, 40, path)
    with open(path, "a") as f:
        f.write('{"selection": cut by a crash\n')
    line = estimate.say([chosen], [], path)
    assert line.startswith("bench: this run takes about 2 min (cpu 2 min; as the last like run")
    # a selection that differs in anything has its own figure
    assert "about 10 min" in estimate.say([other], [], path)
    assert estimate.say(
        [chosen, estimate.selection("emu", args(tag=["variants"]))], [], path
    ).endswith("emu not estimated (no earlier like run here, no current figure)")


def test_an_unwritable_record_never_fails_the_run(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("")
    estimate.record(estimate.selection("cpu", args()), 1.0, 1, blocked / "durations.jsonl")


def test_the_current_figures_table_holds_one_row_per_key():
    """A history row put above the history, or a newer figure added beside its predecessor,
    would leave two current figures for one thing (it happened: session 62's history rows)."""
    assert current.misfits() == []


def test_a_misplaced_history_row_and_a_twice_given_key_are_found(tmp_path):
    timings = tmp_path / "timings.md"
    older = "| `run.cpu`: an older run | 7 min | 2026-11-20 | notes |\n"
    again = "| `run.slurm` | again | 1 min | 2026-11-24 | 2-core VM | |\n"
    sep = "| --- | --- | --- | --- | --- | --- |\n"
    timings.write_text(TABLE.replace(sep, sep + older + again))
    wrong = current.misfits(timings)
    assert any("not a current-figures row (4 cells): `run.cpu`: an older run" in w for w in wrong)
    assert any("`run.slurm` given twice" in w for w in wrong), wrong
