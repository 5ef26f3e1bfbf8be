"""The Spack environment and overlay repository, validated by a real Spack where one is given.

Spack cannot be installed here (no network to its sources); point SPACK_ROOT at a Spack
checkout (>= 1.0, with spack-packages configured and clingo importable) to run these.
"""

import os
import subprocess
from pathlib import Path

import pytest

from conftest import REPO

SPACK_ROOT = os.environ.get("SPACK_ROOT")
needs_spack = pytest.mark.skipif(
    not SPACK_ROOT or not Path(SPACK_ROOT, "bin", "spack").exists(),
    reason="SPACK_ROOT does not point at a Spack checkout: set it to validate spack.yaml and "
    "the overlay repository (spack audit packages, spack -e . concretize -f)",
)


def spack(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(Path(SPACK_ROOT, "bin", "spack")), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=1800,
    )


@pytest.mark.parametrize("package,series", [("openfoam", "esi-v1912"), ("openfoam_org", "org-12")])
def test_overlay_links_every_patch_of_the_series(package, series):
    """The overlay reads its patches through a link to patches/: nothing is copied."""
    link = REPO / "spack/repos/spack_repo/topofoam/packages" / package / series
    assert link.is_symlink() and link.resolve() == (REPO / "patches" / series).resolve()
    assert sorted(p.name for p in link.glob("*.patch")) == sorted(
        p.name for p in (REPO / "patches" / series).glob("*.patch")
    )


@needs_spack
def test_audit_packages():
    done = spack("-e", ".", "audit", "packages", "topofoam.openfoam", "topofoam.openfoam-org")
    assert done.returncode == 0, done.stdout + done.stderr


@needs_spack
def test_concretize():
    done = spack("-e", ".", "concretize", "-f")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "openfoam@1912" in done.stdout
