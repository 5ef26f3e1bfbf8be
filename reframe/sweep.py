"""The sweeps: seed 000's optimization variants and seed 002's staged runtime tuning.

They run on every partition whose site configuration gives sweep values (site-configs/:
topology, processes per node, node counts, UCX and collective presets); what a combination
does not apply to (cyclic placement on one NUMA node, ud transports below 4 nodes, a preset
the partition lacks) is not listed for that partition. Tags:

  variants  standard / global / local+global x placement (block, cyclic over NUMA nodes,
            rankmap) at every node count (seed 000 Table 4, Fig. 5-6); on ESI v2506 and
            later also esi-nodecomms, ESI's own node-aware collectives (block, cyclic)
  intra1    processes per node on one node (seed 002 Test intra1)
  intra2    NPS (the partitions) x placement x (UCX, collectives) pairs on one node
  inter1    UCX inter-node presets per node count (seed 002 Test inter1)
  inter2    the best settings per node count (Test inter2)
  cost      standard and local+global at every node count, for node-hours (section 4)

Every run's final fields must match those of the standard run of its case and layout with
the partition's settings, which runs first as a fixture (``*Reference``). Stages after intra1
take the best settings so far from $TOPOFOAM_TUNING; which combination runs on which
partition is decided in one place, topofoam/config/sweepspace.py (the ``stage`` of each check).
The size is ``ci`` unless set: ``-S size=vsc5`` (a case's named or published size).
"""

from reframe.core.builtins import fixture, parameter

import reframe as rfm
from topofoam.checks import sweep
from topofoam.checks.fixtures import CountsMpiCalls, EsiNodeCommsVariant
from topofoam.checks.sweep import PreparedLayout, ReferenceRun, StageRun, layout_name
from topofoam.config import presets


class VariantCase(PreparedLayout):
    case = parameter(["pitzDaily", "laplacianFoam"])  # seed 000's cases
    layout = parameter(sweep.layouts("all"), fmt=layout_name)


class Intra1Case(PreparedLayout):
    case = parameter(["motorbike"])  # seed 002's HPC_motorbike
    layout = parameter(sweep.layouts("every-ppn"), fmt=layout_name)


class Intra2Case(PreparedLayout):
    case = parameter(["motorbike"])
    layout = parameter(sweep.layouts("one-node"), fmt=layout_name)


class InterCase(PreparedLayout):
    case = parameter(["motorbike"])
    layout = parameter(sweep.layouts("multi-node"), fmt=layout_name)


class CostCase(PreparedLayout):
    case = parameter(["motorbike"])
    layout = parameter(sweep.layouts("all"), fmt=layout_name)


class VariantReference(ReferenceRun):
    prepared = fixture(VariantCase, scope="environment")


class Intra1Reference(ReferenceRun):
    prepared = fixture(Intra1Case, scope="environment")


class Intra2Reference(ReferenceRun):
    prepared = fixture(Intra2Case, scope="environment")


class InterReference(ReferenceRun):
    prepared = fixture(InterCase, scope="environment")


class CostReference(ReferenceRun):
    prepared = fixture(CostCase, scope="environment")


@rfm.simple_test
class VariantRun(CountsMpiCalls, EsiNodeCommsVariant, StageRun):
    """Seed 000's variants x placement, at every node count of the partition, with the MPI
    calls of the reduction paths counted: MPI_Allreduce (OpenFOAM's own), and MPI_Reduce and
    MPI_Bcast (ESI's two-level path: reduce on the node, all-reduce between the nodes' leaders,
    broadcast on the node)."""

    variant = parameter(["standard", "global", "local+global", "esi-nodecomms"])
    binding = parameter(list(presets.BINDINGS))
    standard_run = fixture(VariantReference, scope="environment")
    counted = ["MPI_Allreduce", "MPI_Reduce", "MPI_Bcast"]
    tags = {"sweep", "variants"}
    stage = "variants"


@rfm.simple_test
class Intra1Run(StageRun):
    """Processes per node on one node, defaults otherwise."""

    binding = parameter(["block"])
    standard_run = fixture(Intra1Reference, scope="environment")
    tags = {"sweep", "intra1"}
    stage = "intra1"


@rfm.simple_test
class Intra2Run(StageRun):
    """Placement x (UCX, collectives) pairs on one node, on every NPS partition."""

    binding = parameter(["block", "cyclic"])
    ucx = parameter(sweep.union("ucx") or [""])
    coll = parameter(sweep.union("coll") or [""])
    standard_run = fixture(Intra2Reference, scope="environment")
    tags = {"sweep", "intra2"}
    stage = "intra2"


@rfm.simple_test
class Inter1Run(StageRun):
    """UCX inter-node presets at every node count above one, best intra settings."""

    ucx_inter = parameter(sweep.union("ucx_inter") or [""])
    standard_run = fixture(InterReference, scope="environment")
    tags = {"sweep", "inter1"}
    stage = "inter1"


@rfm.simple_test
class Inter2Run(StageRun):
    """The best settings found so far, per node count above one."""

    standard_run = fixture(InterReference, scope="environment")
    tags = {"sweep", "inter2"}
    stage = "inter2"


@rfm.simple_test
class CostRun(StageRun):
    """Standard and local+global at every node count: node-hours and the cost optimum."""

    variant = parameter(["standard", "local+global"])
    binding = parameter(["", "rankmap"])
    standard_run = fixture(CostReference, scope="environment")
    tags = {"sweep", "cost"}
    stage = "cost"
