"""A Slurm cluster site from its facts: the one place vsc5.py, hpc2.py and oci.py fill in.

A site file states its settings (account, Slurm partition names, how OpenFOAM is loaded,
node-hour price) in one block and describes each partition's node: the topology rankmap maps
onto and the values the tuning stages sweep there. ``configuration(site)`` turns that into
ReFrame's ``site_configuration``; the checks read the sweep values from the partition extras
(reframe/topofoam/checks/sweep.py), so a site changes what runs without touching a check.
"""

from __future__ import annotations

import inspect
import sys
from dataclasses import dataclass, field
from pathlib import Path

from rankmap.analysis import LATENCY_CSV
from rankmap.topology import PRESETS
from sitekit import common, twin
from topofoam import paths
from topofoam.config import presets
from topofoam.validation.sessions import margins_problem

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
    #: Memory-backed folder the storage validation times the same steps in, for its ratio.
    memory_storage: str = "/dev/shm"
    mpi: str = "openmpi4"  # openmpi4: mpirun -rf; openmpi5: --map-by rankfile:file=
    launcher: str = "srun"
    access: list[str] = field(default_factory=list)  # further #SBATCH options (qos, ...)
    max_jobs: int = 8
    #: The system's own row of seed 000 Table 2 (rankmap/p2p_latency_us.csv) that prices
    #: hop-bytes until the p2p check has measured this partition; '' where none is published.
    published_costs: str = ""
    #: How often each timed run is repeated (seed 002 repeated every test 5 times); the
    #: report compares medians with their confidence intervals (topofoam.results.stats).
    repeats: int = 5
    #: Repeats of each validation measurement (-t validate; topofoam.config.sweepspace).
    validate_repeats: int = 10
    #: The validation's practical margins by unit, e.g. {"s": 0.05, "us": 0.1, "MB/s": 0.1},
    #: and by check where one needs its own ({"FabricValidation": {"MB/s": 4.0}}); a unit
    #: left out takes topofoam.validation.expectations.MARGINS.
    validate_margins: dict = field(default_factory=dict)
    #: Those against a baseline of one session, where they must be wider (one session's
    #: repeats do not see the drift between sessions); left out: validate_margins.
    validate_margins_one_session: dict = field(default_factory=dict)

    def __post_init__(self):
        where = f"partition {self.name}"
        _whole(self.cores, f"{where}: cores", 1)
        _whole(self.numa_nodes, f"{where}: numa_nodes", 1, self.cores)
        cores = _preset_cores(self.topology, where)
        if cores is not None and cores != self.cores:
            _fail(
                f"{where}: topology '{self.topology}' has {cores} cores, cores says "
                f"{self.cores} -- make them agree"
            )
        if not self.ppn:
            self.ppn = [self.cores]
        _whole_list(self.ppn, f"{where}: ppn", 1, self.cores)
        _whole_list(self.nodes, f"{where}: nodes", 1)
        _whole(self.repeats, f"{where}: repeats", 1)
        _whole(self.validate_repeats, f"{where}: validate_repeats", 2)
        for name in ("validate_margins", "validate_margins_one_session"):
            problem = margins_problem(getattr(self, name))
            if problem:
                _fail(f"{where}: {name} {problem} -- correct it")
        for kind, names in (("ucx", self.ucx), ("ucx_inter", self.ucx_inter), ("coll", self.coll)):
            table = {"ucx": presets.UCX, "ucx_inter": presets.UCX_INTER, "coll": presets.COLL}[kind]
            if not isinstance(names, list) or not names:
                _fail(
                    f"{where}: {kind} must be a non-empty list of preset names -- choose "
                    f"from {sorted(table)} (reframe/topofoam/config/presets.py)"
                )
            unknown = [n for n in names if n not in table]
            if unknown:
                _fail(
                    f"{where}: unknown {kind} preset(s) {unknown} -- choose from "
                    f"{sorted(table)} (reframe/topofoam/config/presets.py)"
                )
        if self.intra2_pairs is None:
            self.intra2_pairs = [(u, c) for u in self.ucx for c in self.coll]
        for pair in self.intra2_pairs:
            if len(pair) != 2 or pair[0] not in self.ucx or pair[1] not in self.coll:
                _fail(
                    f"{where}: intra2 pair {list(pair)} is not (one of ucx {self.ucx}, one "
                    f"of coll {self.coll}) -- fix the pair or add the preset to the lists"
                )
        if self.mpi not in ("openmpi4", "openmpi5"):
            _fail(
                f"{where}: mpi '{self.mpi}' -- choose openmpi4 (mpirun -rf) or openmpi5 "
                f"(--map-by rankfile:file=)"
            )
        if self.published_costs and self.published_costs not in _published_rows():
            _fail(
                f"{where}: published_costs '{self.published_costs}' is not a row of "
                f"rankmap/p2p_latency_us.csv -- choose from {sorted(_published_rows())} or "
                f"leave it empty (the p2p check then measures the costs)"
            )
        if self.launcher not in ("srun", "mpirun"):
            _fail(
                f"{where}: launcher '{self.launcher}' cannot place ranks -- choose srun or mpirun"
            )

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
            "published_costs": self.published_costs,
            "repeats": self.repeats,
            "validate_repeats": self.validate_repeats,
            "validate_margins": dict(self.validate_margins),
            "validate_margins_one_session": dict(self.validate_margins_one_session),
            "local_storage": self.local_storage,
            "memory_storage": self.memory_storage,
            "node_hour_price": site.node_hour_price,
            "currency": site.currency,
            "build_on": site.build_on,
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


def _site_file() -> str:
    """The site file being loaded (the first frame outside sitekit), for messages."""
    for frame in inspect.stack():
        if "sitekit" not in Path(frame.filename).parts and frame.filename.endswith(".py"):
            return frame.filename
    return "the site configuration"


def _fail(message: str) -> None:
    """A value ReFrame cannot use: one line naming the file and the fix, then stop."""
    sys.exit(f"{_site_file()}: {message}")


def _whole(value, what: str, low: int, high: int | None = None) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or value < low
        or (high is not None and value > high)
    ):
        span = f"{low}..{high}" if high is not None else f"{low} or more"
        _fail(f"{what} is {value!r} -- give a whole number, {span}")


def _whole_list(values, what: str, low: int, high: int | None = None) -> None:
    if not isinstance(values, list) or not values:
        _fail(f"{what} must be a non-empty list of whole numbers")
    for value in values:
        _whole(value, f"{what} holds a value that", low, high)


def _published_rows() -> set[str]:
    """The systems of seed 000 Table 2 (rankmap's latency table)."""
    with open(LATENCY_CSV) as f:
        return {
            line.split(",", 1)[0]
            for line in f
            if line.strip() and not line.startswith(("#", "system,"))
        }


def _preset_cores(topology: str, where: str) -> int | None:
    """Cores of a rankmap preset (None for a synthetic description or an hwloc XML file,
    which only rankmap reads: the site file starts no process)."""
    if not isinstance(topology, str) or not topology:
        _fail(
            f"{where}: topology must name a rankmap preset, a synthetic description or an "
            f"hwloc XML file"
        )
    if ":" in topology or topology.endswith(".xml"):
        return None
    if topology not in PRESETS:
        _fail(
            f"{where}: unknown topology '{topology}' -- choose a preset "
            f"({', '.join(PRESETS)}), a synthetic description like 'pack:2 numa:4 core:9 "
            f"pu:1' or an hwloc XML file"
        )
    counts = dict(part.split(":") for part in PRESETS[topology].split())
    return int(counts.get("pack", 1)) * int(counts.get("numa", 1)) * int(counts.get("core", 1))


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
    #: Where the build fixture installs OpenFOAM: "compute" (a batch job on the partition,
    #: most centres' rule) or "login" (the login node, where the centre allows it).
    build_on: str = "compute"

    def __post_init__(self):
        if self.build_on not in ("compute", "login"):
            _fail(
                f"BUILD_ON is {self.build_on!r} -- choose 'compute' (a batch job on the "
                f"partition) or 'login' (the login node, where your centre allows it)"
            )
        price = self.node_hour_price
        if price is not None and (
            isinstance(price, bool) or not isinstance(price, int | float) or price < 0
        ):
            _fail(
                f"NODE_HOUR_PRICE is {price!r} -- give a number of {self.currency or 'money'} "
                f"per node-hour, or None"
            )
        if price is not None and not self.currency:
            _fail("NODE_HOUR_PRICE is set without a CURRENCY -- set CURRENCY, e.g. 'EUR'")
        names = [p.name for p in self.partitions]
        if len(set(names)) != len(names):
            _fail(f"two partitions share a name: {names} -- give each its own")


def spack_environment(
    name: str, spec: str, *, site: str, setup: str, features: list[str], extras: dict
) -> dict:
    """A ReFrame environment that loads ``spec`` from the project's Spack environment, as
    concretized for ``site`` (spack.yaml reads site-configs/<site>.spack.yaml).

    ``setup`` is the site's ``share/spack/setup-env.sh``. Spack's openfoam packages set
    WM_PROJECT_DIR and friends when loaded, as sourcing OpenFOAM's etc/bashrc would; hwloc
    and SCOTCH come from the same environment, for rankmap inside the jobs.
    """
    load = f"{spec} hwloc scotch"
    return {
        "name": name,
        "features": features,
        # A job whose spec is not installed stops here, saying so. The one exception is the
        # build fixture's own job (its stage folder is PatchedOpenFOAMBuild_*), which loads
        # this environment before it installs the spec.
        "prepare_cmds": [
            f". {setup}",
            f"export TOPOFOAM_SITE={site}",
            f"spack env activate -d {REPO}",
            f"spack load {load} || case $PWD in */PatchedOpenFOAMBuild_*) ;; *) "
            f'echo "topofoam: {load} is not installed in the Spack environment {REPO} '
            f"(TOPOFOAM_SITE={site}) -- install it (TOPOFOAM_SITE={site} spack -e {REPO} "
            f'install), or run the checks with their PatchedOpenFOAMBuild fixture, which does" '
            f">&2; exit 1 ;; esac",
        ],
        "extras": dict(extras, spack_spec=spec),
    }


def org12_patched(setup: str, site: str) -> dict:
    """OpenFOAM-12 (Foundation) with patches/org-12, as seed 000 ran on VSC-5 and hpc2: the
    schedule and seed 001's pipelined solvers (OpenFOAM-12 needs no optMULES)."""
    return spack_environment(
        "openfoam-org12-patched",
        "openfoam-org@12",
        site=site,
        setup=setup,
        features=["openfoam", "openfoam-org", "scotch", "reduction-schedule", "seed001"],
        extras={"openfoam_version": "12", "openfoam_flavour": "org"},
    )


def esi1912_patched(setup: str, site: str) -> dict:
    """OpenFOAM v1912 (ESI) with patches/esi-v1912 (the schedule, and seed 001's PiPePCG,
    RePiPePCG and neighbour-only MULES exchange)."""
    return spack_environment(
        "openfoam-esi-patched",
        "openfoam@1912_220610",
        site=site,
        setup=setup,
        features=[
            "openfoam",
            "openfoam-v1912",
            "scotch",
            "reduction-schedule",
            "seed001",
            "optmules",
        ],
        extras={"openfoam_version": "v1912", "openfoam_flavour": "esi"},
    )


def esi2512_patched(setup: str, site: str) -> dict:
    """OpenFOAM v2512 (ESI) with patches/esi-v2512, as seed 002 ran on OCI: the schedule, also
    in v2512's native allreduce, beside ESI's own node-aware collectives; RePiPePCG beside
    ESI's own PPCG and PPCR."""
    return spack_environment(
        "openfoam-v2512-patched",
        "openfoam@2512",
        site=site,
        setup=setup,
        features=[
            "openfoam",
            "openfoam-v2512",
            "scotch",
            "reduction-schedule",
            "repipepcg",
            "esi-ppcg",
            "esi-nodecomms",
        ],
        extras={"openfoam_version": "v2512", "openfoam_flavour": "esi"},
    )


def configuration(site: Site) -> dict:
    """ReFrame's site_configuration for ``site``; results under $TOPOFOAM_RESULTS or
    results/ of the clone."""
    results = paths.results_dir()
    config = {
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
    substitution = twin.substitution()
    return twin.substitute(config, substitution) if substitution else config
