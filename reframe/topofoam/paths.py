"""The one place that knows where the project keeps things.

The clone (``REPO``) and the folders under it, and the three settings that move them:
``TOPOFOAM_RESULTS`` (runs, perflogs, reports), ``TOPOFOAM_RUN`` (local daemon state) and
``TOPOFOAM_CACHE`` (long builds and prepared cases, outside the clone, shared by clones).
Nothing here creates a folder or reads anything but the environment.
"""

from __future__ import annotations

import os
from pathlib import Path

#: reframe/topofoam/paths.py -> the repository root
REPO = Path(__file__).resolve().parents[2]

#: The checks (``reframe -c reframe``) and their C/C++ sources.
CHECKS = REPO / "reframe"
SOURCES = CHECKS / "src"
#: One ReFrame configuration per site.
SITE_CONFIGS = REPO / "site-configs"
#: The OpenFOAM patch series, one folder per flavour and version.
PATCHES = REPO / "patches"


def site_config(system: str) -> Path:
    """The ReFrame configuration of ``system`` (``site-configs/<system>.py``)."""
    return SITE_CONFIGS / f"{system}.py"


def run_dir() -> Path:
    """Daemon state and logs of this clone (local and emulated Slurm), never committed."""
    return Path(os.environ.get("TOPOFOAM_RUN", REPO / ".run"))


def results_dir() -> Path:
    """Where ReFrame's stage/output folders, perflogs and reports land."""
    return Path(os.environ.get("TOPOFOAM_RESULTS", REPO / "results"))


def cache_dir() -> Path:
    """Long builds and prepared cases, kept outside the clone and shared by clones (each
    entry keyed by its inputs)."""
    default = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "topofoam"
    return Path(os.environ.get("TOPOFOAM_CACHE", default))


def references_dir() -> Path:
    """Folder of the sites' performance references, ``<system>.yaml``."""
    return Path(os.environ.get("TOPOFOAM_REFERENCES", SITE_CONFIGS / "references"))


def references_file(system: str) -> Path:
    """The performance references of ``system`` (``python -m topofoam.results.references`` writes
    them from a baseline run)."""
    return references_dir() / f"{system}.yaml"


def expectations_file(system: str) -> Path:
    """The validation expectations of ``system``: the site's reviewed, committed file
    (``site-configs/expectations/<system>.yaml``) if there is one, else those recorded by a
    first validation run here (``<results>/expectations/<system>.yaml``)."""
    committed = SITE_CONFIGS / "expectations" / f"{system}.yaml"
    return committed if committed.exists() else results_dir() / "expectations" / f"{system}.yaml"
