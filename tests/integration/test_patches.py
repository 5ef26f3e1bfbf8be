"""The patch series apply to the sources they are written for, and each has its header."""

import os
import subprocess
from pathlib import Path

import pytest

from conftest import REPO
from localsite import openfoam

SERIES = sorted(p for p in (REPO / "patches").iterdir() if p.is_dir())


@pytest.mark.parametrize("series", SERIES, ids=lambda p: p.name)
def test_every_patch_has_a_header(series):
    patches = sorted(series.glob("*.patch"))
    assert patches
    for patch in patches:
        header = patch.read_text().split("diff --git", 1)[0]
        lines = header.strip().splitlines()
        assert len(lines) >= 4, f"{patch.name}: the header must say what changes and why"
        assert any(line.startswith("Applies to:") for line in lines), patch.name


def dry_run(series: Path, tree: Path) -> subprocess.CompletedProcess:
    """Apply the series in order to a scratch copy of the files it touches."""
    return subprocess.run(
        [
            "bash",
            "-c",
            'set -e; for p in "$0"/*.patch; do patch -p1 --forward -s < "$p"; done',
            str(series),
        ],
        cwd=tree,
        capture_output=True,
        text=True,
    )


def scratch_copy(src: Path, dest: Path, series: Path) -> Path:
    """The files the series touches, copied from ``src`` (files it creates are left to it)."""
    for patch in sorted(series.glob("*.patch")):
        for line in patch.read_text().splitlines():
            if line.startswith("+++ b/"):
                rel = line[6:]
                (dest / rel).parent.mkdir(parents=True, exist_ok=True)
                if (src / rel).exists():
                    (dest / rel).write_bytes((src / rel).read_bytes())
    return dest


def test_esi_v1912_applies_to_debians_source(tmp_path):
    series = REPO / "patches" / "esi-v1912"
    tree = scratch_copy(openfoam.source_tree(), tmp_path, series)
    done = dry_run(series, tree)
    assert done.returncode == 0, done.stdout + done.stderr


ORG12 = os.environ.get("OPENFOAM_ORG12_SRC")


@pytest.mark.skipif(
    not ORG12,
    reason="OPENFOAM_ORG12_SRC does not name an OpenFOAM-12 source "
    "tree: set it to check patches/org-12 applies",
)
def test_org12_applies_to_openfoam_12(tmp_path):
    series = REPO / "patches" / "org-12"
    tree = scratch_copy(Path(ORG12), tmp_path, series)
    done = dry_run(series, tree)
    assert done.returncode == 0, done.stdout + done.stderr
