"""Sanity and performance of a parallel OpenFOAM solver run, read from its log.

Mixed into run checks: a check sets ``expected_steps`` and ``expected_cells`` (and its log is
its stdout), and gets the sanity function and the performance variables ExecutionTime,
ClockTime and seconds per step.
"""

import re
from pathlib import Path

import reframe.utility.sanity as sn
from reframe.core.builtins import performance_function, sanity_function, variable

import reframe as rfm

# Final Slurm job states of a run that did not end by itself.
SLURM_FAILED_STATES = (
    "NODE_FAIL",
    "CANCELLED",
    "TIMEOUT",
    "FAILED",
    "BOOT_FAIL",
    "OUT_OF_MEMORY",
    "DEADLINE",
    "PREEMPTED",
)

# What slurmstepd writes into a job's stderr when Slurm cancels it (node failure, time
# limit, scancel): visible whatever ReFrame's scheduler backend learns of the final state.
_SLURM_CANCELLED = re.compile(r"\*\*\* (JOB|STEP) [\d.]+ ON \S+ CANCELLED AT \S+([^*]*)\*\*\*")


def slurm_cancellation(stderr: str) -> str:
    """The line saying why Slurm cancelled the job, or "" when it did not.

    A job step is often cancelled a moment before its job (a node dies: the step's other tasks
    are killed, then the job is cancelled DUE TO NODE FAILURE), so of all such lines the one
    naming a reason wins, then the job's own line, then the first."""
    found = list(_SLURM_CANCELLED.finditer(stderr))
    if not found:
        return ""
    best = max(found, key=lambda m: ("DUE TO" in m.group(2), m.group(1) == "JOB"))
    return best.group(0).strip("* ")


# OpenFOAM writes the mesh size into the header of every polyMesh/owner file.
_OWNER_NOTE = re.compile(rb"nCells:\s*(\d+)")


def decomposed_cells(case_dir) -> int:
    """Cells in all processor*/constant/polyMesh of a decomposed case, from the owner headers."""
    total = 0
    owners = sorted(Path(case_dir).glob("processor*/constant/polyMesh/owner"))
    for owner in owners:
        with open(owner, "rb") as f:
            match = _OWNER_NOTE.search(f.read(4096))
        if match is None:
            raise ValueError(f"{owner}: no nCells in its header note")
        total += int(match.group(1))
    return total


class OpenFOAMSolverMixin(rfm.RegressionTestPlugin):
    """Sanity and performance of an OpenFOAM solver log (the check's stdout)."""

    #: Time steps (transient) or iterations (steady) the run must complete.
    expected_steps = variable(int, loggable=True)

    #: Cells of the mesh, summed over the processor meshes the run read.
    expected_cells = variable(int, loggable=True)

    @sanity_function
    def assert_solver_completed(self):
        """The solver ended normally, on every rank, after the expected steps on the mesh."""
        log = self.stdout
        steps = sn.count(sn.extractall(r"^Time = \S+", log))
        state = str(self.job.state or "")
        try:
            cancelled = slurm_cancellation(Path(self.stagedir, self.job.stderr).read_text())
        except OSError:
            cancelled = ""
        return sn.all(
            [
                sn.assert_false(
                    cancelled,
                    msg=f"the batch job was cancelled by Slurm ({cancelled})",
                ),
                sn.assert_false(
                    state in SLURM_FAILED_STATES,
                    msg=f"the batch job ended {state} on {self.job.nodelist}: a node "
                    f"failed, or the job was cancelled or ran out of time",
                ),
                sn.assert_found(r"^End\s*$", log, msg="the solver did not print End"),
                sn.assert_found(
                    r"^Finalising parallel run",
                    log,
                    msg='no "Finalising parallel run": not a parallel run, or it died',
                ),
                sn.assert_eq(
                    sn.extractsingle(r"^nProcs\s*:\s*(\d+)", log, 1, int),
                    self.num_tasks,
                    msg="the solver ran on {0} ranks, expected {1}",
                ),
                sn.assert_eq(
                    steps, self.expected_steps, msg="the solver ran {0} time steps, expected {1}"
                ),
                sn.assert_eq(
                    sn.defer(decomposed_cells(self.stagedir)),
                    self.expected_cells,
                    msg="the processor meshes hold {0} cells, expected {1}",
                ),
            ]
        )

    @performance_function("s")
    def ExecutionTime(self):
        """CPU time of the master rank at the end of the run, as the solver reports it."""
        return sn.extractsingle(r"^ExecutionTime = (\S+) s", self.stdout, 1, float, -1)

    @performance_function("s")
    def ClockTime(self):
        """Wall-clock time at the end of the run (whole seconds in OpenFOAM's log)."""
        return sn.extractsingle(r"ClockTime = (\S+) s", self.stdout, 1, float, -1)

    @performance_function("s/step")
    def seconds_per_step(self):
        """ExecutionTime averaged over the steps run."""
        return self.ExecutionTime() / self.expected_steps
