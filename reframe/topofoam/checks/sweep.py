"""The sweeps in ReFrame: the partitions' sweep space (topofoam.config.sweepspace) for the checks,
and the check every sweep stage derives from (``SweepRun``).

The sweep space itself is pure (topofoam/config/sweepspace.py: which combination runs where); this
module gives it the current system's partitions and the tuning file named by
``TOPOFOAM_TUNING``, and stops the listing with one line when that file cannot be used.
"""

from __future__ import annotations

import functools
import json
import os
import sys

import reframe.utility.sanity as sn
from reframe.core.backends import getlauncher
from reframe.core.builtins import (
    fixture,
    parameter,
    performance_function,
    run_after,
    run_before,
    sanity_function,
    variable,
)
from reframe.core.exceptions import SanityError
from reframe.core.runtime import runtime

from cases import Prepared
from topofoam import paths
from topofoam.checks import oncore
from topofoam.checks.fixtures import PatchedOpenFOAMBuild, PreparedCase
from topofoam.checks.placed import PlacedRun
from topofoam.config import presets, sweepspace
from topofoam.config.sweepspace import ESI_NODECOMMS, SCHEDULE_VARIANTS, Combination, SweepError
from topofoam.results import fields, merit, references
from topofoam.results.stages import format_defaults


def partitions(emulated: bool = False) -> list:
    """The current system's partitions that carry sweep values (and, with ``emulated``, its
    emulated ones, which carry none)."""
    try:
        system = runtime().system
    except Exception:  # imported outside a ReFrame run (documentation, linters)
        return []
    return [
        p for p in system.partitions if "ppn" in p.extras or (emulated and p.extras.get("emulated"))
    ]


@functools.cache
def tuning() -> dict:
    """The best settings so far, per partition name, from $TOPOFOAM_TUNING (or {}); read once:
    every test of a listing asks, per partition. A file that cannot be used stops the listing
    with one line (a check that silently drops its tests would be worse)."""
    path = os.environ.get("TOPOFOAM_TUNING")
    try:
        found = sweepspace.read_tuning(path)
        try:
            system = runtime().system
        except Exception:  # imported outside a ReFrame run (documentation, linters)
            return found
        names = [p.name for p in system.partitions]
        sweepspace.check_tuning_partitions(found, path, system.name, names)
        return found
    except SweepError as e:
        sys.exit(str(e))


def settings(part) -> sweepspace.Settings:
    """The partition's settings for what a stage does not sweep (tuning file, else defaults)."""
    try:
        return sweepspace.Settings(
            part, tuning(), f"TOPOFOAM_TUNING={os.environ.get('TOPOFOAM_TUNING')}"
        )
    except SweepError as e:
        sys.exit(str(e))


def layouts(kind: str) -> list[tuple[int, int]]:
    """(nodes, processes per node) of ``kind`` over the sweep partitions (sweepspace)."""
    parts = partitions()
    for part in parts:
        settings(part)  # a bad tuning value stops here, naming it
    return sweepspace.layouts(kind, parts, tuning())


def union(key: str) -> list:
    """Every value of a list-valued extra over the sweep partitions, in first-seen order."""
    return sweepspace.union(key, partitions())


def most_repeats(emulated: bool = False) -> int:
    """The largest repeat count over the sweep partitions, and with ``emulated`` the emulated
    ones (the ``repeat`` parameter's range; each partition runs the repeats below its own
    count)."""
    return max((sweepspace.repeats(p) for p in partitions(emulated)), default=1)


def most_validate_repeats() -> int:
    """The largest validation repeat count over the sweep partitions (sweepspace)."""
    return max((sweepspace.validate_repeats(p) for p in partitions()), default=1)


def layout_name(layout) -> str:
    """'2x36': how a (nodes, processes per node) layout shows in test names."""
    return f"{layout[0]}x{layout[1]}"


class PreparedLayout(PreparedCase):
    """The case decomposed for a (nodes, processes per node) layout of a stage; a stage's
    fixture sets ``case`` and ``layout`` (``layouts(stage)``)."""

    layout = parameter([(1, 1)], fmt=layout_name)

    #: Whether the partition's ``timed_steps`` apply (runs whose times are compared).
    timed = True

    @run_after("init")
    def set_subdomains(self):
        nodes, ppn = self.layout
        self.num_subdomains = nodes * ppn

    def steps_option(self) -> int:
        """At the ci size, the partition's ``timed_steps`` for the case, if it names any:
        enough steps that a compared time stands above the start-up and the noise (the
        local default; a cluster site runs a named or published size)."""
        if self.steps_override or not self.timed or self.size != "ci":
            return self.steps_override
        return int(self.current_partition.extras.get("timed_steps", {}).get(self.case, 0))


class SweepRun(PlacedRun):
    """A prepared case on ``nodes`` x ``ppn`` ranks, placed by ``binding``, with the UCX and
    collective presets and (for the global variants) rankmap's reduction schedule.

    Subclasses (reframe/sweep.py) declare the stage's parameters and a ``prepared`` fixture
    with a ``layout`` parameter; everything a stage leaves fixed comes from ``Settings``.
    Sanity adds that every rank ran on the host and core the placement gives it (cores are
    checked where the launcher binds and the declared node is the real one). Performance
    adds the solver's wall time and the node-hours it spent.
    """

    #: The repeat of the measurement (topofoam.results.stats merges them): declared first, so
    #: it varies slowest and ReFrame's serial order runs every combination once before any
    #: runs again, interleaving the sides of each comparison against slow drift.
    repeat = parameter(range(most_repeats()))
    # A stage sweeps some of these (it redefines them); '' takes the partition's Settings.
    variant = parameter(["standard"])
    #: How far the final fields may be from the standard run's (relative to its largest
    #: magnitude): summation order only, unless a variant changes the arithmetic.
    binding = parameter([""])
    ucx = parameter([""])
    ucx_inter = parameter([""])
    coll = parameter([""])
    nodes = variable(int, value=0, loggable=True)
    ppn = variable(int, value=0, loggable=True)
    nps = variable(str, value="", loggable=True)
    #: The variables the presets set, as 'K=V K=V' (a perflog column).
    run_env = variable(str, value="", loggable=True)
    #: The OpenFOAM build: its Spack spec, or the local build's id (its cache folder).
    openfoam_build = variable(str, value="", loggable=True)
    nodelist = variable(str, value="", loggable=True)
    #: Each rank's solver under topofoam.checks.oncore, which reports its time on a core.
    time_on_core = variable(bool, value=False)
    #: The partition's defaults a stage starts from ('ppn=2 binding=block ...'): the report
    #: compares a stage's best with them without reading the site configuration.
    defaults = variable(str, value="", loggable=True)
    #: Everything that sets a run's time, in one key: case/size/NODESxPPN/variant/binding/
    #: ucx/coll/ucx_inter. Performance references are indexed by partition and this key.
    setting = variable(str, value="", loggable=True)
    #: srun or mpirun instead of the partition's launcher (-S launcher_kind=mpirun).
    launcher_kind = variable(str, value="", loggable=True)
    time_limit = "1h"
    # Where each rank ran, rankmap's files (analysis.json: communication per hardware
    # level), and the final fields with their difference from the standard run (the report
    # reads them all).
    keep_files = ["placement.txt", "rankmap.log", "map", "fields.json", "final"]
    # Timings need the nodes to themselves.
    exclusive_access = True
    tags = {"sweep"}

    # -- which partitions a combination applies to ----------------------------------------

    def _prepared_params(self) -> dict:
        """The parameters of the prepared case this test runs (case, layout)."""
        fixtures = type(self).get_variant_info(self.variant_num, recurse=True)["fixtures"]
        if "prepared" not in fixtures:  # a stage run: the case comes with its reference
            fixtures = fixtures["standard_run"]["fixtures"]
        return fixtures["prepared"]["params"]

    def _layout(self):
        return tuple(self._prepared_params()["layout"])

    def _case_name(self) -> str:
        return self._prepared_params()["case"]

    def applies(self, part, nodes: int, ppn: int) -> bool:
        """Whether this test's combination runs on ``part`` (topofoam.config.sweepspace)."""
        combo = Combination(self.variant, self.binding, self.ucx, self.coll, self.ucx_inter)
        settings(part)
        if self.repeat >= self.repeats_on(part):
            return False
        if not sweepspace.compares(part, self._case_name()):
            return False
        return sweepspace.applies(self.stage, combo, part, nodes, ppn, tuning())

    def repeats_on(self, part) -> int:
        """How often this run is repeated on ``part`` (a validation check repeats more)."""
        return sweepspace.repeats(part)

    @run_after("init")
    def select_partitions(self):
        if self.is_fixture():
            return  # a reference run: ReFrame gives it its parent's partition
        nodes, ppn = self._layout()
        self.valid_systems = [p.fullname for p in partitions() if self.applies(p, nodes, ppn)]

    # -- the run ---------------------------------------------------------------------------

    @run_after("setup")
    def set_layout(self):
        part = self.current_partition
        x, s = part.extras, settings(part)
        self.defaults = format_defaults(s.defaults)
        self.nodes, self.ppn = self._layout()
        self.num_tasks = self.nodes * self.ppn
        self.num_tasks_per_node = self.ppn
        self.nps = x.get("nps", "")
        self.binding = self.binding or s.binding
        self.ucx = self.ucx or s.ucx
        self.coll = self.coll or s.coll
        self.ucx_inter = self.ucx_inter or s.inter(self.nodes, part)
        env = presets.with_stand_ins(
            presets.merged(
                presets.env_of("ucx", self.ucx),
                presets.env_of("coll", self.coll),
                presets.env_of("ucx_inter", self.ucx_inter) if self.nodes > 1 else {},
            ),
            x.get("ucx_tls_stand_ins", {}),
        )
        self.run_env = " ".join(f"{k}={v}" for k, v in env.items())
        self.env_vars.update(env)
        forward = list(env)
        environ = self.current_environ.extras
        self.openfoam_build = environ.get("spack_spec") or environ.get("build_id") or "stock"
        if self.variant in SCHEDULE_VARIANTS:
            self.schedule_from("map/reductionSchedule")
            forward.append("FOAM_REDUCTION_SCHEDULE")
        if self.variant == "esi-nodecomms":
            self.set_optimisation_switches(**ESI_NODECOMMS)
        self.forward_to_ranks(*forward)
        self.setting = "/".join(
            [
                self.case,
                self.size,
                f"{self.nodes}x{self.ppn}",
                self.variant,
                self.binding,
                self.ucx,
                self.coll,
                self.ucx_inter if self.nodes > 1 else "-",
            ]
        )
        self.use_references()
        binds = x.get("binds", False) and x.get("declared_is_real", False)
        self.core_binding = "verified" if binds else "not verifiable on this partition"
        self.descr = (
            f"{self.case} on {self.nodes} node(s) x {self.ppn}, {self.variant}, "
            f"{self.binding}, ucx {self.ucx}, coll {self.coll}"
            + (f", inter {self.ucx_inter}" if self.nodes > 1 else "")
        )

    def use_references(self):
        """The site's references (topofoam.paths.references_file), if it has them: a run
        slower than its reference by more than the tolerance fails the performance stage.
        Emulated timings have none, and neither have the standard runs that serve as
        fixtures: their parents' sanity needs their fields, not their speed."""
        path = paths.references_file(self.current_system.name)
        if self.timing == "measured" and not self.is_fixture() and path.exists():
            why = references.problem(path)
            if why:
                raise SweepError(why)  # a NaN reference would judge every run
            self.reference = {"$ref": str(path)}  # absolute: no prefix is joined to it

    @run_before("run")
    def keep_a_pristine_case(self):
        """A standard run (a fixture) keeps an untouched copy of the case for its parents:
        ReFrame removes the preparation's stage once its direct dependents are done."""
        if self.is_fixture():
            self.add_prerun("stage_in", f"cp -r {self.prepared.case_path()} case")

    @run_before("run")
    def map_and_launch(self):
        x = self.current_partition.extras
        if self.launcher_kind:
            self.job.launcher = getlauncher(self.launcher_kind)()
        self.launcher_kind = self.job.launcher.registered_name
        self.rankmap_commands(x["topology"], self.nodes, f"--placement {self.binding}")
        wrap = self.launch_as_mapped(bind=True)
        self.probe_placement(wrap)
        self.add_prerun("start", "t0=$(date +%s.%N)")
        on_core = oncore.PREFIX if self.time_on_core else ""
        self.executable = f"{wrap}{on_core}{self.executable}"
        self.postrun_cmds += [
            'echo "solver wall seconds: $(awk -v a=$t0 -v b=$(date +%s.%N) '
            "'BEGIN { print b - a }')\"",
        ]

    @run_before("sanity")
    def record_nodes(self):
        """The nodes the job ran on: the scheduler's record, else the allocation the job itself
        wrote (hosts.alloc; ReFrame's squeue scheduler misses the node list of a job that ends
        before its first poll)."""
        # (squeue can also report a finished job's nodes as 'None', which ReFrame takes for
        # a host name.)
        nodes = [n for n in self.job.nodelist or [] if n not in ("None", "(null)", "")]
        if not nodes:
            try:
                with open(f"{self.stagedir}/hosts.alloc") as f:
                    nodes = list(dict.fromkeys(f.read().split()))
            except OSError:
                nodes = []
        self.nodelist = ",".join(nodes)

    # -- sanity and performance -----------------------------------------------------------

    @sanity_function
    def assert_placed_and_completed(self):
        want = self.mapped_placement()
        checks = self.placement_checks([h for h, _ in want], [c for _, c in want])
        checks.append(self.assert_run())
        if self.variant in SCHEDULE_VARIANTS:
            checks.append(self.schedule_reported())
        if self.variant == "esi-nodecomms":
            checks.append(self.nodecomms_reported(self.nodes, self.ppn))
        reference = getattr(self, "standard_run", None)
        if reference is not None:
            checks.append(self.fields_as(reference.stagedir))
        return sn.all(checks)

    @run_after("sanity")
    def keep_final_fields(self):
        """For the report: how far the final fields are from the standard run's
        (fields.json), and, for small cases, the final fields themselves (final/case.foam)."""
        if self.is_dry_run():
            return  # nothing ran
        reference = getattr(self, "standard_run", None)
        if reference is not None:
            diffs = fields.differences(reference.stagedir, self.stagedir)
            with open(f"{self.stagedir}/fields.json", "w") as f:
                json.dump(
                    {
                        "standard_run": reference.outputdir,
                        "rtol": self.fields_rtol,
                        "max_relative_difference": diffs,
                    },
                    f,
                    indent=1,
                )
        if (self.expected_cells or 0) <= fields.SNAPSHOT_CELLS:
            fields.snapshot(self.stagedir, f"{self.stagedir}/final")

    @performance_function("s")
    def wall(self):
        """Wall time of the solver launch, from the job script's clock."""
        return sn.extractsingle(r"^solver wall seconds: (\S+)", self.stdout, 1, float)

    @performance_function("node-h")
    def node_hours(self):
        """Node-hours the solver spent: nodes x wall time."""
        return self.nodes * self.wall() / 3600

    # The OpenFOAM HPC committee's figures of merit (topofoam.results.merit), so that a
    # perflog row can be set beside the community's published results.
    @performance_function(merit.UNITS["FVOPS"])
    def FVOPS(self):
        """Cells / time per iteration."""
        return _figure("fvops", self.expected_cells, self.expected_steps, self.wall())

    @performance_function(merit.UNITS["FVOPS_per_node"])
    def FVOPS_per_node(self):
        return _figure(
            "fvops_per_node", self.expected_cells, self.expected_steps, self.wall(), self.nodes
        )

    @performance_function(merit.UNITS["T_star"])
    def T_star(self):
        """Time per iteration x cores / cells."""
        return _figure(
            "t_star", self.expected_cells, self.expected_steps, self.wall(), self.num_tasks
        )


@sn.deferrable
def _figure(name, *quantities):
    """The value of figure ``name`` of topofoam.results.merit; one that cannot be formed
    fails the performance stage with its reason (a run whose clock read 0 s has no FVOPS)."""
    figure = getattr(merit, name)(*quantities)
    if figure.value is None:
        raise SanityError(f"figure of merit n/a: {figure.reason}")
    return figure.value


class CaseCopy:
    """The prepared case as a stage run sees it: the pristine copy in its standard run's
    stage (``case_path``, ``facts``), named like the preparation fixture it came from."""

    def __init__(self, standard_run):
        self.case = standard_run.prepared.case
        self.size = standard_run.prepared.size
        self._path = f"{standard_run.stagedir}/case"
        self._prepared = standard_run.prepared

    def steps_option(self) -> int:
        """The preparation's time steps instead of the size's (0: the size's)."""
        return self._prepared.steps_option()

    def case_path(self) -> str:
        return self._path

    def facts(self) -> Prepared:
        return Prepared.load(self._path)


class ReferenceRun(SweepRun):
    """The standard run of a stage's case at a layout, with the partition's settings: the
    fields every other run of the stage on that layout must match (topofoam/results/fields.py)."""

    build = fixture(PatchedOpenFOAMBuild, scope="environment")
    valid_prog_environs = ["+reduction-schedule"]
    stage = "reference"
    repeat = parameter([0])  # one reference per case and layout: its fields are compared


class StageRun(SweepRun):
    """A stage's run: ``standard_run`` (a fixture) brings the prepared case."""

    build = fixture(PatchedOpenFOAMBuild, scope="environment")
    valid_prog_environs = ["+reduction-schedule"]

    @property
    def prepared(self):
        return CaseCopy(self.standard_run)
