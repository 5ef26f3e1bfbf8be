"""The model's inputs at the papers' scale: seed 000's cases at their published sizes,
decomposed into the ranks of 2 to 10 nodes (docs/model.md, At the papers' scale).

    graph = decomposition("pitzDaily", "vsc5", 768)     # 19.56 M cells into 768 ranks
    shares = level_shares(graph, "vsc5", 6)              # seed 000 Fig. 5's quantities

A decomposition at 9 to 30 M cells is made as decomposePar's scotch method makes it, without
meshing: the cell graph comes from the blockMeshDict (``cases.meshgraph``, equal to
blockMesh's mesh), SCOTCH partitions it into equal parts (``rankmap.scotch.decompose``), and
the processor patches are the faces cut. It is kept in the cache, keyed by the rendered
blockMeshDict, the ranks and the method; a second call reads it back.
"""

from __future__ import annotations

import functools
import hashlib
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from cases import CASES
from cases.errors import CaseError
from cases.meshgraph import cell_graph, mesh_graph, read_blocks
from cases.template import render
from rankmap import topology
from rankmap.analysis import analyze
from rankmap.errors import InputError
from rankmap.graph import CommGraph, edges_text, from_parts, read_edges
from rankmap.mapping import block, rankmap, socket_cyclic
from rankmap.scotch import decompose
from topofoam import output, paths
from topofoam.prediction.model import ModelError

#: What a decomposition's key holds besides the mesh and the ranks: the method and its
#: settings (rankmap.scotch.decompose). A change to either makes new decompositions.
METHOD = "scotch cmplt default-strategy 0.01 seed 1 / meshgraph 1"
#: Peak memory per cell of deriving and partitioning a mesh's graph, measured by
#: ``python -m localsite.publishedbench`` (docs/timings.md, model.scale): 225 bytes for the
#: 19.56 M-cell 2D pitzDaily, 313 for the 30 M-cell 3D bar; with room for SCOTCH's copies.
BYTES_PER_CELL = {"2D": 260, "3D": 360}


@dataclass(frozen=True)
class Published:
    """One case of seed 000 Table 3 on one system, as the suite's catalog sizes it."""

    case: str  # the catalog's name
    system: str  # vsc5 or hpc2
    cells: int
    geometry: str  # 2D or 3D

    @property
    def ranks_per_node(self) -> int:
        return topology.from_synthetic(topology.PRESETS[self.system]).cores


def published(case: str, system: str) -> Published:
    """The catalog's published size of ``case`` for ``system``; one line when it has none."""
    if case not in CASES:
        raise ModelError(f"unknown case {case!r} -- choose from {', '.join(CASES)}")
    sizes = CASES[case].sizes
    if system not in sizes or system not in topology.PRESETS:
        have = [s for s in sizes if s in topology.PRESETS]
        raise ModelError(
            f"{case} has no published size for {system!r} -- choose from "
            f"{', '.join(have) or 'none (seed 000 ran it nowhere)'}"
        )
    with tempfile.TemporaryDirectory(prefix="topofoam-scale-") as tmp:
        render(CASES[case].template, CASES[case].variant, sizes[system].params, Path(tmp))
        try:
            blocks = read_blocks(Path(tmp) / "system" / "blockMeshDict")
        except CaseError as e:
            raise ModelError(str(e)) from None
    cells = sum(b.counts[0] * b.counts[1] * b.counts[2] for b in blocks)
    # A 2D OpenFOAM mesh is one cell across.
    return Published(case, system, cells, "2D" if all(b.counts[2] == 1 for b in blocks) else "3D")


def _available_bytes() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def check_memory(p: Published, available: int | None = None) -> None:
    """Refuse, in one line, a size whose graph this machine cannot hold."""
    need = p.cells * BYTES_PER_CELL[p.geometry]
    have = available if available is not None else _available_bytes()
    if have is not None and need > have:
        raise ModelError(
            f"{p.case} at {p.cells:,} cells needs about {need / 2**30:.1f} GiB to decompose, "
            f"this machine has {have / 2**30:.1f} GiB available -- run it on a machine with "
            f"more memory, or give the decomposition's edge list (python -m rankmap graph)"
        )


def _key(text: str, ranks: int) -> str:
    return hashlib.sha256(f"{METHOD}\n{ranks}\n{text}".encode()).hexdigest()[:16]


def decomposition(case: str, system: str, ranks: int, *, log=None) -> CommGraph:
    """The processor graph of ``case`` at its published size for ``system`` in ``ranks``
    parts: cached, else derived (a progress line for each stage on ``log``)."""
    log = log or _stderr
    p = published(case, system)
    if not 2 <= ranks <= p.cells:
        raise ModelError(f"{ranks} ranks for {p.cells:,} cells -- give 2 to {p.cells:,}")
    c = CASES[case]
    with tempfile.TemporaryDirectory(prefix="topofoam-scale-") as tmp:
        render(c.template, c.variant, c.sizes[system].params, Path(tmp))
        dict_path = Path(tmp) / "system" / "blockMeshDict"
        kept = _kept(f"{case}-{system}-{ranks}", _key(dict_path.read_text(), ranks))
        if (graph := _read_kept(kept)) is not None:
            return graph
        check_memory(p)
        start = time.monotonic()
        log(f"scale: {case} ({system}, {p.cells:,} cells): the cell graph from its blockMeshDict")
        try:
            mesh = cell_graph(dict_path)
        except CaseError as e:
            raise ModelError(str(e)) from None
    return _partition(mesh, ranks, case, f"{case} {system} {ranks}", kept, start, log)


def mesh_decomposition(poly: Path, ranks: int, *, name: str, log=None) -> CommGraph:
    """The processor graph of the mesh in the polyMesh folder ``poly`` (a mesh no dictionary
    determines: snappyHexMesh's) in ``ranks`` parts, as ``decomposition`` makes it from the
    mesh's own owner and neighbour lists; cached, keyed by them, under ``name``."""
    log = log or _stderr
    poly = Path(poly)
    stamp = []
    for part in ("owner", "neighbour"):
        try:
            st = (poly / part).stat()
        except FileNotFoundError:
            raise ModelError(f"{poly}: no {part} -- mesh the case first") from None
        stamp.append((st.st_ino, st.st_size, st.st_mtime_ns))
    digest = _mesh_digest(str(poly), tuple(stamp))
    kept = _kept(f"{name}-{ranks}", _key(digest, ranks))
    if (graph := _read_kept(kept)) is not None:
        return graph
    start = time.monotonic()
    log(f"scale: {name}: the cell graph from {poly}")
    try:
        mesh = _mesh_of(str(poly), digest)
    except CaseError as e:
        raise ModelError(str(e)) from None
    if not 2 <= ranks <= mesh.cells:
        raise ModelError(f"{ranks} ranks for {mesh.cells:,} cells -- give 2 to {mesh.cells:,}")
    return _partition(mesh, ranks, name, f"{name} {ranks}", kept, start, log)


# A model decomposes one mesh into several rank counts in a row: its lists (hundreds of MB
# for the motorbike's S mesh) are hashed and read once for all of them, not once each.
@functools.lru_cache(maxsize=4)
def _mesh_digest(poly: str, stamp: tuple) -> str:
    """The digest of the owner and neighbour lists, for as long as their files (``stamp``:
    inode, size and time of each) are unchanged."""
    digest = hashlib.sha256()
    for part in ("owner", "neighbour"):
        with open(Path(poly) / part, "rb") as f:
            while chunk := f.read(1 << 24):
                digest.update(chunk)
    return digest.hexdigest()


@functools.lru_cache(maxsize=1)
def _mesh_of(poly: str, digest: str):
    """The cell graph of the mesh whose lists have ``digest``: the last one only."""
    return mesh_graph(Path(poly))


def _stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _kept(stem: str, key: str) -> Path:
    return paths.cache_dir() / "published" / f"{stem}-{key}.edges"


def _read_kept(kept: Path) -> CommGraph | None:
    if kept.is_file():
        try:
            return read_edges(kept)
        except InputError:
            kept.unlink()  # a damaged entry is made again
    return None


def _partition(mesh, ranks: int, name: str, source: str, kept: Path, start: float, log):
    """SCOTCH's parts of ``mesh``, their processor graph kept in ``kept``."""
    log(f"scale: {name}: SCOTCH into {ranks} parts ({time.monotonic() - start:.0f} s)")
    parts = decompose(mesh, ranks)
    log(f"scale: {name}: processor patches ({time.monotonic() - start:.0f} s)")
    graph = from_parts(mesh.xadj, mesh.adjncy, parts, source=source)
    del mesh, parts
    output.folder(kept.parent, "the published-scale cache")
    output.write_text(kept, edges_text(graph), "the published-scale cache")
    log(f"scale: {name} in {ranks}: {time.monotonic() - start:.0f} s, kept in {kept}")
    return read_edges(kept)


def level_shares(graph: CommGraph, system: str, nodes: int) -> dict[str, dict]:
    """Seed 000 Fig. 5's quantities for OpenFOAM standard and the optimised version: each
    hardware level's share of a halo exchange's faces (the decomposition's graph on the
    placement) and of the reduction tree's edges (unit weight each). Standard: the
    launcher's block placement and OpenFOAM's tree; optimised: rankmap's placement and its
    hierarchical schedule, priced by the system's seed 000 Table 2 costs."""
    node = topology.from_synthetic(topology.PRESETS[system])
    if graph.n != nodes * node.cores:
        raise ModelError(
            f"{graph.n} ranks on {nodes} nodes of {system} ({node.cores} cores each) -- "
            f"decompose into {nodes * node.cores}"
        )
    from rankmap.analysis import cost_vector

    costs = cost_vector(system, 1000)
    out = {}
    for name, placed, tree in (
        ("standard", block(graph, node, nodes), "openfoam"),
        ("standard under srun", socket_cyclic(graph, node, nodes), "openfoam"),
        ("optimised", rankmap(graph, node, nodes, costs=costs), "hierarchical"),
    ):
        a = analyze(graph, placed, costs)
        edges = a["tree_edges"][tree]
        total = sum(edges.values()) or 1
        out[name] = {
            "halo": a["halo_share"],
            "tree": {level: n / total for level, n in edges.items()},
            "placement": a["used"],
        }
    return out


SHORT = {
    "intra_numa_node": "intra-NUMA",
    "inter_numa_node": "inter-NUMA",
    "inter_numa_domain": "inter-domain",
    "inter_node": "inter-node",
}


def shares_table(case: str, system: str, nodes: int, ranks: int, shares: dict) -> str:
    """Fig. 5's quantities as a table: % per hardware level, each configuration a column."""
    names = {"standard": "OF block", "standard under srun": "OF srun", "optimised": "Opt."}
    head = "".join(f"{names[n]:>10}" for n in shares)
    lines = [
        f"{case} on {nodes} nodes of {system} ({ranks} ranks), % per hardware level",
        f"  {'halo faces':14}{head}",
    ]
    for what in ("halo", "tree"):
        if what == "tree":
            lines.append(f"  {'tree edges':14}{head}")
        for level, name in SHORT.items():
            cells = "".join(f"{100 * s[what][level]:10.1f}" for s in shares.values())
            lines.append(f"  {name:14}{cells}")
    used = ", ".join(f"{names[n]} {s['placement']}" for n, s in shares.items())
    lines.append(f"  placements: {used}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m topofoam.prediction.scale",
        description="seed 000's cases at their published sizes: decompositions (cached) and "
        "the share of each hardware level in halo exchanges and reductions (Fig. 5)",
    )
    parser.add_argument("--case", required=True, help="pitzDaily, laplacianFoam, cavity2D, ...")
    parser.add_argument("--system", required=True, choices=("vsc5", "hpc2"))
    parser.add_argument("--nodes", type=int, required=True, help="nodes (2 to 10 in seed 000)")
    args = parser.parse_args(argv)

    def run() -> int:
        try:
            p = published(args.case, args.system)
            if not 1 <= args.nodes <= 64:
                raise ModelError(f"--nodes {args.nodes} -- give 1 to 64")
            graph = decomposition(args.case, args.system, args.nodes * p.ranks_per_node)
            shares = level_shares(graph, args.system, args.nodes)
        except (ModelError, InputError) as e:
            print(f"scale: {e}", file=sys.stderr)
            return 2
        print(shares_table(args.case, args.system, args.nodes, graph.n, shares))
        return 0

    return output.main("scale", run)


if __name__ == "__main__":
    sys.exit(main())
