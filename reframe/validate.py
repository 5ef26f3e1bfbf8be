"""Validation of a system (``-t validate``): the measurements its verdict is built on.

NodeFingerprint runs ``python -m topofoam.jobs.fingerprint`` on a node of the partition, through the
partition's launcher, as the benchmark runs would be: packages, NUMA nodes, cores and hardware
threads from hwloc, CPU model, frequency governor, kernel, Open MPI, UCX (and its transports),
hwloc and OpenFOAM versions, kept in the stage folder as ``fingerprint.json``. It fails when the
node differs from the partition's declaration (its ``cores``, ``numa_nodes`` and ``nps``
extras), with one line per difference, e.g. ``vsc5:zen3_0512 declares 16 NUMA nodes (NPS4),
node n3012 has 4: NPS changed?``.

FabricValidation (latency, bandwidth and collective latency per hardware level), SolverValidation
(laplacianFoam's wall time on one node, and its ranks' wall over CPU time) and StorageValidation
(decomposePar's and reconstructPar's time on shared and node-local storage over their time in
memory) repeat their measurement ``validate_repeats`` times. FabricScreening measures every link
between the nodes of one allocation and fails naming the node or link that is slower than its peers
(topofoam.validation.screening); NodeScreening measures every node's solver, memory bandwidth and
fingerprint against its peers'. ReFrame's results store keeps the session; ``python -m
topofoam.validation`` judges it against the site's expectations, or against an earlier session
(docs/checks.md)."""

import json
import re
import shlex
import statistics
import sys
from pathlib import Path

import reframe.utility.sanity as sn
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

import reframe as rfm
from topofoam.checks import oncore, sweep
from topofoam.checks.fixtures import MpiBuild
from topofoam.checks.onfabric import OnFabric
from topofoam.checks.pingpong import PingPong
from topofoam.checks.runs import planned_executable
from topofoam.checks.storage import StorageSteps
from topofoam.checks.sweep import (
    PreparedLayout,
    ReferenceRun,
    StageRun,
    layout_name,
    most_validate_repeats,
)
from topofoam.config import sweepspace
from topofoam.paths import SOURCES
from topofoam.validation import screening


@sn.deferrable
def _as_declared(stdout: Path) -> bool:
    text = stdout.read_text(errors="replace")
    differences = re.findall(r"^fingerprint: (\S+ declares .*)$", text, re.M)
    if differences:
        raise SanityError("; ".join(differences))
    if not re.search(r"^fingerprint: \S+ is as \S+ declares$", text, re.M):
        raise SanityError("the node could not be described: see the job's stderr")
    return True


@rfm.simple_test
class NodeFingerprint(rfm.RunOnlyRegressionTest):
    """One node of the partition, described and held against the site file."""

    valid_systems = ["*"]
    # The MPI and OpenFOAM the benchmark runs use: the environment every site has.
    valid_prog_environs = ["+reduction-schedule"]
    num_tasks = 1
    num_tasks_per_node = 1
    time_limit = "5m"
    tags = {"validate", "fingerprint"}
    executable = sys.executable
    #: What was found, kept in the output folder (topofoam.jobs.fingerprint's JSON).
    keep_files = ["fingerprint.json"]
    #: What kind of run this is (topofoam.results.stages).
    stage = variable(str, value="fingerprint", loggable=True)
    #: What was found, as a variable: ReFrame's results store keeps it with the session, so
    #: that a regression can show what changed on the node (topofoam.validation).
    description = variable(dict, value={})

    @run_after("setup")
    def declared(self):
        """The partition's declaration, from its site file's extras."""
        part = self.current_partition
        extras = part.extras
        self.executable_opts = ["-m", "topofoam.jobs.fingerprint", "--partition", part.fullname]
        for option, key in (("--cores", "cores"), ("--numa-nodes", "numa_nodes")):
            if extras.get(key):
                self.executable_opts += [option, str(extras[key])]
        if extras.get("nps"):
            self.executable_opts += ["--nps", extras["nps"]]
        environ = self.current_environ
        flavour = environ.extras.get("openfoam_flavour", "")
        version = environ.extras.get("openfoam_version", "")
        self.executable_opts += ["--openfoam", f"'{flavour} {version} ({environ.name})'".strip()]
        self.executable_opts += ["--json", "fingerprint.json"]

    @run_before("sanity")
    def keep_description(self):
        try:
            self.description = json.loads(Path(self.stagedir, "fingerprint.json").read_text())
        except (OSError, ValueError):
            self.description = {}  # the sanity says why the node could not be described

    @sanity_function
    def node_as_declared(self):
        return _as_declared(Path(self.stagedir, self.job.stdout))


class Validated(rfm.RegressionTestPlugin):
    """A measurement judged by the verdict: it records, with the session, the practical
    margins its partition states (the ``validate_margins`` extra, a fraction by unit such as
    ``{"s": 0.05, "us": 0.1}``, and by check where one needs its own, such as
    ``{"FabricValidation": {"MB/s": 4.0}}``; topofoam.validation.expectations.MARGINS for the
    rest), which ``record`` writes into the expectations. A check built on this class is
    named in topofoam.validation.sessions.MARGIN_CHECKS."""

    validate_margins = variable(dict, value={})
    #: Those for a baseline of one session (``validate_margins_one_session``): one session's
    #: repeats cannot see the drift between sessions, so a site may widen them there.
    validate_margins_one_session = variable(dict, value={})

    @run_after("setup")
    def margins_of_the_partition(self):
        extras = self.current_partition.extras
        self.validate_margins = dict(extras.get("validate_margins", {}))
        self.validate_margins_one_session = dict(extras.get("validate_margins_one_session", {}))


@rfm.simple_test
class FabricValidation(PingPong, Validated):
    """Latency, bandwidth and collective latency at each hardware level of the partition,
    repeated for a verdict (sweepspace.validate_repeats)."""

    repeat = parameter(range(most_validate_repeats()))
    tags = {"validate", "fabric"}
    stage = "validate"

    def repeats_on(self, part) -> int:
        # An emulated partition's links are validated by nobody: its costs are set.
        return 0 if part.extras.get("emulated") else sweepspace.validate_repeats(part)


class SolverValidationCase(PreparedLayout):
    # laplacianFoam: seed 000's case whose time is mostly the solver's (a few seconds at the
    # partition's timed steps), on one node at the partition's processes per node.
    case = parameter(["laplacianFoam"])
    layout = parameter(sweep.layouts("one-node"), fmt=layout_name)


class SolverValidationReference(ReferenceRun):
    prepared = fixture(SolverValidationCase, scope="environment")


@sn.deferrable
def _wall_over_cpu(stderr: str | OSError, ranks: int) -> float:
    if isinstance(stderr, OSError):
        raise SanityError(f"the ranks' time on a core is not readable: {stderr}")
    try:
        return oncore.wall_over_cpu(stderr, ranks)
    except oncore.OnCoreError as e:
        raise SanityError(str(e)) from None


@rfm.simple_test
class SolverValidation(StageRun, Validated):
    """The solver's wall time with the partition's standard settings on one node, repeated
    for a verdict: what a user's job would see after a maintenance."""

    repeat = parameter(range(most_validate_repeats()))
    standard_run = fixture(SolverValidationReference, scope="environment")
    #: The wall time of the solver is judged (OpenFOAM's own clocks would repeat it), and the
    #: ranks' wall over CPU time (topofoam.checks.oncore): time taken from the ranks, which
    #: a host whose cores drift in speed cannot hide.
    validated_metrics = variable(list, value=["wall", "wall_over_cpu"])
    time_on_core = True
    #: Which rank had the least time on a core, and how much (a perflog column): where time
    #: was taken, the rank and host that lost it.
    least_on_core = variable(str, value="", loggable=True)
    tags = {"validate", "solver"}
    stage = "validate"

    @run_before("performance")
    def read_time_on_core(self):
        """The ranks' oncore lines from the job's stderr, read once for wall_over_cpu and
        least_on_core; a read error is kept for wall_over_cpu to say."""
        try:
            self._on_core = Path(self.stagedir, self.job.stderr).read_text(errors="replace")
        except OSError as e:
            self._on_core = e
            return
        self.least_on_core = oncore.least(self._on_core)

    @performance_function("x")
    def wall_over_cpu(self):
        """The largest of the ranks' wall time over their CPU time around the solver (1:
        every rank on a core all the time)."""
        return _wall_over_cpu(self._on_core, self.num_tasks)

    def repeats_on(self, part) -> int:
        return sweepspace.validate_repeats(part)

    @run_before("run")
    def flush_earlier_writes(self):
        """The node's pending writes go to disk before the clock starts. The writeback of
        an earlier job's files (a storage check's fields, a report) otherwise lands in this
        solver's time: an unchanged rerun measured 11 % slower here, a false FAIL."""
        self.add_prerun("settle", "sync")


@rfm.simple_test
class StorageValidation(StorageSteps, Validated):
    """The storage for a verdict: decomposePar's and reconstructPar's time on shared and on
    node-local storage over their time on the case in memory just before (``memory_pair``),
    seed 002's case written every step (the heaviest of StorageRun's write intervals),
    repeated (sweepspace.validate_repeats).

    Why a ratio and not the rates: at the sizes a verdict runs, the steps are mostly
    OpenFOAM's own work, so their rates moved with the CPU. An unchanged session on a host
    30 % slower for minutes FAILed its shared decompose rate (-35.9 %, the CI of d8f1adc)
    while the storage was as before; over the same step in memory, the CPU's share cancels,
    and a slower CPU is the solver's finding, not the storage's."""

    repeat = parameter(range(most_validate_repeats()))
    write_every = parameter([1])
    memory_pair = True
    #: The ratios are judged; the rates and times beside them are logged, not judged.
    validated_metrics = variable(list, value=["decompose_over_memory", "reconstruct_over_memory"])
    tags = {"validate", "throughput"}
    stage = "validate"

    def repeats_on(self, part) -> int:
        return sweepspace.validate_repeats(part)

    @performance_function("x")
    def decompose_over_memory(self):
        """decomposePar's time on this storage over its time in memory (1: the storage
        costs nothing)."""
        return self._step("decompose") / self._step("decompose_memory")

    @performance_function("x")
    def reconstruct_over_memory(self):
        """reconstructPar's time on this storage over its time in memory."""
        return self._step("reconstruct") / self._step("reconstruct_memory")


class ScreeningBuild(MpiBuild):
    """The all-pairs link measurement (reframe/src/screening)."""

    # All of reframe/src: the program includes common/median.h. Built beside its source
    # (a program named screening at the top would clash with the folder).
    sourcesdir = str(SOURCES)
    sourcepath = "screening/screening.c"
    executable = "screening/screening"
    valid_prog_environs = ["+reduction-schedule"]


@sn.deferrable
def _screened(test: "FabricScreening") -> bool:
    """The links measured, all of them, judged among themselves; each outlier is a line."""
    stdout = Path(test.stagedir, test.job.stdout)
    text = stdout.read_text(errors="replace")
    ranks = re.search(r"^screening ranks (\d+) ", text, re.M)
    if not ranks:
        raise SanityError("the screening program printed no result: see the job's stderr")
    n = int(ranks.group(1))
    try:
        passes = screening.parse(text)
        if not passes or len(passes[0]) != n * (n - 1) // 2:
            raise screening.ScreeningError(
                f"{len(passes[0]) if passes else 0} links printed, {n} ranks have "
                f"{n * (n - 1) // 2}"
            )
        found = screening.screen(passes, test.screen_margins)
    except screening.ScreeningError as e:
        raise SanityError(str(e)) from None
    test.links = found.links
    test.slowest_node, test.slowest_link = found.slowest_node, found.slowest_link
    test.screened = found.summary()
    Path(test.stagedir, "screening.json").write_text(
        json.dumps(
            {
                "rule": found.rule(),
                "distance": found.distance,
                "nodes": found.nodes,
                "links": [link.record() for link in found.links],
                "outliers": [o.line() for o in found.outliers],
            },
            indent=1,
        )
    )
    if found.outliers:
        raise SanityError("; ".join(o.line() for o in found.outliers) + f" ({found.rule()})")
    return True


@sn.deferrable
def _links(test: "FabricScreening", figure: str, pick) -> float:
    """One figure over the links the sanity check parsed (it runs before performance)."""
    return pick(getattr(link, figure) for link in test.links)


class Screened(rfm.RegressionTestPlugin):
    """A check of every node of one allocation against its peers (one task a node, set by
    the check with its tags), with no baseline: how many nodes, the practical margins, the
    one-line summary, and the figures a perflog row carries (each figure's median and worst
    over the nodes or links)."""

    stage = variable(str, value="screening", loggable=True)
    #: Nodes to screen: 0 takes every idle node of the partition (ReFrame's flexible
    #: allocation, --flex-alloc-nodes); by default the partition's ``screen_nodes`` extra,
    #: else the most nodes its sweeps use.
    screen_nodes = variable(int, value=-1)
    #: Practical margins by unit over the rule's own (the partition's extra named by
    #: ``margins_extra``): a node or link less slower than that is never an outlier.
    screen_margins = variable(dict, value={})
    #: The screening's one-line summary (what was measured, medians, findings, the rule).
    screened = variable(str, value="", loggable=True)
    margins_extra = "screen_margins"

    @run_after("setup")
    def allocation(self):
        """As many tasks as nodes to screen; a partition with too few skips, saying so."""
        part = self.current_partition
        extras = part.extras
        if self.screen_nodes < 0:
            self.screen_nodes = int(extras.get("screen_nodes", max(extras.get("nodes", [0]))))
        name = type(self).__name__
        self.skip_if(
            0 < self.screen_nodes < screening.MIN_NODES,
            f"screening compares a node with its peers: {screening.MIN_NODES} nodes at least, "
            f"{part.fullname} gives {self.screen_nodes} (its screen_nodes extra, or "
            f"-S {name}.screen_nodes=N; 0 for every idle node)",
        )
        self.num_tasks = self.screen_nodes
        self.screen_margins = {**extras.get(self.margins_extra, {}), **self.screen_margins}

    def figures(self, of, figures) -> None:
        """Perf variables ``median_<name>`` and ``<worst>_<name>`` of each (name, attribute,
        unit, worst) in ``figures``, over ``of(self, attribute, pick)``."""
        self.perf_variables = {}
        for name, attribute, unit, worst in figures:
            pick = max if worst == "slowest" and unit in ("s", "us") else min
            self.perf_variables[f"median_{name}"] = sn.make_performance_function(
                of(self, attribute, statistics.median), unit
            )
            self.perf_variables[f"{worst}_{name}"] = sn.make_performance_function(
                of(self, attribute, pick), unit
            )


@rfm.simple_test
class FabricScreening(rfm.RunOnlyRegressionTest, OnFabric, Screened):
    """Every link between the nodes of one allocation (one rank per node): the node or link
    slower than its peers fails, named, by a robust rule (topofoam.validation.screening)."""

    valid_systems = ["+multinode"]
    valid_prog_environs = ["+reduction-schedule"]
    build = fixture(ScreeningBuild, scope="environment")
    num_tasks_per_node = 1
    tags = {"validate", "screening"}
    # Seconds for tens of nodes; N - 1 rounds of about 20 ms on a thousand.
    time_limit = "10m"
    keep_files = ["screening.json"]
    slowest_node = variable(str, value="", loggable=True)
    slowest_link = variable(str, value="", loggable=True)
    #: The figures a verdict judges against expectations, where a site records them.
    validated_metrics = variable(list, value=["median_bandwidth", "median_rtt"])
    #: The links as the sanity check parsed them (each the median over the passes), for the
    #: performance figures.
    links = variable(list, value=[])
    #: Passes over all links, each in its own random order: the rule reads the noise from
    #: pass to pass, so more passes resolve smaller faults.
    screen_passes = variable(int, value=5)
    #: The bandwidth's message size (4 of them in flight each way): large enough that a
    #: link's rate, not its latency, sets the time.
    screen_bytes = variable(int, value=1 << 20)

    @run_after("setup")
    def program(self):
        extras = self.current_partition.extras
        self.executable = f"{self.build.stagedir}/{self.build.executable}"
        # Nodes that share one machine's cores would measure each other if pairs ran at once.
        if self.screen_passes < 1 or self.screen_bytes < 8:
            raise sweepspace.SweepError(
                f"FabricScreening: screen_passes={self.screen_passes}, "
                f"screen_bytes={self.screen_bytes} -- give 1 pass or more (3 at least for a "
                f"threshold from the noise) and 8 bytes or more"
            )
        self.executable_opts = ["--serial"] if extras.get("emulated") else []
        self.executable_opts += ["--repeats", str(self.screen_passes)]
        self.executable_opts += ["--bytes", str(self.screen_bytes)]
        self.descr = "all links between " + (
            f"{self.screen_nodes} nodes" if self.screen_nodes else "the idle nodes"
        )
        self.figures(
            _links,
            [("bandwidth", "mbps", "MB/s", "slowest"), ("rtt", "rtt_us", "us", "slowest")],
        )

    @run_before("run")
    def launch_again_after_an_init_race(self):
        """On an emulated partition only, a launch whose ranks died before the program
        printed its first line is made once more, and stderr says so. Open MPI 4.1's ob1
        can die of SIGSEGV in MPI_Init under srun where nodes share cores (localsite.cli's
        EMU_RETRIES: about 1 launch in 40; it failed a fault-free screening in a test run,
        2026-11-30): no link was measured. ``./bench validate`` reruns nothing, rightly, so
        the launch is made again here. On a cluster a rank that dies is a finding, and
        nothing is relaunched."""
        if not self.current_partition.extras.get("emulated"):
            return
        launch = " ".join(
            [self.job.launcher.run_command(self.job), self.executable, *self.executable_opts]
        )
        said = (
            "FabricScreening: the launch ended with $launched before the program printed a "
            "line (an emulated node's MPI_Init): launched once more"
        )
        self.postrun_cmds = [
            "launched=$?",
            f'if [ "$launched" -ne 0 ] && ! grep -q "^screening ranks " {self.job.stdout}; '
            f'then echo "{said}" >&2; {launch}; fi',
            *self.postrun_cmds,
        ]

    @sanity_function
    def no_outlier(self):
        return _screened(self)


class NodeScreeningCase(PreparedLayout):
    """The case every node runs serially, on each of its cores at once: laplacianFoam, as
    SolverValidation, whose time is mostly the solver's."""

    case = parameter(["laplacianFoam"])


@sn.deferrable
def _nodes_screened(test: "NodeScreening") -> bool:
    """Every node measured, judged against its peers; each outlier and each fingerprint
    difference is a line."""
    text = Path(test.stagedir, test.job.stdout).read_text(errors="replace")
    try:
        rounds = screening.parse_rounds(text)
        prints = screening.parse_prints(text)
        if not rounds:
            raise screening.ScreeningError("the probe printed no result: see the job's stderr")
        if test.screen_nodes and len(rounds) != test.screen_nodes:
            raise screening.ScreeningError(
                f"{len(rounds)} node(s) measured, {test.screen_nodes} allocated: see the "
                f"job's stderr"
            )
        extras = test.current_partition.extras
        declared = {k: extras[k] for k in ("cores", "numa_nodes", "nps") if extras.get(k)}
        declared["partition"] = test.current_partition.fullname
        found = screening.screen_nodes(rounds, prints, test.screen_margins, declared)
    except screening.ScreeningError as e:
        raise SanityError(str(e)) from None
    test.node_figures = found.figures
    test.screened = found.summary()
    Path(test.stagedir, "nodes.json").write_text(
        json.dumps(
            {
                "rule": found.rule(),
                "rounds": rounds,
                "nodes": found.figures,
                "fingerprints": prints,
                "outliers": [o.line() for o in found.outliers],
                "differences": found.differences,
            },
            indent=1,
        )
    )
    lines = [o.line() for o in found.outliers] + found.differences
    if lines:
        raise SanityError("; ".join(lines) + f" ({found.rule()})")
    return True


@sn.deferrable
def _nodes(test: "NodeScreening", figure: str, pick) -> float:
    return pick(f[figure] for f in test.node_figures.values())


@rfm.simple_test
class NodeScreening(rfm.RunOnlyRegressionTest, Screened):
    """Every node of one allocation measured against its peers, with no baseline: the solver
    on all its cores at once and the memory bandwidth (topofoam.jobs.nodeprobe), and its
    fingerprint. A node slower than its peers, or whose fingerprint differs from most of
    theirs, fails, named (topofoam.validation.screening's rule, its threshold from the
    measured spread). The nodes are measured at the same time, so that drift cancels; on an
    emulated partition, whose nodes share this machine's cores, on one core each."""

    valid_systems = ["+multinode"]
    valid_prog_environs = ["+reduction-schedule"]
    prepared = fixture(NodeScreeningCase, scope="environment")
    num_tasks_per_node = 1
    tags = {"validate", "screening"}
    time_limit = "20m"
    keep_files = ["nodes.json"]
    #: Rounds of the probe on each node.
    rounds = variable(int, value=5)
    node_figures = variable(dict, value={})
    margins_extra = "node_margins"
    #: The figures a verdict judges against expectations, where a site records them.
    validated_metrics = variable(list, value=["median_solver", "median_membw"])

    @run_after("setup")
    def probe_command(self):
        extras = self.current_partition.extras
        # Declared cores that are not this node's own (an emulated or twin node): the probe
        # takes the cores its task may use; an emulated node one, its peers measured at the
        # same time on the machine's other cores.
        if extras.get("emulated"):
            cores = 1
        else:
            cores = extras.get("cores") if extras.get("declared_is_real", True) else 0
            if cores:
                self.num_cpus_per_task = int(cores)
        # Quoted: ReFrame writes the command line as it is, and a results folder may hold
        # spaces.
        solver = (
            planned_executable(self.prepared.case, self.current_environ)
            if self.is_dry_run()
            else self.prepared.facts().solver
        )
        probe = [
            shlex.quote(str(arg))
            for arg in (
                sys.executable, "-m", "topofoam.jobs.nodeprobe",
                "--case", self.prepared.case_path(), "--solver", solver,
                "--ranks", cores or 0,
            )
        ]  # fmt: skip
        if extras.get("emulated"):
            # Every node at once, round by round, as on a cluster: the nodes share this
            # machine's cores, evenly, and whatever slows the machine for a while (its
            # host's memory bandwidth dips for seconds) slows every node's run alike, and
            # cancels. One after another, such a dip fell on one node's run: their rounds
            # spread by 10 to 30 %, more than the faults sought. Each probe runs on a slice
            # of the machine of its own (localsite.cpuquota --slice: one CPU, an equal
            # share of it), as a node has cores of its own: left to float, 4 probes on 2
            # cores got uneven shares (a CI's "noise alone" 47 %); pinned but uncapped, a
            # node under a quota lent its time to the node beside it (one run of two missed
            # it).
            from reframe.core.backends import getlauncher

            self.job.launcher = getlauncher("local")()
            line = " ".join(probe)
            on_slice = f"{shlex.quote(sys.executable)} -m localsite.cpuquota --slice"
            loop = (
                f'hosts=$(scontrol show hostnames "$SLURM_JOB_NODELIST"); n=$(echo $hosts | wc -w); '
                f"for r in $(seq 1 {self.rounds}); do pids=; i=0; "
                f'extra=; [ "$r" = 1 ] && extra=--fingerprint; '
                f"for h in $hosts; do "
                f'srun -w "$h" -N1 -n1 {on_slice} $i/$n -- {line} --round-from $r --rounds 1 '
                f'$extra & pids="$pids $!"; i=$((i + 1)); done; '
                f"for p in $pids; do wait $p || exit 1; done; done"
            )
            self.executable = "bash"
            self.executable_opts = ["-c", shlex.quote(loop)]
        else:
            self.executable = probe[0]
            self.executable_opts = [
                *probe[1:],
                "--rounds",
                str(self.rounds),
                "--fingerprint",
            ]
            if self.current_partition.launcher_type.registered_name.startswith("mpirun"):
                # One probe a node, free to use every core: Open MPI would bind it to one
                # core (or one package) by default.
                self.job.launcher.options = ["--map-by", "ppr:1:node", "--bind-to", "none"]
        self.descr = f"every node against its peers ({self.screen_nodes or 'all idle'} nodes)"
        self.figures(
            _nodes, [("solver", "solver_s", "s", "slowest"), ("membw", "membw", "MB/s", "lowest")]
        )

    @sanity_function
    def no_outlier(self):
        return _nodes_screened(self)
