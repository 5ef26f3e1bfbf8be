"""Reduction schedules: for each rank the rank it sends to (``above``, -1 at the root, rank 0)
and the ranks it receives from (``below``, in receive order) -- OpenFOAM's commsStruct.

``hierarchical`` (seed 000 section 4.2) reduces inside NUMA nodes, then among NUMA-node
leaders of a NUMA domain, then among domain leaders of a node, then among node leaders: each
level's groups are joined by a binomial tree (logarithmic depth) rooted at the group's lowest
rank, so a level with g groups inside a parent contributes exactly g-1 edges, the minimum, and
the N nodes are joined by exactly N-1 inter-node edges. ``openfoam_tree`` is OpenFOAM's own
binomial tree over rank indices (UPstream.C), for comparison.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rankmap.mapping import Placement


@dataclass
class Schedule:
    above: np.ndarray  # int64, -1 at the root
    below: list[list[int]]  # receive order: lower levels first, smaller subtrees first
    level: np.ndarray  # hardware level of the edge to above; -1 at the root
    name: str = ""

    @property
    def n(self) -> int:
        return len(self.above)

    def edges_per_level(self) -> list[int]:
        return np.bincount(self.level[self.level >= 0], minlength=4).tolist()

    def depth(self) -> int:
        """Edges on the longest path from a rank to the root."""
        depth = np.zeros(self.n, dtype=np.int64)
        for r in self.top_down():
            if self.above[r] >= 0:
                depth[r] = depth[self.above[r]] + 1
        return int(depth.max())

    def top_down(self) -> list[int]:
        """Every rank, each after the rank it sends to (rank 0 first)."""
        order, stack = [], [int(r) for r in np.flatnonzero(self.above < 0)]
        while stack:
            r = stack.pop()
            order.append(r)
            stack.extend(self.below[r])
        return order

    def check(self) -> None:
        """A tree over all ranks rooted at rank 0, above and below consistent."""
        if self.above[0] != -1 or (self.above[1:] < 0).any():
            raise AssertionError("rank 0 must be the only root")
        for r, children in enumerate(self.below):
            for c in children:
                if self.above[c] != r:
                    raise AssertionError(f"rank {c} is below {r} but sends to {self.above[c]}")
        if sorted(self.top_down()) != list(range(self.n)):
            raise AssertionError("the schedule does not reach every rank from rank 0")


def _binomial(members: list[int], above: np.ndarray, below: list[list[int]]) -> None:
    """Join sorted ``members`` by OpenFOAM's binomial tree over their positions."""
    k = len(members)
    step = 1
    while step < k:
        for i in range(0, k - step, 2 * step):
            child, parent = members[i + step], members[i]
            above[child] = parent
            below[parent].append(child)
        step *= 2


def hierarchical(placement: Placement) -> Schedule:
    n = len(placement.node_of)
    above = np.full(n, -1, dtype=np.int64)
    below: list[list[int]] = [[] for _ in range(n)]
    keys = [
        # (group key of a rank at this level, from the finest level up)
        np.stack([placement.node_of, placement.domain_of(), placement.numa_of()], axis=1),
        np.stack([placement.node_of, placement.domain_of()], axis=1),
        placement.node_of[:, None],
        np.zeros((n, 1), dtype=np.int64),
    ]
    leaders = np.arange(n)
    for key in keys:
        groups: dict[tuple, list[int]] = {}
        for r in leaders.tolist():
            groups.setdefault(tuple(key[r].tolist()), []).append(r)
        for members in groups.values():
            _binomial(sorted(members), above, below)
        leaders = np.array(sorted(min(m) for m in groups.values()))
    level = np.full(n, -1, dtype=np.int64)
    has = above >= 0
    level[has] = placement.level_between(np.flatnonzero(has), above[has])
    return Schedule(above, below, level, f"hierarchical ({placement.name} placement)")


def openfoam_tree(placement: Placement, n_procs_simple_sum: int = 16) -> Schedule:
    """OpenFOAM's own schedule: below ``nProcsSimpleSum`` ranks (OptimisationSwitch, 16 in
    v1912) every rank sends to rank 0; from there on rank p sends to p with its lowest set
    bit cleared (UPstream.C)."""
    n = len(placement.node_of)
    above = np.full(n, -1, dtype=np.int64)
    below: list[list[int]] = [[] for _ in range(n)]
    if n < n_procs_simple_sum:
        above[1:] = 0
        below[0] = list(range(1, n))
    else:
        _binomial(list(range(n)), above, below)
    level = np.full(n, -1, dtype=np.int64)
    has = above >= 0
    level[has] = placement.level_between(np.flatnonzero(has), above[has])
    return Schedule(above, below, level, f"OpenFOAM tree ({placement.name} placement)")
