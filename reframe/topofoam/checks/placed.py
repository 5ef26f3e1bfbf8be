"""A solver run whose ranks are placed on purpose: what the sweeps, the multi-node check and
the schedule check share.

- ``forward_to_ranks``: environment variables every rank needs (srun exports the job's
  environment; Open MPI's mpirun forwards what ``mca_base_env_list`` names, and it cannot be
  mixed with ``mpirun -x``).
- ``rankmap_commands``: rankmap maps the case onto the allocation's hosts inside the job, its
  hop-bytes priced by the partition's own costs (topofoam.prediction.costs; the ``costs`` column).
- ``launch_as_mapped``: the one placement launch of every check: the partition's launcher
  (srun, Open MPI 4's or Open MPI 5's mpirun) puts each rank where rankmap's files say.
- ``probe_placement``: the solver's own launch first runs a probe that reports every rank's
  host and CPU set (placement.txt).
- ``mapped_placement``: (host, CPU) of each rank as rankmap's files give them.
- ``placement_checks``: the sanity assertions that every rank ran where it should.
- ``fields_as``: the final fields are the standard run's (within ``fields_rtol``).
- ``schedule_reported``, ``sums_routed``, ``nodecomms_reported``: our schedule (with the
  scalar sums along it or not), or ESI's node-aware collectives, were on.
"""

import json
import sys
from pathlib import Path

import reframe.utility.sanity as sn
from reframe.core.builtins import run_before, variable
from reframe.core.exceptions import SanityError

from rankmap.analysis import choice
from topofoam.checks.runs import PreparedCaseRun
from topofoam.config.sweepspace import SweepError
from topofoam.prediction import costs
from topofoam.results import fields

PROBE = (
    "echo placement ${OMPI_COMM_WORLD_RANK:-$SLURM_PROCID} $(hostname) "
    "$(grep Cpus_allowed_list /proc/self/status | cut -f2)"
)


@sn.deferrable
def _fields_mismatch(reference, stagedir, rtol):
    return fields.mismatch(reference, stagedir, rtol)


@sn.deferrable
def _bound_as_placed(ran: list[str], placed: list[str]) -> bool:
    """Each rank on the one CPU its placement names; else which ranks are off, in one line."""
    off = [
        f"rank {r} on CPUs {got}, placed on {want}"
        for r, (got, want) in enumerate(zip(ran, placed))
        if got != want
    ]
    if len(ran) != len(placed):
        off.append(f"{len(ran)} ranks reported, {len(placed)} placed")
    if off:
        unbound = all("," in got or "-" in got for got in ran)
        raise SanityError(
            f"{len(off)} of {len(placed)} ranks off the cores their placement names: "
            + "; ".join(off[:8])
            + (f"; and {len(off) - 8} more" if len(off) > 8 else "")
            + (
                " (no rank was bound: does the launcher or the node apply binding?)"
                if unbound
                else ""
            )
        )
    return True


class PlacedRun(PreparedCaseRun):
    """A prepared case's solver on ranks placed by rankmap, the launcher or the scheduler."""

    #: 'verified' where the launcher binds and the declared node is the real one; the
    #: perflog says 'not verifiable on this partition' elsewhere.
    core_binding = variable(str, value="", loggable=True)
    #: Which round-trip times priced the placement's hop-bytes (topofoam.prediction.costs).
    costs = variable(str, value="", loggable=True)
    #: The placement the ranks ran on: what rankmap used (its own split, block's or tleaf's)
    #: and the figures that decided (rankmap.analysis.choice), read from map/analysis.json
    #: after the run; a check that leaves placement to the launcher sets ``block``. The
    #: report marks a comparison whose two sides ran on the same placement.
    placement_used = variable(str, value="", loggable=True)
    #: How far (relative) a variant's final fields may be from the standard run's.
    fields_rtol = variable(float, value=fields.RTOL)

    def forward_to_ranks(self, *names: str) -> None:
        """Make every rank see ``names`` (set them in env_vars too)."""
        if names:
            self.env_vars["OMPI_MCA_mca_base_env_list"] = (
                '"${OMPI_MCA_mca_base_env_list:+$OMPI_MCA_mca_base_env_list;}'
                + ";".join(names)
                + '"'
            )

    def schedule_from(self, path: str) -> None:
        """Run with the reduction schedule at ``path`` (relative to the stage folder)."""
        self.env_vars["FOAM_REDUCTION_SCHEDULE"] = f"$PWD/{path}"

    def rankmap_commands(self, topology: str, nodes: int, *options: str) -> None:
        """hosts.alloc (the allocation's hosts) and rankmap's files for them in map/."""
        part = self.current_partition
        local = part.scheduler.registered_name == "local"
        hosts = "hostname" if local else 'scontrol show hostnames "$SLURM_JOB_NODELIST"'
        priced = costs.for_partition(self.current_system.name, part.name, topology, part.extras)
        priced.write_table(self.stagedir)
        self.costs = priced.label
        self.add_prerun(
            "place",
            f"{hosts} > hosts.alloc",
            f"{sys.executable} -m rankmap map . --topology '{topology}' --nodes {nodes} "
            + "".join(f"{o} " for o in (*options, *priced.options))
            + "--hosts $(paste -sd, hosts.alloc) --out map > rankmap.log",
        )

    def launch_as_mapped(self, bind: bool = True) -> str:
        """Launch every rank where rankmap's files in map/ put it, by the job's launcher:

        - srun: ``SLURM_HOSTFILE`` with ``--distribution=arbitrary`` gives each rank its
          host; with ``bind``, ``--cpu-bind`` (srun.cpu_bind) binds it, or, where the nodes'
          CPU lists differ, map/bind_rank does (``none`` there);
        - mpirun: the rankfile gives host and core, by Open MPI 4's ``-rf`` or Open MPI 5's
          ``--map-by rankfile:file=`` (the partition's ``mpi`` extra: openmpi5).

        ``bind=False`` (srun only) leaves binding to the node: a node whose declared cores
        are not its real ones. Returns what prefixes each rank's command (probe and solver).
        """
        part = self.current_partition
        launcher = self.job.launcher
        name = launcher.registered_name
        if name == "srun":
            self.env_vars["SLURM_HOSTFILE"] = "$PWD/map/slurm.hostfile"
            launcher.options += ["--distribution=arbitrary"]
            if not bind:
                return ""
            launcher.options += ["--cpu-bind=$(cat map/srun.cpu_bind)"]
            return "map/bind_rank "
        if name == "mpirun":
            launcher.options += (
                ["--map-by", "rankfile:file=map/rankfile"]
                if part.extras.get("mpi") == "openmpi5"
                else ["-rf", "map/rankfile"]
            )
            return ""
        raise SweepError(
            f"partition {part.fullname}: launcher {name} cannot place ranks -- use srun or mpirun"
        )

    def mapped_placement(self) -> list[tuple[str, str]]:
        """(host, CPU) per rank as rankmap placed it: slurm.hostfile gives the host,
        slurm.cpu_bind each host's OS CPUs in the order of its ranks (the indexes the probe
        reports, on any number of packages). Empty when rankmap wrote nothing (rankmap.log
        and the job's stderr say why)."""
        try:
            hosts = open(f"{self.stagedir}/map/slurm.hostfile").read().split()
            cpus = dict(line.split() for line in open(f"{self.stagedir}/map/slurm.cpu_bind"))
        except (OSError, ValueError):
            return []
        lists = {h: spec.split(":", 1)[1].split(",") for h, spec in cpus.items()}
        taken = dict.fromkeys(lists, 0)
        placed = []
        for host in hosts:
            if taken.get(host, 0) >= len(lists.get(host, [])):
                return []  # the two files disagree: the placement checks say so
            placed.append((host, lists[host][taken[host]]))
            taken[host] += 1
        return placed

    @run_before("sanity")
    def read_placement_used(self):
        if self.placement_used:
            return  # the launcher's default, set by the check
        try:
            result = json.loads(Path(self.stagedir, "map", "analysis.json").read_text())[1]
            self.placement_used = choice(result)
        except (OSError, ValueError, LookupError, TypeError, AttributeError):
            pass  # rankmap wrote nothing: rankmap.log and the sanity say why

    def probe_placement(self, wrap: str = "") -> None:
        """Launch the probe as the solver will be launched; ``wrap`` prefixes each rank."""
        # ReFrame gives the job its task count when it writes the script, after this hook;
        # the probe's mpirun needs it now (srun takes it from the allocation).
        self.job.num_tasks = self.num_tasks
        launch = self.job.launcher.run_command(self.job)
        self.add_prerun("probe", f"{launch} {wrap}bash -c '{PROBE}' > placement.txt")

    def placement_reported(self) -> dict[int, tuple[str, str]]:
        """{rank: (host, CPU set)} as the probe reported them."""
        found = sn.evaluate(
            sn.extractall(
                r"^placement (\d+) (\S+) (\S+)$", f"{self.stagedir}/placement.txt", [1, 2, 3]
            )
        )
        return {int(r): (h, c) for r, h, c in found}

    def placement_checks(self, hosts: list[str], cores: list[str] | None = None) -> list:
        """Every rank reported, on the host ``hosts`` gives it and, where binding is
        verified, on the CPU ``cores`` gives it."""
        got = self.placement_reported()
        ranks = range(self.num_tasks)
        checks = [
            sn.assert_eq(len(got), self.num_tasks, msg="{0} ranks reported, expected {1}"),
            sn.assert_eq(
                [got.get(r, ("?", "?"))[0] for r in ranks],
                list(hosts),
                msg="ranks ran on hosts {0}, the placement gives {1}",
            ),
        ]
        if self.core_binding == "verified" and cores is not None:
            checks.append(_bound_as_placed([got.get(r, ("?", "?"))[1] for r in ranks], cores))
        return checks

    def fields_as(self, reference_stagedir: str):
        """The final fields equal the standard run's in ``reference_stagedir``."""
        return sn.assert_false(
            _fields_mismatch(reference_stagedir, self.stagedir, self.fields_rtol), msg="{0}"
        )

    def schedule_reported(self):
        """The patched OpenFOAM's start-up line for a schedule of this run's size."""
        return sn.assert_found(
            rf"^reductionSchedule: \S+ for {self.num_tasks} ranks",
            self.stdout,
            msg="the patched OpenFOAM did not report the schedule",
        )

    def sums_routed(self, routed: bool):
        """Whether the scalar reductions follow the schedule (reductionScheduleSums), by the
        patched OpenFOAM's start-up line: v1912's and OpenFOAM-12's series route scalar
        sum/min, v2512's every native all-reduction."""
        line = r"^reductionSchedule: (scalar sum/min |native all-)reductions follow the schedule"
        if routed:
            return sn.assert_found(line, self.stdout, msg="scalar sums did not follow it")
        return sn.assert_not_found(line, self.stdout, msg="scalar sums followed it")

    def nodecomms_reported(self, nodes: int, ppn: int):
        """ESI's node-aware collectives (esi-nodecomms) were on: its start-up lines
        (topoControl 7, and node communicators in use wherever the layout has them: more than
        one node, more than one rank on one) and there its two-level path in the MPI calls the
        run counted (CountsMpiCalls): every rank reduces on its node (MPI_Reduce), only the
        nodes' leaders all-reduce, so MPI_Reduce calls outnumber MPI_Allreduce calls (a
        standard run makes next to no MPI_Reduce)."""
        split = nodes > 1 and ppn > 1
        checks = [
            sn.assert_found(
                r"^\s+topology controls\s+: \(broadcast reduce gather\)",
                self.stdout,
                msg="OpenFOAM did not report topoControl 7 (broadcast reduce gather)",
            ),
            sn.assert_found(
                rf"^\s+node communication\s+: {'on' if split else 'off'} \[type=host\] "
                rf"\({self.num_tasks} ranks, {nodes} nodes\)",
                self.stdout,
                msg=f"OpenFOAM did not report node communicators "
                f"{'in use' if split else 'unused'} for {nodes} x {ppn} ranks",
            ),
        ]
        if split:
            checks.append(
                sn.assert_gt(
                    self.calls("MPI_Reduce"),
                    self.calls("MPI_Allreduce"),
                    msg="ESI's two-level reductions were not taken: {0} MPI_Reduce calls, "
                    "not more than {1} MPI_Allreduce calls",
                )
            )
        return sn.all(checks)
