"""Bad input that ReFrame itself loads: site files with values they cannot run, tuning files,
a site file used off its cluster, the local site's facts of another version, and the plan
tool's selections. One line naming the file, the problem and the fix; never a traceback.
(ReFrame listings take seconds each, hence this tier; the rest is tests/unit/test_bad_input.py.)
"""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, one_line, run_tool

REFRAME = str(Path(sys.executable).parent / "reframe")


def run(*args, env=None, cwd=REPO):
    return subprocess.run([*args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_plan_inputs(tmp_path):
    one_line(
        run_tool("topofoam.prediction.plan", "-t", "intra2"),
        2,
        r"no site configuration -- give one with -C",
    )
    one_line(
        run_tool("topofoam.prediction.plan", "-C", "site-configs/nosuch.py"),
        1,
        r"site-configs/nosuch\.py does not exist -- give a site configuration",
    )
    broken = tmp_path / "broken.py"
    broken.write_text("site_configuration = {\n")
    one_line(
        run_tool("topofoam.prediction.plan", "-C", str(broken)),
        1,
        r"broken\.py does not load \(SyntaxError.*\) -- fix the site configuration",
    )
    one_line(
        run_tool("topofoam.prediction.plan", "-C", "site-configs/oci.py", "-t", "intra3"),
        2,
        r"makes no jobs on oci -- check its tags .* intra2",
    )


# -- site configurations and the tuning file, as ReFrame loads them -------------------------------


def listing(config, tmp_path, **env):
    results = tmp_path / "results"
    results.mkdir(exist_ok=True)
    return run(
        REFRAME,
        "-C",
        str(config),
        "--system",
        config.stem.split("-")[0],
        "-c",
        "reframe",
        "-l",
        env={
            "PATH": "/usr/bin:/bin",
            "HOME": str(tmp_path),
            "TOPOFOAM_RESULTS": str(results),
            **env,
        },
    )


@pytest.mark.parametrize(
    "site, old, new, pattern",
    [
        (
            "vsc5",
            "ppn=[32, 64, 96, 128]",
            "ppn=[0, 32]",
            r"partition zen3_0512: ppn holds a value that is 0 -- give a whole number, 1\.\.128",
        ),
        (
            "vsc5",
            'topology="vsc5"',
            'topology="vsc6"',
            r"partition zen3_0512: unknown topology 'vsc6' -- choose a preset",
        ),
        (
            "vsc5",
            "cores=128",
            "cores=96",
            r"topology 'vsc5' has 128 cores, cores says 96 -- make them agree",
        ),
        (
            "hpc2",
            'ucx=["auto", "rndv16k", "rndv128k"]',
            'ucx=["auto", "rndv1k"]',
            r"unknown ucx preset\(s\) \['rndv1k'\] -- choose from",
        ),
        (
            "hpc2",
            "nodes=[1, 2, 3, 4, 5, 6, 7]",
            "nodes=[]",
            r"nodes must be a non-empty list of whole numbers",
        ),
        (
            "vsc5",
            "NODE_HOUR_PRICE = None",
            "NODE_HOUR_PRICE = -1",
            r"NODE_HOUR_PRICE is -1 -- give a number",
        ),
        (
            "oci",
            'mpi="openmpi5"',
            'mpi="mvapich"',
            r"mpi 'mvapich' -- choose openmpi4 .* or openmpi5",
        ),
        (
            "hpc2",
            'published_costs="hpc2"',
            'published_costs="lec"',
            r"published_costs 'lec' is not a row of rankmap/p2p_latency_us\.csv -- choose "
            r"from \['hpc2', 'vsc5'\]",
        ),
        (
            "hpc2",
            'published_costs="hpc2"',
            'published_costs="hpc2", validate_margins={"s": 12.5}',
            r"validate_margins gives 's' the margin 12\.5, not a number from 0 to 10 .* -- "
            r"correct it",
        ),
        (
            "hpc2",
            'published_costs="hpc2"',
            'published_costs="hpc2", validate_margins={"Fabric": {"us": 1.0}}',
            r"validate_margins names 'Fabric', neither a unit \(s, ms, us, x, MB/s, GB/s\) nor a "
            r"validated check \(FabricValidation, SolverValidation, StorageValidation\) -- "
            r"correct it",
        ),
        (
            "vsc5",
            'published_costs="vsc5"',
            'published_costs="vsc5", validate_margins_one_session={"s": "wide"}',
            r"validate_margins_one_session gives 's' the margin 'wide', not a number from 0 "
            r"to 10 .* -- correct it",
        ),
        (
            "hpc2",
            'published_costs="hpc2"',
            'published_costs="hpc2", validate_repeats=1',
            r"validate_repeats is 1 -- give a whole number, 2 or more",
        ),
    ],
    ids=[
        "ppn-zero",
        "topology",
        "cores",
        "ucx",
        "nodes",
        "price",
        "mpi",
        "costs",
        "margins",
        "margin-check",
        "margins-one-session",
        "val-repeats",
    ],
)
def test_site_values_are_checked_when_the_file_loads(tmp_path, site, old, new, pattern):
    text = (REPO / "site-configs" / f"{site}.py").read_text()
    assert old in text, f"the test's anchor {old!r} is not in {site}.py any more"
    config = tmp_path / f"{site}-test.py"
    config.write_text(text.replace(old, new, 1))
    done = listing(config, tmp_path)
    assert done.returncode != 0
    assert "Traceback" not in done.stdout + done.stderr
    assert re.search(rf"^{re.escape(str(config))}: .*{pattern}", done.stdout + done.stderr, re.M)


@pytest.mark.parametrize(
    "content, pattern",
    [
        ("{cut", r"cannot read it as JSON .* -- fix or unset it"),
        ("[1]", r"expected an object keyed by partition name"),
        ('{"zen3_0512": {"ppn": 256}}', r"zen3_0512: ppn '256' is not one this partition runs"),
        (
            '{"zen3_0512": {"ucx": "fast"}}',
            r"zen3_0512: ucx 'fast' is not one this partition "
            r"runs -- choose from auto, rndv16k, rndv128k",
        ),
    ],
    ids=["cut", "list", "ppn", "ucx"],
)
def test_bad_tuning_files_stop_the_listing(tmp_path, content, pattern):
    tuning = tmp_path / "tuning.json"
    tuning.write_text(content)
    done = listing(REPO / "site-configs" / "vsc5.py", tmp_path, TOPOFOAM_TUNING=str(tuning))
    assert done.returncode != 0
    assert "Traceback" not in done.stdout + done.stderr
    assert re.search(
        rf"TOPOFOAM_TUNING={re.escape(str(tuning))}: .*({pattern})", done.stdout + done.stderr
    )


def test_a_site_file_off_its_cluster_says_so(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    done = run(
        REFRAME,
        "-C",
        "site-configs/vsc5.py",
        "-c",
        "reframe",
        "-l",
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "TOPOFOAM_RESULTS": str(results)},
    )
    assert done.returncode == 1
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .startswith("topofoam: no system of the configuration matches this machine")
    )


def test_local_facts_of_another_version(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    (results / "local-site.json").write_text(json.dumps({"version": 0}))
    done = run(
        REFRAME,
        "-C",
        "site-configs/local.py",
        "-c",
        "reframe",
        "-l",
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "TOPOFOAM_RESULTS": str(results)},
    )
    assert done.returncode != 0 and "Traceback" not in done.stdout + done.stderr
    assert (
        f"{results}/local-site.json was written by another version of the suite -- run "
        f"'./bench setup'" in done.stdout + done.stderr
    )
