"""A Slurm cluster site from its facts: the one place vsc5.py, hpc2.py and oci.py fill in.

A site file states its settings (account, Slurm partition names, how OpenFOAM is loaded,
node-hour price) in one block and describes each partition's node: the topology rankmap maps
onto and the values the tuning stages sweep there. ``configuration(site)`` turns that into
ReFrame's ``site_configuration``; the checks read the sweep values from the partition extras
(reframe/topofoam/sweep.py), so a site changes what runs without touching a check.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sitekit import common, presets
from topofoam import paths

REPO = paths.REPO


@dataclass
class Partition:
    """One kind of node: a Slurm partition (or an NPS setting of the same nodes)."""

    name: str  # ReFrame's partition name (perflog folder, -p selection)
    descr: str
    slurm_partition: str  # sbatch --partition
    topology: str  # rankmap --topology: preset, synthetic string or hwloc XML
    cores: int  # cores per node, SMT off
    numa_nodes: int
    nps: str = ""  # AMD/Intel NUMA-per-socket setting of these nodes, if any
    #: Processes per node the intra1 stage tries; the last is the default of later stages.
    ppn: list[int] = field(default_factory=list)
    #: Node counts the inter-node stages and the cost sweep run at.
    nodes: list[int] = field(default_factory=lambda: [1])
    ucx: list[str] = field(default_factory=lambda: ["auto"])  # presets.UCX names
    ucx_inter: list[str] = field(default_factory=lambda: ["auto"])  # presets.UCX_INTER names
    coll: list[str] = field(default_factory=lambda: ["default"])  # presets.COLL names
    #: Pairs of (UCX preset, collectives) of the intra2 stage; default: every combination.
    intra2_pairs: list[tuple[str, str]] | None = None
    #: Node-local scratch for the storage check (a folder on the node's own disk).
    local_storage: str = "${TMPDIR:-/tmp}"
    mpi: str = "openmpi4"  # openmpi4: mpirun -rf; openmpi5: --map-by rankfile:file=
    launcher: str = "srun"
    access: list[str] = field(default_factory=list)  # further #SBATCH options (qos, ...)
    max_jobs: int = 8

    def __post_init__(self):
        for kind, names in (("ucx", self.ucx), ("ucx_inter", self.ucx_inter), ("coll", self.coll)):
            table = {"ucx": presets.UCX, "ucx_inter": presets.UCX_INTER, "coll": presets.COLL}[kind]
            unknown = [n for n in names if n not in table]
            if unknown:
                raise ValueError(
                    f"partition {self.name}: unknown {kind} preset(s) "
                    f"{unknown} -- choose from {sorted(table)} "
                    f"(site-configs/sitekit/presets.py)"
                )
        if not self.ppn:
            self.ppn = [self.cores]
        if self.intra2_pairs is None:
            self.intra2_pairs = [(u, c) for u in self.ucx for c in self.coll]

    def extras(self, site: Site) -> dict:
        """What the checks read: topology and sweep values, price, launcher details."""
        return {
            "topology": self.topology,
            "cores": self.cores,
            "numa_nodes": self.numa_nodes,
            "nps": self.nps,
            "ppn": self.ppn,
            "nodes": self.nodes,
            "ucx": self.ucx,
            "ucx_inter": self.ucx_inter,
            "coll": self.coll,
            "intra2_pairs": [list(p) for p in self.intra2_pairs],
            "mpi": self.mpi,
            "local_storage": self.local_storage,
            "node_hour_price": site.node_hour_price,
            "currency": site.currency,
            "declared_is_real": True,
            "binds": True,
        }

    def reframe(self, site: Site) -> dict:
        access = [f"--partition={self.slurm_partition}", *self.access]
        if site.account:
            access.append(f"--account={site.account}")
        return {
            "name": self.name,
            "descr": self.descr,
            "scheduler": "slurm",
            "launcher": self.launcher,
            "access": access,
            "environs": [e["name"] for e in site.environments],
            "max_jobs": self.max_jobs,
            "processor": {
                "num_cpus": self.cores,
                "num_cpus_per_core": 1,
                "num_sockets": max(1, self.numa_nodes if self.nps else 1),
            },
            "features": ["multinode", "slurm", self.mpi] + ([self.nps] if self.nps else []),
            "extras": self.extras(site),
            "env_vars": [["SLURM_MPI_TYPE", "pmix"]] if self.launcher == "srun" else [],
        }


@dataclass
class Site:
    name: str
    descr: str
    hostnames: list[str]  # login node name patterns: how ReFrame recognises the site
    partitions: list[Partition]
    #: The ReFrame environments: each loads an OpenFOAM (Spack environment or modules).
    environments: list[dict]
    account: str = ""
    node_hour_price: float | None = None
    currency: str = ""
    modules_system: str = "nomod"


def spack_environment(
    name: str, spec: str, *, setup: str, features: list[str], extras: dict
) -> dict:
    """A ReFrame environment that loads ``spec`` from the project's Spack environment.

    ``setup`` is the site's ``share/spack/setup-env.sh``. Spack's openfoam packages set
    WM_PROJECT_DIR and friends when loaded, as sourcing OpenFOAM's etc/bashrc would.
    """
    return {
        "name": name,
        "features": features,
        # The build fixture's own job loads this environment too, before the spec is
        # installed, so a failed load only says so here; the solver then is not found.
        "prepare_cmds": [
            f". {setup}",
            f"spack env activate -d {REPO}",
            f'spack load {spec} || echo "{spec} is not installed yet: the '
            f"PatchedOpenFOAMBuild fixture installs it (spack -e {REPO} "
            f'install {spec})" >&2',
        ],
        "extras": dict(extras, spack_spec=spec),
    }


def org12_patched(setup: str) -> dict:
    """OpenFOAM-12 (Foundation) with patches/org-12, as seed 000 ran on VSC-5 and hpc2."""
    return spack_environment(
        "openfoam-org12-patched",
        "openfoam-org@12",
        setup=setup,
        features=["openfoam", "openfoam-org", "scotch", "reduction-schedule"],
        extras={"openfoam_version": "12", "openfoam_flavour": "org"},
    )


def esi1912_patched(setup: str) -> dict:
    """OpenFOAM v1912 (ESI) with patches/esi-v1912 (the schedule, and seed 001's PiPePCG,
    RePiPePCG and neighbour-only MULES exchange)."""
    return spack_environment(
        "openfoam-esi-patched",
        "openfoam@1912",
        setup=setup,
        features=["openfoam", "openfoam-v1912", "scotch", "reduction-schedule", "seed001"],
        extras={"openfoam_version": "v1912", "openfoam_flavour": "esi"},
    )


def configuration(site: Site) -> dict:
    """ReFrame's site_configuration for ``site``; results under $TOPOFOAM_RESULTS or
    results/ of the clone."""
    results = paths.results_dir()
    return {
        "systems": [
            {
                "name": site.name,
                "descr": site.descr,
                "hostnames": site.hostnames,
                "modules_system": site.modules_system,
                "prefix": str(results / "reframe"),
                "partitions": [p.reframe(site) for p in site.partitions],
            }
        ],
        "environments": site.environments,
        **common.sections(results),
    }
