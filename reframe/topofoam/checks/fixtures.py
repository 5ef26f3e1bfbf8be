"""Fixtures shared by the checks: the OpenFOAM build, and a case meshed and decomposed once
per partition/environment."""

import math
import os
import sys

import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
from reframe.core.backends import getlauncher
from reframe.core.builtins import (
    fixture,
    parameter,
    run_after,
    run_before,
    sanity_function,
    variable,
)

import reframe as rfm
from cases import CASES, CaseError, Prepared
from topofoam.checks import quiet_deprecations  # noqa: F401 -- see its docstring
from topofoam.paths import REPO, SOURCES


def require_a_site() -> None:
    """Stop the loading of the checks, in one line, when ReFrame fell back to its built-in
    'generic' system: no system of the configuration matches this machine's name (a site file
    used off its cluster), or no configuration was given. Listing or running would find
    nothing and exit 0, which reads as success."""
    from reframe.core.runtime import runtime

    try:
        system = runtime().system
    except Exception:  # imported outside a ReFrame run (tests, documentation)
        return
    if system.name == "generic":
        sys.exit(
            "topofoam: no system of the configuration matches this machine, so ReFrame chose "
            "its 'generic' one and these checks would find nothing to run -- give the site "
            "with -C site-configs/<site>.py and, off its cluster, --system <site>"
        )


require_a_site()


class PreparedCase(rfm.RunOnlyRegressionTest):
    """A benchmark case of ``cases/`` at a size, meshed, renumbered and decomposed.

    Runs ``python -m cases prepare`` on the login/local node: the prepared case is cached
    outside the stage by all its inputs (see cases/prepare.py), and copied to
    ``<stagedir>/case``, which run checks copy in turn. Parameterised by the case, so a
    check that uses it runs once per case.
    """

    case = parameter(list(CASES))

    #: A named size of the case (``python -m cases list``) or a cell count such as 2M.
    size = variable(str, value="ci", loggable=True)

    #: Subdomains to decompose into: the run check's number of ranks.
    num_subdomains = variable(int, value=2)

    #: decomposePar method; scotch needs the real libscotchDecomp (Debian ships a stub).
    method = variable(str, value="scotch", loggable=True)

    #: Fixed iterations per linear solve, so every variant does the same work.
    fixed_work = variable(bool, value=True, loggable=True)

    #: Time steps instead of the size's (0: the size's).
    steps_override = variable(int, value=0)

    #: Facts of the prepared case, read from its case.json after preparation.
    cells = variable(int)
    steps = variable(int)
    solver = variable(str)

    valid_systems = ["*"]
    valid_prog_environs = ["+openfoam"]
    num_tasks = 1
    time_limit = "2h"  # published sizes mesh for a while; ci takes seconds
    sourcesdir = None

    @run_after("setup")
    def prepare_command(self):
        # Meshing and decomposition are serial tools: no mpirun/srun around them.
        self.job.launcher = getlauncher("local")()
        self.executable = sys.executable
        self.executable_opts = [
            "-m",
            "cases",
            "prepare",
            self.case,
            "--size",
            self.size,
            "-n",
            str(self.num_subdomains),
            "--method",
            self.method,
            "--out",
            "case",
        ]
        if not self.fixed_work:
            self.executable_opts.append("--converge")
        steps = self.steps_option()
        if steps:
            self.executable_opts += ["--steps", str(steps)]

    def steps_option(self) -> int:
        """Time steps instead of the size's (0: the size's)."""
        return self.steps_override

    @sanity_function
    def assert_prepared(self):
        """The case was prepared; its facts are read for the run checks."""
        return sn.all(
            [
                sn.assert_found(
                    r"^/\S+",
                    self.stdout,
                    msg="python -m cases prepare printed no case folder (see its stderr)",
                ),
                sn.assert_true(self._read_facts(), msg="the prepared case has no case.json"),
            ]
        )

    def _read_facts(self):
        try:
            prepared = Prepared.load(f"{self.stagedir}/case")
        except CaseError:
            return False
        self.cells, self.steps, self.solver = prepared.cells, prepared.steps, prepared.solver
        return True

    def case_path(self):
        return f"{self.stagedir}/case"

    def facts(self):
        """The prepared case (its case.json), for the run checks."""
        return Prepared.load(self.case_path())


class PatchedOpenFOAMBuild(rfm.RunOnlyRegressionTest):
    """Builds the patched OpenFOAM where the environment asks for a build.

    An environment whose extras name a ``build_target`` (the local site's
    openfoam-v1912-patched) or a ``build_flavour`` gets it built into the cache outside the
    clone (a no-op once built). One that names a ``spack_spec`` (the cluster sites) gets it
    installed from the project's Spack environment (``spack -e <repo> install <spec>``, a
    no-op once installed).

    Where: the system's partitions say (their ``build_on`` extra, the site file's
    ``BUILD_ON``). ``compute``, a cluster site's default: a batch job on the partition, one
    node with all its cores (``spack install -j``), Spack's progress in the job's output, its
    time limit the measured build time on this project's 2-core machine (BUILD_FIGURES: a
    node's cores only shorten it). ``login``: on the login node, for centres that build there
    (the local site builds before ReFrame starts, so its fixture is a no-op).
    """

    #: The current figures (docs/timings.md) that bound a build from nothing, by the Spack
    #: spec's package; and the limit where the table has no such row.
    BUILD_FIGURES = {"openfoam-org": "spack.org12", "openfoam": "build.v2512"}
    UNMEASURED_LIMIT = "12h"

    valid_systems = ["*"]
    valid_prog_environs = ["+reduction-schedule"]
    num_tasks = 1
    time_limit = "6h"
    executable = "true"
    sourcesdir = None

    @run_after("init")
    def build_where_the_site_builds(self):
        from reframe.core.runtime import runtime

        partitions = runtime().system.partitions
        self.local = all(p.extras.get("build_on", "login") == "login" for p in partitions)

    @run_after("setup")
    def choose_build(self):
        extras = self.current_environ.extras
        self.job.launcher = getlauncher("local")()
        if extras.get("build_target"):
            self.executable = sys.executable
            self.executable_opts = ["-m", "localsite.openfoam", extras["build_target"]]
        elif extras.get("build_flavour"):
            # A flavour built from source (./bench build org12): a no-op once built.
            self.executable = sys.executable
            self.executable_opts = ["-m", "localsite.flavours", extras["build_flavour"]]
        elif extras.get("spack_spec"):
            # The project's Spack environment: spack.yaml and the overlay repository with
            # patches/ (a no-op once installed). A build stopped half-way (a killed login
            # session) continues in its kept stage instead of starting over, Spack's default.
            self.executable = "spack"
            self.executable_opts = [
                "-e", str(REPO), "install", "--dont-restage", extras["spack_spec"],
            ]  # fmt: skip
        if not self.local:
            self.on_a_compute_node(extras.get("spack_spec", ""))

    def on_a_compute_node(self, spec: str) -> None:
        """One whole node of the partition for as long as the build took here."""
        cores = self.current_partition.extras.get("cores") or 1
        self.num_cpus_per_task = cores
        self.exclusive_access = True
        if self.executable == "spack":
            self.executable_opts[3:3] = ["-j", str(cores)]
        self.time_limit = build_time_limit(spec, self.BUILD_FIGURES, self.UNMEASURED_LIMIT)

    @sanity_function
    def assert_built(self):
        if self.executable == "true":
            return sn.assert_true(True)
        if self.executable == "spack":
            return sn.assert_eq(
                self.job.exitcode, 0, msg="spack install ended with exit code {0} (see its output)"
            )
        return sn.assert_found(
            r"^/\S+$", self.stdout, msg="the local OpenFOAM build printed no folder"
        )


def build_time_limit(spec: str, figures: dict[str, str], unmeasured: str) -> str:
    """The measured time of the spec's build from nothing, rounded up to the hour."""
    from topofoam.results.timings import current_figures

    package = spec.split("@")[0]
    figure = current_figures().get(figures.get(package, ""))
    if figure is None:
        return unmeasured
    return f"{max(1, math.ceil(figure.seconds / 3600))}h"


class PreparedSolverMix(PreparedCase):
    """Three cases whose linear solvers differ: GAMG (cavity2D, pitzDaily) and plain CG with
    its many reductions (laplacianFoam), for the checks that compare library variants."""

    case = parameter(["cavity2D", "pitzDaily", "laplacianFoam"])


class PreparedCavityRanks(PreparedCase):
    """The 2D cavity decomposed for 1, 2 or 4 nodes of ``ranks_per_node`` ranks.

    By default 2 ranks a node on the tutorial's 20 x 20 cells for 10 steps: on an emulated
    cluster 8 ranks share 2 cores, and every GAMG cycle's reductions wait for the scheduler;
    50 steps took up to four minutes per run there. At a site's ranks per node (on its twin:
    ``-S PreparedCavityRanks.ranks_per_node=48``) the mesh grows to CELLS_PER_RANK cells a
    rank, so that every subdomain has neighbours as on a real decomposition.
    """

    #: Cells a rank at the larger layouts (about 7,200 for hpc2's 3 x 48 ranks).
    CELLS_PER_RANK = 50

    case = parameter(["cavity2D"])
    nodes = parameter([1, 2, 4])
    ranks_per_node = variable(int, value=2, loggable=True)
    size = "400"
    steps_override = 10

    @property
    def ranks(self) -> int:
        return self.nodes * self.ranks_per_node

    @run_after("init")
    def set_subdomains(self):
        self.num_subdomains = self.ranks
        if self.ranks * self.CELLS_PER_RANK > int(self.size):
            self.size = str(self.ranks * self.CELLS_PER_RANK)


class MpiBuild(rfm.CompileOnlyRegressionTest):
    """One C source of reframe/src, compiled with the environment's MPI (mpicc) into
    ``executable``; subclasses name the source and add flags."""

    build_system = "SingleSource"
    valid_systems = ["*"]
    cflags = variable(list, value=["-O2"])

    @run_before("compile")
    def use_mpicc(self):
        self.build_system.cc = "mpicc"
        self.build_system.cflags = self.cflags
        self.build_system.executable = self.executable


class MpiCountBuild(MpiBuild):
    """The PMPI interposer that counts MPI calls by kind (reframe/src/mpicount), built as a
    shared library."""

    sourcesdir = str(SOURCES / "mpicount")
    sourcepath = "mpicount.c"
    executable = "libmpicount.so"
    cflags = ["-O2", "-shared", "-fPIC"]
    # Wherever a check that counts runs (seed 001's, the sweep's variants).
    valid_prog_environs = ["+reduction-schedule", "+seed001", "+repipepcg", "+esi-ppcg"]

    @sanity_function
    def assert_built(self):
        return sn.assert_true(
            os.path.isfile(os.path.join(self.stagedir, self.executable)),
            msg="mpicc produced no libmpicount.so",
        )

    def library(self) -> str:
        return os.path.join(self.stagedir, self.executable)


class EsiNodeCommsVariant(rfm.RegressionTestPlugin):
    """A check whose ``variant`` parameter offers ESI's node-aware collectives
    (``esi-nodecomms``): that variant runs only on environments that have them."""

    @run_after("init")
    def need_esi_nodecomms(self):
        # ESI's node-aware collectives exist from v2506 on (OCI's v2512).
        if self.variant == "esi-nodecomms":
            self.valid_prog_environs = ["+reduction-schedule +esi-nodecomms"]


class CountsMpiCalls(rfm.RegressionTestPlugin):
    """Runs the solver under the PMPI interposer; the calls of the kinds in ``counted``,
    summed over the ranks, become performance variables (``allreduce``, ``reduce``, ...)."""

    mpicount = fixture(MpiCountBuild, scope="environment")
    #: MPI functions whose calls land in the perflog
    counted = variable(typ.List[str], value=["MPI_Allreduce"])

    @run_before("run")
    def preload_the_counter(self):
        self.add_prerun("prepare", "mkdir -p mpicount")
        # Only the solver is counted (not cp, the probe, or the shell). After what the
        # partition preloads (the emulated fabric's latency), which then reaches it.
        self.executable = (
            f"env LD_PRELOAD=${{LD_PRELOAD:+$LD_PRELOAD:}}{self.mpicount.library()} "
            f"TOPOFOAM_MPICOUNT_DIR=$PWD/mpicount {self.executable}"
        )

    def calls(self, name: str):
        """The calls of MPI function ``name`` summed over the ranks (deferred)."""
        return _calls(os.path.join(self.stagedir, "mpicount"), name, self.num_tasks)

    @run_before("performance")
    def set_call_counts(self):
        for name in self.counted:
            self.perf_variables[name[4:].lower()] = sn.make_performance_function(
                self.calls(name), "calls"
            )


class ClocksSteps(rfm.RegressionTestPlugin):
    """The solver's log goes through topofoam.jobs.stepclock: the performance variable
    ``wall_per_step`` is the wall-clock time per time step, start-up left out (OpenFOAM's
    ExecutionTime is CPU time, which misses what an oversubscribed rank waits off the CPU)."""

    @run_before("run", always_last=True)
    def clock_the_steps(self):
        # Last: the options other hooks add belong to the solver, not to the filter.
        self.executable_opts += ["|", sys.executable, "-u", "-m", "topofoam.jobs.stepclock"]
        self.executable_opts += ["stepclock.txt"]

    @run_before("performance")
    def set_wall_per_step(self):
        self.perf_variables["wall_per_step"] = sn.make_performance_function(
            _wall_per_step(os.path.join(self.stagedir, "stepclock.txt")), "s/step"
        )


@sn.deferrable
def _wall_per_step(path):
    from topofoam.jobs import stepclock

    return stepclock.per_step(path)


@sn.deferrable
def _calls(folder, name, ranks):
    from topofoam.jobs import mpicount

    return mpicount.read(folder, ranks=ranks).get(name, 0)
