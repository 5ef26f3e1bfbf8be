"""Where a run keeps its case: node-local vs shared storage (seed 002 section 1).

One node at the partition's processes per node, the stage's case (seed 002: HPC_motorbike)
run a few steps, each timed: decomposePar, the solver, reconstructPar, with the fields
written every step, every 10th step, or only at the end, on shared storage (the stage folder)
and on the node's local disk (copied there first and back after, both copies timed too: seed
002 found shared storage ahead once the copy back is counted). The steps and their rates are
topofoam.checks.storage's.
"""

import reframe as rfm
from topofoam.checks.storage import StorageSteps


@rfm.simple_test
class StorageRun(StorageSteps):
    """Decompose, solve and reconstruct on node-local or shared storage."""

    tags = {"storage"}
    stage = "storage"
