"""Exact part sizes: move boundary vertices from over-full to under-full parts.

SCOTCH balances within a tolerance; a rank placement needs exact sizes (one rank per core).
Each move takes, from an over-full part, the vertex whose move to an under-full part costs the
least cut (most often a gain), so the repair touches few vertices and keeps the cut low.
"""

from __future__ import annotations

import numpy as np

from rankmap.graph import CommGraph


def _connection(graph: CommGraph, vertex: int, parts: np.ndarray) -> dict[int, int]:
    """Edge weight from ``vertex`` to each part it touches."""
    lo, hi = graph.xadj[vertex], graph.xadj[vertex + 1]
    conn: dict[int, int] = {}
    for nb, w in zip(graph.adjncy[lo:hi].tolist(), graph.adjwgt[lo:hi].tolist()):
        p = int(parts[nb])
        conn[p] = conn.get(p, 0) + w
    return conn


def enforce_sizes(graph: CommGraph, parts: np.ndarray, sizes: list[int]) -> np.ndarray:
    """``parts`` changed as little as possible so that part p holds exactly sizes[p] vertices."""
    parts = parts.astype(np.int64).copy()
    target = np.asarray(sizes, dtype=np.int64)
    if target.sum() != graph.n:
        raise ValueError(f"part sizes add up to {target.sum()}, the graph has {graph.n} vertices")
    count = np.bincount(parts, minlength=len(target))
    for src in np.flatnonzero(count > target).tolist():
        members = set(np.flatnonzero(parts == src).tolist())
        while count[src] > target[src]:
            under = count < target
            first_under = int(np.argmax(under))
            best = None  # (gain, vertex, destination)
            for v in sorted(members):
                conn = _connection(graph, v, parts)
                # The best under-full neighbour part, else any under-full part (gain -own).
                dst, to_dst = first_under, 0
                for q, w in conn.items():
                    if under[q] and (w > to_dst or (w == to_dst and q < dst)):
                        dst, to_dst = q, w
                gain = to_dst - conn.get(src, 0)
                if best is None or gain > best[0]:
                    best = (gain, v, dst)
            _, v, dst = best
            parts[v] = dst
            members.discard(v)
            count[src] -= 1
            count[dst] += 1
    return parts.astype(np.int32)
