"""Debian's OpenFOAM on the local site: where it is, and the libraries we build for it.

The build (``build-openfoam.sh``) is cached outside the clone under
``<cache>/openfoam/v<source version>-<key>``, where the key hashes the build's inputs, so a
second run, another clone and CI reuse it while any change to the inputs rebuilds.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

from localsite import paths

BUILD_SCRIPT = Path(__file__).with_name("build-openfoam.sh")
# Debian's installed OpenFOAM: only WM_PROJECT_DIR is needed to run it (its bashrc prints errors).
PROJECT_DIR = Path("/usr/share/openfoam")
EXAMPLES = Path("/usr/share/doc/openfoam-examples/examples")


class BuildError(RuntimeError):
    """The local OpenFOAM build cannot run or failed; the message names the fix."""


def source_version() -> str:
    """The version of the installed Debian openfoam source package, e.g. 1912.200626-1."""
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f=${source:Version}", "openfoam"],
                             capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        raise BuildError("Debian's openfoam package is not installed -- "
                         "run site-configs/local/setup.sh") from None
    return out.stdout.strip()


def source_tree(version: str | None = None) -> Path:
    return paths.cache_dir() / "src" / f"openfoam-{version or source_version()}"


def build_prefix(version: str | None = None) -> Path:
    """Where the build for the current inputs lives (built or not)."""
    version = version or source_version()
    digest = hashlib.sha256(version.encode() + b"\0" + BUILD_SCRIPT.read_bytes())
    return paths.cache_dir() / "openfoam" / f"v{version}-{digest.hexdigest()[:16]}"


def lib_dir() -> Path:
    """The folder to put first in LD_LIBRARY_PATH (real libscotchDecomp.so)."""
    return build_prefix() / "lib"


def is_built() -> bool:
    return (build_prefix() / ".complete").exists()


def ensure_built() -> Path:
    """Build the libraries unless the cache has them; returns the lib folder."""
    version = source_version()
    prefix = build_prefix(version)
    if not (prefix / ".complete").exists():
        print(f"building OpenFOAM libraries into {prefix} (once; cached)", file=sys.stderr)
        done = subprocess.run(["bash", str(BUILD_SCRIPT), str(source_tree(version)), str(prefix)])
        if done.returncode != 0:
            raise BuildError(f"the OpenFOAM build failed (see the lines above) -- "
                             f"fix the cause and rerun; log: {prefix}.failed.log")
    return prefix / "lib"
