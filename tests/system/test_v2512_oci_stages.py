"""What OCI runs, on the local v2512 build (seed 002's system): every benchmark case with the
stock v2512, the motorbike and cavity3D included (prepared from the v1912 templates), and
OCI's stages with the patched one on the motorbike: intra1 (processes per node), intra2 (UCX
thresholds and collective components), the cost stage and storage; and the p2p check built
against v2512's MPI settings. Skipped, saying why, without the cached v2512 build
(tests/conftest.py: built_env)."""

import csv
import os
import re

import pytest

from cases import CASES
from conftest import bench_cli, built_env

SELECTION = "^(CaseRun|Intra1Run|Intra2Run|CostRun|StorageRun|PingPongRun)"
STAGES = ("Intra1Run", "Intra2Run", "CostRun", "StorageRun")


@pytest.fixture(scope="module")
def oci_run(tmp_path_factory):
    built_env("v2512")
    results = tmp_path_factory.mktemp("results-oci")
    # Each stage once (no repeats): what is checked is that it runs on v2512, not its times.
    env = dict(
        os.environ,
        TOPOFOAM_RESULTS=str(results),
        TOPOFOAM_RUN=str(results / "run"),
        TOPOFOAM_REPEATS="1",
    )
    done = bench_cli(
        "run", "--openfoam", "v2512", "--partition", "cpu", "--", "-n", SELECTION,
        env=env, timeout=3600,
    )  # fmt: skip
    return done, results


def perflog(results, check: str) -> list[dict]:
    path = results / "perflogs" / "local" / "cpu" / f"{check}.log"
    with open(path, newline="") as f:
        return list(csv.DictReader(f, delimiter="|"))


def test_the_run_passes(oci_run):
    done, _ = oci_run
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert re.search(r"^  local:cpu: (\d+)/\1 test cases passed", done.stdout, re.M)


def test_every_case_runs_on_stock_v2512(oci_run):
    _, results = oci_run
    rows = perflog(results, "CaseRun")
    assert sorted({r["case"] for r in rows}) == sorted(CASES)  # the motorbike and cavity3D too
    assert {(r["environ"], r["openfoam"], r["result"]) for r in rows} == {
        ("openfoam-v2512", "esi v2512", "pass")
    }


@pytest.mark.parametrize("check", STAGES)
def test_ocis_stages_run_the_motorbike_on_patched_v2512(oci_run, check):
    _, results = oci_run
    rows = perflog(results, check)
    assert rows
    assert {(r["environ"], r["case"], r["result"]) for r in rows} == {
        ("openfoam-v2512-patched", "motorbike", "pass")
    }


def test_p2p_on_v2512(oci_run):
    _, results = oci_run
    rows = perflog(results, "PingPongRun")
    assert rows and {r["result"] for r in rows} == {"pass"}
