"""Repeats by design: ./bench run --repeats 5 on the variants stage (laplacianFoam, cpu) runs
every combination 5 times in interleaved rounds, and the report compares the medians with a
CI, n and a verdict, never a bare number."""

import csv
import os
import re

import pytest

from conftest import bench_cli

REPEATS = 5


@pytest.fixture(scope="module")
def repeated_run(tmp_path_factory):
    results = tmp_path_factory.mktemp("results")
    env = dict(os.environ, TOPOFOAM_RESULTS=str(results), TOPOFOAM_RUN=str(results / "run"))
    done = bench_cli(
        "run",
        "--partition",
        "cpu",
        "--tag",
        "variants",
        "--repeats",
        str(REPEATS),
        "--",
        "-n",
        "VariantRun.*laplacianFoam",
        env=env,
        timeout=1800,
    )
    return done, results


def test_every_combination_runs_five_times_in_interleaved_rounds(repeated_run):
    done, results = repeated_run
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    with open(results / "perflogs" / "local" / "cpu" / "VariantRun.log", newline="") as f:
        rows = [r for r in csv.DictReader(f, delimiter="|") if r["case"] == "laplacianFoam"]
    combos = {(r["variant"], r["binding"]) for r in rows}
    assert len(combos) >= 3
    for combo in combos:
        runs = [r for r in rows if (r["variant"], r["binding"]) == combo]
        assert sorted(int(r["repeat"]) for r in runs) == list(range(REPEATS))
        assert all(r["result"] == "pass" for r in runs)
    # in the order they finished, no combination's repeat k+1 comes before another's k
    order = [int(r["repeat"]) for r in sorted(rows, key=lambda r: r["job_completion_time_unix"])]
    assert order == sorted(order)


def test_the_report_claims_nothing_without_n_ci_and_verdict(repeated_run):
    done, results = repeated_run
    assert done.returncode == 0, done.stdout[-3000:]
    md = (results / "report" / "local" / "report.md").read_text()
    section = md.split("## Runtime decrease")[1].split("\n## ")[0]
    cells = [
        c.strip()
        for line in section.splitlines()
        if line.startswith("| ") and not line.startswith("| standard, block")
        for c in line.strip("|").split(" | ")[1:]
    ]
    measured = [c for c in cells if "n=" in c]
    assert measured, section
    for cell in measured:
        assert f"n={REPEATS}/{REPEATS}" in cell, cell
        assert cell.startswith("within noise") or re.match(r"^[+-]\d+\.\d \[[+-]", cell), cell
    assert "Noise floor" in section and "Mann-Whitney" in md
