"""How faithfully the emulated cluster carries a fabric profile's costs (docs/timings.md).

    python -m localsite.fabricbench [--profiles vsc5x100,hpc2x100,vsc5x40] [--times 3]

runs the p2p check on the emulated cluster (``./bench run --partition emu --tag p2p``, two
nodes) under each profile ``--times`` times, each in a results folder of its own, and prints
per profile what was set and what was measured: the round trip of 10 and 1,000 scalars
(set: 2 (L + bytes / B)), the bandwidth of 1 MiB messages (set: B) and a one-scalar
all-reduce between the two nodes (set: L), each the median of the runs, with its error.
Root only (namespaces, tc). Run it with nothing else on the machine: it is a timing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from localsite.benchrun import as_root, bench_run
from topofoam.config import fabric, settings
from topofoam.results import perflog


def _set(p: fabric.Profile) -> dict[str, float]:
    return {
        "rtt_10": 2 * (p.latency_us + 80 / p.mbytes),
        "rtt_1000": 2 * (p.latency_us + 8000 / p.mbytes),
        "bandwidth": p.mbytes,
        "allreduce_latency": p.latency_us,
    }


UNITS = {"rtt_10": "us", "rtt_1000": "us", "bandwidth": "MB/s", "allreduce_latency": "us"}


def _measure(scratch: Path, name: str, times: int) -> tuple[dict[str, float], float] | str:
    rows, took = [], []
    for i in range(times):
        results = scratch / f"{name}-{i + 1}"
        done, seconds = bench_run(results, "emu", "p2p", TOPOFOAM_FABRIC=name)
        found = perflog.read_system(results / "perflogs" / "local", checks=("PingPongRun",))
        if done.returncode != 0 or not found.rows:
            return f"no measurement (exit {done.returncode}): {done.stdout[-300:]!r}"
        rows += found.rows
        took.append(seconds)
    return {k: statistics.median(r[k] for r in rows) for k in UNITS}, statistics.median(took)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m localsite.fabricbench", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("--profiles", default="vsc5x100,hpc2x100,vsc5x40")
    p.add_argument("--times", type=int, default=3)
    args = p.parse_args(argv)
    if not as_root("fabricbench", "the emulated cluster"):
        return 2
    try:
        profiles = [fabric.profile(n) for n in args.profiles.split(",") if n]
    except settings.SettingError as e:
        print(f"fabricbench: {e}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="fabricbench-") as scratch:
        for prof in profiles:
            if prof is None:
                continue
            got = _measure(Path(scratch), prof.name, args.times)
            if isinstance(got, str):
                print(f"{prof.label()}: {got}", flush=True)
                continue
            measured, took = got
            print(f"{prof.label()}: median of {args.times} runs ({took:.0f} s each)")
            for key, want in _set(prof).items():
                print(
                    f"  {key:>18}: set {want:8.1f} {UNITS[key]:<4}  measured "
                    f"{measured[key]:8.1f}  ({100 * (measured[key] / want - 1):+.1f} %)",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
