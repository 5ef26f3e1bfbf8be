"""Case facts computed from the dictionaries agree with what OpenFOAM itself makes of them."""

import os
import re
import shutil
import subprocess

import pytest

from conftest import tool

from localsite.openfoam import EXAMPLES, PROJECT_DIR
from topofoam.cases import TUTORIALS, CaseError, blockmesh_cells, control_steps

FOAM_ENV = dict(os.environ, WM_PROJECT_DIR=str(PROJECT_DIR))


@pytest.mark.parametrize("name", sorted(TUTORIALS))
def test_blockmesh_cells_match_checkmesh(name, tmp_path):
    """The computed cell count equals the count checkMesh reports for the real blockMesh mesh."""
    case = tmp_path / name
    shutil.copytree(TUTORIALS[name].source(str(EXAMPLES)), case)
    for app in ("blockMesh", "checkMesh"):
        done = subprocess.run([tool(app), "-case", str(case)], env=FOAM_ENV,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout[-2000:]
    reported = int(re.search(r"^\s*cells:\s+(\d+)", done.stdout, re.M).group(1))
    assert blockmesh_cells(case) == reported


def test_blockmesh_without_hex_blocks_names_the_file(tmp_path):
    system = tmp_path / "system"
    system.mkdir()
    (system / "blockMeshDict").write_text(
        "FoamFile { version 2.0; format ascii; class dictionary; object blockMeshDict; }\n"
        "blocks ();\n")
    with pytest.raises(CaseError, match=rf"{system}/blockMeshDict: no hex blocks found"):
        blockmesh_cells(tmp_path)


def test_missing_blockmeshdict_names_the_file(tmp_path):
    with pytest.raises(CaseError, match=r"system/blockMeshDict is missing"):
        blockmesh_cells(tmp_path)


def test_control_steps(tmp_path):
    system = tmp_path / "system"
    system.mkdir()
    control = system / "controlDict"
    control.write_text("FoamFile { version 2.0; format ascii; class dictionary; "
                       "object controlDict; }\nstartTime 0.1;\nendTime 0.5;\ndeltaT 0.005;\n")
    assert control_steps(tmp_path) == 80
    control.write_text(control.read_text().replace("endTime 0.5", "endTime 0.05"))
    with pytest.raises(CaseError, match="endTime must exceed startTime"):
        control_steps(tmp_path)


def test_missing_tutorials_name_the_folder_and_the_fix(tmp_path):
    with pytest.raises(CaseError, match=rf"case directory {tmp_path}/incompressible/icoFoam/"
                                        r"cavity/cavity is missing .* install the OpenFOAM"):
        TUTORIALS["cavity"].source(str(tmp_path))
