"""Multi-node placement and reduction schedules, on a partition with several nodes.

The cavity on 1, 2 and 4 nodes with 2 ranks per node (a site's own ranks per node on its
twin: ``-S PreparedCavityRanks.ranks_per_node=48``), with the patched OpenFOAM:
  standard       default placement, OpenFOAM's own tree;
  global         default placement, rankmap's schedule for it (reductionSchedule.block);
  global+sums    the same, with scalar sum/min reductions along it too (v2512: every native
                 all-reduction; reductionScheduleSums), which are most of a step's
                 all-reductions across nodes;
  local+global   rankmap's placement and its schedule;
  esi-nodecomms  default placement, ESI's own node-aware collectives (v2506 and later: the
                 v2512 environments), its two-level path shown by the MPI calls;
launched by srun or by mpirun; local+global places its ranks by the one placement launch of
every check (topofoam.checks.placed: srun's SLURM_HOSTFILE, Open MPI 4's ``-rf`` or Open MPI
5's ``--map-by rankfile:file=``). rankmap runs inside the job and reads the allocation's
hostnames. Before the solver, the same launch reports every rank's host and CPU set: the host
must be the one the mapping gives; the core is checked only where the node's declared layout
is the real one and the launcher binds (mpirun with a rankfile; srun on a partition that
binds), and the perflog column ``core_binding`` says which. On an emulated partition the timings are labelled
``emulated`` and carry no reference. The solver runs under the MPI call counter
(``reframe/src/mpicount``): the perflog gets the calls of each kind the time-per-step model
prices (topofoam.prediction.model) summed over the ranks, and the output folder keeps the decomposition's
communication graph (``commgraph.csv``), and its log goes through topofoam.jobs.stepclock
(``wall_per_step``, wall-clock): ``python -m topofoam.prediction.modelcheck`` puts the model's prediction
beside each measured run.
"""

import json
import re
import sys
from pathlib import Path

import reframe.utility.sanity as sn
from reframe.core.backends import getlauncher
from reframe.core.builtins import (
    fixture,
    parameter,
    run_after,
    run_before,
    sanity_function,
    variable,
)
from reframe.core.exceptions import SanityError

import reframe as rfm
from topofoam.checks.fixtures import (
    ClocksSteps,
    CountsMpiCalls,
    EsiNodeCommsVariant,
    PatchedOpenFOAMBuild,
    PreparedCavityRanks,
)
from topofoam.checks.placed import PlacedRun
from topofoam.checks.sweep import most_repeats, partitions
from topofoam.config import sweepspace
from topofoam.config.sweepspace import ESI_NODECOMMS, SCHEDULE_VARIANTS
from topofoam.jobs import mpicount


def tree_messages(stagedir: str) -> tuple[int, int]:
    """MPI_Send messages of a run (OpenFOAM's and the schedule's reduction trees) between
    nodes and within a node, by the hosts its probe reported (placement.txt)."""
    hosts = {}
    for line in Path(stagedir, "placement.txt").read_text().splitlines():
        found = re.match(r"^placement (\d+) (\S+) ", line)
        if found:
            hosts[int(found.group(1))] = found.group(2)
    ranks = [hosts.get(r, "?") for r in range(len(hosts))]
    sent = mpicount.peers(Path(stagedir, "mpicount"))
    return mpicount.by_host(sent, ranks).get("MPI_Send", (0, 0))


@sn.deferrable
def _side(stagedir: str, side: int) -> int:
    return tree_messages(stagedir)[side]


@sn.deferrable
def _sums_followed_the_schedule(stagedir: str, standard: str, ranks: int) -> bool:
    """global+sums: every all-reduction it took off MPI_Allreduce sent its messages along the
    block placement's schedule (reductionSchedule.block; rankmap's map/analysis.json gives
    its inter-node edges), counted per peer (topofoam.jobs.mpicount.routed_along_tree)."""
    counts = [mpicount.read(Path(d, "mpicount")) for d in (standard, stagedir)]
    messages = [tree_messages(d) for d in (standard, stagedir)]
    analysis = json.loads(Path(stagedir, "map", "analysis.json").read_text())[0]
    edges = analysis["tree_edges"]["hierarchical"]["inter_node"]
    why = mpicount.routed_along_tree(
        ranks,
        tuple(c.get("MPI_Allreduce", 0) for c in counts),
        tuple(m[0] for m in messages),
        tuple(c.get("MPI_Send", 0) for c in counts),
        edges,
    )
    if why:
        raise SanityError(f"scalar sums off the schedule: {why}")
    return True


@rfm.simple_test
class MultiNodeRun(CountsMpiCalls, ClocksSteps, EsiNodeCommsVariant, PlacedRun):
    """One placement variant and launcher on 1, 2 or 4 nodes."""

    #: The repeat of the measurement: declared first, so every variant runs once before any
    #: runs again. Only partitions whose times are compared repeat (sweepspace.repeats: an
    #: emulated one under a fabric profile).
    repeat = parameter(range(most_repeats(emulated=True)))
    variant = parameter(["standard", "global", "global+sums", "local+global", "esi-nodecomms"])
    launcher_kind = parameter(["srun", "mpirun"])
    build = fixture(PatchedOpenFOAMBuild, scope="environment")
    prepared = fixture(PreparedCavityRanks, scope="environment")
    nodes = variable(int, value=0, loggable=True)
    topology = variable(str, value="local", loggable=True)  # the node rankmap maps onto
    valid_systems = ["+multinode"]
    valid_prog_environs = ["+reduction-schedule"]
    time_limit = "10m"
    # After a node failure fewer nodes are up: fail clearly instead of pending for ever.
    max_pending_time = "2m"
    counted = [
        "MPI_Allreduce",
        "MPI_Reduce",
        "MPI_Bcast",
        # what else the model prices: halo exchanges, tree reductions, non-blocking
        # reductions and all-to-alls
        "MPI_Isend",
        "MPI_Send",
        "MPI_Iallreduce",
        "MPI_Alltoall",
        "MPI_Alltoallv",
    ]
    #: the decomposition's graph, and rankmap's analysis of the placement it used (its tree
    #: edges per level beside OpenFOAM's own tree on the same placement)
    keep_files = ["commgraph.csv", "map/analysis.json"]
    #: The standard run of the same nodes, launcher and repeat (a dependency's name).
    standard_run = variable(str, value="")
    tags = {"multinode"}
    stage = "multinode"

    @run_after("init")
    def repeat_where_compared(self):
        if self.repeat:
            self.valid_systems = [
                p.fullname
                for p in partitions(emulated=True)
                if "multinode" in p.features and self.repeat < sweepspace.repeats(p)
            ]

    @run_after("init")
    def compare_with_standard(self):
        """Every other variant's final fields are held against the standard run's on the
        same nodes, launcher and repeat: a dependency, whose stage stays until this run is
        done."""
        if self.variant == "standard":
            return
        cls = type(self)
        size = len(cls.param_space)
        (own,) = cls.param_space.get_variant_nums(
            variant=lambda v: v == "standard",
            launcher_kind=lambda k: k == self.launcher_kind,
            repeat=lambda r: r == self.repeat,
        )
        # The variant number is the parameters' index plus the fixtures' times their count.
        self.standard_run = cls.variant_name(own + size * (self.variant_num // size))
        self.depends_on(self.standard_run)

    @run_after("setup")
    def set_layout(self):
        self.num_tasks = self.prepared.ranks
        self.num_tasks_per_node = self.prepared.ranks_per_node
        self.nodes = self.prepared.nodes
        extras = self.current_partition.extras
        self.topology = extras.get("topology", "local")
        self.descr = (
            f"cavity2D on {self.nodes} node(s) x {self.num_tasks_per_node} ranks, "
            f"{self.variant}, {self.launcher_kind}"
        )
        if self.launcher_kind == "mpirun":
            self.job.launcher = getlauncher("mpirun")()
        if self.variant != "local+global":
            self.placement_used = "block"  # the launcher's default over the allocation
        binds = self.variant == "local+global" and self.binds()
        self.core_binding = (
            "verified"
            if binds and extras.get("declared_is_real")
            else "not verifiable on this partition"
        )

    def binds(self) -> bool:
        """Whether the launch binds each rank: mpirun's rankfile always; srun where the
        partition binds (its ``binds`` extra: a cluster's, not the emulated nodes')."""
        return self.launcher_kind == "mpirun" or self.current_partition.extras.get("binds", False)

    @run_before("run")
    def keep_the_graph(self):
        self.add_prerun("place", f"{sys.executable} -m rankmap graph . --out commgraph.csv")

    @run_before("run")
    def map_and_launch(self):
        if self.variant in ("standard", "esi-nodecomms"):
            self.add_prerun("place", 'scontrol show hostnames "$SLURM_JOB_NODELIST" > hosts.alloc')
            if self.variant == "esi-nodecomms":
                self.set_optimisation_switches(**ESI_NODECOMMS)
        else:
            self.rankmap_commands(self.topology, self.nodes)
            self.schedule_from(
                "map/reductionSchedule"
                if self.variant == "local+global"
                else "map/reductionSchedule.block"
            )
            self.forward_to_ranks("FOAM_REDUCTION_SCHEDULE")
        if self.variant == "global+sums":
            self.set_optimisation_switches(reductionScheduleSums=1)
        wrap = self.launch_as_mapped(self.binds()) if self.variant == "local+global" else ""
        self.probe_placement(wrap)
        self.executable = f"{wrap}{self.executable}"

    def expected_placement(self) -> tuple[list[str], list[str] | None]:
        """Host (and CPU) of each rank: rankmap's files, or block order over the
        allocation (no CPU: the launcher's default binding is not checked)."""
        if self.variant == "local+global":
            placed = self.mapped_placement()
            return [h for h, _ in placed], [c for _, c in placed]
        alloc = sn.evaluate(sn.extractall(r"^(\S+)$", f"{self.stagedir}/hosts.alloc", 1))
        return [alloc[r // self.num_tasks_per_node] for r in range(self.num_tasks)], None

    @sanity_function
    def assert_placed_and_completed(self):
        checks = self.placement_checks(*self.expected_placement())
        checks.append(self.assert_run())
        if self.variant in (*SCHEDULE_VARIANTS, "global+sums"):
            checks.append(self.schedule_reported())
            checks.append(self.sums_routed(self.variant == "global+sums"))
        if self.variant == "esi-nodecomms":
            checks.append(self.nodecomms_reported(self.nodes, self.num_tasks_per_node))
        if self.variant != "standard":
            standard = self.getdep(self.standard_run).stagedir
            checks.append(self.fields_as(standard))
        if self.variant == "global+sums":
            checks.append(_sums_followed_the_schedule(self.stagedir, standard, self.num_tasks))
        return sn.all(checks)

    @run_before("performance")
    def count_messages_across_nodes(self):
        """MPI_Send's messages between nodes and within them (the counter's per-peer counts
        by the probe's hosts): global+sums' scalar sums add exactly its schedule's tree to
        them (the sanity holds it); global and local+global send as many as standard where
        the solver makes no generic reduction (icoFoam on the cavity: 88 of 258 across 2
        nodes x 2 ranks on each)."""
        for name, side in (("sends_inter_node", 0), ("sends_intra_node", 1)):
            self.perf_variables[name] = sn.make_performance_function(
                _side(self.stagedir, side), "messages"
            )
