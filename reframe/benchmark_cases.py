"""The foundation check: every benchmark case of cases/ on 2 MPI ranks, SCOTCH decomposition.

Runs on every partition of the site (locally: mpirun and Slurm/srun) at the ``ci`` size by
default (``-S PreparedCase.size=small`` or a published size such as ``vsc5`` for the real
thing). Sanity: the solver finished on every rank after the planned steps on the planned
mesh, and the case's physical checks hold. Performance: ExecutionTime, ClockTime and seconds
per step.
"""

from reframe.core.builtins import fixture

import reframe as rfm
from topofoam.checks.fixtures import PreparedCase
from topofoam.checks.runs import PreparedCaseRun


@rfm.simple_test
class CaseRun(PreparedCaseRun):
    """One benchmark case, decomposed with SCOTCH, run in parallel with stock OpenFOAM."""

    prepared = fixture(PreparedCase, scope="environment", variables={"num_subdomains": 2})
    valid_systems = ["*"]
    # Stock OpenFOAM: the patched environments have checks of their own.
    valid_prog_environs = ["+openfoam -reduction-schedule"]
    num_tasks = 2
    time_limit = "30m"
    tags = {"foundation", "fast", "cases"}
    stage = "cases"
    descr = "benchmark case on 2 ranks, SCOTCH decomposition"
