"""Validation, proven by injecting the fault: a node whose topology differs from the site
file fails the fingerprint check with the difference named; the node as it is passes.

The different node is an hwloc topology given to the job only (HWLOC_XMLFILE through the
check's environment): what the job's hwloc, and so MPI's binding, would see on a node whose
BIOS NUMA setting or cores changed."""

import json
import os
import subprocess

import pytest

from conftest import PYTHON, REPO, bench_cli


def read_facts(results):
    return json.loads((results / "local-site.json").read_text())


def other_node(path, description="pack:2 numa:2 core:2 pu:2"):
    """An hwloc topology of another node type (TEST DATA: 2 packages x 2 NUMA nodes x 2 cores)."""
    xml = subprocess.run(
        ["lstopo-no-graphics", "--input", description, "--of", "xml", "-"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    path.write_text(xml)
    return path


def run_fingerprint(results, *reframe_args):
    env = dict(os.environ, TOPOFOAM_RESULTS=str(results))
    return bench_cli(
        "run", "--partition", "cpu", "--tag", "fingerprint", "--", *reframe_args, env=env
    )


def test_the_node_as_it_is_passes(tmp_path):
    done = run_fingerprint(tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "  local:cpu: 1/1 test cases passed" in done.stdout
    facts = read_facts(tmp_path)
    (found,) = tmp_path.glob("reframe/output/local/cpu/*/NodeFingerprint/fingerprint.json")
    node = json.loads(found.read_text())
    assert node["topology"]["cores"] == facts["cores"]
    assert node["topology"]["numa_nodes"] == facts["numa_nodes"]
    assert node["software"]["open_mpi"].startswith("4.1")
    assert node["software"]["openfoam"]  # the environment's OpenFOAM


def test_a_node_with_another_topology_fails_with_the_difference_named(tmp_path):
    xml = other_node(tmp_path / "other-node.xml")
    done = run_fingerprint(tmp_path / "results", "-S", f"env_vars=HWLOC_XMLFILE:{xml}")
    assert done.returncode != 0
    assert "  local:cpu: 0/1 test cases passed" in done.stdout, done.stdout[-3000:]
    facts = read_facts(tmp_path / "results")
    node = os.uname().nodename
    assert (
        f"local:cpu declares {facts['numa_nodes']} NUMA nodes, node {node} has 4: "
        f"NUMA setting changed?" in done.stdout
    ), done.stdout[-3000:]
    if facts["cores"] != 8:
        assert f"local:cpu declares {facts['cores']} cores, node {node} has 8" in done.stdout


@pytest.mark.parametrize(
    "declared, said",
    [
        (["--numa-nodes", "16", "--nps", "NPS4"], "declares 16 NUMA nodes (NPS4), node"),
        (["--cores", "128"], "declares 128 cores, node"),
    ],
)
def test_the_probe_on_its_own(tmp_path, declared, said):
    """python -m topofoam.fingerprint against declarations this node does not meet, and a
    node that cannot be described (hwloc given a file that is not a topology)."""
    base = [PYTHON, "-m", "topofoam.fingerprint", "--partition", "vsc5:zen3_0512"]
    done = subprocess.run(base + declared, cwd=REPO / "reframe", capture_output=True, text=True)
    assert done.returncode == 1 and said in done.stdout, done.stdout
    bad = tmp_path / "bad.xml"
    bad.write_text("not a topology")
    broken = subprocess.run(
        base,
        cwd=REPO / "reframe",
        capture_output=True,
        text=True,
        env=dict(os.environ, HWLOC_XMLFILE=str(bad)),
    )
    assert broken.returncode == 2 and broken.stderr.startswith("fingerprint: ")
    assert "Traceback" not in broken.stderr
