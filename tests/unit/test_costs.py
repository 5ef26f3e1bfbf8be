"""Which round-trip times price a placed run's hop-bytes (topofoam.prediction.costs)."""

import pytest

from rankmap import analysis, topology
from topofoam.prediction import costs

LEVELS = ["intra_numa_node", "inter_numa_node", "inter_numa_domain", "inter_node"]


def row(system, size=1000, **times):
    return {"system": system, "size": size, **dict.fromkeys(LEVELS, ""), **times}


FULL = dict(intra_numa_node=0.5, inter_numa_node=0.9, inter_numa_domain=1.6, inter_node=3.0)


@pytest.mark.parametrize(
    "preset, nodes, crossed",
    [
        ("vsc5", 10, LEVELS),
        ("vsc5", 1, LEVELS[:3]),
        ("hpc2", 4, ["intra_numa_node", "inter_numa_domain", "inter_node"]),
        ("oci-nps1", 2, ["intra_numa_node", "inter_numa_domain", "inter_node"]),
        ("pack:1 numa:1 core:4 pu:1", 1, ["intra_numa_node"]),
    ],
)
def test_levels_a_run_can_cross(preset, nodes, crossed):
    assert costs.levels_crossed(topology.load(preset), nodes) == crossed


def test_measured_times_of_the_partition_win():
    got = costs.choose("vsc5:zen3_0512", [row("vsc5:zen3_0512", **FULL)], LEVELS, "vsc5")
    assert got.kind == "measured"
    assert got.options[:4] == ["--cost-table", costs.TABLE, "--cost-system", "vsc5:zen3_0512"]
    assert got.label == "measured: p2p check on vsc5:zen3_0512, 1000 scalars"


def test_another_partitions_or_sizes_measurements_are_not_used():
    rows = [row("vsc5:other", **FULL), row("vsc5:zen3_0512", size=10, **FULL)]
    got = costs.choose("vsc5:zen3_0512", rows, LEVELS, "vsc5")
    assert (got.kind, got.options) == (
        "published",
        ["--cost-system", "vsc5", "--cost-size", "1000"],
    )


def test_measurements_missing_a_crossed_level_fall_back():
    """A one-node p2p run measured no inter-node time: a multi-node partition is not priced by
    it (a missing slowest level would take the next faster one's time)."""
    partial = row("hpc2:cpu", **{**FULL, "inter_node": ""})
    assert costs.choose("hpc2:cpu", [partial], LEVELS, "hpc2").kind == "published"
    assert costs.choose("hpc2:cpu", [partial], LEVELS[:3], "hpc2").kind == "measured"


def test_no_measurement_and_none_published_means_no_hop_bytes():
    got = costs.choose("oci:nps1", [row("vsc5:zen3_0512", **FULL)], LEVELS)
    assert (got.kind, got.options) == ("none", ["--cost-system", "none"])
    assert analysis.cost_vector("none") is None


def test_the_measured_row_becomes_rankmaps_table(tmp_path):
    got = costs.choose("local:cpu", [row("local:cpu", intra_numa_node=0.7)], ["intra_numa_node"])
    got.write_table(tmp_path)
    table, system, size = got.options[1], got.options[3], int(got.options[5])
    assert analysis.cost_vector(system, size, tmp_path / table) == [0.7] * 4


def test_a_partition_is_priced_by_a_p2p_run_that_landed_during_the_session(tmp_path, monkeypatch):
    """for_partition reads the perflogs once for every placed test of a session, and again
    after a p2p run wrote to them: the tests set up after it are priced by its times."""
    monkeypatch.setenv("TOPOFOAM_RESULTS", str(tmp_path))
    extras = {"nodes": [1], "published_costs": "vsc5"}
    node = "pack:1 numa:1 core:4 pu:1"  # one level to cross: intra_numa_node
    assert costs.for_partition("local", "cpu", node, extras).kind == "published"
    log = tmp_path / "perflogs" / "local" / "cpu" / "PingPongRun.log"
    log.parent.mkdir(parents=True)
    cols = "job_completion_time|result|system|partition|level|stage|rtt_1000_value|rtt_1000_unit"
    log.write_text(f"{cols}\nt|pass|local|cpu|intra_numa_node|p2p|0.7|us\n")
    got = costs.for_partition("local", "cpu", node, extras)
    assert (got.kind, got.row["intra_numa_node"]) == ("measured", 0.7)
    log.write_text(log.read_text() + "t|pass|local|cpu|intra_numa_node|p2p|0.9|us\n")
    assert costs.for_partition("local", "cpu", node, extras).row["intra_numa_node"] == 0.8
