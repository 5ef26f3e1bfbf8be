"""The sweep space on made-up partitions: which combination of settings runs where
(topofoam/config/sweepspace.py), without ReFrame. The partitions are TEST DATA shaped like the
sites' own (site-configs/)."""

import json
from dataclasses import dataclass, field

import pytest

from topofoam.config.sweepspace import (
    Combination,
    Settings,
    SweepError,
    applies,
    layouts,
    read_tuning,
    union,
)
from topofoam.results.stages import defaults


@dataclass
class Part:
    name: str
    extras: dict = field(default_factory=dict)


def node(name="zen3", *, cores=128, numa=16, ppn=(32, 64, 128), nodes=(1, 2, 4, 8), **more):
    extras = {
        "cores": cores,
        "numa_nodes": numa,
        "ppn": list(ppn),
        "nodes": list(nodes),
        "ucx": ["auto", "rndv16k"],
        "ucx_inter": ["auto", "ud-128k"],
        "coll": ["default", "han"],
        "intra2_pairs": [["auto", "default"], ["rndv16k", "han"]],
    }
    extras.update(more)
    return Part(name, extras)


def test_defaults_take_the_most_processes_per_node_whatever_the_order():
    assert defaults(node(ppn=(128, 32, 64)).extras) == {
        "ppn": 128,
        "binding": "block",
        "ucx": "auto",
        "coll": "default",
        "ucx_inter": "auto",
    }


def test_the_tuning_file_overrides_the_defaults_per_partition():
    part = node()
    s = Settings(part, {"zen3": {"ppn": 64, "binding": "cyclic", "ucx_inter": {"4": "ud-128k"}}})
    assert (s.ppn, s.binding, s.ucx, s.coll) == (64, "cyclic", "auto", "default")
    assert (s.inter(4, part), s.inter(2, part)) == ("ud-128k", "auto")
    assert Settings(part, {"other": {"ppn": 1}}).ppn == 128


@pytest.mark.parametrize(
    "best, message",
    [
        ({"ppn": 256}, "zen3: ppn '256' is not one this partition runs -- choose from 1..128"),
        ({"ppn": "many"}, "zen3: ppn 'many' is not a whole number -- choose from 1..128"),
        (
            {"ucx": "rndv1k"},
            "zen3: ucx 'rndv1k' is not one this partition runs -- choose from auto, rndv16k",
        ),
        ({"binding": "scatter"}, "binding 'scatter' is not one this partition runs"),
        ({"ucx_inter": {"4": "rc"}}, "ucx_inter 'rc' is not one this partition runs"),
    ],
)
def test_a_tuning_value_the_partition_cannot_run_is_named(best, message):
    with pytest.raises(SweepError, match="^tuning.json: ") as err:
        Settings(node(), {"zen3": best}, "tuning.json")
    assert message in str(err.value)


def test_read_tuning(tmp_path):
    assert read_tuning(None) == {}
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"nps2": {"ppn": 36}}))
    assert read_tuning(str(good)) == {"nps2": {"ppn": 36}}
    for name, text, why in [
        ("cut.json", '{"nps2": {"ppn": 3', "cannot read it as JSON"),
        ("list.json", "[1, 2]", "expected an object keyed by partition name"),
        ("flat.json", '{"ppn": 36}', "expected an object keyed by partition name"),
    ]:
        (tmp_path / name).write_text(text)
        with pytest.raises(SweepError, match=f"TOPOFOAM_TUNING={tmp_path / name}: {why}"):
            read_tuning(str(tmp_path / name))
    with pytest.raises(SweepError, match="cannot read it as JSON"):
        read_tuning(str(tmp_path / "missing.json"))


def test_layouts_over_two_partitions():
    parts = [node("a", ppn=(16, 32), nodes=(1, 2)), node("b", cores=36, ppn=(36,), nodes=(1, 4))]
    assert layouts("every-ppn", parts, {}) == [(1, 16), (1, 32), (1, 36)]
    assert layouts("one-node", parts, {}) == [(1, 32), (1, 36)]
    assert layouts("multi-node", parts, {}) == [(2, 32), (4, 36)]
    assert layouts("all", parts, {}) == [(1, 32), (1, 36), (2, 32), (4, 36)]
    # the tuning file's ppn moves every later layout
    assert layouts("all", parts, {"a": {"ppn": 16}}) == [(1, 16), (1, 36), (2, 16), (4, 36)]
    assert layouts("all", [], {}) == [(1, 1)]
    with pytest.raises(ValueError, match="unknown layout kind"):
        layouts("some", parts, {})


def test_union_keeps_first_seen_order():
    parts = [node("a", ucx=["auto", "rndv16k"]), node("b", ucx=["rndv128k", "auto"])]
    assert union("ucx", parts) == ["auto", "rndv16k", "rndv128k"]
    assert union("nothing", parts) == []


def runs(stage, part, nodes=1, ppn=128, tuning=None, **combo):
    return applies(stage, Combination(**combo), part, nodes, ppn, tuning or {})


def test_placements_that_cannot_differ_or_pair_wrongly_are_not_listed():
    one_numa = node(numa=1)
    assert runs("variants", node(), binding="cyclic")
    assert not runs("variants", one_numa, binding="cyclic")  # cyclic is block there
    assert runs("variants", node(), variant="local+global", binding="rankmap")
    assert not runs("variants", node(), variant="local+global", binding="block")
    assert not runs("variants", node(), variant="global", binding="rankmap")


def test_node_counts_cores_and_presets_come_from_the_partition():
    part = node()
    assert not runs("variants", part, nodes=3)  # not one of its node counts
    assert not runs("reference", part, ppn=256)  # more ranks than cores
    assert not runs("variants", part, ucx="rndv128k")  # a preset it does not list
    # ud only from 4 nodes on (seed 002)
    assert not runs("inter1", part, nodes=2, ucx_inter="ud-128k")
    assert runs("inter1", part, nodes=4, ucx_inter="ud-128k")


def test_what_each_stage_adds():
    part = node()
    # intra1 tries every ppn of the partition, the later stages run at its settled ppn
    assert runs("intra1", part, ppn=32) and not runs("intra1", part, ppn=48)
    assert not runs("variants", part, ppn=32)
    assert runs("variants", part, ppn=32, tuning={"zen3": {"ppn": 32}})
    # intra2 runs the partition's (UCX, collectives) pairs only
    assert runs("intra2", part, ucx="rndv16k", coll="han")
    assert not runs("intra2", part, ucx="rndv16k", coll="default")
    # cost: standard keeps the settled placement (''), local+global is rankmap's
    assert runs("cost", part, variant="standard", binding="")
    assert not runs("cost", part, variant="standard", binding="rankmap")
    assert runs("cost", part, variant="local+global", binding="rankmap")
    # a reference run goes wherever its parent goes, at any ppn of the node
    assert runs("reference", part, ppn=48)


def test_an_emulated_partition_repeats_only_under_a_fabric_profile():
    from topofoam.config.sweepspace import repeats

    assert repeats(Part("emu", {"emulated": True, "repeats": 5})) == 1
    assert repeats(Part("emu", {"emulated": True, "repeats": 5, "fabric": "none"})) == 1
    priced = {"emulated": True, "repeats": 5, "fabric": "vsc5x100 (L 151.6 us, B 319.2 MB/s)"}
    assert repeats(Part("emu", priced)) == 5
    assert repeats(Part("cpu", {"repeats": 3})) == 3
