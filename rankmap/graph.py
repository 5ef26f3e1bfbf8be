"""The communication graph of a decomposed case: a vertex per subdomain, an edge per
processor patch, weighted by its number of faces (the halo volume of one exchange)."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rankmap.errors import InputError


@dataclass
class CommGraph:
    """Symmetric weighted graph in CSR form (SCOTCH's layout, base 0, 32-bit)."""

    xadj: np.ndarray  # int32, n+1
    adjncy: np.ndarray  # int32, arcs
    adjwgt: np.ndarray  # int32, arcs
    source: str = ""

    @property
    def n(self) -> int:
        return len(self.xadj) - 1

    @classmethod
    def from_arcs(cls, n: int, u, v, w, source: str = "") -> CommGraph:
        """From arcs given in both directions (u->v and v->u); duplicates are summed."""
        u, v, w = (np.asarray(a, dtype=np.int64) for a in (u, v, w))
        keep = u != v
        u, v, w = u[keep], v[keep], w[keep]
        key = u * n + v
        order = np.argsort(key, kind="stable")
        key, w = key[order], w[order]
        uniq, start = np.unique(key, return_index=True)
        wsum = np.add.reduceat(w, start) if len(w) else w
        uu, vv = uniq // n, uniq % n
        xadj = np.zeros(n + 1, dtype=np.int32)
        np.add.at(xadj, uu + 1, 1)
        xadj = np.cumsum(xadj, dtype=np.int64).astype(np.int32)
        return cls(xadj, vv.astype(np.int32), wsum.astype(np.int32), source)

    def arcs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(u, v, w) for every arc, each edge twice."""
        u = np.repeat(np.arange(self.n, dtype=np.int64), np.diff(self.xadj))
        return u, self.adjncy.astype(np.int64), self.adjwgt.astype(np.int64)

    def edges(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(u, v, w) for every edge once, u < v."""
        u, v, w = self.arcs()
        once = u < v
        return u[once], v[once], w[once]

    def split(self, parts: np.ndarray, nparts: int) -> list[tuple[np.ndarray, CommGraph]]:
        """Each part's vertices (ascending) and induced subgraph, in one pass over the arcs."""
        parts = np.asarray(parts, dtype=np.int64)
        members = np.argsort(parts, kind="stable")
        counts = np.bincount(parts, minlength=nparts)
        starts = np.concatenate([[0], np.cumsum(counts)])
        local = np.empty(self.n, dtype=np.int64)
        local[members] = np.arange(self.n) - starts[parts[members]]
        u, v, w = self.arcs()
        keep = parts[u] == parts[v]
        u, v, w = u[keep], v[keep], w[keep]
        order = np.argsort(parts[u], kind="stable")
        u, v, w = u[order], v[order], w[order]
        bounds = np.searchsorted(parts[u], np.arange(nparts + 1))
        pieces = []
        for p in range(nparts):
            lo, hi = bounds[p], bounds[p + 1]
            pieces.append(
                (
                    members[starts[p] : starts[p + 1]],
                    CommGraph.from_arcs(int(counts[p]), local[u[lo:hi]], local[v[lo:hi]], w[lo:hi]),
                )
            )
        return pieces

    def check_symmetric(self) -> None:
        """Each A->B weight must equal B->A; raise naming the first mismatches."""
        u, v, w = self.arcs()
        fwd = dict(zip(zip(u.tolist(), v.tolist()), w.tolist()))
        bad = [(a, b, f, fwd.get((b, a), 0)) for (a, b), f in fwd.items() if fwd.get((b, a)) != f]
        if bad:
            shown = "; ".join(
                f"processor{a}->processor{b}: {f} faces, back: {r}" for a, b, f, r in bad[:5]
            )
            raise InputError(
                f"{self.source}: {len(bad)} asymmetric processor patch(es): {shown} "
                f"-- the decomposition is inconsistent: run decomposePar -force again"
            )


def from_processor_dirs(case: Path) -> CommGraph:
    """Read processor*/constant/polyMesh/boundary of a decomposed case."""
    from foamlib import FoamFile

    case = Path(case)
    dirs = {
        int(m.group(1)): p
        for p in case.glob("processor*")
        if (m := re.fullmatch(r"processor(\d+)", p.name))
    }
    if not dirs:
        raise InputError(
            f"{case}: no processor* folders -- decompose the case first "
            f"(decomposePar), or give the cell distribution with --cell-dist"
        )
    n = max(dirs) + 1
    missing = sorted(set(range(n)) - set(dirs))
    if missing:
        raise InputError(
            f"{case}: processor folders missing: {_ranges(missing)} of 0-{n - 1} "
            f"-- the decomposition is partial: run decomposePar -force again"
        )
    u, v, w = [], [], []
    for proc in range(n):
        if n >= 512 and proc and proc % (n // 10) == 0:
            print(f"rankmap: read {proc}/{n} processor boundaries", file=sys.stderr, flush=True)
        boundary = dirs[proc] / "constant" / "polyMesh" / "boundary"
        try:
            patches = FoamFile(boundary)[None]
        except FileNotFoundError:
            raise InputError(
                f"{boundary} is missing -- the decomposition is partial: "
                f"run decomposePar -force again"
            ) from None
        except Exception as e:
            raise InputError(
                f"{boundary}: cannot read it ({e}) -- run decomposePar -force again"
            ) from None
        for name, patch in patches:
            if not isinstance(patch, dict) or patch.get("type") not in (
                "processor",
                "processorCyclic",
            ):
                continue
            nb = patch.get("neighbProcNo")
            if not isinstance(nb, int) or not 0 <= nb < n or nb == proc:
                raise InputError(
                    f"{boundary}: patch {name} has neighbProcNo {nb}, not a "
                    f"processor in 0-{n - 1} -- run decomposePar -force again"
                )
            u.append(proc)
            v.append(nb)
            w.append(int(patch.get("nFaces", 0)))
    graph = CommGraph.from_arcs(n, u, v, w, source=str(case))
    graph.check_symmetric()
    return graph


def from_cell_dist(case: Path) -> CommGraph:
    """The graph from a cell-to-processor distribution, without processor folders.

    Reads ``constant/cellDecomposition`` (``decomposePar -cellDist``) or ``0/cellDist``
    (``decomposePar -dry-run -cellDist``), and the mesh's owner/neighbour lists: an internal
    face between cells on processors p != q is a face of the p-q processor patch. Faces of
    cyclic patches whose two sides lie on different processors count too (decomposePar makes
    processorCyclic patches of them).
    """
    from foamlib import FoamFieldFile, FoamFile

    case = Path(case)
    mesh = case / "constant" / "polyMesh"
    label_list = case / "constant" / "cellDecomposition"
    field = case / "0" / "cellDist"
    fix = "write it again with 'decomposePar -dry-run -cellDist'"
    if label_list.is_file():
        source = label_list
    elif field.is_file():
        source = field
    else:
        raise InputError(
            f"{case}: no constant/cellDecomposition or 0/cellDist -- write one "
            f"with 'decomposePar -dry-run -cellDist'"
        )
    reading = source
    try:
        if source == label_list:
            raw = np.asarray(FoamFile(label_list)[None], dtype=float)
        else:
            raw = np.asarray(FoamFieldFile(field).internal_field, dtype=float)
        reading = mesh / "owner"
        owner = np.asarray(FoamFile(reading)[None], dtype=np.int64)
        reading = mesh / "neighbour"
        neighbour = np.asarray(FoamFile(reading)[None], dtype=np.int64)
        reading = mesh / "boundary"
        patches = FoamFile(reading)[None]
    except FileNotFoundError:
        # foamlib's error may name no file: the one being read is the one missing
        raise InputError(
            f"{reading} is missing -- the case needs its mesh (constant/polyMesh)"
        ) from None
    except Exception as e:  # foamlib's parse errors: truncated, binary or not a list
        what = "write the mesh again" if reading.parent == mesh else fix
        raise InputError(
            f"{reading}: cannot be read as an OpenFOAM list ({type(e).__name__}) -- {what}"
        ) from None
    if raw.ndim != 1 or raw.size == 0:
        raise InputError(f"{source}: holds no per-cell processor numbers -- {fix}")
    if not np.all(np.isfinite(raw)) or np.any(raw != np.rint(raw)):
        raise InputError(f"{source}: holds values that are not whole processor numbers -- {fix}")
    dist = raw.astype(np.int64)
    if dist.min() < 0:
        raise InputError(f"{source}: processor number {int(dist.min())} is negative -- {fix}")
    cells = int(owner.max()) + 1 if owner.size else 0
    if len(dist) != cells:
        raise InputError(
            f"{case}: the cell distribution has {dist.size} cells, the mesh "
            f"{cells} -- write it again for this mesh"
        )
    empty = np.flatnonzero(np.bincount(dist) == 0)
    if empty.size:
        raise InputError(
            f"{source}: processor(s) {_ranges(empty.tolist())} own no cells (of "
            f"{int(dist.max()) + 1}) -- decompose again into fewer subdomains"
        )
    n = int(dist.max()) + 1
    internal = len(neighbour)
    a, b = dist[owner[:internal]], dist[neighbour]
    us, vs = [a, b], [b, a]
    by_name = {name: patch for name, patch in patches if isinstance(patch, dict)}
    for _name, patch in by_name.items():
        if patch.get("type") != "cyclic" or "neighbourPatch" not in patch:
            continue
        other = by_name[patch["neighbourPatch"]]
        start, size, nb_start = (
            int(patch["startFace"]),
            int(patch["nFaces"]),
            int(other["startFace"]),
        )
        us.append(dist[owner[start : start + size]])
        vs.append(dist[owner[nb_start : nb_start + size]])
    u, v = np.concatenate(us), np.concatenate(vs)
    cut = u != v
    return CommGraph.from_arcs(
        n, u[cut], v[cut], np.ones(int(cut.sum()), dtype=np.int64), source=str(case)
    )


def from_parts(xadj, adjncy, parts, source: str = "") -> CommGraph:
    """The graph of a cell graph's decomposition (``parts``: each cell's processor): every
    internal face between two processors is a face of their processor patch."""
    parts = np.asarray(parts, dtype=np.int64)
    n = int(parts.max()) + 1 if parts.size else 0
    owner = np.repeat(parts, np.diff(np.asarray(xadj, dtype=np.int64)))
    other = parts[np.asarray(adjncy, dtype=np.int64)]
    cut = owner != other
    key = owner[cut] * n + other[cut]
    faces = np.bincount(key, minlength=n * n) if n * n <= 1 << 26 else None
    if faces is not None:
        pairs = np.flatnonzero(faces)
        return CommGraph.from_arcs(n, pairs // n, pairs % n, faces[pairs], source=source)
    pairs, counts = np.unique(key, return_counts=True)
    return CommGraph.from_arcs(n, pairs // n, pairs % n, counts, source=source)


def from_case(case: Path) -> CommGraph:
    """From processor folders when there are any, else from a cell distribution."""
    case = Path(case)
    if any(case.glob("processor[0-9]*")):
        return from_processor_dirs(case)
    return from_cell_dist(case)


EDGES_HEADER = "rank,neighbour,faces"


def write_edges(graph: CommGraph, path: Path) -> Path:
    """The graph as an edge list (``rank,neighbour,faces``, each processor patch once): what
    a run keeps of its decomposition, for the time-per-step model (topofoam.prediction.model)."""
    Path(path).write_text(edges_text(graph))
    return Path(path)


def edges_text(graph: CommGraph) -> str:
    """What ``write_edges`` writes."""
    u, v, w = graph.edges()
    lines = [f"# ranks {graph.n}; from {graph.source}", EDGES_HEADER]
    lines += [f"{a},{b},{c}" for a, b, c in zip(u.tolist(), v.tolist(), w.tolist())]
    return "\n".join(lines) + "\n"


#: The most ranks a graph may have: 32 times the 131,072 ranks rankmap's bench places (its
#: arrays a few GiB). A header that claims more (an edited or damaged file) is refused
#: before anything is allocated for it.
MAX_RANKS = 1 << 22


def read_edges(path: Path) -> CommGraph:
    """An edge list written by ``write_edges``."""
    path = Path(path)
    try:
        lines = path.read_text().splitlines()
    except OSError as e:
        raise InputError(f"cannot read the edge list {path} ({e.strerror})") from None
    head = re.match(r"^# ranks (\d+);", lines[0]) if lines else None
    if not head or len(lines) < 2 or lines[1] != EDGES_HEADER:
        raise InputError(
            f"{path} is not an edge list of 'python -m rankmap graph' (first lines "
            f"'# ranks N; ...' and '{EDGES_HEADER}') -- write it again with that command"
        )
    n = int(head.group(1))
    if not 1 <= n <= MAX_RANKS:
        raise InputError(
            f"{path} declares {n:,} ranks ('# ranks {n};'), outside 1 to {MAX_RANKS:,} -- "
            f"write it again with 'python -m rankmap graph'"
        )
    u, v, w = [], [], []
    for number, line in enumerate(lines[2:], start=3):
        try:
            a, b, c = (int(x) for x in line.split(","))
        except ValueError:
            raise InputError(
                f"{path}:{number}: {line!r} is not 'rank,neighbour,faces' -- write the file "
                f"again with 'python -m rankmap graph'"
            ) from None
        if not (0 <= a < n and 0 <= b < n and a != b and c >= 0):
            raise InputError(
                f"{path}:{number}: {line!r} names a rank outside 0-{n - 1}, one rank twice or "
                f"negative faces -- write the file again with 'python -m rankmap graph'"
            )
        u += [a, b]
        v += [b, a]
        w += [c, c]
    return CommGraph.from_arcs(n, u, v, w, source=str(path))


def grid(nx: int, ny: int, nz: int = 1, faces: tuple[int, int, int] = (64, 64, 64)) -> CommGraph:
    """The graph of a structured nx*ny*nz block decomposition (benchmarks, tests)."""
    idx = np.arange(nx * ny * nz).reshape(nz, ny, nx)
    us, vs, ws = [], [], []
    for axis, f in zip((2, 1, 0), faces):
        a = np.take(idx, range(0, idx.shape[axis] - 1), axis=axis).ravel()
        b = np.take(idx, range(1, idx.shape[axis]), axis=axis).ravel()
        us += [a, b]
        vs += [b, a]
        ws += [np.full(len(a), f), np.full(len(a), f)]
    n = nx * ny * nz
    if not us or sum(len(x) for x in us) == 0:
        return CommGraph.from_arcs(n, [], [], [], source=f"grid {nx}x{ny}x{nz}")
    return CommGraph.from_arcs(
        n, np.concatenate(us), np.concatenate(vs), np.concatenate(ws), source=f"grid {nx}x{ny}x{nz}"
    )


def _ranges(values: list[int]) -> str:
    out, start = [], None
    for i, x in enumerate(values):
        if start is None:
            start = x
        if i + 1 == len(values) or values[i + 1] != x + 1:
            out.append(f"{start}" if start == x else f"{start}-{x}")
            start = None
    return ", ".join(out[:10]) + (" ..." if len(out) > 10 else "")
