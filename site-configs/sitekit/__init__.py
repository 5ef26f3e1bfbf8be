"""What every site configuration of TopoFOAM bench shares: the logging and perflog layout
(common.py) and the builder of a Slurm cluster site (cluster.py) that vsc5.py, hpc2.py and
oci.py fill in with their facts. The presets they name are the library's
(reframe/topofoam/config/presets.py)."""
