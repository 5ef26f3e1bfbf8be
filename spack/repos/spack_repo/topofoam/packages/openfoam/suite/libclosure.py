"""The libraries of an OpenFOAM tree that the suite's applications need, and no others.

A full ``src/Allwmake`` compiles every library of the release (3,500 objects for ESI v2512,
a quarter of them for adjoint optimisation, Lagrangian particles, region and rigid-body
models the benchmark cases never load). build-needed.sh builds only what this module names:
the libraries the applications of a needs file link (``EXE_LIBS`` in their ``Make/options``),
the ones a case loads at run time (its ``library`` lines: decomposition and renumbering
methods, function objects) and, transitively, what each of those links (``LIB_LIBS``).
``wmake-needed/wmake`` skips every other library folder while ``src/Allwmake`` runs, so the
release's own build order and configuration (SCOTCH detection, MPI selection) stay as they are.

    python3 libclosure.py TREE NEEDS OUT

writes OUT: one line per library folder, ``<name> <folder relative to TREE>``, and prints how
many library folders and objects that is, and how many library folders the tree has. Standard
library only: the build runs it with the system Python (Spack's build too).
"""

from __future__ import annotations

import hashlib
import re
import sys
from pathlib import Path

# LIB = $(FOAM_LIBBIN)/libfiniteVolume, $(FOAM_MPI_LIBBIN)/libPstream, .../dummy/libmetisDecomp
_LIB = re.compile(r"^\s*LIB\s*=\s*\S*?/lib(\w+)\s*$", re.M)
_SOURCE = re.compile(r"\.(?:[cCL]|cxx|cpp)$")


def digest(folder: Path) -> str:
    """The sha256 of a folder's files, their paths and contents (Python's caches left out):
    the suite's identity. The overlay packages state it (SUITE_SHA256), since Spack hashes a
    package's own source and not the files beside it."""
    sha = hashlib.sha256()
    for path in sorted(p for p in Path(folder).rglob("*") if p.is_file()):
        if "__pycache__" in path.parts:
            continue
        sha.update(path.relative_to(folder).as_posix().encode() + b"\0")
        sha.update(path.read_bytes() + b"\0")
    return sha.hexdigest()


def library_folders(tree: Path) -> dict[str, list[str]]:
    """Library name -> the folders under src/ that build it (a dummy and the real one may
    share a name)."""
    found: dict[str, list[str]] = {}
    for files in sorted(tree.glob("src/**/Make/files")):
        match = _LIB.search(files.read_text(errors="replace"))
        if match:
            folder = files.parent.parent.relative_to(tree).as_posix()
            found.setdefault(match.group(1), []).append(folder)
    return found


def linked(folder: Path, *variables: str) -> list[str]:
    """The libraries ``variables`` of ``folder/Make/options`` link, by ``-l<name>`` or as
    ``lib<name>.o`` (none without the file)."""
    options = folder / "Make" / "options"
    if not options.is_file():
        return []
    text = options.read_text(errors="replace").replace("\\\n", " ")
    names: list[str] = []
    for variable in variables:
        for line in re.findall(rf"^\s*{variable}\s*\+?=(.*)$", text, re.M):
            names += re.findall(r"(?<![\w$(])-l(\w+)", line)
            # an object library linked in whole: $(FOAM_LIBBIN)/libOSspecific.o
            names += re.findall(r"/lib(\w+)\.o\b", line)
    return names


def needed(
    tree: Path,
    applications: list[str],
    required: list[str],
    folders: dict[str, list[str]] | None = None,
) -> dict[str, list[str]]:
    """Every library the applications and ``required`` need, with its folders. Names no
    folder builds (system libraries: scotch, mpi, z) are left out. ``folders``: the tree's
    ``library_folders``, if already read."""
    folders = folders if folders is not None else library_folders(tree)
    todo = list(required)
    for app in applications:
        # A solver module (OpenFOAM-12's applications/modules) is a library: LIB_LIBS. Its
        # Allwmake builds the libraries in its subfolders too (incompressibleVoF's
        # fvModels/VoFCavitation links incompressibleCavitationModels).
        for options in sorted((tree / app).glob("**/Make/options")):
            todo += linked(options.parent.parent, "EXE_LIBS", "LIB_LIBS")
    closure: dict[str, list[str]] = {}
    while todo:
        name = todo.pop()
        if name in closure or name not in folders:
            continue
        closure[name] = folders[name]
        for folder in folders[name]:
            todo += linked(tree / folder, "LIB_LIBS")
    return dict(sorted(closure.items()))


class NeedsError(ValueError):
    """A needs file that cannot be read: the message names the file, the line and the fix."""


def read_needs(path: Path) -> tuple[list[str], list[str]]:
    """The applications (in build order) and run-time libraries of a needs file: lines
    ``application <folder>`` and ``library <name>``; ``#`` starts a comment."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise NeedsError(f"{path}: cannot be read ({e.strerror}) -- restore it from git") from None
    applications: list[str] = []
    libraries: list[str] = []
    for n, line in enumerate(text.splitlines(), start=1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        if len(words) != 2 or words[0] not in ("application", "library"):
            raise NeedsError(
                f"{path}:{n}: {line.strip()!r} is neither 'application <folder>' nor "
                f"'library <name>' -- correct the line"
            )
        (applications if words[0] == "application" else libraries).append(words[1])
    if not applications:
        raise NeedsError(f"{path}: names no application -- restore it from git")
    return applications, libraries


def sources(tree: Path, folder: str) -> int:
    """How many objects ``folder`` compiles (its Make/files' sources)."""
    files = tree / folder / "Make" / "files"
    if not files.is_file():
        return 0
    return sum(1 for word in files.read_text(errors="replace").split() if _SOURCE.search(word))


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: libclosure.py TREE NEEDS OUT", file=sys.stderr)
        return 2
    tree, needs, out = Path(argv[0]), Path(argv[1]), Path(argv[2])
    if not (tree / "src").is_dir():
        print(f"libclosure: {tree} has no src/ -- is it an OpenFOAM tree?", file=sys.stderr)
        return 1
    try:
        applications, required = read_needs(needs)
    except NeedsError as e:
        print(f"libclosure: {e}", file=sys.stderr)
        return 1
    every = library_folders(tree)
    closure = needed(tree, applications, required, every)
    missing = sorted(set(required) - set(closure))
    if missing:
        print(
            f"libclosure: no folder of {tree}/src builds lib{', lib'.join(missing)} -- "
            f"correct the library lines of {needs}",
            file=sys.stderr,
        )
        return 1
    folders = [folder for dirs in closure.values() for folder in dirs]
    out.write_text(
        "".join(f"{name} {folder}\n" for name, dirs in closure.items() for folder in dirs)
    )
    # For the build's progress: how many library folders and objects that is, of how many.
    print(
        len(folders),
        sum(sources(tree, folder) for folder in folders),
        sum(len(dirs) for dirs in every.values()),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
