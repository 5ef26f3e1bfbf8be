"""The checks on the OpenFOAMs that the local Spack site installed (issue 33): `./bench run
--openfoam <flavour>-spack`, whose environments `spack load` it in every job, as a cluster
site's do (site-configs/local.py: _spack_environments). OpenFOAM-12 (VSC-5, hpc2): the
reduction schedule's variants and seed 001's pipelined solvers, as on the home-built one
(test_org12_checks.py); v2512 (OCI): the sweep's variants, ESI's own node-aware collectives
among them (test_v2512_checks.py). Each check on one case (its variants all): what is under test is that
the jobs load Spack's install and the checks pass on it; every case runs on the home-built
flavours, and the CI has 90 minutes. Each skipped, saying why, until `TOPOFOAM_SITE=local
./bench spack -e . install` has installed it (tests/conftest.py: spack_env)."""

import csv
import os
import re

import pytest

from conftest import bench_cli, spack_env
from localsite.spack import JOB_LOADS

FLAVOURS = {
    "org12": dict(
        selection=r"^(ReductionScheduleRun.*=laplacianFoam\b|Seed001Run.*=hpcCavity3D\b)",
        check="ReductionScheduleRun",
        variants={"global", "global+sums", "standard"},
        stem="openfoam-org12",
        openfoam="org 12",
        spec="openfoam-org@12",
    ),
    "v2512": dict(
        selection=r"^VariantRun.*=laplacianFoam\b",
        check="VariantRun",
        variants={"standard", "global", "local+global", "esi-nodecomms"},
        stem="openfoam-v2512",
        openfoam="esi v2512",
        spec="openfoam@2512",
    ),
}


@pytest.fixture(scope="module", params=list(FLAVOURS), ids=lambda name: f"{name}-spack")
def spack_run(request, tmp_path_factory):
    spack_env(request.param)
    results = tmp_path_factory.mktemp("results")
    env = dict(os.environ, TOPOFOAM_RESULTS=str(results), TOPOFOAM_RUN=str(results / "run"))
    done = bench_cli(
        "run", "--openfoam", f"{request.param}-spack", "--partition", "cpu", "--",
        "-n", FLAVOURS[request.param]["selection"], env=env, timeout=2400,
    )  # fmt: skip
    return FLAVOURS[request.param], done, results


def test_checks_pass_on_the_spack_installed_openfoam(spack_run):
    flavour, done, results = spack_run
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert re.search(r"^  local:cpu: (\d+)/\1 test cases passed", done.stdout, re.M)
    with open(results / f"perflogs/local/cpu/{flavour['check']}.log", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="|"))
    assert {r["variant"] for r in rows} == flavour["variants"]
    environ = f"{flavour['stem']}-spack-patched"
    assert {(r["environ"], r["openfoam"], r["result"]) for r in rows} == {
        (environ, flavour["openfoam"], "pass")
    }
    # Every job loaded Spack's install (the scripts of passed runs are in their output folders).
    scripts = list(results.glob(f"reframe/output/local/cpu/{environ}/*/rfm_job.sh"))
    assert scripts
    for script in scripts:
        assert f"spack load {flavour['spec']} {' '.join(JOB_LOADS)}" in script.read_text()
