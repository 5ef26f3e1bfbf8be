"""The fabric profile a run's links had, as a perflog column (topofoam.config.fabric)."""

from __future__ import annotations

from reframe.core.builtins import run_after, variable

import reframe as rfm
from topofoam.config.fabric import NONE


class OnFabric(rfm.RegressionTestPlugin):
    """Logs the partition's ``fabric`` extra: what its inter-node links were made to cost
    (the emulated cluster's TOPOFOAM_FABRIC), ``none`` where they are as they are."""

    fabric = variable(str, value=NONE, loggable=True)

    @run_after("setup")
    def fabric_in_force(self):
        self.fabric = str(self.current_partition.extras.get("fabric", NONE))
