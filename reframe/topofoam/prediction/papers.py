"""Seed 000 Table 4 predicted: the time per step of OpenFOAM standard and of the local and
global optimisation, for each published case, system and node count (docs/model.md, At the
papers' scale).

Inputs, each from where docs/model.md says, none fitted to a published runtime:
  * the decomposition: the case at its published size, SCOTCH into nodes x cores ranks
    (``scale.decomposition``);
  * the calls per rank and step: the law of the case's counted runs (``calls.CallLaw``);
  * the compute: a cell sweep's time measured here (the counted runs' largest 2-rank run),
    scaled by the ratio of memory bandwidth per core here and on the target;
  * the link costs per level: seed 000 Table 2 (rankmap/p2p_latency_us.csv).
Standard is the launcher's block placement with OpenFOAM's tree; optimised is rankmap's
placement with its hierarchical schedule. How MPI reduces is priced three ways (VARIANTS).
"""

from __future__ import annotations

from dataclasses import dataclass

from rankmap import topology
from topofoam.config import fabric
from topofoam.prediction import calls as law
from topofoam.prediction import scale
from topofoam.prediction.model import (
    INTER_NODE,
    LinkCosts,
    Machine,
    ModelError,
    Workload,
    allreduce_rounds,
    collective_times,
    communication,
    link_costs,
    tree_time,
)

#: Peak memory bandwidth of a target node (bytes/s) and where it comes from: OpenFOAM's
#: sweeps are bound by memory bandwidth when every core runs a rank, so a cell sweep's time
#: scales with the bandwidth a core gets. Peak, not sustained: the target's compute is a
#: lower bound, its communication's share an upper bound (docs/model.md).
TARGET_BANDWIDTH = {
    "vsc5": (
        2 * 8 * 3200e6 * 8,
        "AMD EPYC 7713 x2, 8 channels of DDR4-3200 a socket (AMD's specification)",
    ),
    "hpc2": (
        4 * 6 * 2666e6 * 8,
        "Intel Xeon Gold 6126 x4, 6 channels of DDR4-2666 a socket (Intel's specification)",
    ),
    "oci-nps2": (
        2 * 8 * 3200e6 * 8,
        "Intel Xeon Ice Lake x2, 18 cores each (seed 002: BM.Optimized3.36), 8 channels of "
        "DDR4-3200 a socket (Intel's specification of every Ice Lake Xeon Scalable)",
    ),
    "seed001": (
        2 * 4 * 1600e6 * 8,
        "Intel Xeon E5-2620 x2 at 2.1 GHz (the v2's clock), 4 channels of DDR3-1600 a socket "
        "(Intel's specification; seed 001 gives neither the version nor the memory's speed)",
    ),
}
#: What is priced: (placement, tree of OpenFOAM's gather-scatter reductions, how MPI's
#: all-reduce goes). Seed 000 does not say how its MPI reduced (Open MPI 4.1's recursive
#: doubling over the rank numbers, or a node-aware collective such as HCOLL's, blind to
#: the rank numbers), nor whether its schedule carried the scalar sums that OpenFOAM hands
#: to MPI_Allreduce above 16 ranks: each is priced, and the report shows them side by side.
VARIANTS = {
    "standard": ("block", "openfoam", "rounds"),
    "standard, node-aware MPI": ("block", "openfoam", "node-aware"),
    "local+global": ("rankmap", "hierarchical", "rounds"),
    "local+global, node-aware MPI": ("rankmap", "hierarchical", "node-aware"),
    "local+global, sums on the schedule": ("rankmap", "hierarchical", "schedule"),
}


@dataclass(frozen=True)
class Compute:
    """A cell sweep's time here and the bandwidth a core had (both measured here)."""

    sweep_s: float  # seconds per cell and halo exchange (a sweep over the cells)
    core_bandwidth: float  # bytes/s a core got with every core running the triad
    source: str

    def on(self, system: str) -> float:
        """The same sweep on a core of ``system``."""
        node_bw, _ = TARGET_BANDWIDTH[system]
        cores = topology.from_synthetic(topology.PRESETS[system]).cores
        return self.sweep_s * self.core_bandwidth / (node_bw / cores)


def compute_of(runs: list[law.Counted], core_bandwidth: float) -> Compute:
    """A cell sweep's time from the largest counted run on the fewest ranks: its wall time
    per step over its cells per rank and its halo exchanges per step (the sweeps). That
    step holds its own communication too: an upper bound, small beside its compute."""
    fewest = min(r.ranks for r in runs)
    run = max((r for r in runs if r.ranks == fewest), key=lambda r: r.cells)
    halo = run.quantities()["halo"]
    if not run.step_s or run.step_s <= 0 or not halo:
        raise ModelError(
            f"the counted run of {run.case} at {run.cells:,} cells on {run.ranks} ranks has no "
            f"time per step or no halo exchanges -- count it again"
        )
    return Compute(
        run.step_s / (run.cells / run.ranks) / halo,
        core_bandwidth,
        f"{run.case} at {run.cells:,} cells on {run.ranks} ranks",
    )


def seed_costs(system: str) -> LinkCosts:
    return link_costs(fabric.TABLE, system)


def nearest_costs(system: str, latency_factor: float = 1.0) -> LinkCosts:
    """Seed 000 Table 2's costs of ``system``, its inter-node latency times
    ``latency_factor``: for a paper's system whose costs nobody published, the nearest
    published one, with the one cost that moves the prediction most shown scaled."""
    base = seed_costs(system)
    latency = list(base.latency)
    latency[INTER_NODE] *= latency_factor
    return LinkCosts(
        tuple(latency),
        base.bandwidth,
        f"{base.source} ({system}), its inter-node latency x {latency_factor:g}",
    )


def predict(
    case: str, system: str, nodes: int, fit: law.CallLaw, compute: Compute, costs=None
) -> dict[str, dict]:
    """Per variant: the time per step and its terms at the published size on ``nodes``."""
    from rankmap.mapping import block, rankmap
    from rankmap.schedule import hierarchical, openfoam_tree

    p = scale.published(case, system)
    ranks = nodes * p.ranks_per_node
    graph = scale.decomposition(case, system, ranks)
    node = topology.from_synthetic(topology.PRESETS[system])
    costs = costs or seed_costs(system)
    per = fit.predict(p.cells, ranks)
    work = Workload(step_s=0.0, ranks=ranks, **{k: per.get(k, 0.0) for k in law.QUANTITIES})
    sweep = compute.on(system) * p.cells / ranks
    compute_s = sweep * work.halo
    hop = [c * 1e6 for c in costs.latency]
    machine = Machine(node, costs)
    out = {}
    for variant, (where, tree, sums) in VARIANTS.items():
        if where == "block":
            placed = block(graph, node, nodes)
        else:
            placed = rankmap(graph, node, nodes, costs=hop)
        schedule = openfoam_tree(placed) if tree == "openfoam" else hierarchical(placed)
        terms = {
            "compute": compute_s,
            **communication("standard", graph, nodes, machine, work, compute_s, (placed, schedule)),
        }
        # MPI's all-reduce: recursive doubling priced round by round on this placement; a
        # node-aware one (reduce in the node, among the nodes, broadcast); or the sums along
        # the schedule, a gather up its tree and a scatter down it.
        if sums == "rounds":
            one = allreduce_rounds(placed, costs)
        elif sums == "node-aware":
            one = collective_times(placed, costs, two_level=True)["allreduce"]
        else:
            one = tree_time(schedule, costs)
        terms["allreduce"] = work.allreduce * one
        out[variant] = {"step_s": sum(terms.values()), "terms": terms, "ranks": ranks}
    return out
