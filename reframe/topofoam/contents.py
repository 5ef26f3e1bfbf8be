"""What a cache entry held when it was made: every file's size and SHA-256, recorded last,
checked before the entry is used. A prepared case or a build whose files were cut, removed,
edited or damaged in place (at the same size) is then made again, never used. And the marker
its maker writes last, which says the entry was finished at all.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
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


def claim(lock, busy) -> None:
    """Lock the open file ``lock`` exclusively, then write this process's PID in it. When
    another process holds it, ``busy`` is called first with the PID that one wrote ('' if
    none): it may raise to give up; else this waits for the holder to let go."""
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.seek(0)
        busy(lock.read().strip())
        fcntl.flock(lock, fcntl.LOCK_EX)
    lock.seek(0)
    lock.truncate()
    lock.write(f"{os.getpid()}\n")
    lock.flush()


@contextlib.contextmanager
def exclusive(entry: Path, what: str, error: type[Exception], say=lambda line: None):
    """Held while the cache entry ``entry`` is checked and made (a lock file beside it,
    holding the maker's PID, removed when it is done): a second maker of the same entry
    (another ./bench, a test) waits for the first and then finds it made, instead of making
    it beside it and replacing it under the first's users. ``say`` gets one line when it has
    to wait. A cache folder that cannot be used raises ``error`` naming ``what`` it is and
    the setting that moves it."""
    path = Path(f"{entry}.lock")
    waited = False
    while True:
        try:
            entry.parent.mkdir(parents=True, exist_ok=True)
            lock = open(path, "a+")
        except OSError as e:
            raise error(
                f"cannot use {what} {entry.parent} ({e.strerror}) -- set TOPOFOAM_CACHE to a "
                f"folder you can write"
            ) from None

        def busy(holder: str) -> None:
            nonlocal waited
            if not waited:
                by = f" (pid {holder})" if holder else ""
                say(f"another process{by} is making {entry}; waiting for it")
                waited = True

        claim(lock, busy)
        # The maker before removed the file it held: lock the one now at the path.
        try:
            current = os.stat(path).st_ino == os.fstat(lock.fileno()).st_ino
        except FileNotFoundError:
            current = False
        if current:
            break
        lock.close()
    try:
        yield
    finally:
        path.unlink(missing_ok=True)  # before letting go: a waiter then sees it is stale
        lock.close()


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
