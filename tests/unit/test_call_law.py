"""The call law (topofoam.prediction.calls), the compute scaled to a target, and the published
Table 4 read cell by cell: what they give and what they refuse, in one line."""

import json
import math
import subprocess

import pytest

from conftest import PYTHON, REPO
from topofoam.prediction import calls as law
from topofoam.prediction import papers
from topofoam.prediction.model import ModelError
from topofoam.reporting import published


def _run(cells, ranks, allreduce, isend=0.0, neighbours=2.0, step_s=None):
    return law.Counted(
        "cavity2D",
        cells,
        ranks,
        {"MPI_Allreduce": allreduce, "MPI_Isend": isend},
        neighbours,
        step_s,
    )


def test_the_law_recovers_a_power_law_and_predicts_a_held_out_point():
    def truth(cells, ranks):
        return 40.0 * cells**0.25 * ranks**0.5

    runs = [_run(c, r, truth(c, r), isend=20 * r) for c in (1e4, 4e4, 1.6e5) for r in (2, 4, 8)]
    fit = law.CallLaw.fit(runs)
    a, b, c = fit.terms["allreduce"]
    assert (math.exp(a), b, c) == pytest.approx((40.0, 0.25, 0.5))
    held = _run(6.4e5, 16, truth(6.4e5, 16), isend=320)
    assert fit.errors(held)["allreduce"] == pytest.approx(0.0, abs=1e-9)
    # a law that is wrong at the held-out point says by how much
    off = _run(6.4e5, 16, truth(6.4e5, 16) * 1.25, isend=320)
    assert fit.errors(off)["allreduce"] == pytest.approx(1 / 1.25 - 1)
    # halo exchanges are sends over neighbours: 10 r a step here, exactly
    assert fit.predict(1e6, 100)["halo"] == pytest.approx(1000.0)


def test_a_law_needs_three_points_and_a_call_made_everywhere_or_nowhere():
    with pytest.raises(ModelError, match="3 or more"):
        law.CallLaw.fit([_run(1e4, 2, 100), _run(4e4, 2, 120)])
    with pytest.raises(ModelError, match="in every run or in none"):
        law.CallLaw.fit([_run(1e4, 2, 100), _run(4e4, 2, 0), _run(1.6e5, 4, 130)])


@pytest.mark.parametrize(
    "text, says",
    [
        ("not json", "is not a list of counted runs"),
        ('[{"case": "cavity2D"}]', "is not a list of counted runs"),
        (
            '[{"case": "c", "cells": 100, "ranks": 2, "calls": {"MPI_Allreduce": -1}}]',
            "has bad values (MPI_Allreduce)",
        ),
        (
            '[{"case": "c", "cells": 100, "ranks": 2, "calls": {"MPI_Allreduce": NaN}}]',
            "has bad values (MPI_Allreduce)",
        ),
    ],
)
def test_bad_counted_runs_are_refused_in_one_line(tmp_path, text, says):
    path = tmp_path / "calls-c.json"
    path.write_text(text)
    with pytest.raises(ModelError) as e:
        law.load(path)
    assert says in str(e.value) and str(path) in str(e.value) and "\n" not in str(e.value)


def test_counted_runs_round_trip(tmp_path):
    runs = [_run(1e4, 2, 100.0, 50.0, 2.0, 0.01), _run(4e4, 4, 150.0, 90.0, 3.5, 0.02)]
    law.save(runs, tmp_path / "calls.json")
    assert law.load(tmp_path / "calls.json") == runs
    assert json.loads((tmp_path / "calls.json").read_text())[1]["neighbours"] == 3.5


def test_compute_scales_with_the_bandwidth_a_core_gets():
    """A sweep measured here at 5 GB/s a core takes 5 / 3.2 times as long on a VSC-5 core
    (409.6 GB/s over 128 cores), 5 / 10.66 as long on an hpc2 core."""
    runs = [_run(4e4, 2, 100, isend=40, neighbours=2, step_s=0.2)]
    compute = papers.compute_of(runs, 5e9)
    assert compute.sweep_s == pytest.approx(0.2 / 2e4 / 20)
    assert compute.on("vsc5") == pytest.approx(compute.sweep_s * 5e9 / 3.2e9)
    assert compute.on("hpc2") == pytest.approx(compute.sweep_s * 5e9 / (4 * 6 * 2666e6 * 8 / 48))
    with pytest.raises(ModelError, match="no time per step"):
        papers.compute_of([_run(4e4, 2, 100, isend=40)], 5e9)


def test_table4_reads_every_published_cell():
    table = published.table4()
    assert len(table) == 8 and sum(len(v) for v in table.values()) == 48
    assert table[("laplacianFoam", "vsc5")][6] == 85.3
    assert table[("pitzDaily", "hpc2")][2] == -0.8
    assert 8 not in table[("cavity2D", "hpc2")]  # not run: an empty cell


@pytest.mark.parametrize(
    "edit, says",
    [
        (("6.0,16.1", "6.0,x"), "column n3, is 'x', not a number"),
        (
            ("cavity3D,vsc5,3.2,4.7,6.4,6.3,8.1,,,,", "cavity3D,vsc5,3.2"),
            "has 3 cells, the header 11",
        ),
        (("case,system", "kase,system"), "the header is not"),
    ],
)
def test_a_bad_published_table_is_one_line_and_no_prediction(tmp_path, edit, says):
    text = published.TABLE4.read_text().replace(*edit)
    bad = tmp_path / "table4.csv"
    bad.write_text(text)
    with pytest.raises(published.PublishedError) as e:
        published.table4(bad)
    assert says in str(e.value) and str(bad) in str(e.value)
    r = subprocess.run(
        [PYTHON, "-m", "topofoam.reporting.papers", "table4", "--table", str(bad)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("papers: ") and says in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_a_case_whose_calls_were_not_counted_gets_no_number(tmp_path):
    r = subprocess.run(
        [PYTHON, "-m", "topofoam.reporting.papers", "table4", "--case", "cavity2D",
         "--calls", str(tmp_path)],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    rows = [ln for ln in r.stdout.splitlines() if ln.startswith("  cavity2D")]
    assert len(rows) == 9  # every published cell of cavity2D, VSC-5 and hpc2
    for row in rows:
        assert "no prediction: cannot read" in row and "publishedbench calls" in row
    assert "too few predicted cells (0)" in r.stdout


def test_the_compute_run_takes_the_median_of_the_interleaved_rounds():
    """Where solvers are compared (seed 001's), the run papers.compute_of reads (the largest
    on the fewest ranks) gets the median of its interleaved timed rounds; the others keep
    their counted steps."""
    from localsite.publishedbench import with_timed_step

    runs = [_run(c, r, 100, isend=40, step_s=0.1 * c / 1e4) for c in (1e4, 4e4) for r in (2, 4)]
    timed = with_timed_step(runs, [0.9, 0.5, 0.7, 2.0, 0.6])
    assert [r.step_s for r in timed] == [0.1, 0.1, 0.7, 0.4]
    assert papers.compute_of(timed, 5e9).sweep_s == pytest.approx(0.7 / 2e4 / 20)
