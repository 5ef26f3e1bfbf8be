"""ReFrame site configuration: OCI BM.Optimized3.36 cluster (seed 002's system).

Nodes: 2 x Intel Xeon Ice Lake, 36 cores, SMT off; NPS1 (one NUMA node per socket) or NPS2
(two); RoCE cluster network 100 Gbps; OpenMPI 5 with UCX (../shared/reference/systems.csv).
The NPS setting is a BIOS setting of the nodes, so each one is a partition: the intra2 stage
runs on both and compares.

    reframe -C site-configs/oci.py -c reframe -l
    python -m topofoam.prediction.plan -C site-configs/oci.py -t intra2
    reframe -C site-configs/oci.py -c reframe -r -t intra1

Set the block below for your tenancy; nothing else needs editing.
"""

from sitekit.cluster import Partition, Site, configuration, esi2512_patched

# -- the site's settings --------------------------------------------------------------------
ACCOUNT = ""
PARTITION_NPS1 = "nps1"  # Slurm partitions of the NPS1 and NPS2 nodes
PARTITION_NPS2 = "nps2"
SPACK_SETUP = "$HOME/spack/share/spack/setup-env.sh"
NODE_HOUR_PRICE = None  # your BM.Optimized3.36 price per node-hour
CURRENCY = ""
# Where OpenFOAM is built: "compute" (a batch job on a node of the partition) or "login"
# (the login node, only where your centre allows builds there).
BUILD_ON = "compute"
# -------------------------------------------------------------------------------------------

# Seed 002: intra1 tried 8/16/32/36 processes per node; intra2 five (UCX, collectives)
# pairs, defaults (auto, hcoll) first; inter1 three UCX inter-node settings at 2, 4, 8 nodes.
_common = dict(
    cores=36,
    ppn=[8, 16, 32, 36],
    nodes=[1, 2, 4, 8],
    ucx=["auto", "rndv16k-intra", "rndv128k-intra"],
    ucx_inter=["auto", "rc-128k", "ud-128k"],
    coll=["hcoll", "ucc"],
    intra2_pairs=[
        ("auto", "hcoll"),
        ("rndv16k-intra", "hcoll"),
        ("rndv16k-intra", "ucc"),
        ("rndv128k-intra", "hcoll"),
        ("rndv128k-intra", "ucc"),
    ],
    mpi="openmpi5",
)

site_configuration = configuration(
    Site(
        name="oci",
        descr="OCI BM.Optimized3.36: 2 x Xeon Ice Lake, 36 cores, NPS1 or NPS2",
        hostnames=[r".*-bastion", r"inst-.*"],
        account=ACCOUNT,
        node_hour_price=NODE_HOUR_PRICE,
        currency=CURRENCY,
        build_on=BUILD_ON,
        environments=[esi2512_patched(SPACK_SETUP, site="oci")],
        partitions=[
            Partition(
                name="nps1",
                descr="BM.Optimized3.36 at NPS1, srun with pmix",
                slurm_partition=PARTITION_NPS1,
                topology="oci-nps1",
                numa_nodes=2,
                nps="NPS1",
                **_common,
            ),
            Partition(
                name="nps2",
                descr="BM.Optimized3.36 at NPS2, srun with pmix",
                slurm_partition=PARTITION_NPS2,
                topology="oci-nps2",
                numa_nodes=4,
                nps="NPS2",
                **_common,
            ),
        ],
    )
)
