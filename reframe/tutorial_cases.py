"""The foundation check: OpenFOAM tutorial cases on 2 MPI ranks with SCOTCH decomposition.

Runs on every partition of the site (locally: mpirun and Slurm/srun). Sanity: the solver
finished on every rank after the expected number of steps on the expected mesh. Performance:
ExecutionTime, ClockTime and seconds per step.
"""

import reframe as rfm
from reframe.core.builtins import fixture, run_after, run_before, variable

from topofoam.cases import TUTORIALS, control_steps
from topofoam.fixtures import PreparedTutorial
from topofoam.solverlog import OpenFOAMSolverMixin


@rfm.simple_test
class TutorialRun(rfm.RunOnlyRegressionTest, OpenFOAMSolverMixin):
    """One tutorial case, decomposed with SCOTCH, run in parallel."""

    prepared = fixture(PreparedTutorial, scope='environment', variables={'num_subdomains': 2})
    case = variable(str, value='', loggable=True)
    solver = variable(str, value='', loggable=True)
    valid_systems = ['*']
    valid_prog_environs = ['+openfoam']
    num_tasks = 2
    time_limit = '10m'
    tags = {'foundation', 'fast'}

    @run_after('init')
    def set_description(self):
        self.descr = 'OpenFOAM tutorial case on 2 ranks, SCOTCH decomposition'

    @run_after('setup')
    def set_solver(self):
        tutorial = TUTORIALS[self.prepared.case]
        self.case = tutorial.name
        self.solver = tutorial.solver
        self.executable = tutorial.solver
        self.executable_opts = ['-parallel']
        self.expected_steps = control_steps(self.prepared.case_path())
        self.expected_cells = self.prepared.cells

    @run_before('run')
    def copy_prepared_case(self):
        self.prerun_cmds = [f'cp -r {self.prepared.case_path()}/. .']
