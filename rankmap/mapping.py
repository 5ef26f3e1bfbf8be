"""Rank placements: which node and core each MPI rank (= OpenFOAM subdomain) runs on.

``hierarchical`` is the method of seed 000 section 4.1: SCOTCH splits the communication graph
into one part per node (exactly ranks-per-node vertices each), each node part into NUMA domains,
each domain part into NUMA nodes, minimising the cut at each level; sizes are then made exact.
Parts are ordered by their lowest rank, so rank 0 lands on the first core of the first node.

``block`` is Open MPI's and Slurm's default (rank k on node k // ppn, cores in order);
``cyclic`` deals each node's ranks round-robin over its NUMA nodes; ``scotch_tleaf`` is SCOTCH's
one-shot mapping onto the whole machine, the baseline to beat.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from rankmap import kahip_backend, pairwise, scotch
from rankmap.balance import cut, enforce_sizes, refine
from rankmap.errors import InputError
from rankmap.graph import CommGraph
from rankmap.topology import LEVELS, Node

PLACEMENTS = ("block", "cyclic", "rankmap", "scotch-tleaf")
PARTITIONERS = ("scotch", "kahip")


@dataclass
class Placement:
    """node_of[rank], core_of[rank] (core index inside the node) on ``machine``."""

    name: str
    node_of: np.ndarray
    core_of: np.ndarray
    machine: Node
    nodes: int
    #: why this placement is what it is, where that is not its name's method
    note: str = ""
    #: rankmap's: the method whose placement it is (split, block or scotch-tleaf), and each
    #: candidate's ``objective`` (hop-bytes, then the halo volume by level, slowest first)
    used: str = ""
    candidates: dict = field(default_factory=dict)

    def domain_of(self) -> np.ndarray:
        return self.machine.domain[self.core_of]

    def numa_of(self) -> np.ndarray:
        return self.machine.numa[self.core_of]

    def level_between(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Hardware level (index into topology.LEVELS) of the path between ranks a and b."""
        node, dom, numa = self.node_of, self.domain_of(), self.numa_of()
        return np.where(
            node[a] != node[b], 3, np.where(dom[a] != dom[b], 2, np.where(numa[a] != numa[b], 1, 0))
        )

    def check(self) -> None:
        """One rank per core, and every node holds the same number of ranks."""
        slots = self.node_of.astype(np.int64) * self.machine.cores + self.core_of
        if len(np.unique(slots)) != len(slots):
            raise AssertionError(f"{self.name}: two ranks share a core")
        if len(set(np.bincount(self.node_of, minlength=self.nodes).tolist())) != 1:
            raise AssertionError(f"{self.name}: nodes hold different numbers of ranks")


def ranks_per_numa(machine: Node, ppn: int) -> np.ndarray:
    """Ranks on each NUMA node when ``ppn`` ranks share a node: as even as possible, the
    remainder dealt over the domains in turn so that domains stay even too."""
    per_numa = machine.cores // machine.n_numa
    counts = np.full(machine.n_numa, ppn // machine.n_numa, dtype=np.int64)
    extra = ppn % machine.n_numa
    by_domain = [machine.numa_of_domain(d) for d in range(machine.n_domains)]
    order = [numas[i] for i in range(len(by_domain[0])) for numas in by_domain]
    counts[order[:extra]] += 1
    assert counts.max() <= per_numa
    return counts


def slots(machine: Node, ppn: int) -> np.ndarray:
    """The cores used when ``ppn`` ranks share a node: the first ones of each NUMA node."""
    counts = ranks_per_numa(machine, ppn)
    return np.concatenate([machine.numa_cores(n)[: counts[n]] for n in range(machine.n_numa)])


def layout(graph: CommGraph, machine: Node, nodes: int) -> int:
    """Ranks per node for ``graph.n`` ranks on ``nodes`` nodes; raises on impossible requests."""
    if nodes < 1:
        raise InputError(f"--nodes must be at least 1, not {nodes}")
    if graph.n % nodes:
        raise InputError(
            f"{graph.n} ranks do not divide onto {nodes} nodes -- choose a node "
            f"count that divides {graph.n}, or decompose into a multiple of it"
        )
    ppn = graph.n // nodes
    if ppn > machine.cores:
        raise InputError(
            f"{graph.n} ranks on {nodes} nodes are {ppn} per node, more than the "
            f"{machine.cores} cores of a node ({machine.source}) -- use at least "
            f"{-(-graph.n // machine.cores)} nodes"
        )
    return ppn


def block(graph: CommGraph, machine: Node, nodes: int) -> Placement:
    ppn = layout(graph, machine, nodes)
    ranks = np.arange(graph.n)
    return Placement("block", ranks // ppn, slots(machine, ppn)[ranks % ppn], machine, nodes)


def cyclic(graph: CommGraph, machine: Node, nodes: int) -> Placement:
    """Each node's local ranks dealt round-robin over its NUMA nodes (``--map-by numa``)."""
    ppn = layout(graph, machine, nodes)
    counts = ranks_per_numa(machine, ppn)
    order = []  # local rank -> core
    taken = np.zeros(machine.n_numa, dtype=np.int64)
    while len(order) < ppn:
        for n in range(machine.n_numa):
            if taken[n] < counts[n]:
                order.append(machine.numa_cores(n)[taken[n]])
                taken[n] += 1
    ranks = np.arange(graph.n)
    return Placement("cyclic", ranks // ppn, np.asarray(order)[ranks % ppn], machine, nodes)


def socket_cyclic(graph: CommGraph, machine: Node, nodes: int) -> Placement:
    """Each node's local ranks dealt round-robin over its packages, each package's cores
    filled in order: srun's default distribution, ``block:cyclic``, with cores bound."""
    ppn = layout(graph, machine, nodes)
    packages = [np.flatnonzero(machine.domain == d) for d in range(machine.n_domains)]
    order, taken = [], [0] * len(packages)
    while len(order) < ppn:
        for d, cores in enumerate(packages):
            if len(order) < ppn and taken[d] < len(cores):
                order.append(cores[taken[d]])
                taken[d] += 1
    ranks = np.arange(graph.n)
    return Placement("socket-cyclic", ranks // ppn, np.asarray(order)[ranks % ppn], machine, nodes)


# Node level: SCOTCH is run on differently numbered copies of the graph (its coarsening follows
# the numbering, so each try is a different solution; on mesh graphs one try lands anywhere
# between KaHIP's cut and 5% above it), fewer tries on big graphs so that the time stays about
# that of 16 tries on 8,000 arcs; 131,072 ranks get one try. The tries run in threads (ctypes
# lets go of the GIL inside SCOTCH), and the best is chosen by cut, then by try number, so the
# answer does not depend on the number of threads.
NODE_TRY_ARCS = 128_000
MAX_NODE_TRIES = 16


def node_tries(graph: CommGraph) -> int:
    return max(1, min(MAX_NODE_TRIES, NODE_TRY_ARCS // max(1, len(graph.adjncy))))


def _scotch_try(graph: CommGraph, sizes: list[int], seed: int, attempt: int) -> np.ndarray:
    """SCOTCH with 1% (even attempts) or 5% (odd) imbalance on the graph renumbered by a
    permutation drawn from (seed, attempt); the first two attempts keep the numbering."""
    imbalance = 0.01 if attempt % 2 == 0 else 0.05
    if attempt < 2:
        return scotch.map_weighted(graph, sizes, seed=seed, imbalance=imbalance)
    perm = np.random.default_rng([seed, attempt]).permutation(graph.n)
    u, v, w = graph.arcs()
    renumbered = CommGraph.from_arcs(graph.n, perm[u], perm[v], w)
    return scotch.map_weighted(renumbered, sizes, seed=seed, imbalance=imbalance)[perm]


def _scotch_tries(graph: CommGraph, sizes: list[int], seed: int) -> list[np.ndarray]:
    tries = node_tries(graph)
    if tries == 1:
        return [_scotch_try(graph, sizes, seed, 0)]
    workers = min(tries, len(os.sched_getaffinity(0)))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(lambda t: _scotch_try(graph, sizes, seed, t), range(tries)))


def partition(
    graph: CommGraph,
    sizes: list[int],
    seed: int = 1,
    partitioner: str = "scotch",
    thorough: bool = False,
) -> np.ndarray:
    """Part of each vertex, parts of exactly ``sizes`` vertices, with the least cut we find.

    Candidates, each made exact and refined by balance-keeping swaps: the partitioner's
    result, and contiguous runs of vertices in rank order (the default placement's split,
    often good because decomposers number neighbouring subdomains close together). The
    smallest cut wins (the first on a tie), so a level is never split worse than the default
    would split it. ``thorough`` (the node level, where a cut face costs most) adds SCOTCH
    tries on renumbered copies of the graph and a pairwise FM pass on the winner.
    """
    if partitioner == "kahip":
        found = [kahip_backend.partition(graph, len(sizes), seed=seed)]
    elif partitioner == "scotch":
        if thorough:
            found = _scotch_tries(graph, sizes, seed)
        else:
            found = [scotch.map_weighted(graph, sizes, seed=seed)]
    else:
        raise InputError(
            f"unknown partitioner '{partitioner}' -- choose from {', '.join(PARTITIONERS)}"
        )
    candidates = [refine(graph, enforce_sizes(graph, parts, sizes)) for parts in found]
    candidates.append(refine(graph, np.repeat(np.arange(len(sizes)), sizes)))
    cuts = [cut(graph, parts) for parts in candidates]
    best = candidates[cuts.index(min(cuts))]
    return pairwise.refine_pairs(graph, best) if thorough else best


def _split(
    sub: CommGraph,
    vertices: np.ndarray,
    sizes: list[int],
    seed: int,
    partitioner: str,
    thorough: bool = False,
) -> list[tuple[np.ndarray, CommGraph]]:
    """``vertices`` (ascending; ``sub`` is their induced graph) split into parts of exactly
    ``sizes``: each part's vertices and subgraph, ordered by their lowest vertex among parts of
    the same size (so a remainder part keeps its slot). A part of size 0 (a NUMA node or
    domain without ranks, when a node holds fewer ranks than it has NUMA nodes) gets no
    vertices and is never handed to the partitioner: SCOTCH crashes on empty parts."""
    live = [i for i, size in enumerate(sizes) if size > 0]
    if len(live) < len(sizes):
        placed: list = [(vertices[:0], sub)] * len(sizes)
        if live:
            inner = _split(sub, vertices, [sizes[i] for i in live], seed, partitioner, thorough)
            for i, piece in zip(live, inner):
                placed[i] = piece
        return placed
    if len(sizes) == 1:
        return [(vertices, sub)]
    parts = partition(sub, sizes, seed, partitioner, thorough)
    pieces = [(vertices[local], g) for local, g in sub.split(parts, len(sizes))]
    order = sorted(
        range(len(sizes)),
        key=lambda p: pieces[p][0][0] if len(pieces[p][0]) else np.iinfo(np.int64).max,
    )
    slots_by_size: dict[int, list[int]] = {}
    for slot, size in enumerate(sizes):
        slots_by_size.setdefault(size, []).append(slot)
    placed: list = [None] * len(sizes)
    for p in order:
        placed[slots_by_size[len(pieces[p][0])].pop(0)] = pieces[p]
    return placed


def hierarchical(
    graph: CommGraph,
    machine: Node,
    nodes: int,
    seed: int = 1,
    progress=None,
    partitioner: str = "scotch",
) -> Placement:
    """Seed 000's placement: node, then NUMA domain, then NUMA node, each by SCOTCH."""
    ppn = layout(graph, machine, nodes)
    per_numa = ranks_per_numa(machine, ppn)
    domains = [machine.numa_of_domain(d) for d in range(machine.n_domains)]
    per_domain = [int(per_numa[numas].sum()) for numas in domains]
    node_of = np.zeros(graph.n, dtype=np.int64)
    core_of = np.zeros(graph.n, dtype=np.int64)
    everything = np.arange(graph.n, dtype=np.int64)
    for node, (ranks, node_graph) in enumerate(
        _split(graph, everything, [ppn] * nodes, seed, partitioner, thorough=True)
    ):
        node_of[ranks] = node
        for d, (dranks, domain_graph) in enumerate(
            _split(node_graph, ranks, per_domain, seed, partitioner)
        ):
            numas = domains[d]
            sizes = [int(per_numa[n]) for n in numas]
            for numa, (nranks, _) in zip(
                numas, _split(domain_graph, dranks, sizes, seed, partitioner)
            ):
                core_of[nranks] = machine.numa_cores(numa)[: len(nranks)]
        if progress:
            progress(node + 1, nodes)
    return Placement("rankmap", node_of, core_of, machine, nodes)


def level_volumes(graph: CommGraph, placement: Placement) -> np.ndarray:
    """Halo volume per hardware level (topology.LEVELS order) of ``placement``."""
    u, v, w = graph.edges()
    level = placement.level_between(u, v)
    return np.array([int(w[level == lv].sum()) for lv in range(len(LEVELS))], dtype=np.int64)


def objective(graph: CommGraph, placement: Placement, costs: list[float] | None) -> tuple:
    """What a placement minimises: hop-bytes (halo volume x the cost of the level it
    crosses), then the volume of the slowest level down; without costs, the volumes alone."""
    volume = level_volumes(graph, placement)
    hop_bytes = float(np.dot(volume, costs)) if costs is not None else 0.0
    return (hop_bytes, *volume[::-1].tolist())


#: Up to this many ranks rankmap compares itself with SCOTCH's tleaf mapping too (about 1 s at
#: 16,384 ranks, like the split itself); tleaf's time grows faster than the split's (80 s at
#: 131,072 ranks), so beyond it only block, the default, is compared.
TLEAF_COMPARED = 16_384


def rankmap(
    graph: CommGraph,
    machine: Node,
    nodes: int,
    seed: int = 1,
    progress=None,
    partitioner: str = "scotch",
    costs: list[float] | None = None,
) -> Placement:
    """The hierarchical placement, unless the default (block) or SCOTCH's tleaf mapping
    costs less: then that one, named rankmap with a note. Splitting level by level minimises
    each level's cut on its own, which can leave the whole a few hop-bytes above a baseline;
    comparing with the baselines makes "never above block or tleaf" hold by construction
    (tleaf up to TLEAF_COMPARED ranks).
    On a tie the hierarchical placement stays (its schedule follows its own split)."""
    ours = hierarchical(graph, machine, nodes, seed, progress, partitioner)
    baselines = [block(graph, machine, nodes)]
    if graph.n <= TLEAF_COMPARED:
        try:
            baselines.append(scotch_tleaf(graph, machine, nodes, seed))
        except InputError:
            pass  # tleaf needs the same number of ranks on every NUMA node
    mine = objective(graph, ours, costs)
    scored = [(objective(graph, p, costs), p) for p in baselines]
    candidates = {"split": list(mine), **{p.name: list(score) for score, p in scored}}
    score, best = min(scored, key=lambda t: t[0])
    if score >= mine:
        ours.used, ours.candidates = "split", candidates
        return ours
    what = "hop-bytes" if costs is not None else "halo volume by level"
    return Placement(
        "rankmap",
        best.node_of,
        best.core_of,
        machine,
        nodes,
        note=f"{best.name}'s placement: its {what} are below the hierarchical split's",
        used=best.name,
        candidates=candidates,
    )


def scotch_tleaf(graph: CommGraph, machine: Node, nodes: int, seed: int = 1) -> Placement:
    """SCOTCH's one-shot mapping onto a tleaf of the used cores, strict balance (baseline)."""
    ppn = layout(graph, machine, nodes)
    per_numa = ranks_per_numa(machine, ppn)
    if len(set(per_numa.tolist())) != 1:
        raise InputError(
            f"the scotch-tleaf baseline needs the same number of ranks on every "
            f"NUMA node ({ppn} ranks over {machine.n_numa} NUMA nodes)"
        )
    numa_per_domain = machine.n_numa // machine.n_domains
    # Relative cost of crossing each level, slowest first; a level of fan-out 1 is left out.
    levels = [(nodes, 100), (machine.n_domains, 40), (numa_per_domain, 10), (int(per_numa[0]), 1)]
    levels = [lv for i, lv in enumerate(levels) if lv[0] > 1 or i == 0]
    leaf = scotch.map_tleaf(graph, [f for f, _ in levels], [c for _, c in levels], seed=seed)
    leaf = enforce_sizes(graph, leaf, [1] * graph.n)
    # Leaves are numbered node-major in (domain, NUMA node, core) order: leaf -> (node, slot).
    used = slots(machine, ppn)
    used = used[np.lexsort((used, machine.numa[used], machine.domain[used]))]
    return Placement("scotch-tleaf", leaf // ppn, used[leaf % ppn], machine, nodes)


def place(
    name: str,
    graph: CommGraph,
    machine: Node,
    nodes: int,
    seed: int = 1,
    progress=None,
    partitioner: str = "scotch",
    costs: list[float] | None = None,
) -> Placement:
    """Placement ``name``; rankmap's is never above block's or tleaf's ``costs`` (see
    ``rankmap``)."""
    if name == "block":
        return block(graph, machine, nodes)
    if name == "cyclic":
        return cyclic(graph, machine, nodes)
    if name == "rankmap":
        return rankmap(graph, machine, nodes, seed, progress, partitioner, costs)
    if name == "scotch-tleaf":
        return scotch_tleaf(graph, machine, nodes, seed)
    raise InputError(f"unknown placement '{name}' -- choose from {', '.join(PLACEMENTS)}")
