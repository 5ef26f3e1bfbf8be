"""The plan's expected node-hours (topofoam.prediction.plan): a job is priced by a measured
run of the same test on the same partition, else by its check's measured runs there, else by
its time limit, never past it; --budget refuses a selection above it, naming its largest
checks. The run reports here are TEST DATA in ReFrame's report format."""

import json

import pytest

from topofoam.prediction import plan


def report(results, cases):
    folder = results / "reframe" / "reports"
    folder.mkdir(parents=True, exist_ok=True)
    n = len(list(folder.iterdir()))
    (folder / f"run-{n}.json").write_text(json.dumps({"runs": [{"testcases": cases}]}))


def case(name, seconds, result="pass", partition="zen3_0512", system="vsc5"):
    return {"unique_name": name, "partition": partition, "system": system,
            "result": result, "time_run": seconds}  # fmt: skip


JOBS = [
    plan.Job("SweepRun", "zen3_0512", 2, 1.0, "SweepRun_0000000a"),
    plan.Job("SweepRun", "zen3_0512", 2, 1.0, "SweepRun_0000000b"),
    plan.Job("SweepRun", "zen3_0512", 4, 1.0, "SweepRun_0000000c"),
    plan.Job("StorageRun", "zen3_0512", 1, 2.0, "StorageRun_0000000d"),
    plan.Job("PatchedOpenFOAMBuild", "zen3_0512", 0, 0.0, "PatchedOpenFOAMBuild_0000000e"),
]


def test_jobs_are_priced_by_measured_runs_else_their_limit(tmp_path):
    report(tmp_path, [
        case("SweepRun_0000000a", 360), case("SweepRun_0000000a", 720),  # median 540 s
        case("SweepRun_0000000b", 9000, result="fail"),  # a failed run prices nothing
        case("SweepRun_0000000b", 1800, system="hpc2"),  # another system's neither
        case("SweepRun_0000000f", 90000),  # a test of the same check, past the limit
        case("StorageRun_0000000d", float("nan")),  # not a time
    ])  # fmt: skip
    (tmp_path / "reframe" / "reports" / "cut.json").write_text('{"runs": [')
    expect = plan.expected(JOBS, plan.measured_hours(tmp_path, "vsc5"))
    assert (expect.from_test, expect.from_check, expect.at_limit) == (1, 2, 1)
    # a: 2 nodes x 540 s; b and c: the check's median (360, 720, 90000 s -> 720 s), b at 2
    # nodes, c at 4; storage at its 2 h limit
    sweep = 2 * 540 / 3600 + 2 * 720 / 3600 + 4 * 720 / 3600
    assert expect.node_hours["SweepRun"] == pytest.approx(sweep)
    assert expect.node_hours["StorageRun"] == pytest.approx(2.0)
    assert "PatchedOpenFOAMBuild" not in expect.node_hours
    line = plan.expected_line(expect, tmp_path)
    assert line.startswith(f"plan: expected {sweep + 2:.1f} node-hours: 1 of 4 jobs priced by a ")


def test_a_job_is_never_priced_past_its_time_limit(tmp_path):
    report(tmp_path, [case("StorageRun_0000000d", 4 * 3600)])
    expect = plan.expected(JOBS[3:4], plan.measured_hours(tmp_path, "vsc5"))
    assert expect.node_hours["StorageRun"] == pytest.approx(2.0)


def test_a_budget_refuses_what_it_cannot_pay_naming_the_largest_checks():
    expect = plan.expected(JOBS, {})
    assert expect.total == pytest.approx(2 + 2 + 4 + 2)
    assert plan.over_budget(expect, 10) is None
    refused = plan.over_budget(expect, 9.5)
    assert refused == (
        "plan: the selection is expected to cost 10.0 node-hours, over the budget of 9.5 -- "
        "narrow it (-t, -n, -x NAME, --system SYSTEM:PARTITION); its largest checks: "
        "SweepRun 8.0, StorageRun 2.0"
    )


@pytest.mark.parametrize("text", ["0", "-3", "nan", "inf", "lots"])
def test_a_budget_that_is_not_node_hours_is_refused(text):
    import argparse

    with pytest.raises(argparse.ArgumentTypeError, match="is not a number of node-hours"):
        plan._node_hours(text)
