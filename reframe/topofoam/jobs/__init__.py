"""The commands a job script runs on a node (``python -m topofoam.jobs.X``: the step clock,
the MPI call counter, optimisation switches, seed 001's solvers, the node's fingerprint) and
the readers of what they write. Standard library, no ReFrame: they run wherever the job does."""
