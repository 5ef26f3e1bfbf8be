"""The sweeps' UCX presets as UCX reads them: a scoped UCX_RNDV_THRESH names both levels
(UCX 1.20.1 refuses ``inter:128kb`` alone in MPI_Init, seen on OCI's twin on 2026-12-03),
and two presets together combine level by level, each level's ``auto`` giving way."""

import pytest

from topofoam.config import presets

SCOPED = [
    (table, name)
    for table, entries in (("ucx", presets.UCX), ("ucx_inter", presets.UCX_INTER))
    for name, env in entries.items()
    if ":" in env.get("UCX_RNDV_THRESH", "")
]


def test_there_are_scoped_presets_to_check():
    assert {"rc-128k", "ud-128k", "rndv16k-intra", "rndv128k-intra"} <= {n for _, n in SCOPED}


@pytest.mark.parametrize("table,name", SCOPED)
def test_a_scoped_threshold_names_both_levels(table, name):
    value = presets.env_of(table, name)["UCX_RNDV_THRESH"]
    levels = [part.split(":", 1)[0] for part in value.split(",")]
    assert levels == ["intra", "inter"], value


@pytest.mark.parametrize(
    "intra,inter,together",
    [
        ("rndv16k-intra", "rc-128k", "intra:16kb,inter:128kb"),
        ("rndv128k-intra", "ud-128k", "intra:128kb,inter:128kb"),
        ("rndv16k-intra", "auto", "intra:16kb,inter:auto"),
        ("auto", "rc-128k", "intra:auto,inter:128kb"),
    ],
)
def test_an_intra_and_an_inter_preset_combine_level_by_level(intra, inter, together):
    env = presets.merged(presets.env_of("ucx", intra), presets.env_of("ucx_inter", inter))
    assert env["UCX_RNDV_THRESH"] == together
    # The other order gives the same: neither preset's auto overrides the other's value.
    back = presets.merged(presets.env_of("ucx_inter", inter), presets.env_of("ucx", intra))
    assert back["UCX_RNDV_THRESH"] == together


def test_two_values_for_one_level_are_an_error_naming_both():
    with pytest.raises(ValueError, match="'intra:16kb,inter:auto' and 'intra:128kb,inter:auto'"):
        presets.merged(
            {"UCX_RNDV_THRESH": "intra:16kb,inter:auto"},
            {"UCX_RNDV_THRESH": "intra:128kb,inter:auto"},
        )
    with pytest.raises(ValueError, match="twice"):
        presets.merged({"UCX_RNDV_THRESH": "16kb"}, {"UCX_RNDV_THRESH": "128kb"})
