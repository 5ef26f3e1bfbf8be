"""Seed 001's communication optimizations against stock OpenFOAM, with MPI calls counted.

  optMULES   the MULES limiter exchanges with neighbouring processors only: no all-to-all
             of message sizes per limiter iteration (OptimisationSwitch
             mulesNeighbourExchange 1; interFoam cases)
  pipePCG    PiPePCG instead of PCG: one non-blocking sum per iteration for both dot
             products and the residual, overlapped with preconditioning and A x
  rePipePCG  RePiPePCG: PiPePCG with the solution and direction updates done, in chunks,
             while the sum is in flight
  and the combinations seed 001 measured: optMULES+pipePCG, optMULES+rePipePCG.
  PPCG, PPCR ESI's own pipelined CG and CR (v2006 and later; OCI's v2512), beside ours on
             hpcCavity3D

Which variants an environment runs is what its OpenFOAM has, by feature: ``seed001`` (the
v1912 and OpenFOAM-12 series: PiPePCG and RePiPePCG), ``optmules`` (v1912's MULES patch),
``repipepcg`` (the v2512 series: RePiPePCG only), ``esi-ppcg`` (ESI's PPCG and PPCR).

Cases: damBreak2D and damBreak3D (interFoam: every variant) and hpcCavity3D (icoFoam, p with
PCG+DIC: the PCG variants), on every layout of the partition, tag ``seed001``. Each run's final
fields must equal the standard run's: within 1e-12 relative for optMULES alone (a min of the
same numbers); where the pressure solver changes, 1e-6 on hpcCavity3D and 1e-3 on the dam
breaks, whose interface advection amplifies the new summation order step by step. Every rank's MPI calls are counted by
the project's PMPI interposer (reframe/src/mpicount); the perflog has the totals per kind.
"""

import sys

import reframe.utility.sanity as sn
from reframe.core.builtins import fixture, parameter, run_after, run_before, sanity_function

import reframe as rfm
from topofoam.checks import sweep
from topofoam.checks.fixtures import CountsMpiCalls, PatchedOpenFOAMBuild
from topofoam.checks.sweep import CaseCopy, PreparedLayout, SweepRun, layout_name

VARIANTS = (
    "standard",
    "optMULES",
    "pipePCG",
    "rePipePCG",
    "optMULES+pipePCG",
    "optMULES+rePipePCG",
    "PPCG",
    "PPCR",
)
#: The environments that run each variant (any of the features); standard runs wherever one
#: of the others does.
NEEDS = {
    "optMULES": ["+seed001 +optmules"],
    "pipePCG": ["+seed001"],
    "rePipePCG": ["+seed001", "+repipepcg"],
    "PPCG": ["+esi-ppcg"],
    "PPCR": ["+esi-ppcg"],
}
ANY_VARIANT = ["+seed001", "+repipepcg", "+esi-ppcg"]
#: Solvers with MULES compiled in (the patched build rebuilds them).
MULES_SOLVERS = {"damBreak2D", "damBreak3D"}
#: The pressure solver each PCG variant puts in place of PCG (topofoam/jobs/solvers.py).
PCG_SOLVERS = {"pipePCG": "PiPePCG", "rePipePCG": "RePiPePCG", "PPCG": "PPCG", "PPCR": "PPCR"}
#: ESI's solvers run beside ours on the single-phase case only.
ESI_SOLVER_CASES = {"hpcCavity3D"}
#: Final-field tolerance of the PCG variants on the interFoam cases (see set_variant).
INTERFACE_RTOL = 1e-3
#: MPI functions whose calls land in the perflog (summed over the ranks).
COUNTED = ["MPI_Allreduce", "MPI_Iallreduce", "MPI_Alltoall", "MPI_Test"]


class Seed001Case(PreparedLayout):
    case = parameter(["damBreak2D", "damBreak3D", "hpcCavity3D"])
    layout = parameter(sweep.layouts("all"), fmt=layout_name)


class Seed001Reference(CountsMpiCalls, SweepRun):
    """The standard run (PCG, stock MULES exchange) of a case and layout: the fields and the
    MPI calls every variant is compared with."""

    build = fixture(PatchedOpenFOAMBuild, scope="environment")
    prepared = fixture(Seed001Case, scope="environment")
    valid_prog_environs = ANY_VARIANT
    counted = COUNTED
    stage = "reference"
    repeat = parameter([0])  # one reference per case and layout: its fields are compared


@rfm.simple_test
class Seed001Run(CountsMpiCalls, SweepRun):
    """A seed 001 variant of a case and layout, with the partition's default settings."""

    build = fixture(PatchedOpenFOAMBuild, scope="environment")
    standard_run = fixture(Seed001Reference, scope="environment")
    variant = parameter(list(VARIANTS))
    valid_prog_environs = ANY_VARIANT
    counted = COUNTED
    tags = {"seed001"}
    stage = "seed001"

    @property
    def prepared(self):
        return CaseCopy(self.standard_run)

    @run_after("init")
    def need_what_the_variant_changes(self):
        # OpenFOAM-12's MULES limiter already exchanges with neighbours only (patches/README.md
        # gives the MPI counts), so only an OpenFOAM with the v1912 patch has optMULES; the
        # v2512 series has RePiPePCG but no PiPePCG (ESI's PPCG is the same algorithm).
        if "optMULES" in self.variant:
            self.valid_prog_environs = NEEDS["optMULES"]
        elif self.variant != "standard":
            self.valid_prog_environs = NEEDS[self.variant]

    def applies(self, part, nodes, ppn):
        if "optMULES" in self.variant and self._case_name() not in MULES_SOLVERS:
            return False
        if self.variant in ("PPCG", "PPCR") and self._case_name() not in ESI_SOLVER_CASES:
            return False
        return super().applies(part, nodes, ppn)

    @run_after("setup")
    def set_variant(self):
        if self.variant == "optMULES":
            self.fields_rtol = 1e-12
        elif self.variant in PCG_SOLVERS or "+" in self.variant:
            # Another summation order in the pressure solves: within 1e-6 for a single-
            # phase case (tests/test_seed001.py), but the interface advection of the dam
            # breaks amplifies it step by step (2.2e-5 after damBreak2D's 100 ci steps;
            # seed 001 reports under 1% for its head-form case).
            self.fields_rtol = INTERFACE_RTOL if self.case in MULES_SOLVERS else 1e-6
        if "optMULES" in self.variant:
            self.set_optimisation_switches(mulesNeighbourExchange=1)

    @run_before("run")
    def use_the_solver(self):
        solver = PCG_SOLVERS.get(self.variant.split("+")[-1])
        if solver:
            # Before the solver's timing starts.
            self.add_prerun("prepare", f"{sys.executable} -m topofoam.jobs.solvers . {solver}")

    @sanity_function
    def assert_variant_ran(self):
        checks = [self.assert_placed_and_completed()]
        if "optMULES" in self.variant:
            checks.append(
                sn.assert_found(
                    r"^MULES: limiter exchanged with neighbouring processors only",
                    self.stdout,
                    msg="the patched interFoam did not report the neighbour-only exchange",
                )
            )
        solver = PCG_SOLVERS.get(self.variant.split("+")[-1])
        if solver:
            checks.append(
                sn.assert_found(
                    rf"\w*{solver}:\s+Solving for",
                    self.stdout,
                    msg=f"no equation was solved with {solver}",
                )
            )
        return sn.all(checks)
