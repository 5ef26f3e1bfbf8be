"""What a node is, and whether it is what the site file says.

    python -m topofoam.jobs.fingerprint [--partition SYSTEM:PARTITION] [--cores N]
                                   [--numa-nodes N] [--nps NPSx] [--json FILE]

run on a node (by the validation check, through the job's launcher, one task per node) it
records: packages, NUMA nodes, cores and hardware threads (SMT) from hwloc (the topology the
MPI ranks are bound by, so ``HWLOC_XMLFILE`` and the job's cpuset count); the CPU model, the
frequency governor and boost; the kernel; the memory size; each active HCA port's rate and
width; the versions of Open MPI, UCX and hwloc and UCX's transports;
the OpenFOAM of the environment. With what the site file declares for the partition it prints
one line per difference and exits 1, e.g.

    fingerprint: vsc5:zen3_0512 declares 16 NUMA nodes (NPS4), node n3012 has 4: NPS changed?

and exits 0 with "fingerprint: <node> is as <partition> declares" otherwise. A probe that
cannot run (no lstopo) is one line and exit 2: a node that cannot be described never passes.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import socket
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from topofoam import output


class ProbeError(RuntimeError):
    """The node cannot be described; the message names what is missing and the fix."""


def _run(cmd: list[str]) -> str | None:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def _check_xmlfile() -> None:
    """hwloc falls back to the real machine, silently, when HWLOC_XMLFILE names no topology:
    a node described from the wrong source is worse than none."""
    given = os.environ.get("HWLOC_XMLFILE")
    if not given:
        return
    try:
        root = ET.parse(given).getroot()
    except (OSError, ET.ParseError) as e:
        raise ProbeError(
            f"HWLOC_XMLFILE names {given}, which is not a readable hwloc topology ({e}) -- "
            f"unset it, or write one with 'lstopo-no-graphics --of xml FILE'"
        ) from None
    if root.tag != "topology":
        raise ProbeError(
            f"HWLOC_XMLFILE names {given}, whose root is <{root.tag}>, not an hwloc "
            f"<topology> -- unset it, or write one with 'lstopo-no-graphics --of xml FILE'"
        )


def topology() -> dict:
    """Packages, NUMA nodes, cores and PUs as hwloc sees them here."""
    _check_xmlfile()
    xml = _run(["lstopo-no-graphics", "--of", "xml", "-"])
    if xml is None:
        raise ProbeError(
            "lstopo-no-graphics did not run -- install hwloc on the node (Debian: hwloc-nox)"
        )
    try:
        objects = list(ET.fromstring(xml).iter("object"))
    except ET.ParseError as e:
        raise ProbeError(f"lstopo wrote no readable XML ({e}) -- check HWLOC_XMLFILE") from None

    def count(kind: str) -> int:
        return sum(o.get("type") == kind for o in objects)

    cores, pus = count("Core"), count("PU")
    return {
        "packages": count("Package") or 1,
        "numa_nodes": count("NUMANode") or 1,
        "cores": cores,
        "pus": pus,
        # Hardware threads a core: 2 where SMT is on (a BIOS setting changed back shows here).
        "smt": pus // cores if cores else None,
        "source": os.environ.get("HWLOC_XMLFILE") or "this node (lstopo)",
    }


def cpu() -> dict:
    model = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        governor = Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor").read_text()
        governor = governor.strip()
    except OSError:
        governor = "none (no cpufreq: a virtual machine, or the BIOS governs)"
    return {
        "model": model,
        "governor": governor,
        "boost": boost(),
        "kernel": platform.release(),
        "memory_gib": memory_gib(),
        "hca": hca_links(),
    }


def boost() -> str:
    """Whether the cores may boost above their base clock: cpufreq's ``boost`` (AMD,
    acpi-cpufreq) or intel_pstate's ``no_turbo``; 'unknown' where neither is exposed."""
    base = Path("/sys/devices/system/cpu")
    for path, on in ((base / "cpufreq" / "boost", "1"), (base / "intel_pstate" / "no_turbo", "0")):
        try:
            return "on" if path.read_text().strip() == on else "off"
        except OSError:
            continue
    return "unknown"


def memory_gib() -> int | None:
    """The node's memory in whole GiB (a DIMM or channel missing shows here)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / (1 << 20))
    except (OSError, ValueError, IndexError):
        pass
    return None


def hca_links() -> list[str]:
    """Each active InfiniBand/RoCE port with its rate and width, 'mlx5_0/1: 200 Gb/sec (4X
    HDR)' (a link trained at half width shows here); empty without an HCA."""
    out = []
    for port in sorted(Path("/sys/class/infiniband").glob("*/ports/*")):
        try:
            state = (port / "state").read_text().strip()
            rate = (port / "rate").read_text().strip()
        except OSError:
            continue
        if "ACTIVE" in state:
            out.append(f"{port.parent.parent.name}/{port.name}: {rate}")
    return out


def open_mpi() -> str | None:
    """Open MPI's version, as the ompi_info on PATH (the one the job runs) says."""
    found = re.search(r"Open MPI v(\S+)", _run(["ompi_info", "--version"]) or "")
    return found.group(1) if found else None


def software(openfoam: str | None = None) -> dict:
    ucx = _run(["ucx_info", "-v"]) or ""
    hwloc = _run(["lstopo-no-graphics", "--version"]) or ""
    devices = _run(["ucx_info", "-d"]) or ""
    ucx_version = re.search(r"Version (\S+)", ucx)
    hwloc_version = re.search(r"(\d+\.\d+\.\d+)", hwloc)
    transports = sorted(set(re.findall(r"^#\s+Transport:\s+(\S+)", devices, re.M)))
    # The environment's OpenFOAM as the check names it, else as its settings say.
    openfoam = openfoam or " ".join(
        v for v in (os.environ.get("WM_PROJECT"), os.environ.get("WM_PROJECT_VERSION")) if v
    )
    return {
        "open_mpi": open_mpi(),
        "ucx": ucx_version.group(1) if ucx_version else None,
        "ucx_transports": transports,
        "hwloc": hwloc_version.group(1) if hwloc_version else None,
        "openfoam": openfoam or None,
    }


def probe(openfoam: str | None = None) -> dict:
    return {
        "node": socket.gethostname(),
        "topology": topology(),
        "cpu": cpu(),
        "software": software(openfoam),
    }


def differences(found: dict, partition: str, cores=None, numa_nodes=None, nps=None) -> list[str]:
    """One line per way the node differs from what ``partition`` declares."""
    t, node = found["topology"], found["node"]
    lines = []
    if numa_nodes is not None and t["numa_nodes"] != numa_nodes:
        said = f" ({nps})" if nps else ""
        hint = ": NPS changed?" if nps else ": NUMA setting changed?"
        lines.append(
            f"{partition} declares {numa_nodes} NUMA nodes{said}, node {node} has "
            f"{t['numa_nodes']}{hint}"
        )
    if cores is not None and t["cores"] != cores:
        hint = (
            ": cores offline, or the job's cpuset smaller than the node?"
            if t["cores"] < cores
            else ": another node type?"
        )
        lines.append(f"{partition} declares {cores} cores, node {node} has {t['cores']}{hint}")
    return lines


def _count(text: str) -> int:
    """A declared count of a node's parts: a whole number, 1 or more."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a count: a whole number, 1 or more")
    return int(text)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m topofoam.jobs.fingerprint", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("--partition", default="this partition", help="SYSTEM:PARTITION, for messages")
    p.add_argument("--cores", type=_count, help="cores per node the site file declares")
    p.add_argument("--numa-nodes", type=_count, help="NUMA nodes per node the site file declares")
    p.add_argument("--nps", help="the NPS setting the site file declares (NPS1, NPS4 ...)")
    p.add_argument("--openfoam", help="the OpenFOAM of the environment (flavour, version, build)")
    p.add_argument("--json", type=Path, help="write what was found here")
    args = p.parse_args(argv)
    return output.main("fingerprint", lambda: _main(args))


def _main(args) -> int:
    if args.json:
        output.file(args.json, "--json")  # before the probe
    try:
        found = probe(args.openfoam)
    except ProbeError as e:
        print(f"fingerprint: {e}", file=sys.stderr)
        return 2
    if args.json:
        output.write_text(args.json, json.dumps(found, indent=1) + "\n", "--json")
    t = found["topology"]
    print(
        f"fingerprint: {found['node']}: {t['packages']} package(s), {t['numa_nodes']} NUMA "
        f"node(s), {t['cores']} cores, {t['pus']} hardware threads; {found['cpu']['model']}; "
        f"Open MPI {found['software']['open_mpi']}, UCX {found['software']['ucx']}, "
        f"hwloc {found['software']['hwloc']}"
    )
    lines = differences(found, args.partition, args.cores, args.numa_nodes, args.nps)
    for line in lines:
        print(f"fingerprint: {line}")
    if not lines:
        print(f"fingerprint: {found['node']} is as {args.partition} declares")
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
