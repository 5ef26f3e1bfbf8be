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
    if not patches:
        pytest.skip(f"patches/{series.name} has no patches yet (its README says what is to come)")
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


def org12_tree(tmp_path: Path) -> Path | None:
    """An OpenFOAM-12 source tree: OPENFOAM_ORG12_SRC, or the archive in the source mirror
    (TOPOFOAM_SOURCES, localsite/sources.py) extracted into ``tmp_path``; None without both."""
    if os.environ.get("OPENFOAM_ORG12_SRC"):
        return Path(os.environ["OPENFOAM_ORG12_SRC"])
    from localsite import flavours, sources

    try:
        archive = sources.find(flavours.ORG12.archive)
    except sources.SourceError:
        return None
    tmp_path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["tar", "-xzf", str(archive), "-C", str(tmp_path)], check=True)
    return tmp_path / flavours.ORG12.top


ORG12_SOURCE = bool(
    os.environ.get("OPENFOAM_ORG12_SRC")
    or (
        os.environ.get("TOPOFOAM_SOURCES")
        and (Path(os.environ["TOPOFOAM_SOURCES"]) / "OpenFOAM-12.tar.gz").is_file()
    )
)


@pytest.mark.skipif(
    not ORG12_SOURCE,
    reason="no OpenFOAM-12 source: set TOPOFOAM_SOURCES to a folder with OpenFOAM-12.tar.gz "
    "(or OPENFOAM_ORG12_SRC to an extracted tree) to check patches/org-12 applies",
)
def test_org12_applies_to_openfoam_12(tmp_path):
    series = REPO / "patches" / "org-12"
    source = org12_tree(tmp_path / "source")
    assert source is not None and (source / "etc" / "bashrc").is_file()
    tree = scratch_copy(source, tmp_path / "scratch", series)
    done = dry_run(series, tree)
    assert done.returncode == 0, done.stdout + done.stderr
