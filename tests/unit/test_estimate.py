"""The start-of-run estimate of ./bench run (localsite/estimate.py): the last like run on this
machine, else the reference run for the default selection, else no number."""

from argparse import Namespace

from localsite import estimate


def args(**given):
    base = dict(tag=[], openfoam="v1912", repeats=None, compare_all=False, reframe_args=[])
    return Namespace(**(base | given))


def test_first_default_run_is_estimated_by_the_reference(tmp_path, monkeypatch):
    monkeypatch.delenv("TOPOFOAM_REPEATS", raising=False)
    monkeypatch.delenv("TOPOFOAM_COMPARE", raising=False)
    chosen = [estimate.selection(p, args()) for p in ("cpu", "slurm")]
    line = estimate.say(chosen, ["patched"], tmp_path / "none.jsonl")
    total = estimate.REFERENCE["cpu"] + estimate.REFERENCE["slurm"] + 15 * 60
    assert line.startswith(f"bench: this run takes about {round(total / 60)} min (cpu 9 min")
    assert "building patched 15 min" in line and "first run of this selection here" in line


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
    ).endswith("emu not estimated (no earlier like run here)")


def test_an_unwritable_record_never_fails_the_run(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("")
    estimate.record(estimate.selection("cpu", args()), 1.0, 1, blocked / "durations.jsonl")
