"""Site twins: the emulated cluster shaped like a cluster site's partitions, with that site's
own configuration file run against it (docs/clusters.md, "Site twins").

A twin of ``vsc5`` has, per partition of site-configs/vsc5.py, emulated nodes in a Slurm
partition of the site's name (zen3_0512) that declare the site's node: its packages and cores
to Slurm, and its whole hwloc topology (packages, NUMA nodes, cores) to every task through
HWLOC_XMLFILE, so that lstopo, the fingerprint and Open MPI's rankfile mapping see a VSC-5
node. ReFrame then runs ``-C site-configs/vsc5.py --system vsc5``: the site's launcher, its
Open MPI's placement syntax, its partitions' options and extras, its environments' names and
features. What a twin cannot have is substituted in one place (site-configs/sitekit/twin.py),
its substitution file written here at start.
"""

from __future__ import annotations

import json
import os
import re
import runpy
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from localsite import facts, meminfo
from localsite.cluster import (
    MAX_NODES,
    MPI_AS_ROOT,
    UCX_PML,
    UCX_TLS_STAND_INS,
    EmulatedCluster,
    NodeGroup,
    mpi_env,
)
from localsite.slurm import NodeLayout, SlurmError
from rankmap import topology
from rankmap.errors import InputError
from topofoam import paths
from topofoam.config import settings
from topofoam.validation import sitecheck

SITE_CONFIGS = paths.REPO / "site-configs"
#: The sites a twin can be made of: every cluster site file (the local one is this machine).
SITES = tuple(sorted(p.stem for p in SITE_CONFIGS.glob("*.py") if p.stem != "local"))
#: Nodes per partition unless asked: two, the fewest with an inter-node level.
NODES_PER_PARTITION = 2
#: Seconds before a twin's unanswering node is marked down: at a site's ranks per node
#: (192 busy-polling ranks on 2 cores) the daemons wait their turn for minutes.
SLURMD_TIMEOUT = 600
#: Seconds a twin's PMIx fence waits (Slurm's default is 300): its ranks may only be slow to
#: start. 256 OpenFOAM ranks on this machine's 2 cores started and ran 20 steps in 580 s
#: (session 57), and the next 256-rank start timed out at 300 s; 1800 s is three times the
#: former and half the 1 h limit of the sweeps' runs (reframe/topofoam/checks/sweep.py), so
#: a fence that truly hangs ends its job (localsite/fencewatch.py) before that limit would.
PMIX_TIMEOUT = 1800
#: What each twin node declares as memory to Slurm (config_overrides: not checked).
NODE_MEMORY_MIB = 4096
#: This machine's builds by the flavour an environment's extras name: the patched
#: environment of site-configs/local.py that stands in for the site's ``spack load``.
LOCAL_ENVIRONMENT = {
    ("org", "12"): ("openfoam-org12-patched", "./bench build org12"),
    ("esi", "v2512"): ("openfoam-v2512-patched", "./bench build v2512"),
    ("esi", "v1912"): ("openfoam-v1912-patched", "./bench setup"),
}
#: --openfoam NAME: one of this machine's builds for every environment of the site.
STAND_INS = {"v1912": ("esi", "v1912"), "org12": ("org", "12"), "v2512": ("esi", "v2512")}


#: Memory a rank of the multi-node check's cavity takes at 50 cells a rank, with Open MPI's
#: shared memory: 192 ranks on the hpc2 twin raised the machine's use by 1.2 GiB (2026-11-29);
#: twice that, for the solver's growth and the daemons.
MIB_PER_RANK = 13


class TwinError(SlurmError):
    """A twin that cannot be made or run; the message names the fix."""


@dataclass
class TwinPartition:
    """One partition of the site file as its twin's nodes show it."""

    name: str  # ReFrame's
    slurm_partition: str
    topology: str  # rankmap's (preset, synthetic description or XML file)
    description: str  # the hwloc synthetic description the nodes show (HWLOC_XMLFILE)
    layout: NodeLayout
    features: tuple[str, ...]


def site_file(site: str) -> Path:
    path = SITE_CONFIGS / f"{site}.py"
    if site == "local" or not path.is_file():
        raise TwinError(
            f"no site file site-configs/{site}.py -- choose a cluster site: {', '.join(SITES)}"
        )
    return path


def load_site(site: str) -> dict:
    """The site file's ReFrame configuration, as a cluster reads it (no twin substitution)."""
    path = site_file(site)
    env = os.environ.pop("TOPOFOAM_TWIN", None)
    try:
        return sitecheck.load(path)
    except sitecheck.SiteCheckError as e:  # sitekit's one-line refusal of a bad value
        raise TwinError(str(e)) from None
    finally:
        if env is not None:
            os.environ["TOPOFOAM_TWIN"] = env


def _slurm_partition(part: dict) -> str:
    for option in part.get("access", []):
        if option.startswith("--partition="):
            return option.split("=", 1)[1]
    return part["name"]


def _description(spec: str, where: str) -> str:
    """The synthetic description of a rankmap topology (preset or description); an XML
    file's own description is read back from hwloc."""
    if spec in topology.PRESETS:
        return topology.PRESETS[spec]
    if ":" in spec:
        return spec
    raise TwinError(
        f"{where}: topology '{spec}' is an XML file; a twin declares its nodes from a preset or "
        f"a synthetic description -- give one with --node-topology {where}=DESCRIPTION"
    )


def partitions(config: dict, node_topology: dict[str, str] | None = None) -> list[TwinPartition]:
    """The site's partitions as twin nodes; ``node_topology`` gives a partition's nodes
    another hwloc topology than its site file declares (a mistake injected on purpose, such
    as NPS1 nodes under an NPS4 preset)."""
    node_topology = dict(node_topology or {})
    (system,) = config["systems"]
    out = []
    for part in system["partitions"]:
        extras = part.get("extras", {})
        spec = extras.get("topology", "")
        description = node_topology.pop(part["name"], None) or _description(spec, part["name"])
        try:
            node = topology.from_synthetic(description)
        except InputError as e:
            raise TwinError(f"partition {part['name']}: {e}") from None
        # A synthetic description has as many cores in every package.
        packages = node.n_domains
        cores = node.cores
        out.append(
            TwinPartition(
                name=part["name"],
                slurm_partition=_slurm_partition(part),
                topology=spec,
                description=description,
                layout=NodeLayout(packages, cores // packages, 1, NODE_MEMORY_MIB),
                features=tuple(f for f in (extras.get("nps"),) if f),
            )
        )
    if node_topology:
        raise TwinError(
            f"--node-topology names {', '.join(sorted(node_topology))}, not a partition of "
            f"{system['name']} -- choose from {', '.join(p.name for p in out)}"
        )
    return out


def local_environments(mpi: str = "openmpi4") -> dict[str, dict]:
    """This machine's environments (site-configs/local.py), by name: with Debian's Open MPI 4,
    or, ``mpi="openmpi5"``, those built against Open MPI 5 (the ompi5 partition's)."""
    if not facts.facts_file().exists():
        facts.write()  # what site-configs/local.py reads of this machine (./bench writes it)
    sys.path.insert(0, str(SITE_CONFIGS))
    try:
        config = runpy.run_path(str(SITE_CONFIGS / "local.py"))["site_configuration"]
    except SystemExit as e:
        raise TwinError(str(e.code)) from None
    finally:
        sys.path.remove(str(SITE_CONFIGS))
    return {
        e["name"]: e
        for e in config["environments"]
        if (e.get("extras", {}).get("mpi") == "openmpi5") == (mpi == "openmpi5")
    }


def site_mpi(config: dict) -> str:
    """The Open MPI the site's partitions run (one for all: a twin's environments serve every
    partition of it)."""
    (system,) = config["systems"]
    kinds = {p.get("extras", {}).get("mpi", "openmpi4") for p in system["partitions"]}
    if len(kinds) > 1:
        raise TwinError(
            f"{system['name']}'s partitions run {' and '.join(sorted(kinds))} -- a twin stands "
            f"one build in for every partition: make a twin of each kind's partitions"
        )
    return kinds.pop()


def stand_ins(config: dict, openfoam: str = "") -> dict[str, dict]:
    """For each environment of the site, the local environment that stands in for it:
    the same flavour's build, or ``openfoam``'s for all (named in the extras), against the
    Open MPI the site's partitions run (its placement syntax must run for real)."""
    mpi = site_mpi(config)
    local = local_environments(mpi)
    out = {}
    for env in config["environments"]:
        x = env.get("extras", {})
        own = (x.get("openfoam_flavour", ""), str(x.get("openfoam_version", "")))
        want = STAND_INS[openfoam] if openfoam else own
        if want not in LOCAL_ENVIRONMENT:
            raise TwinError(
                f"environment {env['name']}: no build here for OpenFOAM {own[1]} ({own[0]}) -- "
                f"stand another in with --openfoam {'|'.join(STAND_INS)}"
            )
        name, build = LOCAL_ENVIRONMENT[want]
        if mpi == "openmpi5" and name not in local:
            raise TwinError(
                f"environment {env['name']}: the site's partitions run Open MPI 5 (mpirun "
                f"--map-by rankfile:file=) and no build of {name} here has it -- run "
                f"'./bench build v2512' (it installs Open MPI 5 from PyPI) and make the twin "
                f"with the v2512 build"
            )
        if name not in local:
            raise TwinError(
                f"environment {env['name']}: its stand-in {name} is not built here -- run "
                f"'{build}', or stand another in with --openfoam {'|'.join(STAND_INS)}"
            )
        chosen = local[name]
        extras = dict(chosen.get("extras", {}), twin_stand_in=name)
        if want != own:
            extras["twin_stand_in"] = f"{name} for OpenFOAM {own[1]} ({own[0]})"
        # The site's features where the flavour is the site's; the stand-in's where it is not
        # (a check that needs OpenFOAM-12's foamRun must not list on v1912).
        features = env.get("features", []) if want == own else chosen.get("features", [])
        out[env["name"]] = {
            "env_vars": chosen.get("env_vars", []),
            "extras": extras,
            "features": [f for f in features if f != "local-build"],
        }
    return out


def mpi_settings(cluster: EmulatedCluster, pml: str = "ob1") -> dict[str, str]:
    """The Open MPI settings of a twin's partitions: as root, over the nodes' subnet, and with
    ``pml="ucx"`` UCX's PML (localsite.cluster.UCX_PML: what Open MPI 5 partitions run)."""
    env = dict(MPI_AS_ROOT)
    env.update(mpi_env(cluster.subnet, cluster.node_tmp))
    if pml == "ucx":
        env.update(UCX_PML)
    return env


class Twin:
    """The twin of ``site``: ``nodes`` emulated nodes per partition of its site file."""

    def __init__(
        self,
        site: str,
        nodes: int = NODES_PER_PARTITION,
        node_topology: dict[str, str] | None = None,
    ):
        self.site = site
        self.config = load_site(site)
        self.parts = partitions(self.config, node_topology)
        if nodes < 1 or nodes * len(self.parts) > MAX_NODES:
            raise TwinError(
                f"{nodes} nodes per partition x {len(self.parts)} partition(s) -- a twin has "
                f"1 to {MAX_NODES} nodes in all; ask for at most "
                f"{MAX_NODES // len(self.parts)} per partition"
            )
        self.root = paths.run_dir() / f"twin-{site}"
        groups = [
            NodeGroup(
                p.slurm_partition,
                nodes,
                p.layout,
                self.root / "topology" / f"{p.name}.xml",
                p.features,
            )  # fmt: skip
            for p in self.parts
        ]
        self.cluster = EmulatedCluster(
            root=self.root,
            subnet=settings.subnet("TOPOFOAM_TWIN_SUBNET", "10.77.30"),
            groups=groups,
            slurmd_timeout=SLURMD_TIMEOUT,
            pmix_timeout=PMIX_TIMEOUT,
        )
        self.substitution_file = self.root / "twin.json"

    def start(self, openfoam: str = "", say=lambda _: None) -> None:
        """The twin's nodes up, and the substitution its site file runs with."""
        environments = stand_ins(self.config, openfoam)
        say(f"bench: starting the {self.site} twin: {self.describe()}")
        self.start_nodes()
        self.substitution_file.write_text(
            json.dumps(
                {
                    "site": self.site,
                    "environments": environments,
                    **self.partition_settings(),
                },
                indent=1,
            )
        )

    def partition_settings(self) -> dict:
        """What the twin adds to each partition of the site file: the Open MPI settings (UCX's
        PML where the site runs Open MPI 5) and TCP standing in for InfiniBand's transports."""
        pml = "ucx" if site_mpi(self.config) == "openmpi5" else "ob1"
        return {
            "partition_env": [list(kv) for kv in mpi_settings(self.cluster, pml).items()],
            "partition_extras": {"ucx_tls_stand_ins": UCX_TLS_STAND_INS},
        }

    def start_nodes(self) -> None:
        """The twin's nodes up, each showing its partition's hwloc topology; no site file
        (a benchmark of the nodes alone, localsite.initracebench, needs no more)."""
        (self.root / "topology").mkdir(parents=True, exist_ok=True)
        for p in self.parts:
            try:
                xml = topology.synthetic_xml(p.description)
            except InputError as e:
                raise TwinError(f"partition {p.name}: {e}") from None
            (self.root / "topology" / f"{p.name}.xml").write_text(xml)
        self.cluster.start()

    def check_ranks(self, reframe_args: list[str]) -> None:
        """A run at a site's ranks per node (``-S ...ranks_per_node=N``) must fit the
        partitions' cores and this machine's memory; else one line saying how many fit."""
        asked = [
            int(m.group(1))
            for a in reframe_args
            for m in [re.search(r"ranks_per_node=(\d+)$", a)]
            if m
        ]
        if not asked:
            return
        ppn = max(asked)
        cores = min(p.layout.cpus for p in self.parts)
        if ppn > cores:
            raise TwinError(
                f"ranks_per_node={ppn}, but the {self.site} twin's nodes have {cores} cores -- "
                f"ask for {cores} at most"
            )
        ranks = ppn * self.cluster.nodes
        free = meminfo.available_mib()
        fit = free // MIB_PER_RANK
        if ranks > fit:
            raise TwinError(
                f"{ranks} ranks ({self.cluster.nodes} nodes x {ppn}) need about "
                f"{ranks * MIB_PER_RANK:,} MiB, this machine has {free:,} MiB available: "
                f"{fit} ranks fit -- lower ranks_per_node or --nodes"
            )

    def stop(self) -> list[str]:
        removed = self.cluster.stop()
        self.substitution_file.unlink(missing_ok=True)
        shutil.rmtree(self.root / "topology", ignore_errors=True)
        return removed

    def env(self, base: dict | None = None) -> dict[str, str]:
        """What a Slurm client and ReFrame need to use the twin."""
        env = self.cluster.client_env(base)
        env["TOPOFOAM_TWIN"] = str(self.substitution_file)
        return env

    def describe(self) -> str:
        return "; ".join(
            f"{p.slurm_partition}: {', '.join(h for h in self.cluster.hosts if self.cluster.group_of[h].partition == p.slurm_partition)} "
            f"({p.description}{', ' + '/'.join(p.features) if p.features else ''})"
            for p in self.parts
        )
