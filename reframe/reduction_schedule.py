"""Reduction schedules in a real solver run (seed 000 section 4.2, patches/esi-v1912).

A benchmark case on 2 ranks with the patched OpenFOAM, three ways:
  standard      the patched libraries without a schedule (they must behave as stock);
  global        a rankmap schedule for the default placement, generic reductions along it;
  global+sums   the same, with scalar sum/min reductions (v2512: every native all-reduction)
                along it too (reductionScheduleSums).
Sanity: the solver ran as the foundation check requires, and the start-up line of the patch
reports the schedule for the run's rank count (or, for standard, no schedule at all).
"""

import sys

import reframe.utility.sanity as sn
from reframe.core.builtins import fixture, parameter, run_after, run_before, sanity_function

import reframe as rfm
from topofoam.checks.fixtures import PatchedOpenFOAMBuild, PreparedSolverMix
from topofoam.checks.placed import PlacedRun


@rfm.simple_test
class ReductionScheduleRun(PlacedRun):
    """A benchmark case with and without a hierarchical reduction schedule."""

    variant = parameter(["standard", "global", "global+sums"])
    build = fixture(PatchedOpenFOAMBuild, scope="environment")
    prepared = fixture(PreparedSolverMix, scope="environment", variables={"num_subdomains": 2})
    valid_systems = ["*"]
    valid_prog_environs = ["+reduction-schedule"]
    num_tasks = 2
    time_limit = "10m"
    tags = {"schedule"}
    stage = "schedule"

    @run_after("setup")
    def describe(self):
        self.descr = f"{self.case} on 2 ranks, reduction schedule: {self.variant}"

    @run_before("run")
    def use_schedule(self):
        if self.variant != "standard":
            # The schedule for the default (block) placement on this node: 'global only'.
            self.add_prerun(
                "place",
                f"{sys.executable} -m rankmap schedule . --topology local --nodes 1 "
                f"--placement block --out reductionSchedule",
            )
            self.schedule_from("reductionSchedule")
            self.forward_to_ranks("FOAM_REDUCTION_SCHEDULE")
        if self.variant == "global+sums":
            self.set_optimisation_switches(reductionScheduleSums=1)

    @sanity_function
    def assert_schedule_in_use(self):
        if self.variant == "standard":
            schedule = sn.assert_not_found(
                r"^reductionSchedule",
                self.stdout,
                msg="a schedule was loaded without being asked for",
            )
        else:
            schedule = sn.all(
                [self.schedule_reported(), self.sums_routed(self.variant == "global+sums")]
            )
        return sn.all([self.assert_run(), schedule])
