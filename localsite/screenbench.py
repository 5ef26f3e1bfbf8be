"""How far the fabric screening can be trusted on the emulated cluster (docs/timings.md).

    python -m localsite.screenbench [--unchanged 10] [--rates 2gbit,1gbit,500mbit,200mbit]

runs the screening (``./bench run --partition emu --tag screening``, 4 emulated nodes) the
``--unchanged`` times with no link limited (every outlier there is a false alarm), then once
with node3's link limited to each rate (TOPOFOAM_EMU_LINKS: tc's token bucket), and prints per
run the outliers, node3's measured bandwidth beside the rate set, and its peers'. Each run has
a results folder of its own under a scratch folder. Root only (namespaces, tc). Run it with
nothing else on the machine: it is a timing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

from localsite.benchrun import bench_run
from topofoam.config import settings

NODE = "node3"


def _run(scratch: Path, label: str, rate: str = "") -> dict:
    results = scratch / label
    limit = f"{NODE}={rate}" if rate else ""
    done, took = bench_run(results, "emu", "screening", TOPOFOAM_EMU_LINKS=limit)
    found = sorted(results.glob("reframe/*/local/emu/*/FabricScreening*/screening.json"))
    if not found:
        return {"label": label, "exit": done.returncode, "took": took, "error": done.stdout[-500:]}
    s = json.loads(found[-1].read_text())
    node = s["nodes"][NODE]["mbps"]
    peers = statistics.median(v["mbps"] for n, v in s["nodes"].items() if n != NODE)
    return {
        "label": label,
        "exit": done.returncode,
        "took": took,
        "outliers": s["outliers"],
        "node3": node,
        "peers": peers,
        "set": settings.rate_mbytes(rate) if rate else None,
    }


def _print(r: dict) -> None:
    if "error" in r:
        print(f"{r['label']:>12}: no screening (exit {r['exit']}): {r['error']!r}", flush=True)
        return
    shaped = f", set {r['set']:.1f} MB/s" if r["set"] else ""
    named = "; ".join(r["outliers"]) or "no outlier"
    print(
        f"{r['label']:>12}: {named}; {NODE} {r['node3']:.1f} MB/s{shaped}, its peers "
        f"{r['peers']:.0f} MB/s ({100 * (r['node3'] / r['peers'] - 1):+.0f} %); {r['took']:.0f} s",
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m localsite.screenbench", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("--unchanged", type=int, default=10)
    p.add_argument("--rates", default="2gbit,1gbit,500mbit,200mbit")
    args = p.parse_args(argv)
    if os.geteuid() != 0:
        print("screenbench: the emulated cluster needs root -- run as root", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="screenbench-") as scratch:
        print(f"screenbench: {args.unchanged} unchanged runs, then {NODE} at {args.rates}")
        same = [_run(Path(scratch), f"same{i + 1}") for i in range(args.unchanged)]
        for r in same:
            _print(r)
        limited = []
        for rate in (x for x in args.rates.split(",") if x):
            limited.append(_run(Path(scratch), rate, rate))
            _print(limited[-1])
    alarms = sum(bool(r.get("outliers")) for r in same)
    print(
        f"screenbench: false alarms {alarms} of {len(same)} unchanged runs; {NODE} named at "
        + ", ".join(
            f"{r['label']}: {'yes' if any(NODE in o for o in r.get('outliers', [])) else 'no'}"
            for r in limited
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
