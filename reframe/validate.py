"""Validation of a system (``-t validate``): is each partition's node what its site file says?

NodeFingerprint runs ``python -m topofoam.fingerprint`` on a node of the partition, through the
partition's launcher, as the benchmark runs would be: packages, NUMA nodes, cores and hardware
threads from hwloc, CPU model, frequency governor, kernel, Open MPI, UCX (and its transports),
hwloc and OpenFOAM versions, kept in the stage folder as ``fingerprint.json``. It fails when the
node differs from the partition's declaration (its ``cores``, ``numa_nodes`` and ``nps``
extras), with one line per difference, e.g. ``vsc5:zen3_0512 declares 16 NUMA nodes (NPS4),
node n3012 has 4: NPS changed?``.
"""

import re
import sys
from pathlib import Path

import reframe.utility.sanity as sn
from reframe.core.builtins import run_after, sanity_function, variable
from reframe.core.exceptions import SanityError

import reframe as rfm


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

    @sanity_function
    def node_as_declared(self):
        return _as_declared(Path(self.stagedir, self.job.stdout))
