"""Which round-trip times price a placed run's hop-bytes (rankmap's analysis.json).

In order:

1. **measured**: the partition's own round-trip times from the ``p2p`` check (its passed runs
   in this system's perflogs, merged by the suite's one rule, at 1,000 scalars), when they
   cover every hardware level a run on the partition can cross;
2. **published**: the partition's system's own row of seed 000 Table 2
   (rankmap/p2p_latency_us.csv), when the site names it (``published_costs``);
3. **none**: hop-bytes are left out. Another system's times are never used.

The perflog's ``costs`` column and the report say which one priced a run.
"""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass
from pathlib import Path

from rankmap import topology
from topofoam import paths

SIZE = 1000  # scalars per message: seed 000 prices hop-bytes at 1,000
TABLE = "p2p-costs.csv"  # written into the run's stage folder when measured times are used


@dataclass
class Costs:
    kind: str  # measured, published or none
    options: list[str]  # rankmap's cost options
    label: str  # the perflog's costs column
    row: dict | None = None  # the measured row, to write as TABLE

    def write_table(self, folder: str | Path) -> None:
        if self.row is None:
            return
        with open(Path(folder) / TABLE, "w", newline="") as f:
            f.write(
                "# Round-trip time in us measured by the p2p check (topofoam.prediction.costs)\n"
            )
            writer = csv.DictWriter(f, fieldnames=["system", "size", *topology.LEVELS])
            writer.writeheader()
            writer.writerow(self.row)


def levels_crossed(machine: topology.Node, max_nodes: int) -> list[str]:
    """The hardware levels a run on ``max_nodes`` nodes of ``machine`` can cross."""
    crossed = ["intra_numa_node"]
    if machine.n_numa > machine.n_domains:
        crossed.append("inter_numa_node")
    if machine.n_domains > 1:
        crossed.append("inter_numa_domain")
    if max_nodes > 1:
        crossed.append("inter_node")
    return crossed


def choose(
    partition: str,
    measured: list[dict],
    crossed: list[str],
    published: str = "",
) -> Costs:
    """The costs for ``partition`` ('system:partition') given the p2p table's rows."""
    for row in measured:
        if row.get("system") == partition and int(row.get("size", 0)) == SIZE:
            missing = [lv for lv in crossed if row.get(lv) in (None, "")]
            if not missing:
                return Costs(
                    "measured",
                    ["--cost-table", TABLE, "--cost-system", partition, "--cost-size", str(SIZE)],
                    f"measured: p2p check on {partition}, {SIZE} scalars",
                    row,
                )
    if published:
        return Costs(
            "published",
            ["--cost-system", published, "--cost-size", str(SIZE)],
            f"published: seed 000 Table 2, {published}, {SIZE} scalars",
        )
    return Costs("none", ["--cost-system", "none"], "none: no p2p measurement, none published")


def for_partition(system: str, part_name: str, node: str, extras: dict) -> Costs:
    """The costs of a partition of the running system whose node is ``node`` (rankmap's
    --topology), from the system's perflogs and the partition's extras."""
    perflogs = paths.results_dir() / "perflogs" / system
    rows = list(_p2p_rows(perflogs, _p2p_logs(perflogs))) if perflogs.is_dir() else []
    crossed = _crossed(node, max(extras.get("nodes") or [1]))
    return choose(f"{system}:{part_name}", rows, list(crossed), extras.get("published_costs", ""))


def _p2p_logs(perflogs: Path) -> tuple:
    """The p2p check's perflog files under a system's folder, with their sizes and times: what
    _p2p_rows is keyed by, so they are read again only after a p2p run wrote to them."""
    found = []
    for path in sorted(perflogs.glob("*/PingPongRun.log*")):
        try:
            stat = path.stat()
        except OSError:
            continue
        found.append((str(path), stat.st_size, stat.st_mtime_ns))
    return tuple(found)


@functools.lru_cache(maxsize=4)
def _p2p_rows(perflogs: Path, logs: tuple) -> tuple[dict, ...]:
    """The latency table of a system's perflogs (``logs``: _p2p_logs, the cache's key): every
    placed test of a session asks at setup, and one read of the perflogs does for all."""
    from topofoam.results import p2p  # the perflog reader, only when a run asks

    return tuple(p2p.table(perflogs))


@functools.cache
def _crossed(node: str, max_nodes: int) -> tuple[str, ...]:
    """levels_crossed of a node description, read once per process: every test of a
    partition asks, and reading one is an lstopo run."""
    return tuple(levels_crossed(topology.load(node), max_nodes))
