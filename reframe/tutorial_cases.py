"""The foundation check: OpenFOAM tutorial cases on 2 MPI ranks with SCOTCH decomposition.

Runs on every partition of the site (locally: mpirun and Slurm/srun). Sanity: the solver
finished on every rank after the expected number of steps on the expected mesh. Performance:
ExecutionTime, ClockTime and seconds per step.
"""

import reframe as rfm
from reframe.core.builtins import fixture

from topofoam.fixtures import PreparedTutorial
from topofoam.runs import PreparedCaseRun


@rfm.simple_test
class TutorialRun(PreparedCaseRun):
    """One tutorial case, decomposed with SCOTCH, run in parallel with stock OpenFOAM."""

    prepared = fixture(PreparedTutorial, scope='environment', variables={'num_subdomains': 2})
    valid_systems = ['*']
    # Stock OpenFOAM: the patched environments have checks of their own.
    valid_prog_environs = ['+openfoam -reduction-schedule']
    num_tasks = 2
    time_limit = '10m'
    tags = {'foundation', 'fast'}
    descr = 'OpenFOAM tutorial case on 2 ranks, SCOTCH decomposition'
