"""What a cache entry held when it was made: every file's size and SHA-256, recorded last,
checked before the entry is used. A prepared case or a build whose files were cut, removed,
edited or damaged in place (at the same size) is then made again, never used. And the marker
its maker writes last, which says the entry was finished at all.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path

#: The file a cache entry's maker writes last (localsite's build scripts touch it too): an
#: entry without it is unfinished, a build stopped midway that continues in it.
COMPLETE = ".complete"


def is_complete(folder: Path) -> bool:
    """Whether the cache entry ``folder`` was finished (its maker wrote COMPLETE last)."""
    return (folder / COMPLETE).exists()


def mark_complete(folder: Path) -> None:
    """Mark the cache entry ``folder`` finished: the last step of making it."""
    (folder / COMPLETE).touch()


def digest(path: Path) -> str:
    """SHA-256 of a file's content."""
    sha = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            sha.update(block)
    return sha.hexdigest()


def record(folder: Path, files: Iterable[Path], manifest: Path) -> None:
    """Write ``manifest``: each of ``files`` (inside ``folder``) with its size and digest."""
    entries = {
        str(path.relative_to(folder)): [path.stat().st_size, digest(path)]
        for path in sorted(files)
        if path.is_file() and path != manifest
    }
    manifest.write_text(json.dumps(entries, indent=0) + "\n")


def damaged(folder: Path, manifest: Path) -> str | None:
    """Why the files ``manifest`` lists no longer are what was recorded, or None."""
    try:
        entries = json.loads(manifest.read_text())
        if not isinstance(entries, dict) or not entries:
            raise ValueError
    except (OSError, ValueError):
        return f"no readable {manifest.name}"
    for rel, recorded in entries.items():
        if not (isinstance(recorded, list) and len(recorded) == 2):
            return f"{manifest.name} records no content hashes (an older suite made it)"
        size, sha = recorded
        try:
            have = (folder / rel).stat().st_size
            if have != size:
                return f"{rel} has {have} bytes, {size} when it was made"
            if digest(folder / rel) != sha:
                return f"{rel} changed since it was made (its content hash differs)"
        except OSError:
            return f"{rel} is missing"
    return None


def changed(folder: Path, manifest: Path) -> list[Path]:
    """The files ``manifest`` lists that are missing or differ from what was recorded (all
    of them when the manifest cannot be read)."""
    try:
        entries = json.loads(manifest.read_text())
        if not isinstance(entries, dict):
            raise ValueError
    except (OSError, ValueError):
        return []
    out = []
    for rel, recorded in entries.items():
        path = folder / rel
        try:
            size, sha = recorded
            if path.stat().st_size != size or digest(path) != sha:
                out.append(path)
        except (OSError, TypeError, ValueError):
            out.append(path)
    return out


def check_or_record(folder: Path, files: Iterable[Path], manifest: Path) -> str | None:
    """damaged() for an entry that has a manifest; one made before manifests were written
    (marked finished, but with no record) gets one now, from what it holds."""
    if not manifest.exists():
        record(folder, files, manifest)
        return None
    return damaged(folder, manifest)
