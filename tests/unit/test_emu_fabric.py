"""The emulated cluster's links in ./bench run (localsite.cli._emu_fabric): priced by
fabric.BENCH_DEFAULT unless TOPOFOAM_FABRIC names a profile (``none``: free), so that the main
job's report predicts its multi-node runs (issue 55); a resume keeps the interrupted run's;
./bench validate keeps the links as they are set."""

import pytest

from localsite import cli, estimate
from topofoam.config import fabric


@pytest.fixture
def unset(monkeypatch):
    monkeypatch.delenv("TOPOFOAM_FABRIC", raising=False)


def test_unset_the_main_job_prices_the_links_and_says_so_once(unset, capsys):
    import os

    assert cli._emu_fabric(["cpu", "emu"], None, default=True) == fabric.BENCH_DEFAULT
    assert os.environ["TOPOFOAM_FABRIC"] == fabric.BENCH_DEFAULT
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith(f"bench: the emulated cluster's links cost {fabric.BENCH_DEFAULT} (L ")
    assert line.endswith("(TOPOFOAM_FABRIC=none: free links)")


@pytest.mark.parametrize("given", ["none", "hpc2x100"])
def test_a_given_profile_is_kept_without_a_word(monkeypatch, capsys, given):
    monkeypatch.setenv("TOPOFOAM_FABRIC", given)
    assert cli._emu_fabric(["emu"], None, default=True) == given
    assert capsys.readouterr().out == ""


def test_without_the_emulated_partition_nothing_is_set(unset):
    import os

    assert cli._emu_fabric(["cpu", "slurm"], None, default=True) is None
    assert "TOPOFOAM_FABRIC" not in os.environ


def test_validate_keeps_the_links_as_they_are_set(unset):
    import os

    assert cli._emu_fabric(["emu"], None, default=False) is None
    assert "TOPOFOAM_FABRIC" not in os.environ


def test_a_resume_runs_under_the_interrupted_run_s_profile(unset, monkeypatch, capsys):
    assert cli._emu_fabric(["emu"], "none", default=True) == "none"
    assert capsys.readouterr().out == ""
    monkeypatch.setenv("TOPOFOAM_FABRIC", "vsc5x30")
    with pytest.raises(cli.UsageError, match=r"under its fabric none, and TOPOFOAM_FABRIC names "
                       r"vsc5x30 -- unset TOPOFOAM_FABRIC, or start a new run"):  # fmt: skip
        cli._emu_fabric(["emu"], "none", default=True)


def test_the_estimate_tells_runs_under_other_links_apart(monkeypatch):
    """A run of the emulated partition under another profile is another selection: it is
    neither estimated by the default's figures nor recorded as one."""
    from argparse import Namespace

    args = Namespace(tag=[], openfoam="v1912", repeats=None, compare_all=False, reframe_args=[])
    monkeypatch.delenv("TOPOFOAM_REPEATS", raising=False)
    monkeypatch.delenv("TOPOFOAM_COMPARE", raising=False)
    monkeypatch.setenv("TOPOFOAM_FABRIC", fabric.BENCH_DEFAULT)
    default = estimate.selection("emu", args)
    assert estimate.is_default(default) and estimate.is_default(estimate.selection("cpu", args))
    monkeypatch.setenv("TOPOFOAM_FABRIC", "none")
    free = estimate.selection("emu", args)
    assert free != default and not estimate.is_default(free)
    assert "fabric" not in estimate.selection("cpu", args)
