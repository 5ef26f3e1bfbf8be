"""The OpenFOAM a case is prepared for: ESI's (v1912, v2512) or the Foundation's (12).

The templates are written in ESI v1912 syntax. For the Foundation's OpenFOAM-12 a rendered case
is rewritten (``adapt``):

- ``constant/transportProperties`` becomes ``constant/physicalProperties`` (``viscosityModel
  constant`` and ``nu``, or ``DT`` for laplacianFoam), with dimensions;
- ``constant/turbulenceProperties`` becomes ``constant/momentumTransport`` (``model`` for
  ``RASModel``);
- fieldMinMax function objects become volFieldValue min and max (OpenFOAM-12 has none);
- fixed work's linear-solver tolerance 0 becomes 1e-30 (see ``_tolerances``);
- the incompressible steady and transient solvers are solver modules run by ``foamRun``:
  simpleFoam becomes ``incompressibleFluid`` (``application foamRun; solver
  incompressibleFluid;`` in controlDict); OpenFOAM-12 keeps icoFoam and laplacianFoam as legacy
  solvers, which read ``physicalProperties``.

- interFoam becomes ``incompressibleVoF``: ``phaseProperties`` and
  ``physicalProperties.<phase>``, the interface compression in the alpha scheme.

The motorbike's feature edges come from ``surfaceFeatures`` with a ``surfaceFeaturesDict``
written from the template's ``surfaceFeatureExtractDict`` (``surface_features``).
"""

from __future__ import annotations

import re
from pathlib import Path

from foamlib import FoamFile

from cases.errors import CaseError

ESI, ORG = "esi", "org"
# Bumped when ``adapt`` changes what it writes: part of the prepared-case cache key.
ADAPT_VERSION = 10
# Solvers that OpenFOAM-12 runs as a module of foamRun.
MODULES = {"simpleFoam": "incompressibleFluid", "interFoam": "incompressibleVoF"}
# Solvers OpenFOAM-12 still has as applications (applications/legacy).
LEGACY = {"icoFoam", "laplacianFoam"}
KINEMATIC = "[0 2 -1 0 0 0 0]"  # m^2/s: nu and DT

HEADER = """FoamFile
{{
    format      ascii;
    class       dictionary;
    location    "constant";
    object      {name};
}}

"""


def of_environment(env: dict) -> str:
    """ESI or the Foundation, from the environment's WM_PROJECT_VERSION (v1912, v2512: ESI;
    12: the Foundation)."""
    version = env.get("WM_PROJECT_VERSION", "")
    return ORG if version[:1].isdigit() else ESI


def executable(solver: str, flavour: str) -> str:
    """What runs the case: the solver, or foamRun for a Foundation solver module."""
    return "foamRun" if flavour == ORG and solver in MODULES else solver


def supported(solver: str, flavour: str) -> bool:
    return flavour == ESI or solver in MODULES or solver in LEGACY


def adapt(work: Path, case_name: str, solver: str, flavour: str) -> None:
    """Rewrite the rendered case in ``work`` for ``flavour`` (nothing to do for ESI)."""
    if flavour == ESI:
        return
    if not supported(solver, flavour):
        raise CaseError(
            f"{case_name} ({solver}) has no OpenFOAM-12 form yet -- run it on an ESI "
            f"OpenFOAM (v1912), or see cases/README.md for the cases OpenFOAM-12 runs"
        )
    constant = work / "constant"
    transport = constant / "transportProperties"
    if solver == "interFoam":
        _two_phases(work)
    elif transport.exists():
        entries = FoamFile(transport).as_dict()
        lines = []
        if "nu" in entries:
            lines += [
                "viscosityModel  constant;",
                f"nu              {KINEMATIC} {_value(entries['nu'])};",
            ]
        if "DT" in entries:
            # laplacianFoam names the scheme laplacian(DT,T) after the entry's own name.
            lines.append(f"DT              DT {KINEMATIC} {_value(entries['DT'])};")
        _write(constant / "physicalProperties", "physicalProperties", lines)
        transport.unlink()
    turbulence = constant / "turbulenceProperties"
    if turbulence.exists():
        text = turbulence.read_text()
        text = text.replace("object      turbulenceProperties;", "object      momentumTransport;")
        text = text.replace("RASModel ", "model    ").replace("LESModel ", "model    ")
        (constant / "momentumTransport").write_text(text)
        turbulence.unlink()
    elif solver in MODULES:
        _write(constant / "momentumTransport", "momentumTransport", ["simulationType  laminar;"])
    control = FoamFile(work / "system" / "controlDict")
    if solver in MODULES:
        control["application"] = "foamRun"
        control["solver"] = MODULES[solver]
    _min_max_functions(control)
    _tolerances(FoamFile(work / "system" / "fvSolution"))


def surface_features(work: Path, flavour: str) -> str:
    """The feature-edge tool for ``flavour``, its dictionary written if need be: ESI's
    surfaceFeatureExtract, or OpenFOAM-12's surfaceFeatures (surfaceFeatureExtract is a stub
    there) with the same surfaces, angle and subsets."""
    if flavour == ESI:
        return "surfaceFeatureExtract"
    extract = FoamFile(work / "system" / "surfaceFeatureExtractDict").as_dict()
    surfaces = [name for name, spec in extract.items() if isinstance(spec, dict)]
    first = extract[surfaces[0]]
    subset = first.get("subsetFeatures", {})
    lines = [
        f"surfaces        ({' '.join(f'{chr(34)}{s}{chr(34)}' for s in surfaces)});",
        f"includedAngle   {first.get('includedAngle', 150)};",
        "subsetFeatures",
        "{",
        f"    nonManifoldEdges {'yes' if subset.get('nonManifoldEdges') else 'no'};",
        f"    openEdges       {'yes' if subset.get('openEdges', True) else 'no'};",
        "}",
        "trimFeatures",
        "{",
        "    minElem         0;",
        "    minLen          0;",
        "}",
        "writeObj        yes;",
    ]
    # OpenFOAM-12 names a surface by its key and reads the file from 'file'.
    snappy = work / "system" / "snappyHexMeshDict"
    if snappy.exists():
        snappy.write_text(
            re.sub(
                r"(\n\s*)(\S+\.(?:obj|stl))(\s*\{\s*type\s+triSurfaceMesh;\s*)name\s+(\w+);",
                lambda m: f'{m[1]}{m[4]}{m[3]}file "{m[2]}";',
                snappy.read_text(),
            ).replace("type box;", "type searchableBox;")  # ESI's short name
        )
    # OpenFOAM-12 keeps the mesh quality defaults under caseDicts/mesh/generation.
    quality = work / "system" / "meshQualityDict"
    if quality.exists():
        quality.write_text(
            quality.read_text().replace(
                '#includeEtc "caseDicts/meshQualityDict"',
                '#includeEtc "caseDicts/mesh/generation/meshQualityDict"',
            )
        )
    path = work / "system" / "surfaceFeaturesDict"
    _write(path, "surfaceFeaturesDict", lines)
    path.write_text(path.read_text().replace('location    "constant"', 'location    "system"'))
    return "surfaceFeatures"


def _two_phases(work: Path) -> None:
    """interFoam's transportProperties as incompressibleVoF's phaseProperties and
    physicalProperties.<phase>; the interface compression moves from cAlpha (fvSolution)
    into the alpha scheme (fvSchemes)."""
    transport = work / "constant" / "transportProperties"
    entries = FoamFile(transport).as_dict()
    phases = list(entries["phases"])
    _write(
        work / "constant" / "phaseProperties",
        "phaseProperties",
        [f"phases          ({' '.join(phases)});", f"sigma           {_value(entries['sigma'])};"],
    )
    for phase in phases:
        _write(
            work / "constant" / f"physicalProperties.{phase}",
            f"physicalProperties.{phase}",
            [
                "viscosityModel  constant;",
                f"nu              {KINEMATIC} {_value(entries[phase]['nu'])};",
                f"rho             [1 -3 0 0 0 0 0] {_value(entries[phase]['rho'])};",
            ],
        )
    transport.unlink()
    solution = FoamFile(work / "system" / "fvSolution")
    c_alpha = 1.0
    for name, spec in (solution.as_dict().get("solvers") or {}).items():
        if isinstance(spec, dict) and "cAlpha" in spec:
            c_alpha = float(spec["cAlpha"])
            del solution["solvers", name, "cAlpha"]
    schemes = FoamFile(work / "system" / "fvSchemes")
    div = schemes.as_dict()["divSchemes"]
    scheme = div.get("div(phi,alpha)", ("Gauss", "vanLeer"))
    limiter = scheme[-1] if isinstance(scheme, (list, tuple)) else str(scheme).split()[-1]
    schemes["divSchemes", "div(phi,alpha)"] = ("Gauss", "interfaceCompression", limiter, c_alpha)
    if "div(phirb,alpha)" in div:
        del schemes["divSchemes", "div(phirb,alpha)"]


def _min_max_functions(control: FoamFile) -> None:
    """OpenFOAM-12 has no fieldMinMax: a volFieldValue min and max per field instead (they log
    'min(all) of T = ...' and 'max(all) of T = ...')."""
    functions = control.as_dict().get("functions") or {}
    for name, spec in list(functions.items()):
        if not isinstance(spec, dict) or spec.get("type") != "fieldMinMax":
            continue
        del control["functions", name]
        for field in spec.get("fields", []):
            for operation in ("min", "max"):
                control["functions", f"{field}{operation.title()}"] = {
                    "type": "volFieldValue",
                    "libs": ['"libfieldFunctionObjects.so"'],  # a quoted string
                    "fields": [field],
                    "select": "all",
                    "operation": operation,
                    "writeFields": False,
                    "log": True,
                    "writeControl": "timeStep",
                    "writeInterval": 1,
                }


#: Fixed work's tolerance on OpenFOAM-12: far below double precision (1e-16), so the solution
#: is what tolerance 0 gives, and far above the residuals at which PCG's products underflow.
FIXED_WORK_TOLERANCE = 1e-30


def _tolerances(solution: FoamFile) -> None:
    """Fixed work's tolerance 0 becomes FIXED_WORK_TOLERANCE. OpenFOAM-12's PCG divides by
    the previous residual product, and with a tolerance of 0 (or 1e-300) it iterates a small
    system until that product is 0 and stops with a floating-point exception (cavity3D at
    step 95 of 100 on two ranks, when GAMG's coarsest level was solved to GAMG's tolerance 0;
    fixed work now leaves GAMG its own). minIter = maxIter still fix the iterations."""
    for name, spec in (solution.as_dict().get("solvers") or {}).items():
        if isinstance(spec, dict) and spec.get("tolerance") == 0:
            solution["solvers", name, "tolerance"] = FIXED_WORK_TOLERANCE


def _value(entry) -> str:
    """The number of a v1912 entry: ``1e-05`` or ``nu [0 2 -1 0 0 0 0] 1e-05``."""
    value = entry[-1] if isinstance(entry, (list, tuple)) else entry
    return repr(float(getattr(value, "value", value)))


def _write(path: Path, name: str, lines: list[str]) -> None:
    path.write_text(HEADER.format(name=name) + "\n".join(lines) + "\n")
