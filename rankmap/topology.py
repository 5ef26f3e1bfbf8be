"""The machine a placement targets: one node's cores with their NUMA domain and NUMA node.

Levels, from the fastest path to the slowest: core < NUMA node < NUMA domain (package) < node.
A node is read from an hwloc XML file (``lstopo --of xml``), from an hwloc synthetic description
(turned into XML by hwloc itself), or from a preset for the seeds' systems. All nodes of a job
are assumed to be the same (a homogeneous partition); hostnames come from Slurm or are given.
"""

from __future__ import annotations

import re
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rankmap.errors import InputError

#: Hardware levels of a communication path, by index; the names the outputs use.
LEVELS = ("intra_numa_node", "inter_numa_node", "inter_numa_domain", "inter_node")

#: hwloc synthetic descriptions of the seeds' nodes (../shared/reference/systems.csv).
PRESETS = {
    "vsc5": "pack:2 numa:8 core:8 pu:1",  # VSC-5 zen3_0512, AMD EPYC 7713 x2, NPS4 + L3
    "hpc2": "pack:4 numa:1 core:12 pu:1",  # LEC hpc2, Xeon Gold 6126 x4, a NUMA node each
    "oci-nps1": "pack:2 numa:1 core:18 pu:1",  # OCI BM.Optimized3.36 at NPS1
    "oci-nps2": "pack:2 numa:2 core:9 pu:1",  # OCI BM.Optimized3.36 at NPS2
    "seed001": "pack:2 numa:1 core:6 pu:1",  # seed 001's cluster: Xeon E5-2620 x2 (hexacore)
}


@dataclass(frozen=True)
class Node:
    """One node's cores, in hwloc logical order, with what they belong to.

    ``domain[i]``, ``numa[i]``: logical index of core i's package and NUMA node;
    ``core_in_domain[i]``: its logical index inside the package (Open MPI's ``slot=P:C``);
    ``pu_os[i]``: OS index of its first hardware thread (Slurm's ``map_cpu``, taskset).
    """

    domain: np.ndarray
    numa: np.ndarray
    core_in_domain: np.ndarray
    pu_os: np.ndarray
    source: str

    @property
    def cores(self) -> int:
        return len(self.domain)

    @property
    def n_domains(self) -> int:
        return int(self.domain.max()) + 1

    @property
    def n_numa(self) -> int:
        return int(self.numa.max()) + 1

    def numa_cores(self, numa: int) -> np.ndarray:
        return np.flatnonzero(self.numa == numa)

    def numa_of_domain(self, domain: int) -> list[int]:
        return sorted(set(self.numa[self.domain == domain].tolist()))

    def describe(self) -> str:
        per_numa = np.bincount(self.numa)
        return (
            f"{self.n_domains} NUMA domain(s) x {self.n_numa // self.n_domains} NUMA "
            f"node(s) x {per_numa[0]} core(s) = {self.cores} cores ({self.source})"
        )


def _cpuset(text: str | None, source: str = "the topology") -> int:
    """hwloc's cpuset string as a bit mask: 32-bit groups, most significant first, where
    hwloc abbreviates a zero group to '' or '0x0' (e.g. '0xffffffff,0xffffffff,,0x0')."""
    mask = 0
    for group in (text or "").split(","):
        try:
            mask = (mask << 32) | int(group.removeprefix("0x") or "0", 16)
        except ValueError:
            raise InputError(
                f"{source}: cpuset {text!r} is not an hwloc cpuset -- the file is damaged; "
                f"write it again with 'lstopo-no-graphics --of xml FILE'"
            ) from None
    return mask


def _os_index(pu, source: str) -> int:
    try:
        return int(pu.get("os_index"))
    except (TypeError, ValueError):
        raise InputError(
            f"{source}: a PU has no valid os_index ({pu.get('os_index')!r}) -- the file is "
            f"damaged; write it again with 'lstopo-no-graphics --of xml FILE'"
        ) from None


def from_xml(text: str, source: str) -> Node:
    """A node from hwloc XML text (``source`` names it in errors)."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        raise InputError(
            f"{source}: not valid XML ({e}) -- write it with 'lstopo-no-graphics --of xml FILE'"
        ) from None
    objects = list(root.iter("object"))
    cores = [o for o in objects if o.get("type") == "Core"]
    packages = [o for o in objects if o.get("type") == "Package"]
    numas = [o for o in objects if o.get("type") == "NUMANode"]
    if not cores:
        raise InputError(
            f"{source}: no Core objects -- is this an hwloc topology? Write it "
            f"with 'lstopo-no-graphics --of xml FILE'"
        )
    # A machine without Package or NUMANode objects is one domain / one NUMA node.
    top = root.find("object")
    machine = _cpuset(top.get("cpuset"), source) if top is not None else 0
    package_sets = [_cpuset(p.get("cpuset"), source) for p in packages] or [machine]
    numa_sets = [_cpuset(n.get("cpuset"), source) for n in numas] or [machine]

    domain, numa, pu_os = [], [], []
    for core in cores:
        mask = _cpuset(core.get("cpuset"), source)
        pus = [_os_index(pu, source) for pu in core.iter("object") if pu.get("type") == "PU"]
        if not mask or not pus:
            raise InputError(
                f"{source}: core {core.get('os_index')} has no PU -- the file "
                f"is truncated or malformed; write it again with lstopo"
            )
        d = [i for i, s in enumerate(package_sets) if (mask & s) == mask]
        n = [i for i, s in enumerate(numa_sets) if (mask & s) == mask]
        if len(d) != 1 or len(n) != 1:
            raise InputError(
                f"{source}: core with PU {pus[0]} lies in {len(d)} packages and "
                f"{len(n)} NUMA nodes -- each core must lie in exactly one of each"
            )
        domain.append(d[0])
        # A NUMA node spanning packages (AMD NPS0, single-NUMA machines) counts once per
        # package, so that NUMA nodes nest inside NUMA domains.
        numa.append((n[0], d[0]))
        pu_os.append(min(pus))

    node = _renumbered(domain, numa, pu_os, source)
    _check_homogeneous(node)
    return node


def _renumbered(domain, numa, pu_os, source) -> Node:
    """Dense logical indexes: domains and NUMA nodes numbered in the order cores meet them."""

    def dense(values):
        order = {v: i for i, v in enumerate(dict.fromkeys(values))}
        return np.array([order[v] for v in values], dtype=np.int64)

    domain, numa = dense(list(domain)), dense(list(numa))
    core_in_domain = np.zeros_like(domain)
    for d in range(domain.max() + 1):
        members = np.flatnonzero(domain == d)
        core_in_domain[members] = np.arange(len(members))
    return Node(domain, numa, core_in_domain, np.asarray(pu_os, dtype=np.int64), source)


def _check_homogeneous(node: Node) -> None:
    """All NUMA nodes and all domains of the same size (NUMA nodes nest by construction)."""
    per_numa = set(np.bincount(node.numa).tolist())
    per_domain = {len(node.numa_of_domain(d)) for d in range(node.n_domains)}
    if len(per_numa) != 1 or len(per_domain) != 1:
        raise InputError(
            f"{node.source}: heterogeneous node (cores per NUMA node "
            f"{sorted(per_numa)}, NUMA nodes per package {sorted(per_domain)}) -- "
            f"offline or disallowed cores? Use a topology of the full node"
        )


#: The most hardware threads a synthetic node may have: 64 times VSC-5's 256. hwloc builds
#: every object of a description: 64 x 64 x 256 (a million) ran lstopo for minutes and crashed.
MAX_SYNTHETIC_PUS = 16384


def _synthetic_pus(description: str) -> int:
    """The objects at the bottom of a synthetic description: the product of its arities
    ('pack:2 numa:8 core:8 pu:1' -> 128); attributes in parentheses are left out."""
    total = 1
    for count in re.findall(r":(\d+)", re.sub(r"\([^)]*\)", "", description)):
        total *= int(count)
    return total


def from_synthetic(description: str) -> Node:
    """A node from an hwloc synthetic description, e.g. 'pack:2 numa:8 core:8 pu:1'."""
    return from_xml(synthetic_xml(description), f"synthetic '{description}'")


def synthetic_xml(description: str) -> str:
    """hwloc's XML of a synthetic description (what ``lstopo --input`` builds): a node's
    topology for HWLOC_XMLFILE, as an emulated node shows it (localsite/twin.py)."""
    pus = _synthetic_pus(description)
    if pus > MAX_SYNTHETIC_PUS:
        raise InputError(
            f"the synthetic description '{description}' makes a node of {pus:,} hardware "
            f"threads, more than {MAX_SYNTHETIC_PUS:,} -- describe one node of the machine, "
            f"e.g. 'pack:2 numa:8 core:8 pu:1'"
        )
    try:
        done = subprocess.run(
            ["lstopo-no-graphics", "--input", description, "--of", "xml", "-"],
            capture_output=True,
            text=True,
            timeout=120,
        )
    except subprocess.TimeoutExpired:
        raise InputError(
            f"hwloc did not build the synthetic description '{description}' in 120 s -- "
            f"describe one node of the machine, e.g. 'pack:2 numa:8 core:8 pu:1'"
        ) from None
    if done.returncode != 0:
        why = " ".join(done.stderr.split()) or f"lstopo exited with {done.returncode}"
        raise InputError(
            f"hwloc rejects the synthetic description '{description}': {why} -- "
            f"e.g. 'pack:2 numa:8 core:8 pu:1'"
        )
    return done.stdout


def this_machine() -> Node:
    done = subprocess.run(
        ["lstopo-no-graphics", "--of", "xml", "-"], capture_output=True, text=True, check=True
    )
    return from_xml(done.stdout, "this machine")


def load(spec: str) -> Node:
    """A node from a preset name, an XML file path, 'local', or a synthetic description."""
    if spec in PRESETS:
        node = from_synthetic(PRESETS[spec])
        return Node(node.domain, node.numa, node.core_in_domain, node.pu_os, f"preset {spec}")
    if spec == "local":
        return this_machine()
    path = Path(spec)
    if path.suffix == ".xml" or path.exists():
        try:
            return from_xml(path.read_text(), str(path))
        except OSError as e:
            raise InputError(
                f"cannot read topology file {path}: {e.strerror} -- write one with "
                f"'lstopo-no-graphics --of xml {path}'"
            ) from None
    if ":" in spec:
        return from_synthetic(spec)
    raise InputError(
        f"unknown topology '{spec}' -- give a preset ({', '.join(PRESETS)}), "
        f"'local', an hwloc XML file, or a synthetic description like "
        f"'pack:2 numa:8 core:8 pu:1'"
    )


def core_pair(node: Node, level: str) -> tuple[int, int] | None:
    """OS CPU indexes of two cores whose path is ``level`` (one of LEVELS), or None where the
    node has no such pair; for inter_node, the first core of each of two nodes."""
    first = {}
    for core in range(node.cores):  # first core of each (domain, NUMA node)
        first.setdefault((int(node.domain[core]), int(node.numa[core])), core)
    pairs = {
        "intra_numa_node": [
            (a, b)
            for a in range(node.cores)
            for b in range(a + 1, node.cores)
            if node.numa[a] == node.numa[b]
        ][:1],
        "inter_numa_node": [
            (first[(d, m)], first[(d2, m2)])
            for (d, m) in first
            for (d2, m2) in first
            if d == d2 and m < m2
        ][:1],
        "inter_numa_domain": [
            (first[(d, m)], first[(d2, m2)]) for (d, m) in first for (d2, m2) in first if d < d2
        ][:1],
        "inter_node": [(0, 0)],
    }
    if level not in pairs:
        raise InputError(f"unknown level '{level}' -- choose from {', '.join(LEVELS)}")
    if not pairs[level]:
        return None
    a, b = pairs[level][0]
    return int(node.pu_os[a]), int(node.pu_os[b])
