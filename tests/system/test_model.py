"""The time-per-step model beside real runs (topofoam.prediction.modelcheck): on the emulated cluster
under a fabric profile, the p2p check's costs, the multi-node check's calls and kept graphs
give every variant and node count a prediction; on one node the prediction is the measured
step itself (the compute is what the model's communication leaves of it). On 2 nodes of one
rank each (a core each, as on a cluster), runs the model never saw, it is within its stated
accuracy; priced with the links of a fabric at half the cost (its own p2p run), it is shown
off (the positive control). Runs whose ranks share cores are not judged. Without the
inter-node round trips there is no prediction beyond one node, and it says why."""

import json
import math
import os
import shutil
import subprocess

import pytest

from conftest import FABRIC_PROFILE as PROFILE
from conftest import FEWER_STEPS, PYTHON, REPO, bench_cli, needs_root, run_env
from localsite.benchrun import multinode_cases
from topofoam.prediction import modelcheck
from topofoam.prediction.model import FIT_SLACK

pytestmark = needs_root


def bench(results, partition, tag, *args, profile="none", repeats=1):
    command = ["run", "--partition", partition, "--tag", tag, *(["--", *args] if args else [])]
    env = dict(run_env(results, profile), TOPOFOAM_REPEATS=str(repeats))
    done = bench_cli(*command, env=env, timeout=1500)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def run_modelcheck(perflogs, out):
    return subprocess.run(
        [PYTHON, "-m", "topofoam.prediction.modelcheck", str(perflogs), "--json", str(out)],
        cwd=REPO / "reframe",
        capture_output=True,
        text=True,
        timeout=300,
    )


ONE_NODE_STEPS = "PreparedCavityRanks.steps_override=50"
#: The runs the accuracy is judged on: 2 nodes of 1 rank (2 ranks on 2 cores: a core each,
#: predicted from the one-node run of 2 ranks, the same decomposition), 10 steps (about
#: 0.25 s each under the profile), 4 runs a variant: the measured median with an interval
#: (the runs' range, 87.5 % coverage). At 2 ranks a node (4 on 2 cores) each rank also waits
#: for a core, which the model does not price: those runs are not judged (docs/model.md).
TWO_NODE_STEPS, TWO_NODE_RUNS = "PreparedCavityRanks.steps_override=10", 4
A_CORE_EACH = "PreparedCavityRanks.ranks_per_node=1"
#: The fabric the positive control prices the runs with: half the profile's cost.
HALF_PROFILE = "vsc5x50"


@pytest.fixture(scope="module")
def measured(tmp_path_factory, emu_p2p):
    results = tmp_path_factory.mktemp("model") / "results"
    shutil.copytree(emu_p2p, results, symlinks=True)
    bench(results, "cpu", "p2p")
    # One node's step is the model's compute: about 1 ms since fixed work left GAMG its
    # tolerance, and srun forwards such a log in blocks, so the step clock falls back on the
    # master's CPU time (0.01 s resolution): 50 steps resolve it to about 20 %. Beyond one
    # node (2 and 4 ranks' worth of waiting on 2 cores, seconds a step) the test needs
    # calls, graphs and a step; 2 nodes its accuracy too (TWO_NODE_*), 4 nodes 3 steps.
    one = multinode_cases(variant=r"standard|local\+global", launcher="srun", nodes="1")
    bench(results, "emu", "multinode", "-n", one, "-S", ONE_NODE_STEPS, profile=PROFILE)
    # The 2-node case at 1 and 2 ranks a node has one name, and so one output folder, per
    # repeat: the 2-rank-a-node run takes the repeat after the accuracy's (its own graph).
    variants = r"standard|local\+global"
    two = multinode_cases(variant=variants, launcher="srun", nodes="2", repeat=str(TWO_NODE_RUNS))
    bench(
        results, "emu", "multinode", "-n", two, "-S", TWO_NODE_STEPS, profile=PROFILE,
        repeats=TWO_NODE_RUNS + 1,
    )  # fmt: skip
    two = multinode_cases(variant=variants, launcher="srun", nodes="2")
    bench(
        results, "emu", "multinode", "-n", two, "-S", TWO_NODE_STEPS, "-S", A_CORE_EACH,
        profile=PROFILE, repeats=TWO_NODE_RUNS,
    )  # fmt: skip
    four = multinode_cases(variant=r"standard|local\+global", launcher="srun", nodes="4")
    bench(results, "emu", "multinode", "-n", four, "-S", FEWER_STEPS, profile=PROFILE)
    return results


def test_every_variant_and_node_count_gets_a_prediction(measured, tmp_path):
    done = run_modelcheck(measured / "perflogs" / "local", tmp_path / "lines.json")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = json.loads((tmp_path / "lines.json").read_text())
    lines = [ln for ln in lines if ln["scale"]["ranks_per_node"] == 2]  # 1 a node: below
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
    assert "predicted ms" in done.stdout and "node(s) x 2: local+global predicted" in done.stdout


def two_node_lines(perflogs, costs_under=""):
    """The 2-node lines of a core each (the accuracy's); those of 2 ranks a node are
    checked not judged."""
    lines, _ = modelcheck.check(perflogs, costs_under=costs_under)
    shared = [ln for ln in lines if ln.nodes == 2 and ln.scale.ranks_per_node == 2]
    assert shared and all(ln.shared_cores for ln in shared), shared
    for ln in shared:
        status, said = modelcheck.accuracy(ln)
        assert status == modelcheck.INCONCLUSIVE and "ranks shared 2 cores" in said, said
    two = [ln for ln in lines if ln.nodes == 2 and ln.scale.ranks_per_node == 1]
    assert {ln.variant for ln in two} == {"standard", "local+global"}, lines
    assert all(ln.repeats == TWO_NODE_RUNS and ln.predicted for ln in two), two
    return two


def test_on_runs_it_did_not_see_the_model_is_within_its_stated_accuracy(measured):
    """Issue 55: calibrated on one node (its compute) and the p2p check (its links), the
    model predicts the 2-node runs of a core each, whose time it never saw, within ACCURACY
    (25 %): the measured median within it, so the runs cannot show it off (FAIL)."""
    for ln in two_node_lines(measured / "perflogs" / "local"):
        status, said = modelcheck.accuracy(ln)
        assert abs(math.log(ln.predicted / ln.measured)) <= math.log1p(modelcheck.ACCURACY), said
        assert status != modelcheck.FAIL, said


def test_calibrated_on_a_fabric_at_half_the_cost_the_model_is_shown_off(measured, tmp_path):
    """The positive control: the same 2-node runs priced with the links the p2p check
    measured under a fabric at half the profile's cost (half the latency, twice the
    bandwidth): a model calibrated on another fabric. Every run puts it off by more than
    its accuracy: FAIL, and the line says so."""
    results = tmp_path / "results"
    shutil.copytree(measured, results, symlinks=True)
    bench(results, "emu", "p2p", profile=HALF_PROFILE)
    for ln in two_node_lines(results / "perflogs" / "local", costs_under=HALF_PROFILE):
        status, said = modelcheck.accuracy(ln)
        assert status == modelcheck.FAIL and ln.error < -modelcheck.ACCURACY, said
        assert said.endswith("off by more than +-25 %"), said


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


@pytest.mark.parametrize("site", ["vsc5", "oci"])
def test_the_planner_gives_no_toy_figure_under_a_site_s_name(measured, site):
    """Issue 55: this machine's runs (cavity2D, 2 ranks a node) are not a site's 128 or 36
    a node: before the site's own multi-node runs at its scale, every model line says what is
    missing, and none predicts."""
    said = plan(measured, site, "-t", "multinode")
    rpn = {"vsc5": 128, "oci": 36}[site]
    assert said and all(f"no prediction at {site}'s scale for " in ln for ln in said), said
    assert all(f"ranks_per_node={rpn}" in ln for ln in said), said
    assert not any("predicted to pay" in ln or "the model puts" in ln for ln in said), said
    if site == "oci":  # no published costs, no p2p run there: that is missing too
        assert {ln.split(" for ")[1].split(":")[0] for ln in said} == {"nps1", "nps2"}, said
        assert all("-t p2p" in ln and "published_costs" in ln for ln in said), said
    else:  # seed 000 Table 2's costs: only the calls at its scale are missing
        assert not any("-t p2p" in ln for ln in said), said


def test_runs_below_a_partition_s_scale_predict_nothing_under_its_name(measured, tmp_path):
    """The emulated partition's own runs, read for a site whose jobs run 4 ranks a node:
    the 2-rank runs are named, with what to run, and give no figure."""
    config = tmp_path / "site.py"
    config.write_text(
        "site_configuration = {'systems': [{'name': 'local', 'partitions': [\n"
        "    {'name': 'emu', 'features': ['multinode'], 'extras': {'ppn': [2, 4]}}]}]}\n"
    )
    program = "import sys; from topofoam.prediction import plan; "
    program += "print('\\n'.join(plan.model_lines(sys.argv[1], 'local')))"
    done = subprocess.run(
        [PYTHON, "-c", program, str(config)], cwd=REPO / "reframe", capture_output=True,
        text=True, timeout=300, env=dict(os.environ, TOPOFOAM_RESULTS=str(measured)),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    said = done.stdout.splitlines()
    assert said and all(
        ln.startswith("no prediction at local's scale for emu: its ") for ln in said
    )
    assert any("are cavity2D, 2 ranks a node, its jobs 4 ranks a node" in ln for ln in said)


def test_without_a_fabric_profile_the_report_says_in_one_line_what_to_run(measured):
    """Issue 55, part 4: a `./bench run` under TOPOFOAM_FABRIC=none (the default before
    2026-12-03) has free links, so the p2p check does not time them and nothing prices them. The same runs priced as if no
    profile had been in force: no line is predicted, and one line, not one per variant and
    node count, says what run gives the prediction."""
    lines, _ = modelcheck.check(measured / "perflogs" / "local", costs_under="none")
    assert lines and all(ln.predicted is None for ln in lines), lines
    (said,) = modelcheck.reasons(lines)
    assert said.endswith(f" on 1, 2, 4 node(s): {modelcheck.NO_PROFILE}"), said
    assert "TOPOFOAM_FABRIC=" in said and "--partition emu" in said
