"""Case templates: the files under ``cases/<template>/`` rendered for one size.

A template is an OpenFOAM case whose dictionaries hold ``@name@`` placeholders (block cell
counts, patch types, refinement levels). Files named ``<file>.2D`` / ``<file>.3D`` are the
variant of ``<file>`` for that geometry; the other variant's files are left out.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from foamlib import FoamFile

from cases.errors import CaseError

ROOT = Path(__file__).resolve().parent
VARIANTS = ("2D", "3D")
_PLACEHOLDER = re.compile(r"@([A-Za-z][A-Za-z0-9]*)@")


def template_files(template: str, variant: str | None) -> dict[str, Path]:
    """Relative path in the case -> file in the template, with variant files in place."""
    base = ROOT / template
    if not (base / "system").is_dir():
        raise CaseError(f"template folder {base} has no system/ -- the checkout is incomplete")
    chosen: dict[str, Path] = {}
    for path in sorted(p for p in base.rglob("*") if p.is_file()):
        rel = path.relative_to(base).as_posix()
        stem, dot, suffix = rel.rpartition(".")
        if dot and suffix in VARIANTS:
            if suffix == variant:
                chosen[stem] = path
            continue
        chosen.setdefault(rel, path)
    return chosen


def render(template: str, variant: str | None, params: dict, dest: Path) -> None:
    """Write the template into ``dest`` with every placeholder replaced from ``params``."""
    for rel, src in template_files(template, variant).items():
        out = dest / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        try:
            text = src.read_text()
        except UnicodeDecodeError:
            shutil.copyfile(src, out)
            continue
        missing = sorted({m for m in _PLACEHOLDER.findall(text) if m not in params})
        if missing:
            raise CaseError(
                f"{src}: no value for placeholder(s) {', '.join(missing)} -- "
                f"the case definition in cases/catalog.py must set them"
            )
        out.write_text(_PLACEHOLDER.sub(lambda m: str(params[m.group(1)]), text))


def hex_blocks(dict_path: Path) -> tuple[FoamFile, list[tuple[object, tuple[int, int, int]]]]:
    """(the dictionary, its hex blocks as (the token after ``hex``: the vertex labels, the
    cell counts)) of a blockMeshDict: the one walk of its ``blocks`` entry. CaseError for a
    dictionary that cannot be read, a block without cell counts, or no hex block at all."""
    try:
        mesh_dict = FoamFile(dict_path)
        tokens = list(mesh_dict["blocks"])
    except FileNotFoundError:
        raise CaseError(f"{dict_path} is missing -- the case needs a blockMeshDict") from None
    except Exception as e:
        raise CaseError(
            f"{dict_path}: cannot read 'blocks' ({e}) -- check the dictionary "
            f"with 'foamDictionary -entry blocks {dict_path}'"
        ) from None
    blocks = []
    i = 0
    while i < len(tokens):
        if tokens[i] != "hex":
            i += 1
            continue
        # hex (v0 .. v7) [zone] (nx ny nz) grading (...)
        j = i + 2
        while j < len(tokens) and not is_cell_counts(tokens[j]):
            j += 1
        if j == len(tokens):
            raise CaseError(
                f"{dict_path}: block {len(blocks)} has no (nx ny nz) cell counts -- correct "
                f"the blocks entry"
            )
        blocks.append((tokens[i + 1], tuple(tokens[j])))
        i = j + 1
    if not blocks:
        raise CaseError(f"{dict_path}: no hex blocks found -- only hex blocks are supported")
    return mesh_dict, blocks


def blockmesh_cells(case_dir: Path) -> int:
    """Cells that blockMesh makes from ``system/blockMeshDict``: the sum of nx*ny*nz per block."""
    _, blocks = hex_blocks(Path(case_dir) / "system" / "blockMeshDict")
    return sum(nx * ny * nz for _, (nx, ny, nz) in blocks)


def is_cell_counts(token) -> bool:
    return (
        isinstance(token, (list, tuple))
        and len(token) == 3
        and all(isinstance(n, int) and not isinstance(n, bool) for n in token)
    )
