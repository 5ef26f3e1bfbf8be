"""How far the fabric screening can be trusted on the emulated cluster (docs/timings.md).

    python -m localsite.screenbench [--unchanged 10] [--fabric vsc5x30]
                                    [--rates 0.5,0.75] [--latencies 2,1.5]

runs FabricScreening (``./bench run --partition emu --tag screening -n FabricScreening``, 4
emulated nodes) under the fabric profile ``--fabric`` (TOPOFOAM_FABRIC; ``none``: the links
as they are) the ``--unchanged`` times with no fault (every outlier there is a false alarm),
then once with node3's link at each fraction of the profile's bandwidth (TOPOFOAM_EMU_LINKS:
tc's token bucket) and once with node3's latency at each multiple of the profile's
(TOPOFOAM_EMU_LATENCY: the fabric interposer), and prints per run the outliers, node3's
figures against its peers' and what the rule resolved. Root only (namespaces, tc). Run it
with nothing else on the machine: it is a timing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from localsite.benchrun import bench_run, controls
from topofoam.config import fabric, settings

NODE = "node3"


def _run(scratch: Path, label: str, settings: dict[str, str], profile: str) -> dict:
    results = scratch / label.replace(" ", "-")
    done, took = bench_run(
        results, "emu", "screening", "-n", "FabricScreening", TOPOFOAM_FABRIC=profile, **settings
    )
    found = sorted(results.glob("reframe/*/local/emu/*/FabricScreening*/screening.json"))
    if not found:
        return {"label": label, "exit": done.returncode, "took": took, "error": done.stdout[-500:]}
    s = json.loads(found[-1].read_text())
    ratio = {}
    for figure in ("mbps_out", "rtt_us"):
        peers = statistics.median(v[figure] for n, v in s["nodes"].items() if n != NODE)
        ratio[figure] = s["nodes"][NODE][figure] / peers
    return {
        "label": label,
        "took": took,
        "findings": s["outliers"],
        "ratio": ratio,
        "resolved": s["rule"].split("resolved here: ")[-1],
    }


def _show(r: dict) -> str:
    return (
        f"{NODE}'s bandwidth out {100 * (r['ratio']['mbps_out'] - 1):+.0f} %, round trip "
        f"{100 * (r['ratio']['rtt_us'] - 1):+.0f} % against its peers; resolved {r['resolved']}"
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m localsite.screenbench", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("--unchanged", type=int, default=10)
    p.add_argument("--fabric", default="vsc5x30")
    p.add_argument("--rates", default="0.5,0.75", help="fractions of the profile's bandwidth")
    p.add_argument("--latencies", default="2,1.5", help="multiples of the profile's latency")
    args = p.parse_args(argv)
    try:
        profile = fabric.profile(args.fabric)
    except settings.SettingError as e:
        print(f"screenbench: {e}", file=sys.stderr)
        return 2
    faults = []
    for share in (float(x) for x in args.rates.split(",") if x):
        if profile is None:
            print("screenbench: --rates needs a --fabric profile", file=sys.stderr)
            return 2
        rate = f"{round(profile.mbytes * share * 8000)}kbit"
        faults.append((f"rate x{share:g}", {"TOPOFOAM_EMU_LINKS": f"{NODE}={rate}"}))
    for factor in (x for x in args.latencies.split(",") if x):
        faults.append((f"latency x{factor}", {"TOPOFOAM_EMU_LATENCY": f"{NODE}={factor}"}))

    def run(scratch: Path, label: str, settings: dict[str, str]) -> dict:
        return _run(scratch, label, settings, args.fabric)

    return controls("screenbench", NODE, args.unchanged, faults, run, _show)


if __name__ == "__main__":
    sys.exit(main())
