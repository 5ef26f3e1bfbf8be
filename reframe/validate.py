"""Validation of a system (``-t validate``): the measurements its verdict is built on.

NodeFingerprint runs ``python -m topofoam.fingerprint`` on a node of the partition, through the
partition's launcher, as the benchmark runs would be: packages, NUMA nodes, cores and hardware
threads from hwloc, CPU model, frequency governor, kernel, Open MPI, UCX (and its transports),
hwloc and OpenFOAM versions, kept in the stage folder as ``fingerprint.json``. It fails when the
node differs from the partition's declaration (its ``cores``, ``numa_nodes`` and ``nps``
extras), with one line per difference, e.g. ``vsc5:zen3_0512 declares 16 NUMA nodes (NPS4),
node n3012 has 4: NPS changed?``.

FabricValidation (latency, bandwidth and collective latency per hardware level) and
SolverValidation (laplacianFoam's wall time on one node) repeat their measurement
``validate_repeats`` times. ReFrame's results store keeps the session; ``python -m
topofoam.validation`` judges it against the site's expectations, or against an earlier
session (docs/checks.md).
"""

import json
import re
import sys
from pathlib import Path

import reframe.utility.sanity as sn
from reframe.core.builtins import (
    fixture,
    parameter,
    run_after,
    run_before,
    sanity_function,
    variable,
)
from reframe.core.exceptions import SanityError

import reframe as rfm
from topofoam import sweep, sweepspace
from topofoam.pingpong import PingPong
from topofoam.sweep import (
    PreparedLayout,
    ReferenceRun,
    StageRun,
    layout_name,
    most_validate_repeats,
)


@sn.deferrable
def _as_declared(stdout: Path) -> bool:
    text = stdout.read_text(errors="replace")
    differences = re.findall(r"^fingerprint: (\S+ declares .*)$", text, re.M)
    if differences:
        raise SanityError("; ".join(differences))
    if not re.search(r"^fingerprint: \S+ is as \S+ declares$", text, re.M):
        raise SanityError("the node could not be described: see the job's stderr")
    return True


@rfm.simple_test
class NodeFingerprint(rfm.RunOnlyRegressionTest):
    """One node of the partition, described and held against the site file."""

    valid_systems = ["*"]
    # The MPI and OpenFOAM the benchmark runs use: the environment every site has.
    valid_prog_environs = ["+reduction-schedule"]
    num_tasks = 1
    num_tasks_per_node = 1
    time_limit = "5m"
    tags = {"validate", "fingerprint"}
    executable = sys.executable
    #: What was found, kept in the output folder (topofoam.fingerprint's JSON).
    keep_files = ["fingerprint.json"]
    #: What kind of run this is (topofoam.results.stages).
    stage = variable(str, value="fingerprint", loggable=True)
    #: What was found, as a variable: ReFrame's results store keeps it with the session, so
    #: that a regression can show what changed on the node (topofoam.validation).
    description = variable(dict, value={})

    @run_after("setup")
    def declared(self):
        """The partition's declaration, from its site file's extras."""
        part = self.current_partition
        extras = part.extras
        self.executable_opts = ["-m", "topofoam.fingerprint", "--partition", part.fullname]
        for option, key in (("--cores", "cores"), ("--numa-nodes", "numa_nodes")):
            if extras.get(key):
                self.executable_opts += [option, str(extras[key])]
        if extras.get("nps"):
            self.executable_opts += ["--nps", extras["nps"]]
        environ = self.current_environ
        flavour = environ.extras.get("openfoam_flavour", "")
        version = environ.extras.get("openfoam_version", "")
        self.executable_opts += ["--openfoam", f"'{flavour} {version} ({environ.name})'".strip()]
        self.executable_opts += ["--json", "fingerprint.json"]

    @run_before("sanity")
    def keep_description(self):
        try:
            self.description = json.loads(Path(self.stagedir, "fingerprint.json").read_text())
        except (OSError, ValueError):
            self.description = {}  # the sanity says why the node could not be described

    @sanity_function
    def node_as_declared(self):
        return _as_declared(Path(self.stagedir, self.job.stdout))


class Validated(rfm.RegressionMixin):
    """A measurement judged by the verdict: it records, with the session, the practical
    margins its partition states (the ``validate_margins`` extra, a fraction by unit such as
    ``{"s": 0.05, "us": 0.1}``; topofoam.validation.expectations.MARGINS for the rest), which
    ``record`` writes into the expectations."""

    validate_margins = variable(dict, value={})

    @run_after("setup")
    def margins_of_the_partition(self):
        self.validate_margins = dict(self.current_partition.extras.get("validate_margins", {}))


@rfm.simple_test
class FabricValidation(PingPong, Validated):
    """Latency, bandwidth and collective latency at each hardware level of the partition,
    repeated for a verdict (sweepspace.validate_repeats)."""

    repeat = parameter(range(most_validate_repeats()))
    tags = {"validate", "fabric"}
    stage = "validate"

    def repeats_on(self, part) -> int:
        return sweepspace.validate_repeats(part)


class SolverValidationCase(PreparedLayout):
    # laplacianFoam: seed 000's case whose time is mostly the solver's (a few seconds at the
    # partition's timed steps), on one node at the partition's processes per node.
    case = parameter(["laplacianFoam"])
    layout = parameter(sweep.layouts("one-node"), fmt=layout_name)


class SolverValidationReference(ReferenceRun):
    prepared = fixture(SolverValidationCase, scope="environment")


@rfm.simple_test
class SolverValidation(StageRun, Validated):
    """The solver's wall time with the partition's standard settings on one node, repeated
    for a verdict: what a user's job would see after a maintenance."""

    repeat = parameter(range(most_validate_repeats()))
    standard_run = fixture(SolverValidationReference, scope="environment")
    #: The wall time of the solver is judged; OpenFOAM's own clocks would repeat it.
    validated_metrics = variable(list, value=["wall"])
    tags = {"validate", "solver"}
    stage = "validate"

    def repeats_on(self, part) -> int:
        return sweepspace.validate_repeats(part)
