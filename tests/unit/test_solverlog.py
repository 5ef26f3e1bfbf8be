"""Which of slurmstepd's cancellation lines a failed run reports (topofoam.checks.solverlog)."""

from topofoam.checks.solverlog import slurm_cancellation

# The order a node failure wrote them in a CI run: the step first, the job's reason last.
NODE_FAILURE = """\
srun: error: node1: task 0: Segmentation fault
slurmstepd-node1: error: *** STEP 6.1 ON node1 CANCELLED AT 2026-11-23T18:16:09 ***
srun: error: node4: tasks 6-7: Killed
slurmstepd-node1: error: *** JOB 6 ON node1 CANCELLED AT 2026-11-23T18:16:39 DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***
"""


def test_the_line_with_a_reason_wins_over_an_earlier_step_line():
    assert slurm_cancellation(NODE_FAILURE) == (
        "JOB 6 ON node1 CANCELLED AT 2026-11-23T18:16:39 DUE TO NODE FAILURE, "
        "SEE SLURMCTLD LOG FOR DETAILS"
    )


def test_the_job_line_wins_over_a_step_line_when_neither_has_a_reason():
    text = (
        "slurmstepd: error: *** STEP 7.0 ON node2 CANCELLED AT 2026-11-23T10:00:00 ***\n"
        "slurmstepd: error: *** JOB 7 ON node2 CANCELLED AT 2026-11-23T10:00:01 ***\n"
    )
    assert slurm_cancellation(text) == "JOB 7 ON node2 CANCELLED AT 2026-11-23T10:00:01"


def test_a_step_line_alone_is_reported_and_a_clean_log_is_not():
    step = "slurmstepd: error: *** STEP 8.0 ON n1 CANCELLED AT 2026-11-23T10:00:00 ***\n"
    assert slurm_cancellation(step) == "STEP 8.0 ON n1 CANCELLED AT 2026-11-23T10:00:00"
    assert slurm_cancellation("srun: error: n1: task 0: Exited with exit code 1\n") == ""
