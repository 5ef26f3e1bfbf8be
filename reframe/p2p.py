"""Point-to-point round-trip time per hardware level (seed 000 Table 2).

Two ranks bound to two cores whose path is one level of rankmap's hierarchy (same NUMA node,
NUMA nodes of one package, two packages, two nodes; the cores come from the partition's
topology), an MPI ping-pong of 10, 100, 500 and 1000 double-precision scalars. Each size is a
performance variable in microseconds; beside them the bandwidth of 1 MiB messages (MB/s)
and the latency of a one-scalar MPI_Allreduce and MPI_Alltoall on the pair (us); the
measurement is topofoam.checks.pingpong's. ``python -m topofoam.results.p2p`` turns the perflog into a
latency table that rankmap takes as its cost vector (``--cost-table``). Partitions whose nodes
share one machine (emulated) are measured between two nodes only when their links were given
costs (a fabric profile, topofoam.config.fabric): the check measures those back.
"""

import reframe as rfm
from topofoam.checks.pingpong import PingPong


@rfm.simple_test
class PingPongRun(PingPong):
    """Round-trip time between two cores at one hardware level (seed 000 Table 2)."""

    tags = {"p2p"}
