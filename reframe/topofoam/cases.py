"""The benchmark cases the checks know, and facts computed from their dictionaries.

For now these are OpenFOAM tutorials shipped with the installation (Debian: the
``openfoam-examples`` package); the sized benchmark cases of cases/ replace them later.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from foamlib import FoamFile


class CaseError(RuntimeError):
    """A case that cannot be used, with a message naming the file and the fix."""


@dataclass(frozen=True)
class TutorialCase:
    """A tutorial run as a fixed-work benchmark: the control settings fix the step count."""

    name: str
    path: str            # relative to $FOAM_TUTORIALS
    solver: str
    control: dict = field(default_factory=dict)   # controlDict entries to set
    remove: tuple = ()   # dictionary entries to remove, as (file, entry path)

    def source(self, tutorials: str | None) -> Path:
        """The case folder under the tutorials root ($FOAM_TUTORIALS of the environment)."""
        if not tutorials:
            raise CaseError("FOAM_TUTORIALS is not set -- use an environment of the site "
                            "config that sets it (e.g. openfoam-v1912 in site-configs/local.py)")
        src = Path(tutorials) / self.path
        if not (src / "system" / "controlDict").is_file():
            raise CaseError(f"case directory {src} is missing (no system/controlDict) -- "
                            f"install the OpenFOAM tutorials (Debian: openfoam-examples, via "
                            f"site-configs/local/setup.sh) or point FOAM_TUTORIALS at them")
        return src


TUTORIALS = {
    c.name: c for c in (
        # icoFoam, 100 steps of 0.005 s.
        TutorialCase("cavity", "incompressible/icoFoam/cavity/cavity", "icoFoam",
                     control={"endTime": 0.5, "writeInterval": 100}),
        # simpleFoam: a fixed number of SIMPLE iterations; residualControl removed so that an
        # early convergence cannot change the amount of work between variants.
        TutorialCase("pitzDaily", "incompressible/simpleFoam/pitzDaily", "simpleFoam",
                     control={"endTime": 50, "writeInterval": 50},
                     remove=(("system/fvSolution", "SIMPLE/residualControl"),)),
    )
}


def blockmesh_cells(case_dir: Path) -> int:
    """Cells that blockMesh makes from ``system/blockMeshDict``: the sum of nx*ny*nz per block."""
    dict_path = Path(case_dir) / "system" / "blockMeshDict"
    try:
        tokens = list(FoamFile(dict_path)["blocks"])
    except FileNotFoundError:
        raise CaseError(f"{dict_path} is missing -- the case needs a blockMeshDict") from None
    except Exception as e:
        raise CaseError(f"{dict_path}: cannot read 'blocks' ({e}) -- check the dictionary "
                        f"with 'foamDictionary -entry blocks {dict_path}'") from None
    cells = 0
    i = 0
    while i < len(tokens):
        if tokens[i] != "hex":
            i += 1
            continue
        # hex (v0 .. v7) [zone] (nx ny nz) grading (...)
        j = i + 2
        while j < len(tokens) and not _is_cell_counts(tokens[j]):
            j += 1
        if j == len(tokens):
            raise CaseError(f"{dict_path}: block {i} has no (nx ny nz) cell counts")
        nx, ny, nz = tokens[j]
        cells += nx * ny * nz
        i = j + 1
    if cells == 0:
        raise CaseError(f"{dict_path}: no hex blocks found -- only hex blocks are supported")
    return cells


def _is_cell_counts(token) -> bool:
    return (isinstance(token, (list, tuple)) and len(token) == 3
            and all(isinstance(n, int) and not isinstance(n, bool) for n in token))


def control_steps(case_dir: Path) -> int:
    """Time steps (or iterations) from startTime to endTime at deltaT, from the controlDict."""
    dict_path = Path(case_dir) / "system" / "controlDict"
    control = FoamFile(dict_path)
    try:
        start, end, delta = (float(control[k]) for k in ("startTime", "endTime", "deltaT"))
    except (KeyError, TypeError, ValueError) as e:
        raise CaseError(f"{dict_path}: needs numeric startTime, endTime and deltaT ({e})") from None
    if delta <= 0 or end <= start:
        raise CaseError(f"{dict_path}: endTime must exceed startTime and deltaT be positive")
    return round((end - start) / delta)
