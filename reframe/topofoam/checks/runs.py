"""Base class of the checks that run a solver on a prepared (meshed, decomposed) case."""

import reframe.utility.sanity as sn
from reframe.core.builtins import run_after, run_before, sanity_function, variable

import reframe as rfm
from cases import CASES, flavour, resolve
from cases.sanity import evaluate
from topofoam.checks.onfabric import OnFabric
from topofoam.checks.solverlog import OpenFOAMSolverMixin
from topofoam.jobs import switches


def planned_executable(case: str, environ) -> str:
    """What runs ``case`` in ``environ`` before anything is prepared (a dry run): named as
    the environment's OpenFOAM runs it (foamRun for OpenFOAM-12's solver modules)."""
    kind = flavour.ORG if environ.extras.get("openfoam_flavour") == "org" else flavour.ESI
    return flavour.executable(CASES[case].solver, kind)


class PreparedCaseRun(rfm.RunOnlyRegressionTest, OpenFOAMSolverMixin, OnFabric):
    """Runs the case's solver in parallel in a copy of the ``prepared`` fixture's case.

    A subclass declares ``prepared = fixture(PreparedCase, ...)``; the expected steps and
    cells come from the prepared case itself, the sanity and performance from the mixin, and
    ``assert_physics`` holds the case's own physical checks (cases/catalog.py).
    """

    case = variable(str, value="", loggable=True)
    size = variable(str, value="", loggable=True)
    solver = variable(str, value="", loggable=True)
    #: 'emulated' on a partition whose nodes share one machine (extras: emulated): such
    #: timings mean nothing and are kept out of performance references and comparisons.
    timing = variable(str, value="measured", loggable=True)
    #: What kind of run this is, for the tools that read perflogs (topofoam.results.stages):
    #: the check's stage tag (cases, variants, intra1, ..., storage).
    stage = variable(str, value="", loggable=True)
    #: The site's node-hour price and currency (partition extras), so that the report
    #: prices node-hours without reading the site configuration.
    node_hour_price = variable(str, value="", loggable=True)
    currency = variable(str, value="", loggable=True)
    #: The OpenFOAM that ran: its flavour (esi: ESI's; org: the Foundation's) and version,
    #: e.g. 'esi v1912', 'org 12' (the environment's extras).
    openfoam = variable(str, value="", loggable=True)
    sourcesdir = None  # the case comes from the fixture, nothing from reframe/src

    #: The job script's commands before the solver, by phase, in this order. Hooks add to a
    #: phase (``add_prerun``); ``assemble_prerun`` writes them out last, so the order of the
    #: script never depends on the order the hooks ran in.
    PRERUN_PHASES = ("stage_in", "prepare", "place", "probe", "settle", "start")

    @run_after("setup")
    def log_openfoam(self):
        extras = self.current_environ.extras
        self.openfoam = (
            f"{extras.get('openfoam_flavour', '?')} {extras.get('openfoam_version', '?')}"
        )

    @run_after("setup")
    def log_site_price(self):
        extras = self.current_partition.extras
        price = extras.get("node_hour_price")
        self.node_hour_price = "" if price is None else str(price)
        self.currency = extras.get("currency") or ""

    @run_after("setup")
    def set_solver(self):
        if self.is_dry_run():
            # Nothing was prepared: the job script needs only the solver's name.
            self.case = self.prepared.case
            self.size = self.prepared.size
            self.solver = self.executable = planned_executable(
                self.prepared.case, self.current_environ
            )
            self.executable_opts = ["-parallel"]
            # The steps the preparation would give (the size's, or the override), for the
            # job script's commands that depend on them (the storage check's writes).
            self.expected_steps = self.prepared.steps_option() or (
                resolve(CASES[self.prepared.case], self.prepared.size).size.steps
            )
            return
        facts = self.prepared.facts()
        self.case = facts.case
        self.size = facts.size
        self.solver = facts.solver
        self.executable = facts.solver
        self.executable_opts = ["-parallel"]
        self.expected_steps = facts.steps
        self.expected_cells = facts.cells
        if self.current_partition.extras.get("emulated"):
            self.timing = "emulated"

    def add_prerun(self, phase: str, *commands: str) -> None:
        """Commands for ``phase`` of the job script (see PRERUN_PHASES)."""
        if phase not in self.PRERUN_PHASES:
            raise ValueError(f"unknown prerun phase {phase!r}: {self.PRERUN_PHASES}")
        # A plain attribute, not a ReFrame variable: variables land in the perflog, and these
        # commands hold '|', the perflog's separator.
        if not hasattr(self, "_prerun_steps"):
            self._prerun_steps: dict[str, list[str]] = {}
        self._prerun_steps.setdefault(phase, []).extend(commands)

    def set_optimisation_switches(self, **settings) -> None:
        """Run the solver with these OpenFOAM optimisation switches: ``-opt-switch`` on ESI's
        OpenFOAM, the case's own controlDict on OpenFOAM-12 (topofoam.jobs.switches)."""
        flavour = self.current_environ.extras.get("openfoam_flavour", "esi")
        options, command = switches.for_flavour(flavour, settings)
        self.executable_opts += options
        if command:
            self.add_prerun("prepare", command)

    @run_before("run")
    def copy_prepared_case(self):
        self.add_prerun("stage_in", f"cp -r {self.prepared.case_path()}/. .")

    @run_before("run", always_last=True)
    def assemble_prerun(self):
        self.prerun_cmds = [
            c
            for phase in self.PRERUN_PHASES
            for c in getattr(self, "_prerun_steps", {}).get(phase, [])
        ] + list(self.prerun_cmds)

    @sanity_function
    def assert_run(self):
        """The solver completed as planned and the case's physical checks hold."""
        return sn.all([self.assert_solver_completed(), self.assert_physics()])

    def assert_physics(self):
        """The case's physical checks on the solver log (continuity, Courant number,
        boundedness, conservation), each failing with its own message."""
        return sn.all(
            [
                sn.assert_false(_problem(self.stdout, check), msg="{0}")
                for check in self.prepared.facts().checks
            ]
        )


@sn.deferrable
def _problem(stdout, check):
    """Why ``check`` fails on the log (None if it holds); sanity runs in the stage folder."""
    with open(stdout) as f:
        return evaluate(check, f.read())
