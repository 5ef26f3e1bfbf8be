"""Where the local site keeps things: the clone, its run and results folders, the build cache."""

from __future__ import annotations

import os
from pathlib import Path

# site-configs/local/paths.py -> the repository root
REPO = Path(__file__).resolve().parents[2]


def run_dir() -> Path:
    """Daemon state and logs of this clone (Slurm), never committed."""
    return Path(os.environ.get("TOPOFOAM_RUN", REPO / ".run"))


def results_dir() -> Path:
    """Where ReFrame's stage/output folders, perflogs and reports land."""
    return Path(os.environ.get("TOPOFOAM_RESULTS", REPO / "results"))


def cache_dir() -> Path:
    """Long builds, kept outside the clone and shared by clones (keyed by their inputs)."""
    default = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "topofoam"
    return Path(os.environ.get("TOPOFOAM_CACHE", default))
