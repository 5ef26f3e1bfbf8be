"""rankmap: topology-aware rank placement and hierarchical reduction schedules for OpenFOAM.

See rankmap/README.md for the method, the file formats and the CLI (``python -m rankmap``).
"""

__version__ = "0.1.0"
