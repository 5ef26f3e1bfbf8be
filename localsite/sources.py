"""OpenFOAM source archives, from the folder a site uses as its source mirror.

``TOPOFOAM_SOURCES`` names one folder. An archive is found there under its release name
(``OpenFOAM-12.tar.gz``, as upstream and the offline kit call it) or in the layout of a Spack
source mirror (``openfoam-org/openfoam-org-12.tar.gz``), so an air-gapped site points the
setting at its existing Spack mirror. Without it, on a machine with internet, the archive is
downloaded once from the upstream address Spack's package uses, checked against Spack's
checksum, and kept in the cache.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import threading
import urllib.request
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from topofoam import paths


class SourceError(RuntimeError):
    """No usable source archive; the message says what is missing and how to provide it."""


@dataclass(frozen=True)
class Archive:
    """One release's source archive and where it may come from."""

    name: str  # what upstream and the offline kit call it: OpenFOAM-12.tar.gz
    mirror_path: str  # in a Spack source mirror: openfoam-org/openfoam-org-12.tar.gz
    url: str  # upstream, as Spack's package builds it
    #: of the upstream archive (Spack's); a mirror's own copy may be repacked. Empty where
    #: Spack pins a git commit instead (the url then names that commit, so it cannot move).
    sha256: str


def sources_dir() -> Path | None:
    value = os.environ.get("TOPOFOAM_SOURCES")
    return Path(value) if value else None


def find(archive: Archive, download: bool = True) -> Path:
    """The archive's path: from TOPOFOAM_SOURCES, else the cache, else downloaded (only when
    ``download``: looking a build up must not fetch its sources)."""
    folder = sources_dir()
    if folder is not None:
        for candidate in (folder / archive.name, folder / archive.mirror_path):
            if candidate.is_file():
                return candidate
        # A site that names its mirror means it: no download behind its back.
        raise SourceError(
            f"{archive.name} is not in TOPOFOAM_SOURCES={folder} (nor "
            f"{archive.mirror_path} there) -- put the archive there, or unset "
            f"TOPOFOAM_SOURCES to download it from {archive.url}"
        )
    cached = paths.cache_dir() / "sources" / archive.name
    if cached.is_file():
        return cached
    where = "TOPOFOAM_SOURCES (not set)"
    if not download:
        raise SourceError(
            f"{archive.name} is not in {where} nor in {cached.parent} -- set TOPOFOAM_SOURCES "
            f"to its folder, or build once to download it"
        )
    return _fetched(archive, cached, where, "a folder and set TOPOFOAM_SOURCES to it")


def find_dependency(archive: Archive, download: bool = True) -> Path:
    """A dependency's source archive (one Debian lacks and Spack builds): from
    TOPOFOAM_SOURCES when it holds it, else the cache, else downloaded from its registry
    (only when ``download``). Unlike an OpenFOAM release's, it is fetched when the site's
    folder lacks it: the folder is the mirror of what cannot be downloaded here."""
    folder = sources_dir()
    if folder is not None:
        for candidate in (folder / archive.name, folder / archive.mirror_path):
            if candidate.is_file():
                return candidate
    cached = paths.cache_dir() / "sources" / archive.name
    if cached.is_file():
        return cached
    where = f"TOPOFOAM_SOURCES={folder}" if folder else "TOPOFOAM_SOURCES (not set)"
    if not download:
        raise SourceError(f"{archive.name} is not in {where} nor in {cached.parent}")
    return _fetched(archive, cached, where, "the folder TOPOFOAM_SOURCES names")


def _fetched(archive: Archive, cached: Path, where: str, put_in: str) -> Path:
    """The archive downloaded into ``cached``, or one line saying where to put it."""
    try:
        return _download(archive, cached)
    except OSError as e:
        raise SourceError(
            f"{archive.name} is not in {where} and {archive.url} cannot be fetched "
            f"({getattr(e, 'reason', None) or e}) -- put {archive.name} (or the Spack mirror "
            f"path {archive.mirror_path}) in {put_in}"
        ) from None


def part_of(path: Path) -> Path:
    """Where this process writes ``path`` before renaming it into place: a name of its own,
    so that two processes making the same file (two ./bench runs) never write into one.
    What a killed process left half-written there is removed first (_stale_parts)."""
    for stale in _stale_parts(path):
        stale.unlink(missing_ok=True)
    return path.with_name(f"{path.name}.{os.getpid()}-{threading.get_ident()}.part")


def _stale_parts(path: Path) -> list[Path]:
    """The ``.part`` files of ``path`` whose writer no longer runs: a download or a mirror
    tarball a stopped process left behind (each as large as the archive). A part whose
    process id is alive is kept, as it may be another ./bench writing it now."""
    stale = []
    for part in path.parent.glob(f"{path.name}.*-*.part"):
        pid = part.name.removeprefix(f"{path.name}.").partition("-")[0]
        if pid.isdigit() and not _alive(int(pid)):
            stale.append(part)
    return stale


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        pass
    return True


def _download(archive: Archive, dest: Path) -> Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = part_of(dest)
    digest = hashlib.sha256()
    with urllib.request.urlopen(archive.url, timeout=30) as response, open(part, "wb") as out:
        while chunk := response.read(1 << 20):
            digest.update(chunk)
            out.write(chunk)
    if archive.sha256 and digest.hexdigest() != archive.sha256:
        part.unlink()
        raise SourceError(
            f"{archive.url} does not have Spack's checksum {archive.sha256} -- the download "
            f"is damaged or the release was changed; fetch it by hand and set "
            f"TOPOFOAM_SOURCES to its folder"
        )
    shutil.move(part, dest)
    return dest


def checksum(path: Path) -> str:
    """sha256 of the archive, computed once per file version (path, size, mtime)."""
    st = Path(path).stat()
    return _checksum(str(Path(path).resolve()), st.st_size, st.st_mtime_ns)


@lru_cache(maxsize=16)
def _checksum(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()
