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


def _arcs_of(graph: CommGraph, members: np.ndarray):
    """(local index of the member, neighbour, weight) for every arc leaving ``members``."""
    starts = graph.xadj[members].astype(np.int64)
    degree = graph.xadj[members + 1].astype(np.int64) - starts
    local = np.repeat(np.arange(len(members)), degree)
    offsets = np.arange(len(local)) - np.repeat(np.cumsum(degree) - degree, degree)
    idx = np.repeat(starts, degree) + offsets
    return local, graph.adjncy[idx].astype(np.int64), graph.adjwgt[idx].astype(np.int64)


def enforce_sizes(graph: CommGraph, parts: np.ndarray, sizes: list[int]) -> np.ndarray:
    """``parts`` changed as little as possible so that part p holds exactly sizes[p] vertices.

    Over-full parts are emptied in turn. Each round moves the part's surplus: its vertices
    by gain (edge weight to the destination minus to the own part; the best under-full
    neighbour part, else the first under-full part), best first, each destination filled
    at most to its size; rounds repeat until the part has its size.
    """
    parts = parts.astype(np.int64).copy()
    target = np.asarray(sizes, dtype=np.int64)
    if target.sum() != graph.n:
        raise ValueError(f"part sizes add up to {target.sum()}, the graph has {graph.n} vertices")
    k = len(target)
    count = np.bincount(parts, minlength=k)
    for src in np.flatnonzero(count > target).tolist():
        while count[src] > target[src]:
            members = np.flatnonzero(parts == src)
            local, nb, w = _arcs_of(graph, members)
            q = parts[nb]
            own = np.bincount(local, weights=w * (q == src), minlength=len(members))
            under = count < target
            dest = np.full(len(members), int(np.argmax(under)))
            to_dest = np.zeros(len(members))
            sel = under[q]
            if sel.any():
                key = local[sel] * k + q[sel]
                keys, inv = np.unique(key, return_inverse=True)
                weight = np.bincount(inv, weights=w[sel])
                # per member: the heaviest under-full neighbour part, the lowest on a tie
                order = np.lexsort((keys % k, -weight, keys // k))
                first = np.ones(len(order), dtype=bool)
                first[1:] = (keys // k)[order][1:] != (keys // k)[order][:-1]
                pick = order[first]
                dest[keys[pick] // k] = keys[pick] % k
                to_dest[keys[pick] // k] = weight[pick]
            gain = to_dest - own
            room = target - count
            moved = 0  # at least one: every destination had room when the round began
            for i in np.lexsort((members, -gain)).tolist():
                if moved == count[src] - target[src]:
                    break
                d = int(dest[i])
                if room[d] <= 0:
                    continue  # filled this round; the next round finds it another place
                parts[members[i]] = d
                room[d] -= 1
                moved += 1
            count = np.bincount(parts, minlength=k)
    return parts.astype(np.int32)


def cut(graph: CommGraph, parts: np.ndarray) -> int:
    u, v, w = graph.edges()
    return int(w[parts[u] != parts[v]].sum())


def _best_moves(graph: CommGraph, parts: np.ndarray):
    """For each boundary vertex, its best other part and the gain of moving there."""
    u, v, w = graph.arcs()
    pv = parts[v]
    n_parts = int(parts.max()) + 1
    key = u * n_parts + pv
    uniq, inv = np.unique(key, return_inverse=True)
    conn = np.bincount(inv, weights=w)
    cu, cp = uniq // n_parts, uniq % n_parts
    own = np.zeros(graph.n)
    same = cp == parts[cu]
    own[cu[same]] = conn[same]
    other = ~same
    cu, cp, gain = cu[other], cp[other], conn[other] - own[cu[other]]
    # Keep each vertex's best destination.
    order = np.lexsort((-gain, cu))
    first = np.ones(len(order), dtype=bool)
    first[1:] = cu[order][1:] != cu[order][:-1]
    pick = order[first]
    return cu[pick], cp[pick], gain[pick]


def refine(graph: CommGraph, parts: np.ndarray, passes: int = 4) -> np.ndarray:
    """Swap pairs of boundary vertices between two parts while that lowers the cut.

    Swaps keep every part's size, so exact balance is kept. Each pass pairs, for every two
    adjacent parts, the vertices that gain most by moving each way, and applies a swap only if
    its exact gain (recomputed on the current parts) is positive.
    """
    parts = parts.astype(np.int64).copy()
    for _ in range(passes):
        verts, dests, gains = _best_moves(graph, parts)
        if len(verts) == 0:
            break
        src = parts[verts]
        by_pair: dict[tuple[int, int], list[tuple[float, int]]] = {}
        for v, s, d, g in zip(verts.tolist(), src.tolist(), dests.tolist(), gains.tolist()):
            by_pair.setdefault((s, d), []).append((g, v))
        moved = set()
        improved = 0
        for (a, b), forward in by_pair.items():
            if a > b or (b, a) not in by_pair:
                continue
            backward = sorted(by_pair[(b, a)], reverse=True)
            for (ga, va), (gb, vb) in zip(sorted(forward, reverse=True), backward):
                if ga + gb <= 0:
                    break
                if va in moved or vb in moved:
                    continue
                ca, cb = _connection(graph, va, parts), _connection(graph, vb, parts)
                w_ab = _edge_weight(graph, va, vb)
                gain = (ca.get(b, 0) - ca.get(a, 0)) + (cb.get(a, 0) - cb.get(b, 0)) - 2 * w_ab
                if gain > 0:
                    parts[va], parts[vb] = b, a
                    moved.update((va, vb))
                    improved += gain
        if improved == 0:
            break
    return parts.astype(np.int32)


def _edge_weight(graph: CommGraph, a: int, b: int) -> int:
    lo, hi = graph.xadj[a], graph.xadj[a + 1]
    hit = np.flatnonzero(graph.adjncy[lo:hi] == b)
    return int(graph.adjwgt[lo + hit[0]]) if len(hit) else 0
