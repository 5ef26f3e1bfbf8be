"""The two-core measurement behind the p2p check and the fabric's validation.

Two ranks bound to two cores whose path is one level of rankmap's hierarchy (same NUMA node,
NUMA nodes of one package, two packages, two nodes; the cores come from the partition's
topology): an MPI ping-pong of 10, 100, 500 and 1000 double-precision scalars (seed 000
Table 2), each a performance variable in microseconds; the bandwidth of 1 MiB messages (MB/s);
the latency of a one-scalar MPI_Allreduce and MPI_Alltoall on the pair (us). Partitions whose
nodes share one machine (emulated) are measured between two nodes only, and only when their
links were given costs (a fabric profile, topofoam.config.fabric): the check then measures them back.
"""

import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
from reframe.core.builtins import (
    fixture,
    parameter,
    run_after,
    run_before,
    sanity_function,
    variable,
)

import reframe as rfm
from rankmap import topology
from topofoam.checks.fixtures import MpiBuild
from topofoam.checks.onfabric import OnFabric
from topofoam.checks.sweep import most_repeats, partitions
from topofoam.config import sweepspace
from topofoam.config.fabric import NONE
from topofoam.paths import SOURCES


class PingPongBuild(MpiBuild):
    """The ping-pong program (reframe/src/pingpong)."""

    # All of reframe/src: the program includes common/median.h. Built beside its source
    # (a program named pingpong at the top would clash with the folder).
    sourcesdir = str(SOURCES)
    sourcepath = "pingpong/pingpong.c"
    executable = "pingpong/pingpong"
    valid_prog_environs = ["+reduction-schedule"]


class PingPong(rfm.RunOnlyRegressionTest, OnFabric):
    """Round-trip time, bandwidth and collective latency between two cores at one hardware
    level (a check subclasses it with its tags: reframe/p2p.py, reframe/validate.py)."""

    #: The repeat of the measurement (topofoam.results.p2p merges them): declared first, so every
    #: level is measured once before any is measured again.
    repeat = parameter(range(most_repeats()))
    level = parameter(list(topology.LEVELS))
    build = fixture(PingPongBuild, scope="environment")
    #: Message sizes in double-precision scalars (seed 000 Table 2).
    sizes = variable(typ.List[int], value=[10, 100, 500, 1000])
    cpus = variable(str, value="", loggable=True)
    #: What kind of run this is (topofoam.results.stages).
    stage = variable(str, value="p2p", loggable=True)
    # The MPI is what is measured: one environment, the one every site has.
    valid_prog_environs = ["+reduction-schedule"]
    num_tasks = 2
    time_limit = "10m"
    exclusive_access = True

    def repeats_on(self, part) -> int:
        """How often the measurement is repeated on ``part``."""
        return sweepspace.repeats(part)

    def pair(self, part):
        return topology.core_pair(topology.load(part.extras["topology"]), self.level)

    @run_after("init")
    def select_partitions(self):
        def measurable(part):
            if self.repeat >= self.repeats_on(part):
                return False
            if part.extras.get("emulated"):
                return self.level == "inter_node" and part.extras.get("fabric", NONE) != NONE
            if self.level == "inter_node" and 2 not in part.extras["nodes"]:
                return False
            return self.pair(part) is not None

        self.valid_systems = [p.fullname for p in partitions(emulated=True) if measurable(p)]

    @run_after("setup")
    def bind_the_pair(self):
        a, b = self.pair(self.current_partition)
        self.num_tasks_per_node = 1 if self.level == "inter_node" else 2
        self.cpus = f"{a},{b}"
        self.descr = f"round trip {self.level.replace('_', ' ')}, CPUs {a} and {b}"
        # Each rank binds itself (the same on either launcher); the launcher must not.
        if self.job.launcher.registered_name == "srun":
            self.job.launcher.options += ["--cpu-bind=none"]
        elif self.job.launcher.registered_name == "mpirun":
            self.job.launcher.options += ["--bind-to", "none"]
        rank = "${OMPI_COMM_WORLD_RANK:-$SLURM_PROCID}"
        program = f"{self.build.stagedir}/{self.build.executable}"
        self.executable = "bash"
        self.executable_opts = [
            "-c",
            f"'exec taskset -c $([ {rank} = 0 ] && echo {a} || echo {b}) {program} "
            f"{' '.join(map(str, self.sizes))}'",
        ]
        self.perf_variables = {
            f"rtt_{n}": sn.make_performance_function(
                sn.extractsingle(rf"^pingpong size {n} rtt_us (\S+)", self.stdout, 1, float), "us"
            )
            for n in self.sizes
        }
        found = {
            "bandwidth": (r"^pingpong bandwidth bytes \d+ MBps (\S+)", "MB/s"),
            "allreduce_latency": (r"^collective allreduce us (\S+)", "us"),
            "alltoall_latency": (r"^collective alltoall us (\S+)", "us"),
        }
        for name, (pattern, unit) in found.items():
            self.perf_variables[name] = sn.make_performance_function(
                sn.extractsingle(pattern, self.stdout, 1, float), unit
            )

    @run_before("run")
    def report_cpus(self):
        # Where each rank ran, as the sweeps record it. ReFrame gives the job its task
        # counts only when it writes the script, after this hook.
        self.job.num_tasks = self.num_tasks
        self.job.num_tasks_per_node = self.num_tasks_per_node
        launch = self.job.launcher.run_command(self.job)
        rank = "${OMPI_COMM_WORLD_RANK:-$SLURM_PROCID}"
        a, b = self.cpus.split(",")
        self.prerun_cmds = [
            f"{launch} bash -c 'taskset -c $([ {rank} = 0 ] && echo {a} || echo {b}) "
            f'grep Cpus_allowed_list /proc/self/status | sed "s/^/rank {rank} /"\' '
            f"> placement.txt"
        ]

    @sanity_function
    def assert_measured(self):
        found = sn.extractall(r"^pingpong size (\d+) rtt_us \S+", self.stdout, 1, int)
        placed = sn.extractall(
            r"^rank (\d+) Cpus_allowed_list:\s+(\S+)", f"{self.stagedir}/placement.txt", [1, 2]
        )
        return sn.all(
            [
                sn.assert_eq(found, self.sizes, msg="sizes measured {0}, expected {1}"),
                sn.assert_found(r"^pingpong bandwidth", self.stdout, msg="no bandwidth measured"),
                sn.assert_found(
                    r"^collective alltoall", self.stdout, msg="no collectives measured"
                ),
                sn.assert_eq(
                    sn.sorted(placed),
                    [("0", self.cpus.split(",")[0]), ("1", self.cpus.split(",")[1])],
                    msg="ranks ran on {}, expected CPUs {}".format("{0}", self.cpus),
                ),
            ]
        )
