"""The quota that leaves one emulated node a share of what each peer gets
(localsite.cpuquota.of_peers), the node screening's positive control: whatever the machine's
cores, the node's CPU time is that share of a peer's, with the peers' probes at once."""

import pytest

from localsite import cpuquota


@pytest.mark.parametrize("cores", [1, 2, 3, 4, 8, 128])
@pytest.mark.parametrize("share", [0.5, 0.75, 0.8, 0.95])
@pytest.mark.parametrize("nodes", [3, 4, 7])
def test_the_slow_node_gets_its_share_of_a_peer_s_cpu_time(cores, share, nodes):
    fraction = cpuquota.of_peers(share, nodes, cores)
    assert 0 < fraction <= 1
    mine = fraction * cores  # cores' worth of CPU time the quota lets it have
    peer = min(1.0, (cores - mine) / (nodes - 1))  # one process each, on what is left
    assert mine == pytest.approx(share * peer)
