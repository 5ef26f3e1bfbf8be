"""One checked way to write what a command produces: every output file and folder of the
tools goes through here.

    out = output.folder(args.out_dir, "--out-dir")        # made, or OutputError
    output.write_text(out / "verdict.json", text, "--out-dir")
    with output.replacing(path, "--json") as f: ...       # atomic: the old file or the new
    sys.exit(output.main("validation", run, argv))        # one line, exit 2 / 130

A path is checked before anything is written to it: a folder must be a folder or creatable
(its first existing ancestor a writable folder), a file must not be a folder, and the file
system must have space left. A refusal is one line, ``<tool>: <what> -- <fix>``, exit 2.
Files are written to a temporary beside them and renamed over the old one when complete,
so a stop mid-write (Ctrl-C, SIGTERM, a full disk) leaves the old file or none, never half.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

#: Below this many free bytes an output is refused before it is started: the report and
#: the export write a few MB at most, and a file system that full fails something soon.
MIN_FREE = 1 << 20


class OutputError(Exception):
    """An output path that cannot be written: ``<what> -- <fix>``."""


def _existing_ancestor(path: Path) -> Path:
    for candidate in (path, *path.parents):
        if candidate.exists() or candidate.is_symlink():
            return candidate
    return Path("/")


def _space_left(where: Path, what: str) -> None:
    try:
        free = shutil.disk_usage(where).free
    except OSError:
        return  # not knowable (a dangling mount): the write itself will say
    if free < MIN_FREE:
        raise OutputError(
            f"{what}: {where} has {free:,} bytes free -- free some space or choose another place"
        )


def folder(path: Path | str, what: str = "output folder") -> Path:
    """``path`` as a folder that exists, is writable and has space left (made if missing)."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise OutputError(f"{what}: {path} is a file, not a folder -- name a folder")
    base = _existing_ancestor(path)
    if not base.is_dir():
        raise OutputError(
            f"{what}: {base} is a file, so {path} cannot be made under it -- name a folder "
            "whose parents are folders"
        )
    if not os.access(base, os.W_OK | os.X_OK):
        raise OutputError(
            f"{what}: {base} is not writable here, so {path} cannot be written -- choose a "
            "writable place or change its permissions"
        )
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OutputError(
            f"{what}: cannot make {path} ({e.strerror or e}) -- choose another place"
        ) from None
    _space_left(path, what)
    return path


def file(path: Path | str, what: str = "output file") -> Path:
    """``path`` as a file that can be written (its folder made if missing)."""
    path = Path(path)
    if path.is_dir():
        raise OutputError(
            f"{what}: {path} is a folder, not a file -- name a file, e.g. {path / 'out'}"
        )
    folder(path.parent, what)
    if path.exists() and not os.access(path, os.W_OK):
        raise OutputError(
            f"{what}: {path} is not writable -- choose another file or change its permissions"
        )
    return path


@contextlib.contextmanager
def replacing(
    path: Path | str, what: str = "output file", *, binary: bool = False, newline: str | None = None
) -> Iterator:
    """A file object writing a temporary beside ``path``, which replaces ``path`` only when
    the block ends normally; on any error or interrupt the temporary is removed."""
    path = file(path, what)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb" if binary else "w", newline=newline) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise OutputError(
            f"{what}: cannot write {path} ({e.strerror or e}) -- choose another place or free "
            "some space"
        ) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_text(path: Path | str, text: str, what: str = "output file") -> Path:
    """``text`` as the whole of ``path``, atomically."""
    with replacing(path, what) as f:
        f.write(text)
    return Path(path)


def main(tool: str, run: Callable[[], int]) -> int:
    """``run()``'s exit status, with an output refusal as one line (exit 2) and an interrupt
    (Ctrl-C, or SIGTERM, made one here) as ``<tool>: interrupted`` (exit 130), and a reader
    that closed its end of stdout (``| head``) as exit 141, no traceback."""

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, interrupt)
    except ValueError:  # not the main thread: its caller handles signals
        previous = None
    try:
        return run()
    except OutputError as e:
        print(f"{tool}: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{tool}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (``| head``): what it did not read is not an error to show.
        # Python's exit would flush stdout into the closed pipe again and say so.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, as a shell reports a command a pipe ended
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
