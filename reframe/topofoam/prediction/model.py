"""When does an optimisation pay? A time-per-step model in seed 004's form (docs/model.md).

    costs = link_costs(table, "vsc5")                  # per level: latency and bandwidth
    work = Workload.from_counts(calls, steps=20, ranks=2, neighbours=2, step_s=0.011)
    p = predict("local+global", 4, graph, Machine(node, costs), work, base=graph1)

A step is compute plus the solver's communication, each call priced by the hardware level its
messages cross: halo exchanges by the placement's neighbours and faces, reductions along the
schedule's tree, MPI's collectives by rounds over nodes. The compute is measured on one node
(the time per step there, less the model's communication there) and divided over the cores
the ranks have. What the model cannot price says why: a :class:`Prediction` with ``reason``
and no time, never a number from a missing measurement.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rankmap.graph import CommGraph
from rankmap.mapping import Placement, block, rankmap
from rankmap.schedule import Schedule, hierarchical, openfoam_tree
from rankmap.topology import LEVELS, Node
from topofoam.config import fabric

INTER_NODE = LEVELS.index("inter_node")
#: Bytes a face carries in a halo exchange: one double (a scalar field's value, which is what
#: the pressure solver's matrix products exchange, most of a step's exchanges).
FACE_BYTES = 8
#: The variants the model prices, and what each changes (docs/model.md). global+sums is
#: global whose scalar sums leave MPI_Allreduce for the schedule's tree: its own one-node
#: run counts them as the tree's blocking sends, and they are priced there.
VARIANTS = ("standard", "global", "global+sums", "local+global", "esi-nodecomms")
#: How far the model's communication on one node may exceed the measured step there before
#: the costs are said not to fit the run: on this 2-core machine the one-node steps of the
#: same calls ranged from 4.2 to 6.3 ms, and the communication came out up to 65 % above
#: the step (docs/model.md, No prediction); a disturbed p2p run misses by 10 to 100 times.
FIT_SLACK = 2.0


@dataclass(frozen=True)
class LinkCosts:
    """One-way latency (s) and bandwidth (bytes/s, inf: latency only) per hardware level;
    None where nothing was measured."""

    latency: tuple[float | None, ...]
    bandwidth: tuple[float | None, ...]
    source: str

    def has(self, level: int) -> bool:
        return self.latency[level] is not None

    def message(self, level: int, nbytes: float = 0.0) -> float:
        return self.latency[level] + nbytes / self.bandwidth[level]


def fit_level(points: list[tuple[int, float]]) -> tuple[float, float]:
    """(latency s, bandwidth bytes/s) from (bytes, one-way s) points: fabric's least squares
    of t = L + bytes / B. A time that does not grow with the size (cache-resident copies on
    one node) is a latency alone: its mean, and an infinite bandwidth. A time that grows
    faster than linearly (the line meets the axis below zero: a protocol switch, or a
    disturbed run at the large sizes) keeps its slope, and the smallest message's time is
    the latency: the model's messages are small, and the mean would price them as large."""
    mean = sum(y for _, y in points) / len(points)
    if len({x for x, _ in points}) < 2:
        return mean, math.inf
    latency, bandwidth = fabric.fit(points)
    if bandwidth > 0 and latency > 0:
        return latency, bandwidth
    if bandwidth > 0:
        return min(points)[1], bandwidth
    return mean, math.inf


class ModelError(ValueError):
    """An input the model cannot read; the message names the file and the fix."""


def link_costs(table: Path | str, system: str) -> LinkCosts:
    """Per-level costs of ``system`` from a round-trip table in seed 000 Table 2's format
    (rankmap/p2p_latency_us.csv; ``python -m topofoam.results.p2p`` writes the p2p check's)."""
    table = Path(table)
    try:
        with open(table, newline="") as f:
            rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    except OSError as e:
        raise ModelError(f"cannot read {table} ({e.strerror}) -- give a p2p table") from None
    seed = table.resolve() == fabric.TABLE.resolve()
    return costs_of_rows(rows, system, "seed 000 Table 2" if seed else str(table))


def costs_of_rows(rows: list[dict], system: str, source: str) -> LinkCosts:
    """Per-level costs of ``system`` from the rows of such a table (``source`` names it)."""
    mine = [r for r in rows if r.get("system") == system]
    if not mine:
        have = sorted({r.get("system") or "" for r in rows})
        raise ModelError(
            f"{source} has no rows of {system!r} (it has {', '.join(have) or 'none'}) -- "
            f"run the p2p check on that partition, or choose one of those"
        )
    latency, bandwidth = [], []
    for level in LEVELS:
        points = []
        for r in mine:
            text = str(r.get(level) or "").strip()
            if not text:
                continue
            try:
                size, rtt = int(r["size"]), float(text)
            except (TypeError, ValueError):
                raise ModelError(
                    f"{source}: {system} at size {r.get('size')!r}, {level} is {text!r} -- "
                    f"sizes are scalars and round trips positive microseconds"
                ) from None
            if not (rtt > 0 and math.isfinite(rtt)) or size <= 0:
                raise ModelError(
                    f"{source}: {system} at size {size}, {level} is {text} -- a round trip "
                    f"is a positive number of microseconds"
                )
            points.append((FACE_BYTES * size, rtt / 2 * 1e-6))
        lat, bw = fit_level(points) if points else (None, None)
        latency.append(lat)
        bandwidth.append(bw)
    if latency[0] is None:
        raise ModelError(
            f"{source}: {system} has no {LEVELS[0]} round trips -- the fastest level is "
            f"needed (slower levels a node lacks take the next faster one's)"
        )
    # A level the node does not have (hpc2: a package is one NUMA node) costs what the next
    # faster level costs, as rankmap's cost vector reads it. Inter-node stays unknown.
    for i in range(1, INTER_NODE):
        if latency[i] is None:
            latency[i], bandwidth[i] = latency[i - 1], bandwidth[i - 1]
    return LinkCosts(tuple(latency), tuple(bandwidth), f"{source}: {system}")


@dataclass(frozen=True)
class Workload:
    """What one variant's solver does per step, per rank, measured on one node."""

    step_s: float  # time per step on one node
    ranks: int  # ranks of that run
    halo: float  # halo exchanges (one message to each neighbour)
    allreduce: float  # blocking MPI_Allreduce
    iallreduce: float = 0.0  # non-blocking MPI_Iallreduce (PiPePCG, RePiPePCG)
    alltoall: float = 0.0  # MPI_Alltoall (PstreamBuffers' sizes)
    tree: float = 0.0  # gather-scatter reductions along the schedule
    rooted: float = 0.0  # MPI_Reduce and MPI_Bcast

    @classmethod
    def from_counts(
        cls, calls: dict[str, float], steps: int, ranks: int, neighbours: int, step_s: float
    ) -> Workload:
        """From the MPI call counter's totals over ``ranks`` ranks and ``steps`` steps;
        ``neighbours`` is the sum over ranks of their neighbour counts (the graph's arcs)."""

        def per_rank(*names):
            return sum(calls.get(n, 0) for n in names) / steps / ranks

        sends = calls.get("MPI_Send", 0) / steps  # a tree reduction: 2 (ranks - 1) sends
        return cls(
            step_s=step_s,
            ranks=ranks,
            halo=calls.get("MPI_Isend", 0) / steps / neighbours if neighbours else 0.0,
            allreduce=per_rank("MPI_Allreduce"),
            iallreduce=per_rank("MPI_Iallreduce"),
            alltoall=per_rank("MPI_Alltoall", "MPI_Alltoallv"),
            tree=sends / (2 * (ranks - 1)) if ranks > 1 else 0.0,
            rooted=per_rank("MPI_Reduce", "MPI_Bcast"),
        )


@dataclass(frozen=True)
class Machine:
    """Where runs are priced: the node's layout, the link costs per level, and the cores the
    ranks share (None: one each; an emulated cluster's nodes share one machine's cores)."""

    node: Node
    costs: LinkCosts
    cores: int | None = None


@dataclass
class Prediction:
    variant: str
    nodes: int
    step_s: float | None  # None: no prediction, ``reason`` says why
    terms: dict[str, float] = field(default_factory=dict)
    reason: str = ""


def halo_time(graph: CommGraph, placement: Placement, costs: LinkCosts) -> float:
    """One exchange's critical path: each rank posts all its sends at once, so they share
    the slowest level's latency and queue for bandwidth, as on one link; the step waits for
    the slowest rank. (Seed 004 sends them one after another: p (L + m / B).)"""
    u, v, w = graph.arcs()
    level = placement.level_between(u, v)
    worst = 0.0
    for r in range(graph.n):
        mine = slice(graph.xadj[r], graph.xadj[r + 1])
        if mine.start == mine.stop:
            continue
        lv, faces = level[mine], w[mine]
        wait = max(costs.latency[x] for x in set(lv.tolist()))
        wait += sum(FACE_BYTES * f / costs.bandwidth[x] for x, f in zip(lv.tolist(), faces))
        worst = max(worst, wait)
    return worst


def tree_time(schedule: Schedule, costs: LinkCosts) -> float:
    """A gather up the schedule and a scatter down it: a parent receives its children's
    values as they arrive, and sends them theirs one after another (blocking sends)."""
    up = np.zeros(schedule.n)
    order = schedule.top_down()
    for r in reversed(order):
        for c in schedule.below[r]:
            up[r] = max(up[r], up[c] + costs.message(schedule.level[c], FACE_BYTES))
    down = np.zeros(schedule.n)
    for r in order:
        t = down[r]
        for c in schedule.below[r]:
            t += costs.message(schedule.level[c], FACE_BYTES)
            down[c] = t
    return float(up[0] + down.max())


def _rounds(ranks: int) -> int:
    return math.ceil(math.log2(ranks)) if ranks > 1 else 0


def intra_level(placement: Placement) -> int:
    """The slowest level between two ranks of one node (0 with one rank per node)."""
    first = placement.node_of == placement.node_of[0]
    mine = np.flatnonzero(first)
    if len(mine) < 2:
        return 0
    return int(placement.level_between(mine[:1].repeat(len(mine) - 1), mine[1:]).max())


def collective_times(placement: Placement, costs: LinkCosts, two_level: bool) -> dict:
    """Small collectives over the placement's ranks: recursive doubling (block placement:
    log2 ppn rounds inside a node, log2 k between nodes); ESI's node-aware form reduces
    inside the node, then among node leaders, then broadcasts inside the node."""
    k = placement.nodes
    ppn = len(placement.node_of) // k
    inside = costs.message(intra_level(placement), FACE_BYTES)
    between = costs.message(INTER_NODE, FACE_BYTES) if k > 1 else 0.0
    local = (2 if two_level else 1) * _rounds(ppn) * inside
    return {
        "allreduce": local + _rounds(k) * between,
        "rooted": _rounds(ppn) * inside + _rounds(k) * between,
        "alltoall": (ppn - 1) * inside + (k - 1) * between,
    }


def allreduce_rounds(placement: Placement, costs: LinkCosts) -> float:
    """One small MPI_Allreduce by recursive doubling over the rank numbers, each round
    priced by the slowest level its pairs (rank r and r xor 2^j) cross on ``placement``:
    on a block placement the first rounds stay in a NUMA node, on srun's block:cyclic the
    first crosses packages. (Ranks beyond the largest power of two fold in first, one round
    more.) ``collective_times`` prices every round inside a node at the slowest level
    there, as the emulated fabric's interposer charges."""
    n = len(placement.node_of)
    ranks = np.arange(n)
    total, step = 0.0, 1
    while step < n:
        partner = ranks ^ step
        ok = partner < n
        level = int(placement.level_between(ranks[ok], partner[ok]).max())
        total += costs.message(level, FACE_BYTES)
        step <<= 1
    if n & (n - 1):
        total += costs.message(int(placement.level_between(ranks[:1], ranks[-1:])[0]), FACE_BYTES)
    return total


def placement_for(variant: str, graph: CommGraph, machine: Node, nodes: int, costs=None):
    """(placement, schedule of the tree reductions) of a variant (reframe/multinode.py)."""
    if variant == "local+global":
        placed = rankmap(graph, machine, nodes, costs=costs)
        return placed, hierarchical(placed)
    placed = block(graph, machine, nodes)
    if variant in ("global", "global+sums", "esi-nodecomms"):
        return placed, hierarchical(placed)
    return placed, openfoam_tree(placed)


def communication(
    variant: str,
    graph: CommGraph,
    nodes: int,
    on: Machine,
    work: Workload,
    compute_s: float,
    placed: tuple[Placement, Schedule] | None = None,
) -> dict[str, float]:
    """Seconds per step each kind of call costs, the compute ``compute_s`` given; the
    variant's placement and schedule (``placement_for``), or ``placed``."""
    costs = on.costs
    hop = [c * 1e6 if c is not None else 0.0 for c in costs.latency]
    placed, schedule = placed or placement_for(variant, graph, on.node, nodes, hop)
    coll = collective_times(placed, costs, two_level=variant == "esi-nodecomms")
    terms = {
        "halo": work.halo * halo_time(graph, placed, costs),
        "allreduce": work.allreduce * coll["allreduce"],
        "alltoall": work.alltoall * coll["alltoall"],
        "tree": work.tree * tree_time(schedule, costs),
        "rooted": work.rooted * coll["rooted"],
    }
    if work.iallreduce:
        # Each non-blocking reduction overlaps the sweep it is posted before (PiPePCG: one
        # preconditioning and matrix product, one halo exchange), not the whole step: an
        # interFoam step's MULES and momentum sweeps are not in the pressure solver's
        # iterations. Only what sticks out of that sweep is waited for.
        window = compute_s / max(work.halo, work.iallreduce)
        terms["iallreduce"] = work.iallreduce * max(0.0, coll["allreduce"] - window)
    return terms


def predict(
    variant: str,
    nodes: int,
    graph: CommGraph,
    on: Machine,
    work: Workload,
    base: CommGraph,
    calls: Workload | None = None,
) -> Prediction:
    """Time per step of ``variant`` on ``nodes`` nodes of ``on`` for decomposition ``graph``,
    from ``work`` measured on one node with decomposition ``base``. ``calls``: the calls per
    step counted with decomposition ``graph`` (iterations change with the decomposition);
    without them, the one-node run's."""
    costs = on.costs
    if variant not in VARIANTS:
        return Prediction(variant, nodes, None, reason=f"unknown variant {variant!r}")
    if nodes > 1 and not costs.has(INTER_NODE):
        return Prediction(
            variant,
            nodes,
            None,
            reason=f"{costs.source} has no inter-node round trips -- run the p2p check "
            f"on a partition of two nodes or more (reframe -t p2p)",
        )
    if base.n != work.ranks or (calls is not None and calls.ranks != graph.n):
        return Prediction(
            variant,
            nodes,
            None,
            reason=f"the calls were counted on {work.ranks} and "
            f"{(calls or work).ranks} ranks, the decompositions have {base.n} and {graph.n}",
        )
    calls = calls or work
    ones = communication(variant, base, 1, on, work, 0.0)
    comm1 = sum(v for k, v in ones.items() if k != "iallreduce")
    if comm1 > work.step_s * (1 + FIT_SLACK):
        return Prediction(
            variant,
            nodes,
            None,
            reason=f"the model's communication on one node ({comm1:.3g} s) is more than "
            f"the whole measured step ({work.step_s:.3g} s) and {100 * FIT_SLACK:.0f} % "
            f"more: the costs do not fit this run",
        )
    # A step that is nearly all latency (a small case: thousands of reductions a step) can
    # come out shorter than the model's communication by noise alone; its compute is then
    # below what the model resolves, and counts as none.
    compute1 = max(0.0, work.step_s - comm1)
    # A rank's compute per step: its cells (the total over the cores the ranks have) times
    # the solver's sweeps over them, which the halo exchanges per step count.
    share = min(base.n, on.cores or base.n) / min(graph.n, on.cores or graph.n)
    sweeps = calls.halo / work.halo if work.halo else 1.0
    compute = compute1 * share * sweeps
    terms = {
        "compute": compute,
        **communication(variant, graph, nodes, on, calls, compute),
    }
    return Prediction(variant, nodes, float(sum(terms.values())), terms)


def pays_from(predictions: list[Prediction], margin: float = 0.05) -> dict[str, int | None]:
    """The smallest node count from which each variant is predicted at least ``margin``
    faster than standard at every larger count given (None: nowhere)."""
    by = {(p.variant, p.nodes): p.step_s for p in predictions}
    counts = sorted({p.nodes for p in predictions})
    found: dict[str, int | None] = {}
    for variant in sorted({p.variant for p in predictions} - {"standard"}):
        first = None
        for n in reversed(counts):
            mine, std = by.get((variant, n)), by.get(("standard", n))
            if mine is None or std is None or mine > std * (1 - margin):
                break
            first = n
        found[variant] = first
    return found
