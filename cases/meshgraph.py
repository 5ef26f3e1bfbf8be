"""The cell graph of a blockMesh case, derived from its blockMeshDict without meshing.

A decomposition at the papers' sizes (9 to 30 M cells) needs the mesh's cell graph, which
SCOTCH partitions; blockMesh and decomposePar at those sizes need more memory than a 2-core
machine has. blockMesh's mesh is fully determined by its blocks: cells numbered block by
block, i fastest, then j, then k, and two blocks joined where a face of each has the same
four vertex labels (its default topological merge). This module builds that graph from the
blocks alone; ``internal_pairs`` of a real blockMesh run are the same pairs (tested, and
measured at the largest size this machine meshes: ``python -m localsite.publishedbench``).

What it does not derive refuses in one line: curved or projected geometry changes no
topology and is ignored, but ``mergePatchPairs`` (non-conforming joins), collapsed hexes
(a vertex twice) and blocks whose shared faces disagree in their cell counts are refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from foamlib import FoamFile

from cases.errors import CaseError
from cases.template import hex_blocks

# The faces of OpenFOAM's hex model by local vertex numbers; vertex v sits at local
# (i, j, k) = _CORNER[v] in units of the block's extent.
_CORNER = ((0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0), (0, 0, 1), (1, 0, 1), (1, 1, 1), (0, 1, 1))
_FACES = ((0, 3, 7, 4), (1, 2, 6, 5), (0, 1, 5, 4), (3, 2, 6, 7), (0, 1, 2, 3), (4, 5, 6, 7))


@dataclass(frozen=True)
class Block:
    vertices: tuple[int, ...]  # 8 global vertex labels
    counts: tuple[int, int, int]  # cells along i, j, k


@dataclass(frozen=True)
class CellGraph:
    """The mesh's cells and their internal faces, in compressed rows (both directions)."""

    xadj: np.ndarray  # int64, cells + 1
    adjncy: np.ndarray  # int32
    source: str

    @property
    def cells(self) -> int:
        return len(self.xadj) - 1

    n = cells  # what SCOTCH's wrapper reads

    @property
    def faces(self) -> int:
        return len(self.adjncy) // 2


def read_blocks(dict_path: Path) -> list[Block]:
    """The hex blocks of a blockMeshDict; one line for what cannot be derived."""
    dict_path = Path(dict_path)
    mesh_dict, found = hex_blocks(dict_path)
    if "mergePatchPairs" in mesh_dict and len(mesh_dict["mergePatchPairs"] or []) > 0:
        raise CaseError(
            f"{dict_path}: mergePatchPairs joins blocks non-conformingly -- the cell graph "
            f"is derived for conforming blocks only; mesh the case and read its graph"
        )
    blocks: list[Block] = []
    for n, (verts, counts) in enumerate(found):
        if not _vertices(verts):
            raise CaseError(
                f"{dict_path}: block {n} is not 'hex (8 vertex labels) (nx ny nz)' "
                f"-- correct the blocks entry"
            )
        if len(set(verts)) != 8:
            raise CaseError(
                f"{dict_path}: block {n} repeats a vertex {tuple(verts)} (a collapsed "
                f"hex) -- the cell graph is derived for full hexes only; mesh the case instead"
            )
        if min(counts) < 1:
            raise CaseError(
                f"{dict_path}: block {n} has cell counts {counts} -- each must be 1 or more"
            )
        blocks.append(Block(tuple(verts), counts))
    return blocks


def _vertices(token) -> bool:
    return (
        isinstance(token, (list, tuple))
        and len(token) == 8
        and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in token)
    )


def _face_cells(block: Block, offset: int, face: tuple[int, ...]):
    """(key, cells) of one block face: the face's four global labels (sorted), and its cells
    ordered on canonical axes (from the corner of lowest label towards the adjacent corners,
    lower label first), so that two blocks sharing the face order its cells alike."""
    labels = [block.vertices[v] for v in face]
    corners = [_CORNER[v] for v in face]
    c0 = int(np.argmin(labels))
    # The face's corners go round it: the two beside c0 share an edge with it.
    side = sorted(((c0 + 1) % 4, (c0 + 3) % 4), key=lambda c: labels[c])
    ni, nj, nk = block.counts
    idx = np.arange(ni * nj * nk, dtype=np.int64).reshape(nk, nj, ni) + offset  # [k, j, i]
    fixed = next(a for a in range(3) if corners[0][a] == corners[1][a] == corners[2][a])
    idx = np.take(idx, -1 if corners[0][fixed] else 0, axis=2 - fixed)  # drop that axis
    free = [a for a in range(3) if a != fixed]  # remaining axes, idx is [.., ..] reversed

    def axis_of(c):
        return next(a for a in range(3) if corners[c][a] != corners[c0][a])

    order = []
    for c in side:
        a = axis_of(c)
        order.append(a)
        if corners[c0][a]:  # the corner sits at the far end: count from there
            idx = np.flip(idx, axis=1 - free.index(a))
    # idx's axes are (free[1], free[0]); the key wants (side[0]'s axis, side[1]'s axis)
    if order != [free[1], free[0]]:
        idx = idx.T
    return tuple(sorted(labels)), idx


def cell_graph(dict_path: Path) -> CellGraph:
    """The cell graph of a blockMeshDict's mesh, as blockMesh numbers its cells."""
    dict_path = Path(dict_path)
    blocks = read_blocks(dict_path)
    sizes = [b.counts[0] * b.counts[1] * b.counts[2] for b in blocks]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    us, vs = [], []
    for b, off in zip(blocks, offsets):
        ni, nj, nk = b.counts
        idx = np.arange(ni * nj * nk, dtype=np.int64).reshape(nk, nj, ni) + off
        for axis in (2, 1, 0):
            if idx.shape[axis] > 1:
                us.append(np.take(idx, range(idx.shape[axis] - 1), axis=axis).ravel())
                vs.append(np.take(idx, range(1, idx.shape[axis]), axis=axis).ravel())
    seen: dict[tuple, tuple[int, np.ndarray]] = {}
    for n, (b, off) in enumerate(zip(blocks, offsets)):
        for face in _FACES:
            key, cells = _face_cells(b, int(off), face)
            if key not in seen:
                seen[key] = (n, cells)
                continue
            other, theirs = seen.pop(key)
            if theirs.shape != cells.shape:
                raise CaseError(
                    f"{dict_path}: blocks {other} and {n} share a face with "
                    f"{theirs.shape[0]}x{theirs.shape[1]} and {cells.shape[0]}x"
                    f"{cells.shape[1]} cells -- shared faces need equal cell counts"
                )
            us.append(theirs.ravel())
            vs.append(cells.ravel())
    cells = int(offsets[-1])
    u = np.concatenate(us) if us else np.zeros(0, np.int64)
    v = np.concatenate(vs) if vs else np.zeros(0, np.int64)
    return _rows(cells, np.concatenate([u, v]), np.concatenate([v, u]), str(dict_path))


def _rows(cells: int, u: np.ndarray, v: np.ndarray, source: str) -> CellGraph:
    order = np.argsort(u, kind="stable")
    xadj = np.zeros(cells + 1, dtype=np.int64)
    np.cumsum(np.bincount(u, minlength=cells), out=xadj[1:])
    return CellGraph(xadj, v[order].astype(np.int32), source)


def internal_pairs(graph: CellGraph) -> np.ndarray:
    """The internal faces as sorted (lower, higher) cell pairs, one row each."""
    u = np.repeat(np.arange(graph.cells, dtype=np.int64), np.diff(graph.xadj))
    v = graph.adjncy.astype(np.int64)
    keep = u < v
    pairs = u[keep] * graph.cells + v[keep]
    pairs.sort()
    return pairs


def mesh_graph(poly: Path) -> CellGraph:
    """The cell graph of a mesh no dictionary determines (snappyHexMesh's), from its
    polyMesh folder (a case's constant/polyMesh, or a kept mesh): what SCOTCH partitions."""
    owner, neighbour, cells = _owner_neighbour(poly)
    u, v = owner[: len(neighbour)], neighbour
    return _rows(cells, np.concatenate([u, v]), np.concatenate([v, u]), str(poly))


def mesh_pairs(poly: Path) -> np.ndarray:
    """The same pairs read from a polyMesh folder (owner, neighbour)."""
    owner, neighbour, cells = _owner_neighbour(poly)
    a, b = owner[: len(neighbour)], neighbour
    pairs = np.minimum(a, b) * cells + np.maximum(a, b)
    pairs.sort()
    return pairs


def mesh_cells(poly: Path) -> int:
    """The cells of the mesh in the polyMesh folder ``poly``: its owner file's header note
    (OpenFOAM writes nCells there), else counted from the owner and neighbour lists."""
    try:
        with open(Path(poly) / "owner", "rb") as f:
            head = f.read(4096)
    except FileNotFoundError:
        raise CaseError(f"{poly}: no owner -- mesh the case first") from None
    found = re.search(rb"nCells:\s*(\d+)", head)
    return int(found.group(1)) if found else _owner_neighbour(poly)[2]


def _owner_neighbour(poly: Path) -> tuple[np.ndarray, np.ndarray, int]:
    mesh = Path(poly)
    try:
        owner = np.asarray(FoamFile(mesh / "owner")[None], dtype=np.int64)
        neighbour = np.asarray(FoamFile(mesh / "neighbour")[None], dtype=np.int64)
    except FileNotFoundError:
        raise CaseError(f"{mesh}: no owner or neighbour -- mesh the case first") from None
    return owner, neighbour, int(max(owner.max(), neighbour.max())) + 1
