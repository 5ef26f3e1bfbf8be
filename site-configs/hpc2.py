"""ReFrame site configuration: LEC hpc2 (seed 000's second system).

Nodes: 4 x Intel Xeon Gold 6126, 48 cores, one NUMA node per socket, InfiniBand 100 Gbit/s,
OpenMPI 4.1.5, OpenFOAM-12 (../shared/reference/systems.csv).

    reframe -C site-configs/hpc2.py -c reframe -l
    python -m topofoam.prediction.plan -C site-configs/hpc2.py -t variants
    reframe -C site-configs/hpc2.py -c reframe -r -t variants

Set the block below for your project; nothing else needs editing.
"""

from sitekit.cluster import Partition, Site, configuration, org12_patched

# -- the site's settings --------------------------------------------------------------------
ACCOUNT = ""  # sbatch --account, if your site needs one
PARTITION = "compute"  # the Slurm partition of the 48-core nodes
SPACK_SETUP = "$HOME/spack/share/spack/setup-env.sh"
NODE_HOUR_PRICE = None
CURRENCY = ""
# Where OpenFOAM is built: "compute" (a batch job on a node of the partition) or "login"
# (the login node, only where your centre allows builds there).
BUILD_ON = "compute"
# -------------------------------------------------------------------------------------------

site_configuration = configuration(
    Site(
        name="hpc2",
        descr="LEC hpc2: 4 x Intel Xeon Gold 6126, 48 cores, 4 NUMA nodes",
        hostnames=[r"hpc2"],
        account=ACCOUNT,
        node_hour_price=NODE_HOUR_PRICE,
        currency=CURRENCY,
        build_on=BUILD_ON,
        environments=[org12_patched(SPACK_SETUP, site="hpc2")],
        partitions=[
            Partition(
                name="compute",
                descr="48-core nodes, srun with pmix",
                slurm_partition=PARTITION,
                topology="hpc2",
                published_costs="hpc2",  # seed 000 Table 2, until the p2p check runs
                cores=48,
                numa_nodes=4,
                ppn=[12, 24, 36, 48],
                nodes=[1, 2, 3, 4, 5, 6, 7],  # seed 000 scaled 2..7 nodes here
                ucx=["auto", "rndv16k", "rndv128k"],
                # The UCX under the site's Open MPI 4.1 may predate the intra:/inter: form.
                ucx_inter=["auto", "rc-128k-flat", "ud-128k-flat"],
                coll=["default", "han"],
            )
        ],
    )
)
