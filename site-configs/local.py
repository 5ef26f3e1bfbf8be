"""ReFrame site configuration for one Linux machine: the suite's embedded default.

Partitions:
  cpu    the local scheduler, ranks started with ``mpirun``;
  slurm  the project's own single-node Slurm (site-configs/local/slurm.py), jobs through
         ``sbatch``/``squeue`` (no accounting, hence ``squeue``), ranks with ``srun --mpi=pmix``.
         Present only while that Slurm runs (``./bench slurm start`` or ``./bench run``).
  emu    the emulated multi-node cluster (site-configs/local/cluster.py): nodes are network
         namespaces of this machine, so timings are emulated and mean nothing; it exists so
         that multi-node paths run for real. Needs root; present while it runs.

Environments:
  openfoam-v1912           Debian's stock OpenFOAM v1912, plus the real SCOTCH decomposition
                           library built from Debian's source (Debian ships a stub).
  openfoam-v1912-patched   the same with libOpenFOAM/libPstream built with patches/esi-v1912
                           first in LD_LIBRARY_PATH and its interFoam first in PATH (built by
                           the PatchedOpenFOAMBuild fixture, once, into the cache; see
                           build-openfoam.sh).

Run it with ``./bench run`` (which starts and stops Slurm around ReFrame), or by hand:
``reframe -C site-configs/local.py -c reframe -r``.
"""

import os
import sys
from pathlib import Path

from reframe.utility.cpuinfo import cpuinfo

import sitekit.common
from localsite import openfoam, paths
from localsite.cluster import DEFAULT_LAYOUT, EmulatedCluster, mpi_env
from localsite.slurm import LocalSlurm
from rankmap import topology

_results = paths.results_dir()
_slurm = LocalSlurm()
(_results / "reframe").mkdir(parents=True, exist_ok=True)

# Every Slurm client ReFrame starts (sbatch, squeue, scancel) must find our controller through
# SLURM_CONF: without it Slurm looks the controller up through DNS, off the machine.
os.environ.setdefault("SLURM_CONF", str(_slurm.conf))

# Open MPI's mpirun refuses root unless told; containers and CI machines often run as root.
# mca_base_env_list forwards the library path to every rank, on any host. It warns about
# variables that are not set, so checks append their optional ones; ReFrame writes values
# unquoted into the job script, hence the quotes around the ';'-separated list.
_mpi_env = [
    ["OMPI_ALLOW_RUN_AS_ROOT", "1"],
    ["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"],
    ["OMPI_MCA_mca_base_env_list", '"LD_LIBRARY_PATH;WM_PROJECT_DIR"'],
]

_foam_env = [
    ["WM_PROJECT_DIR", str(openfoam.PROJECT_DIR)],
    # The tutorials (the motorbike case takes its geometry from them); TOPOFOAM_TUTORIALS
    # points elsewhere.
    ["FOAM_TUTORIALS", os.environ.get("TOPOFOAM_TUTORIALS", str(openfoam.EXAMPLES))],
]

# Open MPI's UCX PML, as on the clusters, so that the UCX presets the sweeps set take effect
# (Debian's /etc/openmpi/openmpi-mca-params.conf turns it off; 'any' lets UCX use shared
# memory and TCP, which is what this machine has).
_ucx_env = [
    ["OMPI_MCA_pml", "ucx"],
    ["OMPI_MCA_pml_ucx_tls", "any"],
    ["OMPI_MCA_pml_ucx_devices", "any"],
]

# ReFrame detects the processor of local partitions by itself; the Slurm node is this same
# machine, so its detection result is ReFrame's own for this host, not a remote job.
_processor = cpuinfo()

# What the sweeps (reframe/sweep.py) vary here: 2 ranks on this one node, every placement
# that differs on it, the UCX thresholds UCX 1.13 takes, Open MPI's own collectives.
_node = topology.this_machine()
_sweep = {
    "topology": "local", "cores": _node.cores, "numa_nodes": _node.n_numa, "nps": "",
    "ppn": [min(2, _node.cores)], "nodes": [1],
    "ucx": ["auto", "rndv16k", "rndv128k"], "ucx_inter": ["auto"], "coll": ["default", "han"],
    "intra2_pairs": [["auto", "default"], ["rndv16k", "default"], ["rndv128k", "default"],
                     ["auto", "han"]],
    "mpi": "openmpi4", "node_hour_price": None, "currency": "",
    "declared_is_real": True, "binds": True,
}

_partitions = [
    {
        "name": "cpu",
        "descr": "this machine, local scheduler, mpirun",
        "scheduler": "local",
        "launcher": "mpirun",
        "environs": ["openfoam-v1912", "openfoam-v1912-patched"],
        "env_vars": _mpi_env + _ucx_env,
        "extras": _sweep,
        "max_jobs": 1,
    },
]

# TOPOFOAM_LIST_ALL=1 lists every partition, running or not: the report reads their extras.
_list_all = os.environ.get("TOPOFOAM_LIST_ALL") == "1"

if _list_all or _slurm.running().keys() >= {"munged", "slurmctld", "slurmd"}:
    _partitions.append({
        "name": "slurm",
        "descr": "this machine as a one-node Slurm cluster, srun --mpi=pmix",
        "scheduler": "squeue",
        "launcher": "srun",
        "access": [f"--partition={LocalSlurm.partition}"],
        "environs": ["openfoam-v1912", "openfoam-v1912-patched"],
        "env_vars": _mpi_env + _ucx_env + [["SLURM_MPI_TYPE", "pmix"]],
        "processor": _processor,
        # task/affinity: srun binds for real on this node.
        "extras": _sweep,
        "max_jobs": 1,
    })
else:
    print("local.py: partition 'slurm' left out: the project's local Slurm is not running "
          "-- start it with './bench slurm start' (as root)", file=sys.stderr)

_emu = EmulatedCluster()
if not _list_all and os.geteuid() != 0:
    print("local.py: partition 'emu' left out: the emulated cluster needs root",
          file=sys.stderr)
elif not _list_all and "slurmctld" not in _emu.running():
    print("local.py: partition 'emu' left out: the emulated cluster is not running "
          "-- start it with './bench cluster start --nodes 4'", file=sys.stderr)
else:
    _lay = DEFAULT_LAYOUT
    _partitions.append({
        "name": "emu",
        "descr": "emulated multi-node cluster (network namespaces; timings are emulated)",
        "scheduler": "squeue",
        "launcher": "srun",
        "access": [f"--partition={EmulatedCluster.partition}"],
        "environs": ["openfoam-v1912", "openfoam-v1912-patched"],
        "env_vars": _mpi_env + [["SLURM_MPI_TYPE", "pmix"]]
                    + [[k, v] for k, v in mpi_env(_emu.subnet, _emu.node_tmp).items()],
        # The declared node, not this machine: what Slurm, rankmap and the checks see.
        "processor": {"num_cpus": _lay.cpus, "num_cpus_per_core": _lay.threads_per_core,
                      "num_sockets": _lay.sockets,
                      "num_cpus_per_socket": _lay.cores_per_socket * _lay.threads_per_core},
        "features": ["emulated", "multinode"],
        "extras": {
            "emulated": True,
            "topology": (f"pack:{_lay.sockets} core:{_lay.cores_per_socket} "
                         f"pu:{_lay.threads_per_core}"),
            # Cores are verifiable only where the declared node is the real one.
            "declared_is_real": _lay.cpus == _processor.get("num_cpus"),
        },
        "max_jobs": 1,
    })

site_configuration = {
    "systems": [
        {
            "name": "local",
            "descr": "this machine (TopoFOAM bench embedded default)",
            "hostnames": [".*"],
            "modules_system": "nomod",
            "prefix": str(_results / "reframe"),
            "partitions": _partitions,
        },
    ],
    "environments": [
        {
            "name": "openfoam-v1912",
            "features": ["openfoam", "openfoam-v1912", "scotch"],
            "env_vars": _foam_env + [
                ["LD_LIBRARY_PATH", f"{openfoam.lib_dir('scotch')}:$LD_LIBRARY_PATH"],
            ],
            "extras": {"openfoam_version": "v1912", "openfoam_flavour": "esi"},
        },
        {
            "name": "openfoam-v1912-patched",
            "features": ["openfoam", "openfoam-v1912", "scotch", "reduction-schedule",
                         "seed001", "local-build"],
            "env_vars": _foam_env + [
                ["LD_LIBRARY_PATH", f"{openfoam.lib_dir('patched')}:"
                                    f"{openfoam.lib_dir('scotch')}:$LD_LIBRARY_PATH"],
                # interFoam with the MULES patch (off unless mulesNeighbourExchange 1)
                ["PATH", f"{openfoam.build_prefix('patched')}/bin:$PATH"],
            ],
            "extras": {"openfoam_version": "v1912", "openfoam_flavour": "esi",
                       "build_target": "patched",
                       # The cache folder's name: version, build and a hash of the inputs.
                       "build_id": Path(openfoam.lib_dir("patched")).parent.name},
        },
    ],
    **sitekit.common.sections(_results),
}
