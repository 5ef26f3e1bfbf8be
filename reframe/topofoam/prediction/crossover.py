"""Seed 001's crossover predicted: from how many cores the pipelined PCG solvers (PiPePCG,
RePiPePCG) beat PCG on seed 001's cluster, set beside Table 8's runtimes (docs/model.md,
Seed 001's crossover).

    python -m topofoam.reporting.papers crossover

Inputs, none fitted to a published runtime:
  * the decomposition: damBreak2D at seed 001's size (2,041,200 cells), SCOTCH into 12 to
    1,536 ranks, 12 a node (``scale.decomposition``, as for seed 000's cases);
  * each solver's calls per rank and step: the law of its own counted runs, the same case in
    fixed work with PCG replaced (``python -m localsite.publishedbench calls --case
    damBreak2D``);
  * each solver's compute: its cell sweep measured here, the solvers timed in interleaved
    rounds (``publishedbench``; ``papers.compute_of``: the pipelined solvers' extra vector
    work shows in it), scaled by the memory bandwidth a core of seed 001's node has
    (``papers.TARGET_BANDWIDTH``);
  * the link costs: seed 001 publishes none (its network is 40 Gb/s InfiniBand, its MPI
    MVAPICH2). They are seed 000 Table 2's hpc2 rows (Intel Xeon nodes over InfiniBand, the
    nearest published), and the inter-node latency is scaled by ``LATENCY_FACTORS`` to show
    how far the crossover moves with the one cost that decides it.
Only where the solvers differ decides the crossover (the compute of their iterations, and
blocking against non-blocking reductions): what both pay alike (MULES's all-to-alls, the
momentum equation's exchanges) cancels. Both are priced with the launcher's block placement
and OpenFOAM's own reductions (the model's ``standard``).
"""

from __future__ import annotations

from dataclasses import dataclass

from rankmap import topology
from rankmap.graph import CommGraph
from topofoam.prediction import calls as law
from topofoam.prediction import papers, scale
from topofoam.prediction.model import (
    LinkCosts,
    Machine,
    ModelError,
    Workload,
    communication,
)

CASE = "damBreak2D"
SYSTEM = "seed001"
#: Table 8's core counts (12 a node: 1 to 128 nodes).
CORES = (12, 24, 48, 96, 192, 384, 768, 1152, 1536)
CORES_PER_NODE = topology.from_synthetic(topology.PRESETS[SYSTEM]).cores
#: Each solver and the row of Table 8 that ran it (with seed 001's MULES optimisation, which
#: both sides of a comparison had).
PUBLISHED = {
    "PCG": "optMULES+PCG",
    "PiPePCG": "optMULES+OFPiPePCG",
    "RePiPePCG": "optMULES+OFRePiPePCG",
}
PIPELINED = ("PiPePCG", "RePiPePCG")
#: The inter-node latency as a multiple of hpc2's: seed 001's QDR InfiniBand of 2014 with
#: MVAPICH2 is not hpc2's EDR with Open MPI 4.1, and nobody published its costs.
LATENCY_FACTORS = (0.5, 1.0, 2.0, 4.0)
COSTS_FROM = "hpc2"


def costs(latency_factor: float = 1.0) -> LinkCosts:
    """seed 000 Table 2's hpc2 costs, the inter-node latency times ``latency_factor``."""
    return papers.nearest_costs(COSTS_FROM, latency_factor)


def decomposition(cores: int) -> CommGraph:
    return scale.decomposition(CASE, SYSTEM, cores)


@dataclass(frozen=True)
class Solver:
    """One pressure solver's inputs: its call law and its cell sweep."""

    name: str
    fit: law.CallLaw
    compute: papers.Compute


def step(solver: Solver, cores: int, link: LinkCosts, graph: CommGraph | None = None) -> dict:
    """{"step_s", "terms"}: ``solver``'s time per step at seed 001's size on ``cores``."""
    node = topology.from_synthetic(topology.PRESETS[SYSTEM])
    if cores % CORES_PER_NODE:
        raise ModelError(f"{cores} cores is not whole nodes of {CORES_PER_NODE} -- give a multiple")
    cells = scale.published(CASE, SYSTEM).cells
    graph = graph or decomposition(cores)
    per = solver.fit.predict(cells, cores)
    work = Workload(step_s=0.0, ranks=cores, **{k: per.get(k, 0.0) for k in law.QUANTITIES})
    compute_s = solver.compute.on(SYSTEM) * cells / cores * work.halo
    terms = {
        "compute": compute_s,
        **communication(
            "standard", graph, cores // CORES_PER_NODE, Machine(node, link), work, compute_s
        ),
    }
    return {"step_s": sum(terms.values()), "terms": terms}


def first_faster(times: dict[int, dict[str, float]], solver: str, base: str = "PCG") -> int | None:
    """The fewest cores at which ``solver`` takes less time than ``base`` (None: at none)."""
    for cores in sorted(times):
        here = times[cores]
        if solver in here and base in here and here[solver] < here[base]:
            return cores
    return None


def published(table: dict) -> dict[int, dict[str, float]]:
    """Table 8's damBreak2D runtimes as {cores: {solver: seconds}}; ModelError if a solver's
    row is missing."""
    out: dict[int, dict[str, float]] = {}
    for solver, row in PUBLISHED.items():
        cells = table.get((CASE, row))
        if not cells:
            raise ModelError(f"seed 001's table has no row {CASE},{row} -- restore it")
        for cores, seconds in cells.items():
            out.setdefault(cores, {})[solver] = seconds
    return out


@dataclass
class Crossover:
    """The predicted steps per latency factor, beside the published runtimes."""

    predicted: dict[float, dict[int, dict[str, float]]]  # factor -> cores -> solver -> s
    published: dict[int, dict[str, float]]
    shares: dict[int, dict[str, float]]  # PCG's step shares at factor 1: term -> share
    solvers: tuple[str, ...]

    def first(self, solver: str, factor: float | None = None) -> int | None:
        times = self.published if factor is None else self.predicted[factor]
        return first_faster(times, solver)

    def ratios(self, solver: str, factor: float | None = None) -> dict[int, float]:
        """{cores: solver's time over PCG's}, published (no factor) or predicted."""
        times = self.published if factor is None else self.predicted[factor]
        return {c: t[solver] / t["PCG"] for c, t in times.items() if solver in t and "PCG" in t}


def predict(solvers: dict[str, Solver], table: dict, log=None) -> Crossover:
    """Every core count at every latency factor, for the solvers given (PCG among them)."""
    if "PCG" not in solvers:
        raise ModelError(
            "PCG's counted runs are missing -- python -m localsite.publishedbench calls "
            "--case damBreak2D"
        )
    pub = published(table)
    predicted: dict[float, dict[int, dict[str, float]]] = {}
    shares: dict[int, dict[str, float]] = {}
    for cores in CORES:
        graph = decomposition(cores)
        for factor in LATENCY_FACTORS:
            link = costs(factor)
            here = predicted.setdefault(factor, {}).setdefault(cores, {})
            for name, solver in solvers.items():
                done = step(solver, cores, link, graph)
                here[name] = done["step_s"]
                if name == "PCG" and factor == 1.0:
                    shares[cores] = {k: v / done["step_s"] for k, v in done["terms"].items()}
        if log:
            at = predicted[1.0][cores]
            log(
                f"crossover: {cores} cores: "
                + ", ".join(f"{k} {1e3 * v:.2f} ms" for k, v in at.items())
                + " a step (hpc2's latency)"
            )
    return Crossover(predicted, pub, shares, tuple(solvers))
