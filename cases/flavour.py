"""The OpenFOAM a case is prepared for: ESI's (v1912, v2512) or the Foundation's (12).

The templates are written in ESI v1912 syntax. For the Foundation's OpenFOAM-12 a rendered case
is rewritten (``adapt``):

- ``constant/transportProperties`` becomes ``constant/physicalProperties`` (``viscosityModel
  constant`` and ``nu``, or ``DT`` for laplacianFoam), with dimensions;
- ``constant/turbulenceProperties`` becomes ``constant/momentumTransport`` (``model`` for
  ``RASModel``);
- fieldMinMax function objects become volFieldValue min and max (OpenFOAM-12 has none);
- fixed work's linear-solver tolerance 0 becomes 1e-300 (see ``_tolerances``);
- the incompressible steady and transient solvers are solver modules run by ``foamRun``:
  simpleFoam becomes ``incompressibleFluid`` (``application foamRun; solver
  incompressibleFluid;`` in controlDict); OpenFOAM-12 keeps icoFoam and laplacianFoam as legacy
  solvers, which read ``physicalProperties``.

Cases whose solver has no rewrite here (interFoam, the motorbike's surface feature step) say so
in one line instead of failing inside OpenFOAM.
"""

from __future__ import annotations

from pathlib import Path

from foamlib import FoamFile

from cases.errors import CaseError

ESI, ORG = "esi", "org"
# Bumped when ``adapt`` changes what it writes: part of the prepared-case cache key.
ADAPT_VERSION = 4
# Solvers that OpenFOAM-12 runs as a module of foamRun.
MODULES = {"simpleFoam": "incompressibleFluid"}
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
    if transport.exists():
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


def _tolerances(solution: FoamFile) -> None:
    """Fixed work's tolerance 0 becomes the smallest positive one: OpenFOAM-12's PCG divides
    by the previous residual, which is exactly 0 once a small system (GAMG's coarsest level)
    is solved, and stops with a floating-point exception. minIter = maxIter still fix the
    iterations."""
    for name, spec in (solution.as_dict().get("solvers") or {}).items():
        if isinstance(spec, dict) and spec.get("tolerance") == 0:
            solution["solvers", name, "tolerance"] = 1e-300


def _value(entry) -> str:
    """The number of a v1912 entry: ``1e-05`` or ``nu [0 2 -1 0 0 0 0] 1e-05``."""
    value = entry[-1] if isinstance(entry, (list, tuple)) else entry
    return repr(float(getattr(value, "value", value)))


def _write(path: Path, name: str, lines: list[str]) -> None:
    path.write_text(HEADER.format(name=name) + "\n".join(lines) + "\n")
