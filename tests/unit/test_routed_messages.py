"""The per-peer message counts against a reduction schedule's tree
(topofoam.jobs.mpicount.routed_along_tree); the system tests hold real runs to it."""

from topofoam.jobs.mpicount import routed_along_tree

# TEST DATA: the counts of one real run pair (the vsc5 twin, 2 nodes x 2 ranks, v1912 patched,
# 2026-11-29): standard's 158,764 MPI_Allreduce calls over 4 ranks, global+sums' none; their
# MPI_Send messages (258 and 238,404) and those between nodes (88 and 79,470).
RUN_PAIR = dict(ranks=4, allreduces=(158764, 0), inter_node=(88, 79470), sent=(258, 238404))


def test_sums_moved_off_allreduce_follow_the_schedules_tree():
    """Each moved reduction is a gather and a scatter along the tree: 2 x 3 edges, 2 x 1
    crossing nodes on the block schedule of 2 nodes; a tree of 2 inter-node edges (OpenFOAM's
    on the same placement) would have sent twice as many across, and is refused."""
    assert routed_along_tree(**RUN_PAIR, tree_inter_node_edges=1) is None
    why = routed_along_tree(**RUN_PAIR, tree_inter_node_edges=2)
    assert why == (
        "39691 reductions sent 79382 messages between nodes, not 158764 "
        "(2 x the schedule's 2 inter-node edges each)"
    )
    lost = dict(RUN_PAIR, sent=(258, 238403))
    assert "added 238145 MPI_Send messages, not 238146" in routed_along_tree(
        **lost, tree_inter_node_edges=1
    )
    kept = dict(RUN_PAIR, allreduces=(158764, 158764))
    assert "no whole number of reductions" in routed_along_tree(**kept, tree_inter_node_edges=1)
