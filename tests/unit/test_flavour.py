"""Cases rendered for the Foundation's OpenFOAM-12 (cases/flavour.py), read back with foamlib;
the OpenFOAM-12 runs themselves are in tests/integration/test_org12.py."""

import pytest
from foamlib import FoamFile

from cases import flavour
from cases.catalog import CASES
from cases.errors import CaseError
from cases.template import render


@pytest.mark.parametrize(
    "version, kind", [("v1912", "esi"), ("v2512", "esi"), ("12", "org"), ("", "esi")]
)
def test_the_environment_names_the_flavour(version, kind):
    assert flavour.of_environment({"WM_PROJECT_VERSION": version}) == kind


def rendered(name, tmp_path):
    case = CASES[name]
    size = case.sizes["ci"]
    render(case.template, case.variant, size.params, tmp_path)
    return case


def test_pitzdaily_becomes_an_incompressible_fluid_module_case(tmp_path):
    case = rendered("pitzDaily", tmp_path)
    flavour.adapt(tmp_path, case.name, case.solver, flavour.ORG)
    constant = tmp_path / "constant"
    assert not (constant / "transportProperties").exists()
    assert not (constant / "turbulenceProperties").exists()
    physical = FoamFile(constant / "physicalProperties")
    assert physical["viscosityModel"] == "constant"
    nu = physical["nu"]
    assert (nu.value, list(nu.dimensions)) == (1e-05, [0, 2, -1, 0, 0, 0, 0])
    transport = FoamFile(constant / "momentumTransport")
    assert (transport["simulationType"], transport["RAS", "model"]) == ("RAS", "kEpsilon")
    control = FoamFile(tmp_path / "system" / "controlDict")
    assert (control["application"], control["solver"]) == ("foamRun", "incompressibleFluid")
    assert flavour.executable(case.solver, flavour.ORG) == "foamRun"


@pytest.mark.parametrize(
    "name, key, value", [("laplacianFoam", "DT", 1.0), ("cavity3D", "nu", 0.01)]
)
def test_legacy_solvers_read_physical_properties(tmp_path, name, key, value):
    case = rendered(name, tmp_path)
    flavour.adapt(tmp_path, case.name, case.solver, flavour.ORG)
    entry = FoamFile(tmp_path / "constant" / "physicalProperties")[key]
    assert (entry.value, list(entry.dimensions)) == (value, [0, 2, -1, 0, 0, 0, 0])
    assert flavour.executable(case.solver, flavour.ORG) == case.solver


def test_esi_cases_are_left_as_rendered(tmp_path):
    case = rendered("pitzDaily", tmp_path)
    flavour.adapt(tmp_path, case.name, case.solver, flavour.ESI)
    assert (tmp_path / "constant" / "transportProperties").exists()
    assert flavour.executable(case.solver, flavour.ESI) == "simpleFoam"


def test_dam_break_becomes_an_incompressible_vof_case(tmp_path):
    case = rendered("damBreak2D", tmp_path)
    flavour.adapt(tmp_path, case.name, case.solver, flavour.ORG)
    constant = tmp_path / "constant"
    assert not (constant / "transportProperties").exists()
    phases = FoamFile(constant / "phaseProperties")
    assert (list(phases["phases"]), phases["sigma"]) == (["water", "air"], 0.07)
    water, air = (FoamFile(constant / f"physicalProperties.{p}") for p in ("water", "air"))
    assert (water["nu"].value, water["rho"].value) == (1e-06, 1000)
    assert (air["nu"].value, air["rho"].value) == (1.48e-05, 1)
    schemes = FoamFile(tmp_path / "system" / "fvSchemes")["divSchemes"]
    assert schemes["div(phi,alpha)"] == ("Gauss", "interfaceCompression", "vanLeer", 1)
    assert "div(phirb,alpha)" not in schemes
    solution = FoamFile(tmp_path / "system" / "fvSolution")
    assert "cAlpha" not in solution["solvers", '"alpha.water.*"']
    # Fixed work's tolerance 0 is the smallest positive one (OpenFOAM-12's PCG).
    assert solution["solvers", "p_rgh", "tolerance"] == 1e-07  # not fixed work here
    control = FoamFile(tmp_path / "system" / "controlDict")
    assert (control["application"], control["solver"]) == ("foamRun", "incompressibleVoF")


def test_motorbike_features_and_geometry_for_openfoam12(tmp_path):
    case = rendered("motorbike", tmp_path)
    flavour.adapt(tmp_path, case.name, case.solver, flavour.ORG)
    assert flavour.surface_features(tmp_path, flavour.ORG) == "surfaceFeatures"
    features = FoamFile(tmp_path / "system" / "surfaceFeaturesDict")
    assert (list(features["surfaces"]), features["includedAngle"]) == (['"motorBike.obj"'], 150)
    snappy = FoamFile(tmp_path / "system" / "snappyHexMeshDict")
    assert snappy["geometry", "motorBike", "file"] == '"motorBike.obj"'
    assert snappy["geometry", "refinementBox", "type"] == "searchableBox"
    assert flavour.surface_features(tmp_path, flavour.ESI) == "surfaceFeatureExtract"


def test_a_solver_without_an_openfoam12_form_says_so(tmp_path):
    case = rendered("cavity2D", tmp_path)
    with pytest.raises(CaseError, match=r"cavity2D \(pisoFoam\) has no OpenFOAM-12 form yet"):
        flavour.adapt(tmp_path, case.name, "pisoFoam", flavour.ORG)
