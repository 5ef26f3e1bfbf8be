"""An OpenFOAM tutorial meshed and SCOTCH-decomposed as it is: the raw decompositions the
rankmap tests and benchmark read (the benchmark cases themselves are ``prepare``'s)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from cases.errors import CaseError
from cases.prepare import tutorials_dir


def decompose_tutorial(
    tutorial: str,
    dest: Path,
    parts: int,
    *,
    cells=None,
    cell_dist_only: bool = False,
    env: dict | None = None,
) -> Path:
    """``tutorial`` (a path under the OpenFOAM tutorials) copied to ``dest``, meshed with
    blockMesh and SCOTCH-decomposed into ``parts`` subdomains; ``cells`` = (nx, ny, nz)
    resizes a single-block mesh. With ``cell_dist_only`` only the cell distribution is
    written (``-dry-run -cellDist``). ``env`` is an OpenFOAM environment (default: ours)."""
    from foamlib import FoamFile

    env = dict(os.environ if env is None else env)
    if "WM_PROJECT_DIR" not in env:
        raise CaseError(
            "no OpenFOAM environment (WM_PROJECT_DIR is not set) -- load one, "
            "or on the local site run through ./bench"
        )
    source = Path(tutorials_dir(env)) / tutorial
    if not source.is_dir():
        raise CaseError(
            f"tutorial {source} is missing -- install the OpenFOAM tutorials "
            f"(Debian: openfoam-examples) or set FOAM_TUTORIALS"
        )
    shutil.copytree(source, dest)
    if cells:
        mesh = FoamFile(dest / "system" / "blockMeshDict")
        blocks = list(mesh["blocks"])
        blocks[2] = list(cells)
        mesh["blocks"] = blocks
    decompose = FoamFile(dest / "system" / "decomposeParDict")
    decompose["numberOfSubdomains"] = parts
    decompose["method"] = "scotch"
    decompose_args = ["-dry-run", "-cellDist"] if cell_dist_only else ["-force"]
    for app, args in (("blockMesh", []), ("decomposePar", decompose_args)):
        done = subprocess.run(
            [app, *args, "-case", str(dest)], env=env, capture_output=True, text=True
        )
        (dest / f"log.{app}").write_text(done.stdout + done.stderr)
        if done.returncode != 0:
            raise CaseError(
                f"{app} failed for {dest} -- see {dest / f'log.{app}'}:\n{done.stdout[-1500:]}"
            )
    return dest
