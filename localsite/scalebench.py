"""The multi-node check at a site's scale on its twin: 128 ranks and more, with the real
patched OpenFOAM oversubscribed on this machine (correctness, not timing; docs/timings.md).

    python -m localsite.scalebench vsc5 v1912 [--nodes 2] [--ranks-per-node 64] [--steps 1]
        [--partition zen3_0512] [--launcher srun] [--results DIR]

runs ``./bench twin SITE run --openfoam FLAVOUR`` with the multi-node check on ``--nodes`` twin
nodes of ``--ranks-per-node`` ranks, every variant (standard, global, global+sums,
local+global; esi-nodecomms where the build has it), one launcher, and prints per variant what
its sanity held (every rank on the host its mapping gives, final fields as standard's, and for
global+sums its sums along the schedule's tree) with the messages between nodes, then the
ranks, the time and the machine's memory peak. Root only (the twin's namespaces).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

from localsite import meminfo, twin
from localsite.benchrun import as_root, logged_run, multinode_cases
from topofoam import paths
from topofoam.results import perflog

#: Reruns of a failed case, each named in the output.
RETRIES = 2
#: The check's node counts (PreparedCavityRanks.nodes): the twin must have as many.
NODE_COUNTS = (2, 4)


def count(row: dict, name: str) -> str:
    value = row.get(name)
    return f"{value:,.0f}" if isinstance(value, float) else "?"


def tree_edges(row: dict) -> str:
    """The reduction tree's edges between nodes, the schedule's beside OpenFOAM's own tree on
    the run's placement (rankmap's analysis, kept in the run's output folder), or ''."""
    path = Path(row.get("outputdir") or "/nonexistent", "analysis.json")
    try:
        edges = json.loads(path.read_text())[0]["tree_edges"]
    except (OSError, ValueError, LookupError, TypeError):
        return ""
    return (
        f"; tree edges between nodes: the schedule's {edges['hierarchical']['inter_node']}, "
        f"OpenFOAM's tree {edges['openfoam']['inter_node']}"
    )


def show(perflogs: Path, ranks: int, since: str = "") -> list[dict]:
    """Print the multi-node check's runs of ``ranks`` ranks that ended at ``since`` or later
    (YYYY-MM-DDTHH:MM:SS, local time), a line each; return them."""
    rows = [
        r
        for r in perflog.read_system(perflogs, checks=("MultiNodeRun",)).rows
        if r.get("num_tasks") == ranks and str(r.get("time") or "") >= since
    ]
    for r in rows:
        print(
            f"  {r['variant']:<14} {r['result']:<5} {r.get('openfoam')}; placement "
            f"{r.get('placement_used')}; MPI_Send between nodes {count(r, 'sends_inter_node')}, "
            f"within {count(r, 'sends_intra_node')}; MPI_Allreduce calls "
            f"{count(r, 'allreduce')}{tree_edges(r)}",
            flush=True,
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m localsite.scalebench", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("site", choices=twin.SITES)
    p.add_argument("openfoam", choices=sorted(twin.STAND_INS), help="the build that runs")
    p.add_argument("--nodes", type=int, default=2, choices=NODE_COUNTS)
    p.add_argument("--ranks-per-node", type=int, default=64)
    p.add_argument("--steps", type=int, default=1, help="time steps of the cavity")
    p.add_argument("--partition", default="", help="the site's partition (default: its first)")
    p.add_argument("--launcher", default="srun", choices=("srun", "mpirun"))
    p.add_argument("--results", type=Path, help="results folder (default: a new one)")
    args = p.parse_args(argv)
    if not as_root("scalebench"):
        return 2
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    parts = twin.partitions(twin.load_site(args.site))
    part = next((t for t in parts if t.name == (args.partition or parts[0].name)), None)
    if part is None:
        print(
            f"scalebench: {args.site} has no partition {args.partition!r} -- choose one of "
            f"{', '.join(t.name for t in parts)}",
            file=sys.stderr,
        )
        return 2
    results = args.results or Path(tempfile.mkdtemp(prefix=f"scalebench-{args.site}-"))
    ranks = args.nodes * args.ranks_per_node
    select = multinode_cases(repeat="0", launcher=args.launcher, nodes=str(args.nodes))
    command = [
        str(paths.REPO / "bench"), "twin", args.site, "run", "--nodes", str(args.nodes),
        "--openfoam", args.openfoam, "--",
        "--system", f"{args.site}:{part.name}", "-n", select,
        "-S", f"PreparedCavityRanks.ranks_per_node={args.ranks_per_node}",
        "-S", f"PreparedCavityRanks.steps_override={args.steps}",
        # ob1's start-up race under srun (Open MPI 4.1: localsite.cli.EMU_RETRIES): at 128
        # ranks a launch meets it far more often than at 8; each rerun is named below. An Open
        # MPI 5 twin runs UCX's PML instead (localsite.cluster.UCX_PML)
        "--max-retries", str(RETRIES),
    ]  # fmt: skip
    print(
        f"scalebench: {args.site} twin, {part.name}: {args.nodes} nodes x {args.ranks_per_node} "
        f"= {ranks} ranks, {args.openfoam}, {args.launcher}, {args.steps} step(s); results in "
        f"{results}",
        flush=True,
    )
    since = time.strftime("%Y-%m-%dT%H:%M:%S")  # a results folder may hold earlier runs
    peak = meminfo.Peak()
    peak.start()
    log = results / "bench.log"
    results.mkdir(parents=True, exist_ok=True)
    try:
        code, took = logged_run(command, dict(os.environ, TOPOFOAM_RESULTS=str(results)), log)
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: the twin stopped itself first
        print(f"scalebench: interrupted; the twin stopped; log {log}", file=sys.stderr)
        return 130
    peak.done.set()
    peak.join()
    rows = show(results / "perflogs" / args.site, ranks, since)
    failed = [
        ln
        for ln in log.read_text().splitlines()
        if any(w in ln for w in ("FAIL", "Error", "Retrying", "retry"))
    ]
    for line in failed[:20]:
        print(f"  {line.strip()}")
    print(
        f"scalebench: {ranks} ranks on {args.nodes} {args.site} twin nodes, {args.openfoam}: "
        f"{len(rows)} run(s) logged, exit {code}, {took / 60:.1f} min, memory peak "
        f"{peak.peak:,} MiB above the start; log {log}",
        flush=True,
    )
    return code


if __name__ == "__main__":
    sys.exit(main())
