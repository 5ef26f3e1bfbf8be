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


def touched(series: Path) -> list[str]:
    """The files the series changes (not those it creates)."""
    paths = []
    for patch in sorted(series.glob("*.patch")):
        lines = patch.read_text().splitlines()
        for old, new in zip(lines, lines[1:]):
            if old.startswith("--- a/") and new.startswith("+++ b/") and new[6:] not in paths:
                paths.append(new[6:])
    return paths


def archive_scratch(flavour_name: str, series: Path, dest: Path) -> Path | None:
    """The files ``series`` changes, extracted from the flavour's source archive in the source
    mirror (TOPOFOAM_SOURCES, localsite/sources.py) into ``dest``; None without the archive."""
    from localsite import flavours, sources

    try:
        archive = sources.find(flavours.get(flavour_name).archive, download=False)
    except sources.SourceError:
        return None
    dest.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["tar", "-xzf", str(archive), "-C", str(dest), "--strip-components=1", "--wildcards"]
        + [f"*/{rel}" for rel in touched(series)],
        check=True,
    )
    return dest


def has_source(archive: str) -> bool:
    folder = os.environ.get("TOPOFOAM_SOURCES")
    return bool(folder and (Path(folder) / archive).is_file())


@pytest.mark.skipif(
    not (os.environ.get("OPENFOAM_ORG12_SRC") or has_source("OpenFOAM-12.tar.gz")),
    reason="no OpenFOAM-12 source: set TOPOFOAM_SOURCES to a folder with OpenFOAM-12.tar.gz "
    "(or OPENFOAM_ORG12_SRC to an extracted tree) to check patches/org-12 applies",
)
def test_org12_applies_to_openfoam_12(tmp_path):
    series = REPO / "patches" / "org-12"
    if os.environ.get("OPENFOAM_ORG12_SRC"):
        tree = scratch_copy(Path(os.environ["OPENFOAM_ORG12_SRC"]), tmp_path, series)
    else:
        tree = archive_scratch("org12", series, tmp_path)
    done = dry_run(series, tree)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.skipif(
    not has_source("OpenFOAM-v2512.tar.gz"),
    reason="no ESI v2512 source: set TOPOFOAM_SOURCES to a folder with OpenFOAM-v2512.tar.gz "
    "to check patches/esi-v2512 applies",
)
def test_esi_v2512_applies_with_git_apply_in_order(tmp_path):
    """As build-tree.sh applies it: git apply, one patch after the other."""
    series = REPO / "patches" / "esi-v2512"
    tree = archive_scratch("v2512", series, tmp_path)
    subprocess.run(["git", "init", "-q"], cwd=tree, check=True)
    for patch in sorted(series.glob("*.patch")):
        done = subprocess.run(
            ["git", "apply", str(patch)], cwd=tree, capture_output=True, text=True
        )
        assert done.returncode == 0, f"{patch.name}: {done.stderr}"
    assert (tree / "src/OpenFOAM/db/IOstreams/Pstreams/reductionSchedule.C").is_file()
    assert "RePiPePCG/RePiPePCG.C" in (tree / "src/OpenFOAM/Make/files").read_text()
