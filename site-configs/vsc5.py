"""ReFrame site configuration: VSC-5, partition zen3_0512 (seed 000's system).

Nodes: 2 x AMD EPYC 7713, 128 cores, 8 NUMA nodes per socket (NPS4 with L3-as-NUMA),
InfiniBand 200 Gbit/s, OpenMPI 4.1.4, OpenFOAM-12 (../shared/reference/systems.csv).

    reframe -C site-configs/vsc5.py -c reframe -l        # what a selection would run
    python -m topofoam.prediction.plan -C site-configs/vsc5.py -t intra1   # jobs and node-hours first
    reframe -C site-configs/vsc5.py -c reframe -r -t intra1

Set the block below for your project; nothing else needs editing.
"""

from sitekit.cluster import Partition, Site, configuration, org12_patched

# -- the site's settings --------------------------------------------------------------------
ACCOUNT = "p70000"  # your VSC project (sbatch --account)
QOS = "zen3_0512"  # VSC-5 selects the node type by QOS and partition
SPACK_SETUP = "$HOME/spack/share/spack/setup-env.sh"  # where your Spack is
NODE_HOUR_PRICE = None  # e.g. 0.35 with CURRENCY = 'EUR'; None: no cost in reports
CURRENCY = ""
# Where OpenFOAM is built: "compute" (a batch job on a node of the partition) or "login"
# (the login node, only where your centre allows builds there).
BUILD_ON = "compute"
# -------------------------------------------------------------------------------------------

site_configuration = configuration(
    Site(
        name="vsc5",
        descr="VSC-5 (zen3_0512): 2 x AMD EPYC 7713, 128 cores, 16 NUMA nodes",
        hostnames=[r"l5\d+", r"n3\d+-\d+"],
        account=ACCOUNT,
        node_hour_price=NODE_HOUR_PRICE,
        currency=CURRENCY,
        build_on=BUILD_ON,
        environments=[org12_patched(SPACK_SETUP, site="vsc5")],
        partitions=[
            Partition(
                name="zen3_0512",
                descr="zen3_0512 nodes, srun with pmix",
                slurm_partition="zen3_0512",
                access=[f"--qos={QOS}"],
                topology="vsc5",
                published_costs="vsc5",  # seed 000 Table 2, until the p2p check runs
                cores=128,
                numa_nodes=16,
                nps="NPS4",
                ppn=[32, 64, 96, 128],
                nodes=[1, 2, 3, 4, 5, 6, 7, 8, 9, 10],  # seed 000 scaled 2..10 nodes
                ucx=["auto", "rndv16k", "rndv128k"],
                # The UCX under the site's Open MPI 4.1 may predate the intra:/inter: form.
                ucx_inter=["auto", "rc-128k-flat", "ud-128k-flat"],
                coll=["default", "han"],
            )
        ],
    )
)
