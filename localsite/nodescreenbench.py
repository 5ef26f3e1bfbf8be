"""How far the node screening can be trusted on the emulated cluster (docs/timings.md).

    python -m localsite.nodescreenbench [--unchanged 10] [--shares 0.95,0.9,0.85,0.8,0.75]

runs NodeScreening (``./bench run --partition emu --tag screening -n NodeScreening``, 4
emulated nodes, measured at once) the ``--unchanged`` times with no fault (every finding
there is a false alarm), then once with node3 under each CPU quota that leaves it that
share of the CPU time each peer gets (TOPOFOAM_EMU_CPU, ``cpuquota.of_peers``), and
prints per run the findings, node3's solver time against its peers' median, and what the
rule resolved. Each run has a results folder
of its own under a scratch folder. Root only. Run it with nothing else on the machine: it is
a timing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from localsite import cpuquota
from localsite.benchrun import bench_run, controls

NODE = "node3"


def _run(scratch: Path, label: str, settings: dict[str, str]) -> dict:
    results = scratch / label
    done, took = bench_run(results, "emu", "screening", "-n", "NodeScreening", **settings)
    found = sorted(results.glob("reframe/*/local/emu/*/NodeScreening*/nodes.json"))
    if not found:
        return {"label": label, "exit": done.returncode, "took": took, "error": done.stdout[-500:]}
    s = json.loads(found[-1].read_text())
    walls = {n: f["solver_s"] for n, f in s["nodes"].items()}
    peers = statistics.median(w for n, w in walls.items() if n != NODE)
    return {
        "label": label,
        "took": took,
        "findings": s["outliers"] + s["differences"],
        "ratio": walls[NODE] / peers,
        "resolved": s["rule"].split("resolved here: ")[-1],
    }


def _show(r: dict) -> str:
    return (
        f"{NODE}'s solver {100 * (r['ratio'] - 1):+.1f} % against its peers; resolved "
        f"{r['resolved']}"
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m localsite.nodescreenbench", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("--unchanged", type=int, default=10)
    p.add_argument("--shares", default="0.95,0.9,0.85,0.8,0.75")
    args = p.parse_args(argv)
    faults = [
        (f"share {q}", {"TOPOFOAM_EMU_CPU": f"{NODE}={cpuquota.of_peers(float(q), 4):.4f}"})
        for q in args.shares.split(",")
        if q
    ]
    return controls("nodescreenbench", NODE, args.unchanged, faults, _run, _show)


if __name__ == "__main__":
    sys.exit(main())
