"""Seed 001's pressure solvers in a case: every PCG entry of system/fvSolution becomes
PiPePCG or RePiPePCG (the project's series), or ESI's own pipelined PPCG or PPCR (v2006 and
later), keeping its preconditioner, tolerances and iteration limits, so that a variant
differs from the standard run in the solver only.

    python -m topofoam.jobs.solvers CASE PiPePCG|RePiPePCG|PPCG|PPCR [--preconditioner DIC|...]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

SOLVERS = ("PCG", "PiPePCG", "RePiPePCG", "PPCG", "PPCR")


class SolverError(ValueError):
    """The case has no PCG entry to replace, or the file does not parse."""


def use(case: Path, solver: str, preconditioner: str | None = None) -> list[str]:
    """Replace PCG by ``solver`` (and, if given, every such entry's preconditioner) in
    ``case``/system/fvSolution; the names of the entries changed."""
    from foamlib import FoamFile

    if solver not in SOLVERS:
        raise SolverError(f"unknown solver {solver!r} -- choose from {', '.join(SOLVERS)}")
    path = Path(case) / "system" / "fvSolution"
    try:
        solution = FoamFile(path)
        entries = solution["solvers"]
        names = [
            name
            for name in entries
            if isinstance(entries[name], dict) or hasattr(entries[name], "keys")
        ]
        changed = [name for name in names if entries[name].get("solver") == "PCG"]
    except (OSError, KeyError, ValueError) as e:
        raise SolverError(f"{path}: cannot read its solvers ({e})") from None
    if not changed:
        raise SolverError(
            f"{path}: no solver entry uses PCG -- the variant needs a case whose "
            f"pressure equation PCG solves (damBreak2D/3D, hpcCavity3D)"
        )
    for name in changed:
        solution["solvers", name, "solver"] = solver
        if preconditioner:
            solution["solvers", name, "preconditioner"] = preconditioner
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m topofoam.jobs.solvers", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("case", type=Path)
    parser.add_argument("solver", choices=SOLVERS)
    parser.add_argument("--preconditioner")
    args = parser.parse_args(argv)
    try:
        changed = use(args.case, args.solver, args.preconditioner)
    except SolverError as e:
        print(f"solvers: {e}", file=sys.stderr)
        return 2
    print(f"solvers: {', '.join(changed)} -> {args.solver}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
