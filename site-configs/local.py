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
                           first in LD_LIBRARY_PATH (built by the PatchedOpenFOAMBuild fixture,
                           once, into the cache; see build-openfoam.sh).

Run it with ``./bench run`` (which starts and stops Slurm around ReFrame), or by hand:
``reframe -C site-configs/local.py -c reframe -r``.
"""

import os
import sys

from reframe.utility.cpuinfo import cpuinfo

from localsite import openfoam, paths
from localsite.cluster import DEFAULT_LAYOUT, EmulatedCluster, mpi_env
from localsite.slurm import LocalSlurm

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

# ReFrame detects the processor of local partitions by itself; the Slurm node is this same
# machine, so its detection result is ReFrame's own for this host, not a remote job.
_processor = cpuinfo()

_partitions = [
    {
        "name": "cpu",
        "descr": "this machine, local scheduler, mpirun",
        "scheduler": "local",
        "launcher": "mpirun",
        "environs": ["openfoam-v1912", "openfoam-v1912-patched"],
        "env_vars": _mpi_env,
        "max_jobs": 1,
    },
]

if _slurm.running().keys() >= {"munged", "slurmctld", "slurmd"}:
    _partitions.append({
        "name": "slurm",
        "descr": "this machine as a one-node Slurm cluster, srun --mpi=pmix",
        "scheduler": "squeue",
        "launcher": "srun",
        "access": [f"--partition={LocalSlurm.partition}"],
        "environs": ["openfoam-v1912", "openfoam-v1912-patched"],
        "env_vars": _mpi_env + [["SLURM_MPI_TYPE", "pmix"]],
        "processor": _processor,
        "max_jobs": 1,
    })
else:
    print("local.py: partition 'slurm' left out: the project's local Slurm is not running "
          "-- start it with './bench slurm start' (as root)", file=sys.stderr)

# Test attributes that say nothing about a run's result; left out of the perflog columns.
_PERFLOG_NOISE = [
    f"check_{k}" for k in (
        "job_completion_time", "perfvalues", "build_locally", "build_time_limit", "env_vars",
        "exclusive_access", "extra_resources", "keep_files", "local", "maintainers",
        "max_pending_time", "modules", "postbuild_cmds", "postrun_cmds", "prebuild_cmds",
        "prerun_cmds", "readonly_files", "sourcepath", "sourcesdir", "strict_check",
        "use_multithreading", "valid_prog_environs", "valid_systems", "variables", "prefix",
        "num_gpus_per_node", "num_tasks_per_core", "num_tasks_per_socket", "executable_opts",
    )
]

_emu = EmulatedCluster()
if os.geteuid() != 0:
    print("local.py: partition 'emu' left out: the emulated cluster needs root",
          file=sys.stderr)
elif "slurmctld" not in _emu.running():
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
                         "local-build"],
            "env_vars": _foam_env + [
                ["LD_LIBRARY_PATH", f"{openfoam.lib_dir('patched')}:"
                                    f"{openfoam.lib_dir('scotch')}:$LD_LIBRARY_PATH"],
            ],
            "extras": {"openfoam_version": "v1912", "openfoam_flavour": "esi",
                       "build_target": "patched"},
        },
    ],
    "general": [
        {
            "topology_prefix": str(_results / "reframe" / "topology"),
            "report_file": str(_results / "reframe" / "reports" / "run-report-{sessionid}.json"),
            "check_search_recursive": False,
        },
    ],
    "storage": [
        {
            # Off by default in ReFrame; named here so that it never writes to ~/.reframe.
            "enable": False,
            "sqlite_db_file": str(_results / "reframe" / "results.db"),
        },
    ],
    "logging": [
        {
            "handlers": [
                {
                    "type": "file",
                    "name": str(_results / "reframe" / "reframe.log"),
                    "level": "debug",
                    "format": "[%(asctime)s] %(levelname)s: %(check_info)s: %(message)s",
                    "append": False,
                },
                {
                    "type": "stream",
                    "name": "stdout",
                    "level": "info",
                    "format": "%(message)s",
                },
            ],
            "handlers_perflog": [
                {
                    # One file per system/partition/check; '|'-separated with a header line.
                    # Every loggable parameter of a check is a column (check_#ALL), so a
                    # report reads the sweep dimensions without knowing the checks.
                    "type": "filelog",
                    "prefix": "%(check_system)s/%(check_partition)s",
                    "basedir": str(_results / "perflogs"),
                    "level": "info",
                    "format": ("%(check_job_completion_time)s|reframe %(version)s|"
                               "%(check_result)s|%(check_#ALL)s|%(check_perfvalues)s"),
                    "format_perfvars": "%(check_perf_value)s|%(check_perf_unit)s|",
                    "ignore_keys": _PERFLOG_NOISE,
                    "append": True,
                },
            ],
        },
    ],
}
