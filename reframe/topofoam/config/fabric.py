"""What the emulated cluster's links cost: a named fabric profile (TOPOFOAM_FABRIC).

    none              the links as they are (veth pairs through one machine's bridge): the
                      default, and what every emulated run measured before profiles existed
    <system>x<scale>  ``vsc5x100``: a system's inter-node costs from seed 000 Table 2
                      (rankmap/p2p_latency_us.csv), made <scale> times dearer so that
                      communication dominates on this machine

A system's one-way latency L and bandwidth B are fitted to its table row's inter-node round
trips by least squares over the sizes (RTT / 2 = L + bytes / B, 8 bytes a scalar); the profile
is L x scale and B / scale. The kernels here have tc's token bucket but not netem, so the costs
take two routes: a PMPI interposer (reframe/src/fabric) delays each inter-node message by L
plus its bytes / B, and each collective by rounds of L; a token bucket of rate B on every
emulated node's link (localsite.cluster) limits what the bucket's 64 KiB burst would let
through at the bridge's speed: the larger messages, and all traffic of a node together. The p2p
check on the emulated cluster measures both back (docs/timings.md).
"""

from __future__ import annotations

import csv
import math
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from rankmap.analysis import LATENCY_CSV
from topofoam import paths
from topofoam.config import settings

TABLE = LATENCY_CSV  # seed 000 Table 2, as rankmap reads it
INTERPOSER = paths.SOURCES / "fabric" / "fabric.c"
NONE = "none"
#: The profile ``./bench run`` gives the emulated cluster's links when TOPOFOAM_FABRIC names
#: none (localsite.cli): priced links, which its p2p check times back, are what the report's
#: model needs to predict the multi-node runs (issue 55; free links leave it nothing to price).
#: VSC-5's costs 100 times dearer: the profile the model's accuracy was shown under.
BENCH_DEFAULT = "vsc5x100"
#: tc's token bucket follows the rates set, within 2 %, from 200 Mbit/s to 2 Gbit/s on the
#: machines this was measured on (docs/timings.md, the screening bench); above that the
#: bridge's own speed shows through, below it TCP's recovery from drops does.
RATE_MBYTES = (25.0, 250.0)
_NAME = re.compile(r"^([a-z][a-z0-9_]*)x(\d+(?:\.\d+)?)$")


@dataclass(frozen=True)
class Profile:
    name: str
    latency_us: float  # one way, per inter-node message
    mbytes: float  # MB/s (10^6 bytes) of each node's link

    @property
    def tc_rate(self) -> str:
        """The bandwidth as tc writes a rate."""
        return f"{round(self.mbytes * 8 * 1000)}kbit"

    def label(self) -> str:
        """The perflog's ``fabric`` column and the report's line."""
        return f"{self.name} (L {self.latency_us:.1f} us, B {self.mbytes:.1f} MB/s)"


def _inter_node_rows() -> dict[str, list[tuple[int, float]]]:
    """(bytes, one-way us) of each system's inter-node column, read once."""
    rows: dict[str, list[tuple[int, float]]] = {}
    with open(TABLE, newline="") as f:
        for row in csv.DictReader(line for line in f if not line.startswith("#")):
            if row.get("inter_node", "").strip():
                rows.setdefault(row["system"], []).append(
                    (8 * int(row["size"]), float(row["inter_node"]) / 2)
                )
    return rows


def fit(points: list[tuple[int, float]]) -> tuple[float, float]:
    """Least squares of one-way time = L + bytes / B: (L in us, B in MB/s)."""
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    slope = sum((x - mx) * (y - my) for x, y in points) / sxx  # us per byte
    return my - slope * mx, 1.0 / slope  # bytes/us = MB/s


def profile(name: str) -> Profile | None:
    """The profile ``name`` names; None for ``none``. A name that is not one is a SettingError
    naming the fix."""
    m = _NAME.match(name.strip())
    table = _inter_node_rows()
    known = sorted(table)
    if name.strip() == NONE:
        return None
    if not m or m.group(1) not in known or float(m.group(2)) <= 0:
        raise settings.SettingError(
            f"TOPOFOAM_FABRIC={name!r} is not a fabric profile -- give none, or SYSTEMxSCALE "
            f"with SYSTEM one of {', '.join(known)} ({TABLE.name}) and SCALE > 0, e.g. "
            f"{known[0]}x100"
        )
    system, scale = m.group(1), float(m.group(2))
    points = table[system]
    latency, bandwidth = fit(points)
    if len(points) < 2 or latency <= 0 or not math.isfinite(bandwidth) or bandwidth <= 0:
        raise settings.SettingError(
            f"TOPOFOAM_FABRIC={name!r}: {TABLE} gives {system} no latency and bandwidth "
            f"(its inter-node round trips do not grow with the size) -- choose another system"
        )
    p = Profile(name.strip(), latency * scale, bandwidth / scale)
    low, high = RATE_MBYTES
    if not low <= p.mbytes <= high:
        raise settings.SettingError(
            f"TOPOFOAM_FABRIC={name!r} gives links of {p.mbytes:.1f} MB/s: tc's token bucket "
            f"is faithful here from {low:.0f} to {high:.0f} MB/s only -- choose a scale from "
            f"{math.ceil(bandwidth / high)} to {math.floor(bandwidth / low)}"
        )
    return p


def from_environment() -> Profile | None:
    """The profile TOPOFOAM_FABRIC names (unset: none)."""
    text = os.environ.get("TOPOFOAM_FABRIC", "").strip()
    return profile(text) if text else None


class FabricError(RuntimeError):
    """The latency's interposer could not be built; the message names the fix."""


def build(lib: Path) -> Path:
    """The latency's interposer (reframe/src/fabric) as ``lib``, compiled against the MPI on
    PATH without linking it: a job's shell and srun load it too, and never call it."""
    lib = Path(lib)
    lib.parent.mkdir(parents=True, exist_ok=True)
    try:
        flags = subprocess.run(
            ["mpicc", "-showme:compile"], capture_output=True, text=True, check=True
        ).stdout.split()
        done = subprocess.run(
            ["cc", "-O2", "-shared", "-fPIC", *flags, "-o", str(lib), str(INTERPOSER)]
            + ["-ldl", "-lm"],
            capture_output=True,
            text=True,
        )
    except (OSError, subprocess.CalledProcessError) as e:
        raise FabricError(
            f"cannot build {INTERPOSER} ({e}) -- install Open MPI's mpicc and a C compiler "
            f"(./bench setup)"
        ) from None
    if done.returncode != 0:
        raise FabricError(f"cannot build {INTERPOSER}: {done.stderr.strip()[-500:]}")
    return lib


def account(folder: Path, ranks: int) -> dict[str, float]:
    """What the interposer added, summed over ``ranks`` ranks, as each wrote it at
    MPI_Finalize to ``folder`` (TOPOFOAM_FABRIC_ACCOUNT_DIR): sends_delayed, send_delay_us,
    collectives_delayed, collective_delay_us."""
    total: dict[str, float] = {}
    for rank in range(ranks):
        path = Path(folder) / f"fabric.{rank}"
        if not path.is_file():
            raise FabricError(f"rank {rank} wrote no {path} -- did it reach MPI_Finalize?")
        for line in path.read_text().splitlines():
            name, value = line.split()
            total[name] = total.get(name, 0.0) + float(value)
    return total
