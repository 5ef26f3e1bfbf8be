"""Pairwise FM refinement with exact part sizes.

For each two adjacent parts, heaviest shared cut first, a Fiduccia-Mattheyses pass moves
boundary vertices between the two, best gain first, each vertex at most once, letting the two
sizes drift by at most ``tol`` from their targets; the pass then goes back to its best point at
which both parts have their exact sizes again. Unlike single swaps (``balance.refine``), a pass
can go through losing moves to reach a better balanced cut, which is what SCOTCH's recursive
bisection leaves on the table on meshes. Sizes are kept exactly, so any exact partition stays
exact.

The connection table is dense (vertices x parts), so the refinement is meant for the node level
of a placement (a few thousand ranks on tens of nodes); ``fits`` says whether a graph is small
enough.
"""

from __future__ import annotations

import heapq

import numpy as np

from rankmap.graph import CommGraph

MAX_TABLE = 2_000_000  # vertices x parts in the connection table (16 MB as int64)


def fits(graph: CommGraph, parts: int) -> bool:
    return graph.n * parts <= MAX_TABLE


def _pairs(graph: CommGraph, p: np.ndarray) -> list[tuple[int, int, list[int]]]:
    """(a, b, boundary vertices of a and b facing each other) for every two adjacent parts,
    heaviest cut between them first (ties by part numbers, so the order is deterministic)."""
    u, v, w = graph.arcs()
    cross = p[u] != p[v]
    u, v, w = u[cross], v[cross], w[cross]
    a, b = np.minimum(p[u], p[v]), np.maximum(p[u], p[v])
    k = int(p.max()) + 1
    key = a * k + b
    weight = np.bincount(key, weights=w)
    keys = np.unique(key)
    members: dict[int, list[int]] = {}
    order = np.lexsort((u, key))
    for kk, x in zip(key[order].tolist(), u[order].tolist()):
        members.setdefault(kk, [])
        if not members[kk] or members[kk][-1] != x:
            members[kk].append(x)
    ranked = sorted(keys.tolist(), key=lambda kk: (-weight[kk], kk))
    return [(kk // k, kk % k, members[kk]) for kk in ranked]


def refine_pairs(
    graph: CommGraph, parts: np.ndarray, rounds: int = 2, tol: int = 1, patience: int = 20
) -> np.ndarray:
    """``parts`` with a cut no larger, every part the same size as before."""
    p_arr = np.asarray(parts, dtype=np.int64)
    k = int(p_arr.max()) + 1 if len(p_arr) else 1
    if k < 2 or not fits(graph, k):
        return p_arr.astype(np.int32)
    xadj = graph.xadj.tolist()
    adj = graph.adjncy.tolist()
    wgt = graph.adjwgt.tolist()
    u, v, w = graph.arcs()
    table = np.zeros((graph.n, k), dtype=np.int64)
    np.add.at(table, (u, p_arr[v]), w)
    conn = table.tolist()
    p = p_arr.tolist()

    def move(x: int, q: int) -> None:
        own = p[x]
        for j in range(xadj[x], xadj[x + 1]):
            row = conn[adj[j]]
            row[own] -= wgt[j]
            row[q] += wgt[j]
        p[x] = q

    for _ in range(rounds):
        improved = 0
        for a, b, boundary in _pairs(graph, np.asarray(p)):
            heap = []
            for x in boundary:
                own = p[x]
                if own in (a, b):
                    other = b if own == a else a
                    if conn[x][other] > 0:
                        heap.append((conn[x][own] - conn[x][other], x))
            heapq.heapify(heap)
            locked: set[int] = set()
            waiting: dict[int, list] = {a: [], b: []}
            moves: list[tuple[int, int]] = []
            drift = gain = best = best_len = 0  # drift: size of a above its target
            while heap:
                loss, x = heapq.heappop(heap)
                if x in locked:
                    continue
                own = p[x]
                other = b if own == a else a
                g = conn[x][other] - conn[x][own]
                if g != -loss:  # stale entry: its gain changed since it was pushed
                    heapq.heappush(heap, (-g, x))
                    continue
                after = drift - 1 if own == a else drift + 1
                if abs(after) > tol:
                    waiting[own].append((loss, x))  # until its part has room to give
                    continue
                move(x, other)
                locked.add(x)
                drift, gain = after, gain + g
                moves.append((x, own))
                if drift == 0 and gain > best:
                    best, best_len = gain, len(moves)
                if len(moves) - best_len > patience:
                    break
                for entry in waiting[other]:
                    heapq.heappush(heap, entry)
                waiting[other] = []
                for j in range(xadj[x], xadj[x + 1]):
                    y = adj[j]
                    if y not in locked and p[y] in (a, b):
                        oy = b if p[y] == a else a
                        if conn[y][oy] > 0:
                            heapq.heappush(heap, (conn[y][p[y]] - conn[y][oy], y))
            for x, own in reversed(moves[best_len:]):
                move(x, own)
            improved += best
        if improved == 0:
            break
    return np.asarray(p, dtype=np.int32)
