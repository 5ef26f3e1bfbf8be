"""The checks on the OpenFOAM-12 that the local Spack site installed (issue 33): `./bench run
--openfoam org12-spack`, whose environments `spack load` it in every job, as a cluster site's
do (site-configs/local.py: _spack_environments). The same selection as on the home-built
OpenFOAM-12 (test_org12_checks.py): the reduction schedule's variants and seed 001's pipelined
solvers. Skipped, saying why, until `TOPOFOAM_SITE=local ./bench spack -e . install` has run
to the end (tests/conftest.py: spack_env)."""

import csv
import os
import re

import pytest

from conftest import bench_cli, spack_env

SELECTION = "^(ReductionScheduleRun|Seed001Run)"


@pytest.fixture(scope="module")
def spack_run(tmp_path_factory):
    installed = spack_env("org12")
    results = tmp_path_factory.mktemp("results")
    env = dict(os.environ, TOPOFOAM_RESULTS=str(results), TOPOFOAM_RUN=str(results / "run"))
    done = bench_cli(
        "run", "--openfoam", "org12-spack", "--partition", "cpu", "--", "-n", SELECTION,
        env=env, timeout=2400,
    )  # fmt: skip
    return done, results, installed


def test_checks_pass_on_the_spack_installed_openfoam12(spack_run):
    done, results, _ = spack_run
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert re.search(r"^  local:cpu: (\d+)/\1 test cases passed", done.stdout, re.M)
    with open(results / "perflogs/local/cpu/ReductionScheduleRun.log", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="|"))
    assert sorted({r["variant"] for r in rows}) == ["global", "global+sums", "standard"]
    assert {(r["environ"], r["openfoam"], r["result"]) for r in rows} == {
        ("openfoam-org12-spack-patched", "org 12", "pass")
    }
    # Every job loaded Spack's install (the scripts of passed runs are in their output folders).
    scripts = list(
        results.glob("reframe/output/local/cpu/openfoam-org12-spack-patched/*/rfm_job.sh")
    )
    assert scripts
    for script in scripts:
        assert "spack load openfoam-org@12 hwloc scotch" in script.read_text()
