"""OpenFOAM flavours built here from a full source tree with the project's series:
OpenFOAM Foundation 12 (VSC-5 and LEC hpc2 run it) and ESI v2512 (OCI in seed 002).

    ./bench build org12          # or: python -m localsite.flavours org12
    ./bench build v2512

A build lives in ``<cache>/openfoam/<flavour>-<key>/``, keyed by the source archive's
checksum, the series' contents, the settings, applications and libraries, and
``BUILD_VERSION``. It is resumable: the tree is extracted
and patched once (each step recorded), and wmake is incremental, so an interrupted build
continues where it stopped; ``.complete`` marks a finished one, and ``env.json`` beside it is
the environment its tools run with (what its etc/bashrc sets). Debian's Open MPI, SCOTCH and
the system compiler; only the applications the suite uses, and of src/ only the libraries they
link or its cases load, about three quarters of it: the series' needs file and build-needed.sh
of the Spack overlay's ``suite`` folder, the recipe Spack's ``+suite`` build runs too.
Compiles go through ccache (``<cache>/ccache``) when it is installed, so a build for a changed
series recompiles only what the series touches.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from localsite import lowpriority, sources
from topofoam import contents, paths

#: Version of what build-tree.sh produces: part of every full build's cache key.
#: 2: only the libraries the applications and cases need, not all of src/.
BUILD_VERSION = "2"
BUILD_SCRIPT = Path(__file__).with_name("build-tree.sh")
OVERLAYS = Path(__file__).with_name("overlays")
#: The build recipe this shares with Spack's overlay (its +suite variant): libclosure.py,
#: wmake-needed/, build-needed.sh and each series' needs file.
SUITE = (
    paths.REPO / "spack" / "repos" / "spack_repo" / "topofoam" / "packages" / "openfoam" / "suite"
)


def _load(path: Path):
    """A module of the recipe by its path (a Spack package folder is no Python package)."""
    spec = importlib.util.spec_from_file_location(f"topofoam_suite_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


libclosure = _load(SUITE / "libclosure.py")


@functools.cache
def _needs(path: Path) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A needs file's applications and libraries, read once per process."""
    applications, libraries = libclosure.read_needs(path)
    return tuple(applications), tuple(libraries)


@dataclass(frozen=True)
class Flavour:
    name: str  # ./bench build <name>
    title: str
    archive: sources.Archive
    top: str  # the archive's top folder
    series: str  # folder of patches/
    #: etc/bashrc settings (its command-line parameters)
    settings: tuple[str, ...]
    #: a rough figure for the first build on 2 cores, said before it starts
    estimate: str
    #: folder of localsite/overlays/ copied over the extracted tree (site configuration files)
    overlay: str = ""
    #: whose release: "org" (the Foundation's) or "esi" (ESI's, with -opt-switch)
    family: str = "org"
    #: libPstream built once more against Open MPI 5 (OCI's MPI, localsite/openmpi5.py) with
    #: this WM_MPLIB: in ESI's releases libPstream alone links MPI
    openmpi5_mplib: str = ""

    @property
    def needs(self) -> Path:
        """What the suite uses of the release: the Spack overlay's needs file of the series,
        which its +suite build reads too (one recipe)."""
        return SUITE / f"{self.series}.needs"

    @property
    def applications(self) -> tuple[str, ...]:
        """Built after src/, in this order."""
        return _needs(self.needs)[0]

    @property
    def libraries(self) -> tuple[str, ...]:
        """Libraries (lib<name>.so in FOAM_LIBBIN) the cases load besides the applications'."""
        return _needs(self.needs)[1]


ORG12 = Flavour(
    name="org12",
    title="OpenFOAM-12 (Foundation)",
    archive=sources.Archive(
        name="OpenFOAM-12.tar.gz",
        mirror_path="openfoam-org/openfoam-org-12.tar.gz",
        url="https://github.com/OpenFOAM/OpenFOAM-12/archive/version-12.tar.gz",
        sha256="e59fad54c62e64f1bb89dbaebe5f99a76dc0a6a91d9aad86042a7c4cef6d0744",
    ),
    top="OpenFOAM-12",
    series="org-12",
    settings=(
        "WM_MPLIB=SYSTEMOPENMPI",
        "SCOTCH_TYPE=system",
        "ZOLTAN_TYPE=none",
        "METIS_TYPE=none",
        "PARMETIS_TYPE=none",
    ),
    estimate="about 2 h on 2 cores",
)

V2512 = Flavour(
    name="v2512",
    title="OpenFOAM v2512 (ESI)",
    archive=sources.Archive(
        name="OpenFOAM-v2512.tar.gz",
        mirror_path="openfoam/openfoam-2512.tar.gz",
        # Spack's openfoam@2512 is this commit of its git repository (tag OpenFOAM-v2512)
        url="https://gitlab.com/openfoam/core/openfoam/-/archive/"
        "87ed40d256d22ea38fcc648dfc82a22162427b18/openfoam.tar.gz",
        sha256="",
    ),
    top="OpenFOAM-v2512",
    series="esi-v2512",
    settings=("WM_MPLIB=SYSTEMOPENMPI",),
    estimate="about 4 h on 2 cores",
    overlay="v2512",
    family="esi",
    openmpi5_mplib="SYSTEMOPENMPI5",
)

FLAVOURS = {f.name: f for f in (ORG12, V2512)}


class BuildError(RuntimeError):
    """The build cannot run or failed; the message names the fix."""


def get(name: str) -> Flavour:
    try:
        return FLAVOURS[name]
    except KeyError:
        raise BuildError(f"unknown flavour '{name}' -- choose from {', '.join(FLAVOURS)}") from None


#: What Spack's compiler wrapper adds for the local site's target (x86_64) and gcc 12 takes
#: by default: the same objects with or without them, so ccache leaves them out of its hash.
SPACK_TARGET_FLAGS = "-march=x86-64 -mtune=generic"


def ccache_environ() -> dict[str, str]:
    """ccache's settings for every OpenFOAM build here, ./bench build's and Spack's: one
    cache, and absolute paths under the cache folder hashed relative to the compiler's folder
    (base_dir), so that a file compiled in another tree (a new key's, Spack's stage) hits.

    A file ./bench build compiled is then a hit for Spack's build of the same flavour, and
    the other way round: ccache hashes the preprocessed source and the flags that are not
    the preprocessor's (so not the -I that Spack's wrapper reorders, nor the -Wl,-rpath of
    Spack's rules), and the locale, which Spack's build sets to C (config:build_language)."""
    cache = paths.cache_dir()
    return {
        "CCACHE_DIR": str(cache / "ccache"),
        "CCACHE_BASEDIR": str(cache),
        "CCACHE_MAXSIZE": os.environ.get("CCACHE_MAXSIZE", "20G"),
        "CCACHE_IGNOREOPTIONS": SPACK_TARGET_FLAGS,
        **{name: "C" for name in ("LANG", "LC_ALL", "LC_CTYPE", "LC_MESSAGES")},
    }


def series_dir(flavour: Flavour) -> Path:
    return paths.PATCHES / flavour.series


def prefix(flavour: Flavour, archive: Path | None = None) -> Path:
    """The build folder for the current inputs (built or not)."""
    archive = archive or sources.find(flavour.archive, download=False)
    digest = hashlib.sha256(
        f"{flavour.name}\0{BUILD_VERSION}\0{sources.checksum(archive)}\0".encode()
    )
    # The applications and libraries decide which of src/ is built (libclosure.py).
    digest.update("\0".join(flavour.settings + flavour.applications + flavour.libraries).encode())
    series = series_dir(flavour)
    if not series.is_dir():
        raise BuildError(f"the patch series {series} is missing -- restore it from git")
    for patch in sorted(series.glob("*.patch")):
        digest.update(patch.name.encode() + b"\0" + patch.read_bytes())
    if flavour.overlay:
        for path in sorted((OVERLAYS / flavour.overlay).rglob("*")):
            if path.is_file():
                digest.update(str(path.relative_to(OVERLAYS)).encode() + b"\0" + path.read_bytes())
    return paths.cache_dir() / "openfoam" / f"{flavour.name}-{digest.hexdigest()[:16]}"


def is_built(flavour: Flavour) -> bool:
    try:
        return contents.is_complete(prefix(flavour))
    except (sources.SourceError, BuildError):
        return False


def ensure_built(flavour: Flavour) -> Path:
    """Build ``flavour`` unless the cache has it (continuing an interrupted build); returns
    the build folder."""
    try:
        archive = sources.find(flavour.archive)
    except sources.SourceError as e:
        raise BuildError(str(e)) from None
    where = prefix(flavour, archive)
    with contents.exclusive(where, "the build cache", BuildError, say=lowpriority.say):
        _build_unless_cached(flavour, archive, where)
    return where


def _build_unless_cached(flavour: Flavour, archive: Path, where: Path) -> None:
    if contents.is_complete(where):
        problem = contents.check_or_record(where, _products(where), where / CONTENTS)
        if problem is None:
            return
        # Its damaged products are removed and the build continues: wmake makes again what
        # is missing, from the kept objects (and ccache).
        lowpriority.say(
            f"the {flavour.title} build {where} is damaged ({problem}); building the damaged "
            f"files again"
        )
        for path in contents.changed(where, where / CONTENTS):
            path.unlink(missing_ok=True)
        (where / contents.COMPLETE).unlink()
    resuming = where.exists()
    lowpriority.say(
        f"{flavour.title} with patches/{flavour.series} into {where} "
        + ("(continuing an interrupted build)" if resuming else f"({flavour.estimate}; once)")
    )
    cmd = [
        "bash",
        str(BUILD_SCRIPT),
        str(archive),
        flavour.top,
        str(where),
        str(series_dir(flavour)),
        " ".join(flavour.settings),
        str(flavour.needs),
    ]
    env = dict(
        os.environ,
        BUILD_OVERLAY=str(OVERLAYS / flavour.overlay) if flavour.overlay else "",
        **ccache_environ(),
    )
    status = lowpriority.run(cmd, env=env)
    if status != 0:
        log = where / "build.log"
        stopped = lowpriority.stopped_by(status)
        if stopped:  # a stop from outside, not a failure of the build or of its archive
            raise BuildError(
                f"the {flavour.title} build was stopped ({stopped}) -- rerun './bench build "
                f"{flavour.name}': it continues where it stopped"
            )
        if not where.exists():  # the archive was refused before anything was built
            raise BuildError(
                f"the {flavour.title} build did not start: {archive} is not a usable "
                f"{flavour.archive.name} (the line above says why) -- replace it and rerun "
                f"'./bench build {flavour.name}'"
            )
        raise BuildError(
            f"the {flavour.title} build failed (see the lines above"
            + (f"; log {log}" if log.is_file() else "")
            + f") -- fix the cause and rerun './bench build {flavour.name}': it continues"
        )
    contents.record(where, _products(where), where / CONTENTS)


#: The libraries and programs a build made, with their sizes and content hashes.
CONTENTS = ".contents.json"


def _products(where: Path) -> list[Path]:
    """The build's libraries and programs (its tree's platforms/*/lib and bin)."""
    return [
        p
        for platform in where.glob("*/platforms/*")
        for sub in ("lib", "bin")
        for p in (platform / sub).rglob("*")
        if p.is_file()
    ]


#: etc/bashrc sourced with the given settings: the variables before and after (NUL-separated),
#: then libPstream built for the MPI those settings select (the main build made its dummy).
_PSTREAM_SCRIPT = r"""
set -e
env -0 > "$OUT/.env.before"
set +eu
. "$TREE/etc/bashrc" $SETTINGS > "$OUT/build.log" 2>&1
set -eu
env -0 > "$OUT/.env.after"
cd "$WM_PROJECT_DIR/src/Pstream"
./Allwmake-mpi -j "$(nproc)" >> "$OUT/build.log" 2>&1
test -f "$FOAM_LIBBIN/$FOAM_MPI/libPstream.so"
"""


def _changed_env(before: Path, after: Path) -> dict:
    """The variables a sourced script set or changed (from two ``env -0`` dumps)."""

    def read(path: Path) -> dict:
        items = path.read_bytes().split(b"\0")
        return dict(i.decode(errors="replace").split("=", 1) for i in items if b"=" in i)

    old, new = read(before), read(after)
    return {k: v for k, v in new.items() if old.get(k) != v}


def openmpi5_folder(flavour: Flavour) -> Path:
    """Where the flavour's Open MPI 5 libPstream records its environment (env.json)."""
    return prefix(flavour) / "openmpi5"


def ensure_openmpi5(flavour: Flavour, say=print) -> Path:
    """The built flavour's libPstream against Open MPI 5 as well (installed from PyPI first,
    localsite/openmpi5.py): a minute's build, once, beside the main one. Returns the folder
    whose env.json is the environment its tools run with on Open MPI 5."""
    from localsite import openmpi5

    if not flavour.openmpi5_mplib:
        raise BuildError(f"{flavour.title} has no Open MPI 5 build (only ESI's releases do)")
    where = ensure_built(flavour)
    out = openmpi5_folder(flavour)
    if contents.is_complete(out):
        return out
    try:
        openmpi5.ensure(say=say)
    except openmpi5.OpenMPI5Error as e:
        raise BuildError(str(e)) from None
    out.mkdir(exist_ok=True)
    settings = [s for s in flavour.settings if not s.startswith("WM_MPLIB=")]
    env = dict(
        openmpi5.environ(),
        OUT=str(out),
        TREE=str(where / flavour.top),
        SETTINGS=" ".join([*settings, f"WM_MPLIB={flavour.openmpi5_mplib}"]),
    )
    say(f"build: {flavour.title}'s libPstream against Open MPI {openmpi5.VERSION}")
    if subprocess.run(["bash", "-c", _PSTREAM_SCRIPT], env=env).returncode != 0:
        raise BuildError(
            f"libPstream of {flavour.title} did not build against Open MPI {openmpi5.VERSION} "
            f"(log {out}/build.log) -- fix the cause and rerun './bench build {flavour.name}'"
        )
    changed = _changed_env(out / ".env.before", out / ".env.after")
    # etc/bashrc finds an MPI's prefix through orte-info first, which is Debian's Open MPI
    # 4.1 here: its folders go, Open MPI 5's come first (the compile used its mpicc anyway).
    changed = {k: v for k, v in openmpi5.environ(changed).items() if k in changed}
    changed["MPI_ARCH_PATH"] = str(openmpi5.prefix())
    (out / "env.json").write_text(json.dumps(changed, indent=1, sort_keys=True) + "\n")
    contents.mark_complete(out)
    return out


def run_env(flavour: Flavour, base: dict | None = None) -> dict:
    """The environment the built flavour's tools run with."""
    try:
        where = prefix(flavour)
    except sources.SourceError as e:
        raise BuildError(str(e)) from None
    try:
        recorded = json.loads((where / "env.json").read_text())
    except (OSError, ValueError):
        raise BuildError(
            f"{flavour.title} is not built -- run './bench build {flavour.name}'"
        ) from None
    env = dict(os.environ if base is None else base)
    env.update(recorded)
    return env


def main(argv: list[str] | None = None) -> int:
    """python -m localsite.flavours NAME: build if missing, print the build folder."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print(f"usage: python -m localsite.flavours {{{','.join(FLAVOURS)}}}", file=sys.stderr)
        return 2
    try:
        print(ensure_built(get(args[0])))
    except BuildError as e:
        lowpriority.say(str(e))
        return 2 if "unknown flavour" in str(e) else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
