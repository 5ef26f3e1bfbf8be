"""Base class of the checks that run a solver on a prepared (meshed, decomposed) case."""

import reframe as rfm
from reframe.core.builtins import run_after, run_before, variable

from topofoam.cases import TUTORIALS, control_steps
from topofoam.solverlog import OpenFOAMSolverMixin


class PreparedCaseRun(rfm.RunOnlyRegressionTest, OpenFOAMSolverMixin):
    """Runs the case's solver in parallel in a copy of the ``prepared`` fixture's case.

    A subclass declares ``prepared = fixture(PreparedTutorial, ...)``; the expected steps and
    cells come from the prepared case itself, the sanity and performance from the mixin.
    """

    case = variable(str, value='', loggable=True)
    solver = variable(str, value='', loggable=True)
    #: 'emulated' on a partition whose nodes share one machine (extras: emulated): such
    #: timings mean nothing and are kept out of performance references and comparisons.
    timing = variable(str, value='measured', loggable=True)
    sourcesdir = None       # the case comes from the fixture, nothing from reframe/src

    @run_after('setup')
    def set_solver(self):
        tutorial = TUTORIALS[self.prepared.case]
        self.case = tutorial.name
        self.solver = tutorial.solver
        self.executable = tutorial.solver
        self.executable_opts = ['-parallel']
        self.expected_steps = control_steps(self.prepared.case_path())
        self.expected_cells = self.prepared.cells
        if self.current_partition.extras.get('emulated'):
            self.timing = 'emulated'

    @run_before('run')
    def copy_prepared_case(self):
        self.prerun_cmds = [f'cp -r {self.prepared.case_path()}/. .']
