"""The time-per-step model beside real runs (topofoam.prediction.modelcheck): on the emulated cluster
under a fabric profile, the p2p check's costs, the multi-node check's calls and kept graphs
give every variant and node count a prediction; on one node the prediction is the measured
step itself (the compute is what the model's communication leaves of it). Without the
inter-node round trips there is no prediction beyond one node, and it says why."""

import json
import os
import shutil
import subprocess

import pytest

from conftest import FABRIC_PROFILE as PROFILE
from conftest import FEWER_STEPS, PYTHON, REPO, bench_cli, needs_root, run_env
from rankmap.topology import load
from topofoam.prediction import model, modelcheck
from topofoam.prediction.model import FIT_SLACK

pytestmark = needs_root

SELECT = r"MultiNodeRun.*variant=(standard|local\+global).*launcher_kind=srun"


def bench(results, partition, tag, *args, profile="none"):
    command = ["run", "--partition", partition, "--tag", tag, *(["--", *args] if args else [])]
    done = bench_cli(*command, env=run_env(results, profile), timeout=1500)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def run_modelcheck(perflogs, out):
    return subprocess.run(
        [PYTHON, "-m", "topofoam.prediction.modelcheck", str(perflogs), "--json", str(out)],
        cwd=REPO / "reframe",
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def measured(tmp_path_factory, emu_p2p):
    results = tmp_path_factory.mktemp("model") / "results"
    shutil.copytree(emu_p2p, results, symlinks=True)
    bench(results, "cpu", "p2p")
    # One node's step is the model's compute: 10 steps, as its log reaches the step clock in
    # chunks. Beyond one node (2 and 4 ranks' worth of waiting on 2 cores, seconds a step)
    # the test needs calls, graphs and a step, not their accuracy: 3 steps.
    bench(results, "emu", "multinode", "-n", SELECT + r".*%prepared.nodes=1\b", profile=PROFILE)
    more = SELECT + r".*%prepared.nodes=[24]\b"
    bench(results, "emu", "multinode", "-n", more, "-S", FEWER_STEPS, profile=PROFILE)
    return results


def test_every_variant_and_node_count_gets_a_prediction(measured, tmp_path):
    done = run_modelcheck(measured / "perflogs" / "local", tmp_path / "lines.json")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = json.loads((tmp_path / "lines.json").read_text())
    got = {(ln["variant"], ln["nodes"]) for ln in lines}
    assert got == {(v, n) for v in ("standard", "local+global") for n in (1, 2, 4)}
    for ln in lines:
        assert ln["predicted"] is not None and ln["predicted"] > 0, ln
        assert ln["fabric"].startswith(PROFILE)
        if ln["nodes"] == 1 and ln["terms"]["compute"] > 0:
            assert ln["error"] == pytest.approx(0, abs=1e-9), ln
        elif ln["nodes"] == 1:  # latency-bound: a step noise put under the communication
            assert 0 <= ln["error"] <= FIT_SLACK, ln
    # communication dominates under the profile: more nodes, more predicted time per step
    std = {ln["nodes"]: ln["predicted"] for ln in lines if ln["variant"] == "standard"}
    assert std[1] < std[2] < std[4], std
    assert "predicted ms" in done.stdout and "node(s): local+global predicted" in done.stdout


def test_without_inter_node_round_trips_there_is_no_prediction_beyond_one_node(measured, tmp_path):
    perflogs = tmp_path / "local"
    shutil.copytree(measured / "perflogs" / "local", perflogs)
    for log in (perflogs / "emu").glob("PingPongRun.log*"):
        log.unlink()
    done = run_modelcheck(perflogs, tmp_path / "lines.json")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = json.loads((tmp_path / "lines.json").read_text())
    for ln in lines:
        if ln["nodes"] == 1:
            assert ln["predicted"] is not None, ln
        else:
            assert ln["predicted"] is None and "p2p" in ln["reason"], ln
    assert "no prediction: " in done.stdout and "Traceback" not in done.stderr


def plan(results, site, *select):
    """The planner's model lines for ``site`` with ``results`` as the results folder."""
    env = dict(os.environ, TOPOFOAM_RESULTS=str(results))
    env.pop("SLURM_CONF", None)
    done = subprocess.run(
        [PYTHON, "-m", "topofoam.prediction.plan", "-C", f"site-configs/{site}.py", *select],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return [ln for ln in done.stdout.splitlines() if ln.startswith("plan: model: ")]


def test_the_planner_says_what_the_model_expects_to_pay(measured):
    # Any selection with jobs here (the multi-node check needs the emulated cluster up).
    said = [ln for ln in plan(measured, "local", "-t", "p2p") if ln.startswith("plan: model: emu")]
    assert any("predicted to pay" in ln and "local+global" in ln for ln in said), said
    assert any("the model puts" in ln and "% in allreduce" in ln for ln in said), said


def test_before_a_site_ran_anything_its_costs_price_this_machines_calls(measured):
    # The multi-node check runs the same case, decomposition and ranks on every site: this
    # machine's runs give the calls and graphs, each site's node and published costs price them.
    reference = measured / "perflogs" / "local"
    sites = {
        name: modelcheck.Target(
            name, model.Machine(load(name), model.link_costs(model.fabric.TABLE, name))
        )
        for name in ("vsc5", "hpc2")
    }
    lines, _ = modelcheck.elsewhere(reference, list(sites.values()))
    got = {(ln.partition, ln.variant, ln.nodes) for ln in lines}
    assert got == {
        (s, v, n) for s in sites for v in ("standard", "local+global") for n in (1, 2, 4)
    }
    for ln in lines:
        assert ln.predicted and ln.predicted > 0 and ln.measured is None, ln
        assert ln.environ.startswith("calls and compute: local:emu"), ln
        assert ln.fabric == sites[ln.partition].machine.costs.source
    # Each site's own inter-node latency prices the all-reduces between nodes.
    hpc2 = {ln.nodes: ln.terms["allreduce"] for ln in lines if ln.partition == "hpc2"}
    vsc5 = {ln.nodes: ln.terms["allreduce"] for ln in lines if ln.partition == "vsc5"}
    ratio = sites["hpc2"].machine.costs.latency[-1] / sites["vsc5"].machine.costs.latency[-1]
    assert (hpc2[4] > vsc5[4]) == (ratio > 1), (hpc2, vsc5, ratio)


@pytest.mark.parametrize("site", ["vsc5", "oci"])
def test_the_planner_predicts_for_a_site_before_it_ran_anything(measured, site):
    said = plan(measured, site, "-t", "multinode")
    if site == "vsc5":  # seed 000 Table 2's costs
        assert "before any multi-node run of vsc5" in said[0], said
        assert any(ln.startswith("plan: model: zen3_0512 (") and "predicted to pay" in ln
                   for ln in said), said  # fmt: skip
    else:  # no published costs, no p2p run: it says what to run
        assert all("no prediction" in ln for ln in said), said
        assert {ln.split(":")[2].split()[-1] for ln in said} == {"nps1", "nps2"}, said
        assert all("-t p2p" in ln and "published_costs" in ln for ln in said), said
