"""The committee's cavity benchmarks as their published texts define them
(cases/published_committee.csv): mb1Cavity3D is MB1 in every published entry; hpcCavity3D
has the committee's Lid_driven_cavity-3d meshes and pressure solver and differs from it where
docs say. Rendered without meshing, in both setups (fixedIter and fixedTol), on both
flavours' dictionaries."""

import csv

import pytest
from foamlib import FoamFile

from cases import CASES, background_cells
from cases.flavour import ESI, ORG
from cases.prepare import Request, materialise
from conftest import REPO

PUBLISHED = REPO / "cases" / "published_committee.csv"


def rows(benchmark):
    with open(PUBLISHED) as f:
        table = csv.DictReader(line for line in f if not line.startswith("#"))
        return [r for r in table if r["benchmark"] == benchmark]


def rendered(tmp_path, name, size, fixed_work, kind=ESI):
    case = CASES[name]
    work = tmp_path / f"{name}-{size}-{fixed_work}-{kind}"
    materialise(case, case.sizes[size], Request(name, size, fixed_work=fixed_work), work, kind)
    return case, work


@pytest.mark.parametrize("kind", [ESI, ORG])
@pytest.mark.parametrize("row", rows("MB1"), ids=lambda r: r["size"])
def test_mb1_is_the_committees_microbenchmark(tmp_path, row, kind):
    case, work = rendered(tmp_path, "mb1Cavity3D", row["size"], fixed_work=False, kind=kind)
    size = case.sizes[row["size"]]
    n = int(row["cells_per_edge"])
    assert (size.params["nx"], size.params["ny"], size.params["nz"]) == (n, n, n)
    assert background_cells(case, size.params) == int(row["cells"])
    mesh = FoamFile(work / "system" / "blockMeshDict")
    assert mesh["scale"] * max(max(v) for v in mesh["vertices"]) == float(row["side_m"])
    control = FoamFile(work / "system" / "controlDict")
    dt = float(row["delta_t"])
    assert control["deltaT"] == pytest.approx(dt)
    assert control["endTime"] == pytest.approx(int(row["steps"]) * dt)
    # Co = U dt / dx as published
    dx = float(row["side_m"]) / n
    assert float(row["lid_u"]) * control["deltaT"] / dx == pytest.approx(float(row["courant"]))
    solution = FoamFile(work / "system" / "fvSolution")
    p = solution["solvers", "p"]
    assert (p["solver"], p["preconditioner"]) == (row["p_solver"], row["p_preconditioner"])
    # fixedTol: p to the published tolerance, absolute
    assert (p["tolerance"], p["relTol"]) == (float(row["fixed_tol_p"]), 0)
    assert solution["PISO", "momentumPredictor"] is (row["momentum_predictor"] == "yes")
    physical = "transportProperties" if kind == ESI else "physicalProperties"
    nu = FoamFile(work / "constant" / physical)["nu"]
    assert (nu.value if hasattr(nu, "value") else nu) == float(row["nu"])
    lid = FoamFile(work / "0" / "U")["boundaryField"]["movingWall"]["value"]
    assert list(lid) == [float(row["lid_u"]), 0, 0]


@pytest.mark.parametrize("row", rows("MB1"), ids=lambda r: r["size"])
def test_mb1_fixed_iterations(tmp_path, row):
    """fixedIter: every p solve does the same iterations; U is not solved at all."""
    case, work = rendered(tmp_path, "mb1Cavity3D", row["size"], fixed_work=True)
    solution = FoamFile(work / "system" / "fvSolution")
    for name in ("p", "pFinal"):
        entry = solution["solvers", name]
        n = case.fixed_iterations[name]
        assert (entry["minIter"], entry["maxIter"], entry["tolerance"]) == (n, n, 0)
    assert solution["PISO", "momentumPredictor"] is False
    assert int(row["steps"]) == case.sizes[row["size"]].steps


def test_prepared_cases_are_renumbered():
    """Every case, MB1's too, is renumbered before it is decomposed (cases/prepare.py)."""
    source = (REPO / "cases" / "prepare.py").read_text()
    assert source.index('_run("renumberMesh"') < source.index("_decompose(case, work")


@pytest.mark.parametrize("row", rows("LDC3D"), ids=lambda r: r["size"])
def test_hpc_cavity_has_the_committees_meshes_and_differs_where_docs_say(tmp_path, row):
    """hpcCavity3D: the published meshes and PCG+DIC; its own time step (Co 0.5 at every
    size), steps (20) and fixed iterations (p 100, U 2), as cases/README.md says."""
    sizes = {"S": "1M", "M": "8M", "XL": "64M"}
    case, work = rendered(tmp_path, "hpcCavity3D", sizes[row["size"]], fixed_work=True)
    size = case.sizes[sizes[row["size"]]]
    assert background_cells(case, size.params) == int(row["cells"])
    solution = FoamFile(work / "system" / "fvSolution")
    p = solution["solvers", "p"]
    assert (p["solver"], p["preconditioner"]) == (row["p_solver"], row["p_preconditioner"])
    dx = float(row["side_m"]) / int(row["cells_per_edge"])
    courant = FoamFile(work / "system" / "controlDict")["deltaT"] / dx
    assert courant == pytest.approx(0.5)
    assert (size.steps, p["maxIter"], solution["solvers", "U", "maxIter"]) == (20, 100, 2)
    documented = (REPO / "cases" / "README.md").read_text()
    assert "Co 0.5 at every size" in documented and "p 100, U 2" in documented
