"""The point-to-point check for real on this machine (two cores of one NUMA node), and its
measurements as rankmap's cost vector."""

import csv
import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import IS_ROOT, PYTHON, REPO, bench_cli, free_port

PARTITIONS = ["cpu", "slurm"] if IS_ROOT else ["cpu"]


@pytest.fixture(scope="module")
def p2p_run(tmp_path_factory):
    results = tmp_path_factory.mktemp("results")
    env = dict(
        os.environ,
        TOPOFOAM_RESULTS=str(results),
        TOPOFOAM_RUN=str(results / "run"),
        TOPOFOAM_SLURMCTLD_PORT=str(free_port()),
        TOPOFOAM_SLURMD_PORT=str(free_port()),
    )
    done = bench_cli("run", *(f"--partition={p}" for p in PARTITIONS), "--tag", "p2p", env=env)
    return done, results, env


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader((ln for ln in f if not ln.startswith("#")), delimiter="|"))


def test_round_trips_measured_on_their_cores(p2p_run):
    done, results, _ = p2p_run
    assert done.returncode == 0, done.stdout[-3000:]
    for partition in PARTITIONS:
        # The build and the one level this machine has (its two cores share a NUMA node).
        assert f"  local:{partition}: 2/2 test cases passed" in done.stdout, done.stdout
        (row,) = rows(results / "perflogs" / "local" / partition / "PingPongRun.log")
        assert (row["level"], row["cpus"], row["result"]) == ("intra_numa_node", "0,1", "pass")
        for size in (10, 100, 500, 1000):
            assert 0 < float(row[f"rtt_{size}_value"]) < 10_000
            assert row[f"rtt_{size}_unit"] == "us"


def test_the_measurements_become_rankmaps_cost_vector(p2p_run, tmp_path):
    _, results, _ = p2p_run
    table = tmp_path / "p2p.csv"
    made = subprocess.run(
        [
            PYTHON,
            "-m",
            "topofoam.results.p2p",
            str(results / "perflogs" / "local"),
            "--out",
            str(table),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert made.returncode == 0, made.stderr
    measured = rows(results / "perflogs" / "local" / "cpu" / "PingPongRun.log")[0]
    with open(table, newline="") as f:
        written = {
            (r["system"], r["size"]): r
            for r in csv.DictReader(ln for ln in f if not ln.startswith("#"))
        }
    cpu = written["local:cpu", "10"]
    assert float(cpu["intra_numa_node"]) == pytest.approx(float(measured["rtt_10_value"]), abs=1e-3)
    assert cpu["inter_numa_node"] == cpu["inter_numa_domain"] == cpu["inter_node"] == ""
    done = subprocess.run(
        [
            PYTHON,
            "-m",
            "rankmap",
            "analyze",
            "grid:2x1",
            "--topology",
            "local",
            "--nodes",
            "1",
            "--cost-table",
            str(table),
            "--cost-system",
            "local:cpu",
            "--cost-size",
            "10",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    # A level the machine lacks costs what the next faster one does.
    us = float(cpu["intra_numa_node"])
    assert f"costs us/level {[us] * 4}" in done.stdout
    bad = subprocess.run(
        [
            PYTHON,
            "-m",
            "rankmap",
            "analyze",
            "grid:2x1",
            "--topology",
            "local",
            "--nodes",
            "1",
            "--cost-table",
            str(table),
            "--cost-system",
            "vsc5",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert bad.stderr.startswith(f"rankmap: no latency row for vsc5 at size 1000 in {table}")


def test_a_sweep_after_the_p2p_check_is_priced_by_its_measurements(p2p_run):
    """The intra1 stage in the same results: its perflog says the p2p check's times priced
    the hop-bytes, and rankmap's analysis of each run used them."""
    _, results, env = p2p_run
    done = bench_cli("run", "--partition=cpu", "--tag", "intra1", env=env, timeout=1200)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (measured,) = rows(results / "perflogs" / "local" / "cpu" / "PingPongRun.log")
    us = round(float(measured["rtt_1000_value"]), 3)
    swept = [r for r in rows(results / "perflogs" / "local" / "cpu" / "Intra1Run.log")]
    assert swept and all(r["result"] == "pass" for r in swept)
    for row in swept:
        assert row["costs"] == "measured: p2p check on local:cpu, 1000 scalars"
        placed = json.loads((Path(row["outputdir"]) / "map" / "analysis.json").read_text())
        for entry in placed:
            # One NUMA node: every level costs what the one measured level does.
            assert entry["costs_us"] == [us] * 4
            faces = sum(entry["halo_volume"].values())
            assert entry["hop_bytes"] == pytest.approx(faces * us)
