"""Repeats by design: ./bench run --repeats 5 on the variants stage (laplacianFoam, cpu) runs
every combination 5 times in interleaved rounds, and the report compares the medians with a
CI, n and a verdict, never a bare number."""

import csv
import os
import re
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest

from conftest import PYTHON, REPO, bench_cli

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
    # The compared runs take the local default's timed steps (site-configs/local.py,
    # timed_steps: 300 for laplacianFoam), not the ci size's 100.
    assert {r["expected_steps"] for r in rows} == {"300"}
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


def listed(results: Path, **env) -> dict[str, dict[str, set]]:
    """check -> {case: repeats} of the local cpu partition's v1912 listing."""
    env = {
        k: v for k, v in os.environ.items() if k not in ("TOPOFOAM_REPEATS", "TOPOFOAM_COMPARE")
    } | {"TOPOFOAM_RESULTS": str(results), **env}
    done = subprocess.run(
        [
            str(Path(PYTHON).parent / "reframe"),
            "-C",
            "site-configs/local.py",
            "-c",
            "reframe",
            "--system",
            "local:cpu",
            "-p",
            "^openfoam-v1912",
            "-l",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    found = defaultdict(lambda: defaultdict(set))
    for line in done.stdout.splitlines():
        m = re.match(r"^- (VariantRun|Seed001Run) .*%repeat=(\d+) .*prepared\.case=(\w+)", line)
        if m:
            found[m[1]][m[3]].add(int(m[2]))
    return found


def test_the_local_default_compares_one_case_per_kind_five_times(repeated_run):
    _, results = repeated_run
    default = listed(results)
    assert set(default["VariantRun"]) == {"laplacianFoam"}
    assert set(default["Seed001Run"]) == {"hpcCavity3D", "damBreak2D"}
    assert all(r == set(range(5)) for c in default.values() for r in c.values())
    everything = listed(results, TOPOFOAM_COMPARE="all", TOPOFOAM_REPEATS="2")
    assert set(everything["VariantRun"]) == {"laplacianFoam", "pitzDaily"}
    assert set(everything["Seed001Run"]) == {"hpcCavity3D", "damBreak2D", "damBreak3D"}
    assert all(r == {0, 1} for c in everything.values() for r in c.values())
