"""The case catalogue without running OpenFOAM: published sizes, time steps, the log checks,
bad mesh descriptions."""

import csv

import pytest

from cases import CASES, CaseError, background_cells, catalog
from cases.sanity import check_log, evaluate
from cases.template import blockmesh_cells
from conftest import REPO

# Seed 000 Table 3, as the seed documents give it (a copy of its reference CSV).
REFERENCE = REPO / "cases" / "published_seed000.csv"
SEED000_NAMES = {
    "pitzDaily": "pitzDaily",
    "laplacianFoam": "laplacianFoam",
    "cavity2D": "cavity2D",
    "cavity3D": "cavity3D",
}
# Published counts that are not in a CSV: seed 001 Tables 7 and 10, the HPC committee's cavity.
OTHER_PUBLISHED = {
    ("damBreak2D", "seed001"): 2_041_200,
    ("damBreak3D", "seed001"): 498_250,
    ("hpcCavity3D", "1M"): 100**3,
    ("hpcCavity3D", "8M"): 200**3,
    ("hpcCavity3D", "64M"): 400**3,
    ("motorbike", "S"): 20_000,
}


def seed000_rows():
    with open(REFERENCE) as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


LOG = """Time = 1
Phase-1 volume fraction = 0.1  Min(alpha.water) = 0  Max(alpha.water) = 1
Courant Number mean: 0.1 max: 0.4
Time = 2
Phase-1 volume fraction = 0.1002  Min(alpha.water) = -0.01  Max(alpha.water) = 1
Courant Number mean: 0.1 max: nan
End
"""


@pytest.mark.parametrize("row", seed000_rows(), ids=lambda r: f"{r['case']}-{r['system']}")
def test_seed000_sizes_give_the_published_cells_and_steps(row):
    """Without meshing: the size named after the system renders the published mesh."""
    case = CASES[SEED000_NAMES[row["case"]]]
    size = case.sizes[row["system"]]
    assert background_cells(case, size.params) == int(row["cells"])
    assert size.steps == int(row["timesteps"])


@pytest.mark.parametrize("key", sorted(OTHER_PUBLISHED), ids="-".join)
def test_other_published_sizes(key):
    name, size = key
    case = CASES[name]
    assert background_cells(case, case.sizes[size].params) == OTHER_PUBLISHED[key]


def test_time_step_keeps_the_courant_number():
    case = CASES["cavity2D"]
    small, large = case.sizes["ci"], case.sizes["vsc5"]
    assert case.delta_t(small) * small.k == pytest.approx(case.delta_t(large) * large.k)


def test_log_checks_report_what_fails():
    inter = {c.name: c for c in catalog.INTER_CHECKS}
    assert evaluate(inter["water volume fraction drift"], LOG) == (
        "water volume fraction drift: 0.1 -> 0.1002 is a drift of 0.002, more than 0.001"
    )
    assert evaluate(inter["alpha.water minimum"], LOG) == (
        "alpha.water minimum: -0.01 is below -0.001"
    )
    assert evaluate(inter["Courant number (max)"], LOG) == (
        "Courant number (max): the solver logged nan or inf"
    )
    assert check_log(LOG, 3, [])[0] == "the solver did 2 time steps, the case asks for 3"
    falls = catalog.Check("c", r"^x = (\S+)", "falls", 0.1)
    assert evaluate(falls, "x = 10\nx = 2\n") == (
        "c: 10 -> 2, it did not fall below 0.1 of its first value"
    )
    assert evaluate(falls, "x = 10\nx = 0.5\n") is None


def test_blockmesh_without_hex_blocks_names_the_file(tmp_path):
    system = tmp_path / "system"
    system.mkdir()
    (system / "blockMeshDict").write_text(
        "FoamFile { version 2.0; format ascii; class dictionary; object blockMeshDict; }\n"
        "blocks ();\n"
    )
    with pytest.raises(CaseError, match=rf"{system}/blockMeshDict: no hex blocks found"):
        blockmesh_cells(tmp_path)
