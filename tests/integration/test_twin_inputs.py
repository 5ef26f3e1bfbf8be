"""A site twin's bad inputs: one line naming the input and the fix, nothing started or left
behind (the refusals come before the emulated cluster is brought up)."""

import pytest

from conftest import bench_cli, one_line


@pytest.mark.parametrize(
    "args, status, pattern",
    [
        (["nowhere", "start"], 1, r"^bench: no site file site-configs/nowhere\.py -- choose a "
         r"cluster site: hpc2, oci, vsc5$"),
        (["local", "start"], 1, r"no site file site-configs/local\.py -- choose a cluster site"),
        (["vsc5", "start", "--nodes", "9"], 1, r"9 nodes per partition x 1 partition\(s\) -- a "
         r"twin has 1 to 8 nodes in all; ask for at most 8 per partition$"),
        (["oci", "start", "--nodes", "5"], 1, r"ask for at most 4 per partition$"),
        (["vsc5", "start", "--node-topology", "foo=pack:1 core:2"], 1,
         r"--node-topology names foo, not a partition of vsc5 -- choose from zen3_0512$"),
        (["vsc5", "start", "--node-topology", "zen3_0512"], 2,
         r"--node-topology 'zen3_0512' -- give PARTITION=DESCRIPTION"),
        (["vsc5", "start", "--node-topology", "zen3_0512=pack:2 numa:x"], 1,
         r"^bench: partition zen3_0512: hwloc rejects the synthetic description"),
        (["hpc2", "run", "--", "-S", "PreparedCavityRanks.ranks_per_node=64"], 1,
         r"ranks_per_node=64, but the hpc2 twin's nodes have 48 cores -- ask for 48 at most$"),
        (["oci", "start", "--openfoam", "v1912"], 1, r"the site's partitions run Open MPI 5 "
         r"\(mpirun --map-by rankfile:file=\) and no build of openfoam-v1912-patched here has it"),
    ],
)  # fmt: skip
def test_a_bad_twin_input_is_one_line(args, status, pattern, tmp_path):
    import os

    env = dict(os.environ, TOPOFOAM_RUN=str(tmp_path / "run"))
    one_line(bench_cli("twin", *args, env=env, timeout=300), status, pattern)
    assert not list((tmp_path / "run").glob("twin-*/state.json"))
