"""Seed 002's node-hours predicted: the solver's time and node seconds of the HPC_motorbike
Small on 1, 2, 4 and 8 OCI BM.Optimized3.36 nodes, 36 ranks a node, set beside section 4's
table and its cost-optimal node count (docs/model.md, Seed 002's node-hours).

Inputs, none fitted to a published runtime:
  * the decomposition: the motorbike meshed here at the catalog's size S (snappyHexMesh; no
    dictionary determines its mesh, so its graph is read from the mesh itself), SCOTCH into
    36 to 288 ranks (``scale.mesh_decomposition``);
  * the calls per rank and step: the law of the motorbike's counted runs in fixed work
    (``python -m localsite.publishedbench calls --case motorbike``);
  * the compute: its cell sweep measured here, scaled by the memory bandwidth a core of the
    node has (``papers.TARGET_BANDWIDTH``);
  * the link costs: seed 002 publishes none (its network is a 100 Gb/s RoCE cluster network,
    its MPI Open MPI 5 with UCX). They are seed 000 Table 2's hpc2 rows (Intel Xeon nodes
    over 100 Gb/s InfiniBand, the nearest published), the inter-node latency scaled by
    ``LATENCY_FACTORS`` to show how far the node-hours move with it.
The placement is seed 002's tuned one (NPS2, ranks dealt over the NUMA nodes: Open MPI's
``--map-by numa``, ``rankmap.mapping.cyclic``) with OpenFOAM's own reductions.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

from rankmap import topology
from rankmap.graph import CommGraph
from rankmap.mapping import cyclic
from rankmap.schedule import openfoam_tree
from topofoam import output
from topofoam.prediction import calls as law
from topofoam.prediction import papers, scale
from topofoam.prediction.model import LinkCosts, Machine, ModelError, Workload, communication

CASE = "motorbike"
SIZE = "S"
SYSTEM = "oci-nps2"
#: Section 4's node counts, and the time steps each run made (the HPC_motorbike Small's
#: default, 0 to 500: seed 002 section 0).
NODES = (1, 2, 4, 8)
STEPS = 500
LATENCY_FACTORS = (0.5, 1.0, 2.0, 4.0)
COSTS_FROM = "hpc2"


def mesh_name() -> str:
    """The name its decompositions are kept under (``scale.mesh_decomposition``)."""
    return f"{CASE}-{SIZE}"


def mesh_file(folder: Path) -> Path:
    return Path(folder) / f"mesh-{mesh_name()}.json"


def save_mesh(poly: Path, cells: int, folder: Path) -> None:
    """Where the mesh decomposed is (``publishedbench nodehours``), for the prediction."""
    output.write_text(
        mesh_file(folder), json.dumps({"mesh": str(poly), "cells": cells}) + "\n", "results/model"
    )


def load_mesh(folder: Path) -> tuple[Path, int]:
    """(the S mesh's polyMesh folder, its cells), as ``publishedbench nodehours`` found it."""
    path = mesh_file(folder)
    redo = "python -m localsite.publishedbench nodehours"
    try:
        found = json.loads(path.read_text())
        poly, cells = Path(found["mesh"]), int(found["cells"])
    except OSError:
        raise ModelError(f"the {CASE}'s {SIZE} mesh is not decomposed ({path}) -- {redo}") from None
    except (ValueError, TypeError, KeyError):
        raise ModelError(f"{path} is not a mesh and its cells -- {redo}") from None
    if not (poly / "owner").is_file() or cells < 1:
        raise ModelError(f"{path} names {poly}, which holds no mesh now -- {redo}")
    return poly, cells


def decomposition(poly: Path, nodes: int, log=None) -> CommGraph:
    """The S mesh's processor graph on ``nodes`` nodes, from the cache where made before."""
    return scale.mesh_decomposition(poly, nodes * ranks_per_node(), name=mesh_name(), log=log)


def decompositions(poly: Path, log=None) -> dict[int, CommGraph]:
    """{nodes: the S mesh's processor graph on them}."""
    return {n: decomposition(poly, n, log) for n in NODES}


def costs(latency_factor: float = 1.0) -> LinkCosts:
    return papers.nearest_costs(COSTS_FROM, latency_factor)


@functools.cache
def node() -> topology.Node:
    """The OCI node in NPS2 (``rankmap.topology.PRESETS``), made once: every row prices on it."""
    return topology.from_synthetic(topology.PRESETS[SYSTEM])


def ranks_per_node() -> int:
    return node().cores


@dataclass(frozen=True)
class Row:
    """One node count's prediction."""

    nodes: int
    step_s: float
    terms: dict[str, float]

    @property
    def solver_s(self) -> float:
        return STEPS * self.step_s

    @property
    def node_s(self) -> float:
        return self.solver_s * self.nodes


def row(
    nodes: int,
    graph: CommGraph,
    cells: int,
    fit: law.CallLaw,
    compute: papers.Compute,
    link: LinkCosts,
) -> Row:
    """The time per step on ``nodes`` nodes, priced on the tuned placement."""
    ranks = nodes * ranks_per_node()
    if graph.n != ranks:
        raise ModelError(
            f"the decomposition has {graph.n} parts, {nodes} node(s) run {ranks} ranks -- "
            f"decompose into {ranks}"
        )
    per = fit.predict(cells, ranks)
    work = Workload(step_s=0.0, ranks=ranks, **{k: per.get(k, 0.0) for k in law.QUANTITIES})
    compute_s = compute.on(SYSTEM) * cells / ranks * work.halo
    placed = cyclic(graph, node(), nodes)
    terms = {
        "compute": compute_s,
        **communication(
            "standard",
            graph,
            nodes,
            Machine(node(), link),
            work,
            compute_s,
            (placed, openfoam_tree(placed)),
        ),
    }
    return Row(nodes, sum(terms.values()), terms)


@dataclass
class NodeHours:
    """The predicted rows per latency factor, beside section 4's table."""

    predicted: dict[float, dict[int, Row]]  # factor -> nodes -> row
    published: dict[int, tuple[float, float]]  # nodes -> (solver s, node s)
    cells: int

    def cheapest(self, factor: float | None = None) -> int:
        """The cost-optimal node count: the fewest node seconds (published, or predicted at
        ``factor``)."""
        if factor is None:
            return min(self.published, key=lambda n: self.published[n][1])
        rows = self.predicted[factor]
        return min(rows, key=lambda n: rows[n].node_s)

    def compute_needed(self, nodes: int, factor: float = 1.0) -> float | None:
        """How much faster than predicted a cell sweep would have to be on ``nodes`` for the
        published solver time (the communication as predicted): 1.0 is as predicted, 1.2
        a sweep 20 % faster (a cache effect the model leaves out); None where the
        communication alone exceeds the published time."""
        r = self.predicted[factor][nodes]
        published_s = self.published[nodes][0] / STEPS
        left = published_s - (r.step_s - r.terms["compute"])
        return r.terms["compute"] / left if left > 0 else None

    def superlinear(self, nodes: int, factor: float = 1.0) -> float | None:
        """``compute_needed`` on ``nodes`` over that on one node: how much faster a cell
        sweep would have to run there than on one node, whatever the error of the scaled
        compute itself (which the one-node ratio holds)."""
        here, one = self.compute_needed(nodes, factor), self.compute_needed(1, factor)
        return here / one if here and one else None


def predict(
    graphs: dict[int, CommGraph],
    cells: int,
    fit: law.CallLaw,
    compute: papers.Compute,
    table: dict[int, tuple[float, float]],
    log=None,
) -> NodeHours:
    """Every node count of section 4 at every latency factor."""
    missing = [n for n in NODES if n not in table]
    if missing:
        raise ModelError(
            f"seed 002's table has no row for {missing[0]} node(s) -- restore it (section 4)"
        )
    predicted: dict[float, dict[int, Row]] = {}
    for nodes in NODES:
        if nodes not in graphs:
            raise ModelError(
                f"no decomposition of the {CASE} ({SIZE}) into {nodes * ranks_per_node()} "
                f"ranks -- python -m localsite.publishedbench nodehours"
            )
        for factor in LATENCY_FACTORS:
            predicted.setdefault(factor, {})[nodes] = row(
                nodes, graphs[nodes], cells, fit, compute, costs(factor)
            )
        if log:
            r = predicted[1.0][nodes]
            log(
                f"nodehours: {nodes} node(s): {r.step_s * 1e3:.1f} ms a step, "
                f"{r.node_s:.0f} node seconds (hpc2's latency)"
            )
    return NodeHours(predicted, table, cells)
