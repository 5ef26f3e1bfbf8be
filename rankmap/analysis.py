"""How a placement and a schedule load each hardware level (seed 000 Fig. 5 and more)."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from rankmap.errors import InputError
from rankmap.graph import CommGraph
from rankmap.mapping import Placement, level_volumes
from rankmap.schedule import hierarchical, openfoam_tree
from rankmap.topology import LEVELS

LATENCY_CSV = Path(__file__).with_name("p2p_latency_us.csv")


def cost_vector(
    system: str = "vsc5", size: int = 1000, table: Path | str | None = None
) -> list[float] | None:
    """Round-trip time in us per level for ``system`` at ``size`` scalars, from ``table`` (the
    format of seed 000 Table 2, p2p_latency_us.csv, which is the default; the p2p check's
    measurements convert to it); a level a system lacks takes the next faster level's time
    (on LEC hpc2 a NUMA domain is one NUMA node). System 'none': no costs (no hop-bytes)."""
    if system == "none":
        return None
    table = Path(table or LATENCY_CSV)
    try:
        with open(table) as f:
            rows = [r for r in csv.DictReader(line for line in f if not line.startswith("#"))]
    except OSError as e:
        raise InputError(f"cannot read the latency table {table}: {e.strerror}") from None
    for row in rows:
        if row.get("system") == system and str(row.get("size")) == str(size):
            costs, last = [], None
            for level in LEVELS:
                text = (row.get(level) or "").strip()
                if text:
                    try:
                        last = float(text)
                    except ValueError:
                        last = float("nan")
                    if not last > 0 or last == float("inf"):
                        raise InputError(
                            f"{table}: {level} of {system} at {size} is '{text}' -- a "
                            f"round-trip time must be a positive number of microseconds"
                        )
                elif last is None:
                    raise InputError(
                        f"{table}: {level} of {system} at {size} is empty -- the fastest "
                        f"level needs a time (slower levels may be empty: they take the next "
                        f"faster one's)"
                    )
                costs.append(last)
            return costs
    have = sorted({(r.get("system"), r.get("size")) for r in rows})
    raise InputError(
        f"no latency row for {system} at size {size} in {table}; have {have} "
        f"-- choose --cost-system/--cost-size from those"
    )


#: What each figure of mapping.objective is, in its order.
OBJECTIVE = ("hop-bytes", *(f"{lv} halo volume" for lv in LEVELS[::-1]))


def choice(result: dict) -> str:
    """Which placement rankmap used and what decided, in one line: the candidates' figures
    at the first place of the objective where they differ, e.g. ``split (hop-bytes: split
    1.2e+06, block 1.5e+06, scotch-tleaf 1.3e+06)``; the placement's name where rankmap
    compared nothing (block, cyclic)."""
    used, candidates = result.get("used") or result["placement"], result.get("candidates")
    if not candidates:
        return used
    scores = list(candidates.values())
    at = next((i for i in range(len(scores[0])) if len({s[i] for s in scores}) > 1), None)
    if at is None:
        return f"{used} (all candidates equal)"
    figures = ", ".join(f"{name} {s[at]:.4g}" for name, s in candidates.items())
    return f"{used} ({OBJECTIVE[at]}: {figures})"


def analyze(
    graph: CommGraph,
    placement: Placement,
    costs: list[float] | None,
    seconds: float | None = None,
) -> dict:
    u, v, w = graph.edges()
    level = placement.level_between(u, v)
    volume = level_volumes(graph, placement).tolist()
    total = sum(volume) or 1
    cross = level == 3
    inter_node = np.zeros(graph.n, dtype=np.int64)
    np.add.at(inter_node, u[cross], w[cross])
    np.add.at(inter_node, v[cross], w[cross])
    degree = np.diff(graph.xadj)
    stock, ours = openfoam_tree(placement), hierarchical(placement)
    return {
        "placement": placement.name,
        "note": placement.note,
        # rankmap's: whose placement it is, and what decided (choice())
        "used": placement.used or placement.name,
        "candidates": placement.candidates,
        "ranks": graph.n,
        "nodes": placement.nodes,
        "halo_volume": dict(zip(LEVELS, volume)),
        "halo_share": {lv: vol / total for lv, vol in zip(LEVELS, volume)},
        "hop_bytes": float(np.dot(volume, costs)) if costs is not None else None,
        "costs_us": costs,
        "max_inter_node_volume": int(inter_node.max()) if graph.n else 0,
        "neighbours": {
            "min": int(degree.min()),
            "mean": float(degree.mean()),
            "max": int(degree.max()),
        },
        "tree_edges": {
            "openfoam": dict(zip(LEVELS, stock.edges_per_level())),
            "hierarchical": dict(zip(LEVELS, ours.edges_per_level())),
        },
        "tree_depth": {"openfoam": stock.depth(), "hierarchical": ours.depth()},
        "mapping_seconds": seconds,
    }


def table(results: list[dict]) -> str:
    """A fixed-width table of the analyses, one column per placement."""
    short = {
        "intra_numa_node": "intra-NUMA",
        "inter_numa_node": "inter-NUMA",
        "inter_numa_domain": "inter-domain",
        "inter_node": "inter-node",
    }
    rows = [("", [r["placement"] for r in results])]
    for lv in LEVELS:
        rows.append((f"halo {short[lv]} %", [f"{100 * r['halo_share'][lv]:.1f}" for r in results]))
    rows.append(("halo inter-node faces", [str(r["halo_volume"]["inter_node"]) for r in results]))
    rows.append(("max inter-node faces/rank", [str(r["max_inter_node_volume"]) for r in results]))
    rows.append(
        (
            "hop-bytes (faces*us)",
            [f"{r['hop_bytes']:.0f}" if r["hop_bytes"] is not None else "-" for r in results],
        )
    )
    for tree in ("openfoam", "hierarchical"):
        rows.append(
            (
                f"{tree} tree edges by level",
                ["/".join(str(r["tree_edges"][tree][lv]) for lv in LEVELS) for r in results],
            )
        )
    rows.append(
        (
            "mapping time s",
            [
                f"{r['mapping_seconds']:.2f}" if r["mapping_seconds"] is not None else "-"
                for r in results
            ],
        )
    )
    width = max(len(label) for label, _ in rows)
    cols = [max(len(row[1][i]) for row in rows) for i in range(len(results))]
    lines = [
        label.ljust(width) + "  " + "  ".join(cell.rjust(c) for cell, c in zip(cells, cols))
        for label, cells in rows
    ]
    lines += [f"{r['placement']}: {r['note']}" for r in results if r.get("note")]
    lines += [f"rankmap used {choice(r)}" for r in results if r.get("candidates")]
    return "\n".join(lines)
