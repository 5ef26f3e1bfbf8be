"""Site twins (localsite/twin.py): the cluster site files run end to end on an emulated
cluster shaped like their partitions, and the site check (topofoam.validation.sitecheck)
held against each twin, fault-free and with a mistake injected."""

import csv
import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import FEWER_STEPS, PYTHON, REPO, bench_cli, built_env, free_port, needs_root
from localsite.benchrun import multinode_cases

pytestmark = needs_root

#: The twins made with v1912 standing in (their sites run Open MPI 4, as Debian's v1912 does);
#: OCI's Open MPI 5 needs the v2512 build (test_v2512_checks.py's tier).
SITES = {"vsc5": "zen3_0512", "hpc2": "compute"}


def twin_env(tmp_path: Path, subnet: str) -> dict:
    return dict(
        os.environ,
        TOPOFOAM_RUN=str(tmp_path / "run"),
        TOPOFOAM_RESULTS=str(tmp_path / "results"),
        TOPOFOAM_EMU_SLURMCTLD_PORT=str(free_port()),
        TOPOFOAM_TWIN_SUBNET=subnet,
    )


def fitted_copy(site: str, folder: Path) -> tuple[Path, Path]:
    """The site file and its Spack settings, with what a twin cannot have fitted to it as the
    site check's own fixes say: node counts up to the twin's 2, and this machine's Slurm."""
    folder.mkdir(parents=True, exist_ok=True)
    site_file = folder / f"{site}.py"
    text = (REPO / "site-configs" / f"{site}.py").read_text()
    site_file.write_text(re.sub(r"nodes=\[[^\]]*\]", "nodes=[1, 2]", text))
    # Debian's package version (no Slurm client runs without the twin's SLURM_CONF)
    slurm = subprocess.run(
        ["dpkg-query", "-W", "-f", "${Version}", "slurm-client"], capture_output=True, text=True
    ).stdout.split("-")[0]
    yaml = (REPO / "site-configs" / f"{site}.spack.yaml").read_text()
    spack_yaml = folder / f"{site}.spack.yaml"
    spack_yaml.write_text(re.sub(r"slurm@[\w.-]+", f"slurm@{slurm}", yaml))
    return site_file, spack_yaml


def site_check(site, tmp_path, site_file, *options):
    done = bench_cli(
        "twin", site, "check", "--openfoam", "v1912", "--site-file", str(site_file), *options,
        env=twin_env(tmp_path, "10.77.31"), timeout=600,
    )  # fmt: skip
    problems = [ln for ln in done.stdout.splitlines() if ln.startswith("sitecheck: PROBLEM")]
    return done, problems


@pytest.mark.parametrize("site", sorted(SITES))
def test_site_check_passes_a_fitted_site_and_names_each_injected_mistake(site, tmp_path):
    """Fault-free: the site file fitted to its twin passes (exit 0, no problem). Then one
    mistake at a time, each named in exactly one line with its fix: a partition Slurm does not
    have, an external whose prefix does not exist, nodes whose BIOS changed their NUMA layout
    (NPS1 nodes under VSC-5's NPS4 preset; hpc2's 4 sockets shown as 2)."""
    site_file, spack_yaml = fitted_copy(site, tmp_path / "fitted")
    done, problems = site_check(site, tmp_path, site_file)
    assert done.returncode == 0 and problems == [], done.stdout + done.stderr
    assert f"sitecheck: {site}.py: 0 problem(s)" in done.stdout
    assert re.search(r"node node\d is \d+ package", done.stdout), done.stdout

    # a partition Slurm does not have
    wrong = tmp_path / "partition"
    wrong.mkdir()
    shutil.copy(spack_yaml, wrong)
    text = site_file.read_text()
    setting = {"vsc5": 'slurm_partition="zen3_0512"', "hpc2": 'PARTITION = "compute"'}[site]
    renamed = text.replace(setting, setting.replace(SITES[site], "nosuchpart"))
    assert renamed != text
    (wrong / site_file.name).write_text(renamed)
    done, problems = site_check(site, tmp_path, wrong / site_file.name)
    assert done.returncode == 1 and len(problems) == 1, done.stdout
    assert "not in sinfo" in problems[0] and SITES[site] in problems[0], problems

    # an external whose prefix does not exist
    bad_yaml = tmp_path / "externals.yaml"
    bad_yaml.write_text(spack_yaml.read_text().replace("prefix: /usr", "prefix: /opt/nowhere", 1))
    done, problems = site_check(site, tmp_path, site_file, "--spack-yaml", str(bad_yaml))
    assert done.returncode == 1 and len(problems) == 1, done.stdout
    assert "/opt/nowhere does not exist" in problems[0] and "spack external find" in problems[0]

    # nodes whose NUMA layout is not the preset's
    shown = {"vsc5": "pack:2 numa:1 core:64 pu:1", "hpc2": "pack:2 numa:1 core:24 pu:1"}[site]
    done, problems = site_check(
        site, tmp_path, site_file, "--node-topology", f"{SITES[site]}={shown}"
    )
    assert done.returncode == 1 and len(problems) == 1, done.stdout
    assert re.search(r"node node\d has 2 package\(s\), 2 NUMA nodes", problems[0]), problems
    assert "set the nodes' BIOS" in problems[0]
    assert not list((tmp_path / "run").glob("twin-*/state.json"))  # nothing left running


@pytest.mark.parametrize("site", sorted(SITES))
def test_multinode_check_runs_on_the_twin(site, tmp_path):
    """The site's own file, launcher and Open MPI placement syntax on its twin's 1 and 2
    nodes: every variant, srun and mpirun (a rankfile onto the site's declared cores, which
    Open MPI maps through the nodes' hwloc topology); every rank on the host its mapping
    gives; global+sums without MPI_Allreduce calls (v1912 routes its scalar sums along the
    schedule)."""
    env = twin_env(tmp_path, "10.77.32")
    done = bench_cli(
        "twin", site, "run", "--openfoam", "v1912", "--",
        "-t", "multinode", "-n", multinode_cases(repeat="0", nodes="1|2"), "-S", FEWER_STEPS,
        env=env, timeout=1800,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    log = tmp_path / "results" / "perflogs" / site / SITES[site] / "MultiNodeRun.log"
    rows = list(csv.DictReader(log.open(), delimiter="|"))
    assert sorted((r["variant"], r["launcher_kind"], r["nodes"]) for r in rows) == sorted(
        (v, k, n)
        for v in ("standard", "global", "global+sums", "local+global")
        for k in ("srun", "mpirun")
        for n in ("1", "2")
    )
    for r in rows:
        assert (r["result"], r["timing"]) == ("pass", "emulated"), r
        assert r["core_binding"] == "not verifiable on this partition"
        assert (int(r["allreduce_value"]) == 0) == (r["variant"] == "global+sums"), r
        used = r["placement_used"]
        assert used == "block" if r["variant"] != "local+global" else used.startswith("split")
    # The build fixture ran as the site's batch job on a whole twin node (BUILD_ON compute),
    # this machine's v1912 build standing in for Spack's install (a no-op: built).
    (build,) = (tmp_path / "results" / "reframe" / "output").glob("*/*/*/PatchedOpenFOAMBuild_*")
    script = (build / "rfm_job.sh").read_text()
    cores = {"vsc5": 128, "hpc2": 48}[site]
    assert f"#SBATCH --cpus-per-task={cores}" in script and "#SBATCH --exclusive" in script
    assert re.search(r"^/\S+$", (build / "rfm_job.out").read_text(), re.M)
    assert not list((tmp_path / "run").glob("twin-*/state.json"))


def test_ocis_twin_runs_both_nps_partitions_with_open_mpi_5(tmp_path):
    """OCI's site file on its twin (its NPS1 and NPS2 partitions, 2 nodes each) with the v2512
    build against Open MPI 5 standing in: every variant, ESI's node communicators among them,
    on 2 nodes by srun and by Open MPI 5's mpirun (``--map-by rankfile:file=``), each rank on
    the host its mapping gives. Skipped, saying why, without the v2512 build."""
    built_env("v2512")
    env = twin_env(tmp_path, "10.77.33")
    done = bench_cli(
        "twin", "oci", "run", "--openfoam", "v2512", "--",
        "-t", "multinode", "-n", multinode_cases(repeat="0", nodes="2"), "-S", FEWER_STEPS,
        env=env, timeout=1800,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    for part in ("nps1", "nps2"):
        log = tmp_path / "results" / "perflogs" / "oci" / part / "MultiNodeRun.log"
        rows = list(csv.DictReader(log.open(), delimiter="|"))
        assert sorted((r["variant"], r["launcher_kind"]) for r in rows) == sorted(
            (v, k)
            for v in ("standard", "global", "global+sums", "local+global", "esi-nodecomms")
            for k in ("srun", "mpirun")
        ), part
        for r in rows:
            assert (r["result"], r["timing"], r["nodes"]) == ("pass", "emulated", "2"), r
            used = r["placement_used"]
            assert used == "block" if r["variant"] != "local+global" else used.startswith("split")
    assert not list((tmp_path / "run").glob("twin-*/state.json"))


def test_a_stopped_twin_run_cancels_its_job_and_leaves_nothing_running(tmp_path):
    """A SIGTERM (a batch job's end, an admin's kill) to ``bench twin SITE run`` started as
    nohup and batch shells start it, SIGINT ignored, while the site's job runs on the twin:
    ReFrame's run report keeps what finished (the fixtures passed) and the job as aborted,
    the twin stops, and the command ends in one line with 130, no traceback; no process of
    the run is left."""
    env = twin_env(tmp_path, "10.77.34")
    case = multinode_cases(repeat="0", variant="standard", launcher="srun", nodes="1")
    run = subprocess.Popen(
        [PYTHON, "-m", "localsite.cli", "twin", "vsc5", "run", "--openfoam", "v1912", "--",
         "-t", "multinode", "-n", case, "-S", "MultiNodeRun.prerun_cmds=sleep 900"],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )  # fmt: skip
    stage = tmp_path / "results" / "reframe" / "stage"
    deadline = time.monotonic() + 900
    while not list(stage.glob("*/*/*/MultiNodeRun_*/rfm_job.out")):  # the job has started
        assert run.poll() is None and time.monotonic() < deadline, run.communicate()
        time.sleep(2)
    run.send_signal(signal.SIGTERM)
    out, err = run.communicate(timeout=180)
    assert run.returncode == 130, out[-3000:] + err[-2000:]
    assert err.strip().splitlines()[-1] == "bench: interrupted", err[-2000:]
    assert "Traceback" not in out + err
    assert "removed the vsc5 twin" in out
    assert not list((tmp_path / "run").glob("twin-*/state.json"))
    left = subprocess.run(["pgrep", "-af", str(tmp_path)], capture_output=True, text=True)
    assert not left.stdout, left.stdout
    (report,) = (tmp_path / "results" / "reframe" / "reports").glob("*.json")
    cases = [c for r in json.loads(report.read_text())["runs"] for c in r["testcases"]]
    assert {c["result"] for c in cases if "MultiNodeRun" not in c["name"]} == {"pass"}, cases
    assert [c["result"] for c in cases if "MultiNodeRun" in c["name"]] == ["abort"], cases
