"""An offline Spack for checking the project's Spack environment on this machine.

``TOPOFOAM_SPACK_KIT`` names a folder holding Spack's release archive and a builtin-packages
archive (the offline kit's ``spack/``; CI points it at ``../shared/offline/spack``). Both are
unpacked once into the cache, keyed by their checksums, and configured the way an air-gapped
site would: the builtin repository from the unpacked folder, no bootstrapping (clingo comes
from the project's virtualenv), compilers registered in Spack's own scope so that nothing is
written into the project's ``spack.yaml``, and no user or system configuration read.

``mirror()`` lays out a file mirror of the OpenFOAM sources this machine has: the kit's
OpenFOAM-12 and v2512 archives (``TOPOFOAM_SOURCES``) and Debian's v1912 tree, which holds the
files the v1912 series touches.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

from localsite import flavours, sources
from topofoam import paths

KIT_SETTING = "TOPOFOAM_SPACK_KIT"
SPACK_ARCHIVE = "spack-1.1.1.tar.gz"
#: The first builtin-packages release that knows openfoam@2512 (2025.11, paired with Spack
#: 1.1, stops at 2412); it concretizes with Spack 1.1.1.
PACKAGES_ARCHIVE = "spack-packages-releases-v2026.06.tar.gz"
#: The v1912 release the project's environment asks for, and Spack's checksum of its archive
#: (builtin openfoam package): a mirror holds a versioned archive under that digest.
V1912_PINNED = "1912_220610"
V1912_SHA256 = "a0be015bd651b8eaa9c0fca0ffa97708821979fde9e2e23a1d98d9064c5c3f02"


class SpackKitError(RuntimeError):
    """No usable offline Spack; the message says what is missing and how to provide it."""


def kit_dir() -> Path | None:
    value = os.environ.get(KIT_SETTING)
    return Path(value) if value else None


def missing() -> str | None:
    """Why no offline Spack can be set up here, in one line; None when it can."""
    kit = kit_dir()
    if kit is None:
        return (
            f"{KIT_SETTING} is not set: point it at a folder with {SPACK_ARCHIVE} and "
            f"{PACKAGES_ARCHIVE} (the offline kit's spack/) to check the Spack environment"
        )
    absent = [a for a in (SPACK_ARCHIVE, PACKAGES_ARCHIVE) if not (kit / a).is_file()]
    if absent:
        return f"{KIT_SETTING}={kit} lacks {', '.join(absent)} -- put the archives there"
    try:
        import clingo  # noqa: F401  (Spack's concretizer; from PyPI, in the test extras)
    except ImportError:
        return f"clingo is not importable by {sys.executable} -- run ./bench setup"
    return None


@dataclass(frozen=True)
class OfflineSpack:
    home: Path  # everything of this Spack: the unpacked release, packages, caches

    @property
    def root(self) -> Path:
        return self.home / "spack"

    @property
    def packages(self) -> Path:
        return self.home / "spack-packages"

    def environ(self, **extra: str) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("SPACK_") and k not in ("TOPOFOAM_SITE",)
        }
        env.update(
            SPACK_ROOT=str(self.root),
            SPACK_PYTHON=sys.executable,
            SPACK_DISABLE_LOCAL_CONFIG="1",
            SPACK_USER_CONFIG_PATH=str(self.home / "user-config"),
            SPACK_USER_CACHE_PATH=str(self.home / "user-cache"),
        )
        env.update(extra)
        return env

    def run(
        self, *args: str, cwd: Path | str | None = None, timeout: int = 1800, **extra: str
    ) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(self.root / "bin" / "spack"), *args],
            cwd=cwd,
            env=self.environ(**extra),
            capture_output=True,
            text=True,
            timeout=timeout,
        )


def ensure(say=print) -> OfflineSpack:
    """The offline Spack, unpacked and configured once per kit version."""
    why = missing()
    if why:
        raise SpackKitError(why)
    kit = kit_dir()
    key = "-".join(sources.checksum(kit / a)[:8] for a in (SPACK_ARCHIVE, PACKAGES_ARCHIVE))
    spack = OfflineSpack(paths.cache_dir() / "spack" / f"1.1.1-{key}")
    stamp = spack.home / ".ready"
    if stamp.is_file():
        return spack
    start = time.monotonic()
    say(f"spack: setting up Spack 1.1.1 from {kit} in {spack.home}")
    shutil.rmtree(spack.home, ignore_errors=True)  # a half-done set-up starts over (seconds)
    spack.home.mkdir(parents=True)
    try:
        _unpack(kit / SPACK_ARCHIVE, spack.root)
        _unpack(kit / PACKAGES_ARCHIVE, spack.packages)
    except BaseException:
        # a damaged kit, or an interrupt: no half-unpacked Spack is left to be taken for one
        shutil.rmtree(spack.home, ignore_errors=True)
        raise
    etc = spack.root / "etc" / "spack"
    # Spack's own scope: what a site admin would put there for an air-gapped cluster.
    (etc / "repos.yaml").write_text(f"repos:\n  builtin:\n    destination: {spack.packages}\n")
    (etc / "bootstrap.yaml").write_text("bootstrap:\n  enable: false\n")
    # No public mirror to try (and time out on) before the site's own.
    (etc / "mirrors.yaml").write_text("mirrors:: {}\n")
    (etc / "config.yaml").write_text(
        f"config:\n  build_stage:\n  - {spack.home / 'stage'}\n"
        f"  source_cache: {spack.home / 'source-cache'}\n"
    )
    # Before any `spack -e`: with no compiler known, Spack registers the ones it finds in
    # the active environment's spack.yaml, rewriting the tracked file.
    # The first `compiler find` of a new Spack builds the package index and finds nothing
    # (Spack 1.1.1, measured); the second registers the compilers.
    for _ in range(2):
        done = spack.run("compiler", "find", "--scope", "spack")
        if done.returncode != 0:
            raise SpackKitError(f"spack compiler find failed: {done.stderr.strip()[-500:]}")
        if "externals" in (etc / "packages.yaml").read_text():
            break
    else:
        raise SpackKitError(
            "spack compiler find registered no compiler -- install gcc, g++ and gfortran"
        )
    stamp.write_text("")
    say(f"spack: ready in {time.monotonic() - start:.0f} s")
    return spack


def _unpack(archive: Path, dest: Path) -> None:
    """The archive's single top folder, as ``dest``."""
    scratch = dest.with_name(dest.name + ".unpack")
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir()
    done = subprocess.run(
        ["tar", "-xzf", str(archive), "-C", str(scratch)], capture_output=True, text=True
    )
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or ["tar failed"])[0]
        raise SpackKitError(
            f"{archive} cannot be unpacked ({why}): damaged or cut short -- copy it into "
            f"TOPOFOAM_SPACK_KIT again"
        )
    tops = list(scratch.iterdir())
    if len(tops) != 1 or not tops[0].is_dir():
        raise SpackKitError(f"{archive}: expected one top folder, found {[t.name for t in tops]}")
    tops[0].rename(dest)
    scratch.rmdir()


def mirror(dest: Path) -> dict[str, str]:
    """A Spack file mirror in ``dest`` of the OpenFOAM sources present here; returns
    {spec: why not} for the ones it could not provide."""
    missing_sources: dict[str, str] = {}
    for spec, flavour in (("openfoam-org@12", "org12"), ("openfoam@2512", "v2512")):
        archive = flavours.FLAVOURS[flavour].archive
        try:
            found = sources.find(archive, download=False)
        except sources.SourceError as e:
            missing_sources[spec] = str(e)
            continue
        _link(found, dest / archive.mirror_path)
        if archive.sha256:
            _link(found, dest / _by_digest(archive.sha256, "tar.gz"))
        else:  # a git version: looked up by repository path and commit
            _link(found, dest / V2512_GIT_MIRROR_PATH)
    debian = debian_v1912_tree()
    if debian is None:
        missing_sources[f"openfoam@{V1912_PINNED}"] = (
            "Debian's openfoam source is not unpacked in the cache -- run ./bench setup"
        )
    else:
        # Spack's name for the pinned release; the archive holds Debian's 1912.200626 tree.
        tarball = paths.cache_dir() / "sources" / f"{debian.name}.tgz"
        if not tarball.is_file():
            _pack(debian, tarball, top="OpenFOAM-v1912")
        _link(tarball, dest / "openfoam" / f"openfoam-{V1912_PINNED}.tgz")
        _link(tarball, dest / _by_digest(V1912_SHA256, "tgz"))
    return missing_sources


#: Where Spack looks openfoam@2512 (a commit of ESI's git repository) up in a mirror.
V2512_GIT_MIRROR_PATH = (
    "_source-cache/git/openfoam/core/openfoam.git/87ed40d256d22ea38fcc648dfc82a22162427b18.tar.gz"
)


def _by_digest(sha256: str, ext: str) -> str:
    """Where Spack 1.x looks a checksummed version up in a mirror (not by its name)."""
    return f"_source-cache/archive/{sha256[:2]}/{sha256}.{ext}"


def debian_v1912_tree() -> Path | None:
    trees = sorted((paths.cache_dir() / "src").glob("openfoam-1912.*"))
    trees = [t for t in trees if (t / "etc" / "bashrc").is_file()]
    return trees[-1] if trees else None


def _link(target: Path, link: Path) -> None:
    link.parent.mkdir(parents=True, exist_ok=True)
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(target.resolve())


def _pack(tree: Path, tarball: Path, top: str) -> None:
    """Upstream's part of Debian's tree (without debian/ and quilt's .pc/) as ``top``."""
    tarball.parent.mkdir(parents=True, exist_ok=True)
    part = tarball.with_suffix(".part")
    with tarfile.open(part, "w:gz", compresslevel=1) as tar:
        for entry in sorted(tree.iterdir()):
            if entry.name not in ("debian", ".pc"):
                tar.add(entry, arcname=f"{top}/{entry.name}")
    part.rename(tarball)
