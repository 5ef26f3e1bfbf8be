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

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

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


#: ADIOS2, which the openfoam package requires from v1912 on and Debian 12 lacks: the source
#: of ADIOS2's own release on PyPI, its sdist (the whole CMake tree of 2.12.1, which the
#: ADIOS2 project packs for pip as 2.12.1.1001). Spack pins GitHub's archive of the tag, a
#: different file: install --no-checksum, as for the kit's repacked OpenFOAM archives.
ADIOS2 = sources.Archive(
    name="adios2-2.12.1.1001.tar.gz",
    mirror_path="adios2/adios2-2.12.1.tar.gz",
    url="https://files.pythonhosted.org/packages/58/d9/"
    "254e366559bf9a3f7cb21fb4e516852d5b89466ea5f7864005765404ed33/adios2-2.12.1.1001.tar.gz",
    sha256="f3bf3a6e64b800351a091d4fc70cc8437041c36c81f90f01697b81f168b6adb0",
)
#: The digest Spack's adios2 package pins for 2.12.1 (GitHub's archive): a mirror holds a
#: versioned archive under it, and Spack looks nowhere else for it.
ADIOS2_PINNED_SHA256 = "71edd8f721448311852122fca8d83ae497b43846e5bfcdfd275dc06bb7f3d0c5"


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
            f"{KIT_SETTING} is not set -- point it at a folder with {SPACK_ARCHIVE} and "
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


def _keyed(kit: Path) -> OfflineSpack:
    """The Spack of this kit: one folder per pair of archives, keyed by their checksums."""
    key = "-".join(sources.checksum(kit / a)[:8] for a in (SPACK_ARCHIVE, PACKAGES_ARCHIVE))
    return OfflineSpack(paths.cache_dir() / "spack" / f"1.1.1-{key}")


def ensure(say=print) -> OfflineSpack:
    """The offline Spack, unpacked and configured once per kit version."""
    why = missing()
    if why:
        raise SpackKitError(why)
    kit = kit_dir()
    spack = _keyed(kit)
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


def mirror(dest: Path, fetch: bool = False) -> dict[str, str]:
    """A Spack file mirror in ``dest`` of the OpenFOAM sources present here, and of ADIOS2's
    (downloaded first when ``fetch``: for an install); returns {spec: why not} for the ones
    it could not provide (a dependency's as ``<openfoam spec>^<dependency>``)."""
    missing_sources: dict[str, str] = {}
    try:
        found = sources.find_dependency(ADIOS2, download=fetch)
        _link(found, dest / ADIOS2.mirror_path)
        _link(found, dest / _by_digest(ADIOS2_PINNED_SHA256, "tar.gz"))
    except sources.SourceError as e:
        missing_sources["openfoam@2512^adios2"] = f"ADIOS2's source: {e}"
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


def mirror_scope(spack: OfflineSpack, fetch: bool = False) -> tuple[Path, dict[str, str]]:
    """A config scope (for ``spack -C``) naming a file mirror of this machine's OpenFOAM
    sources, as an air-gapped site names its mirror (docs/clusters.md); kept out of Spack's
    own scope, which the tests share. Returns it and {spec: why its source is missing}.
    ``fetch``: download what may be downloaded (mirror())."""
    root = spack.home / "site-mirror"
    # Links only, each replaced in one step and none removed first: a second ./bench spack
    # (another terminal's) lays the same links while this one's Spack may be reading them.
    absent = mirror(root / "mirror", fetch)
    _compiler_wrapper(spack, root / "mirror")
    # A link whose archive went away is of no use to anyone (and an archive missing from
    # TOPOFOAM_SOURCES stops an install before Spack runs: wanted_sources_missing).
    for link in (root / "mirror").rglob("*"):
        if link.is_symlink() and not link.exists():
            link.unlink(missing_ok=True)
    scope = root / "scope"
    scope.mkdir(parents=True, exist_ok=True)
    mirrors = scope / "mirrors.yaml"
    text = f"mirrors:\n  offline:\n    url: file://{root / 'mirror'}\n    signed: false\n"
    if not mirrors.is_file() or mirrors.read_text() != text:  # in one step, as the links
        part = sources.part_of(mirrors)
        part.write_text(text)
        os.replace(part, mirrors)
    return scope, absent


#: The compiler wrapper Spack 1.x puts around every compile, as the builtin package pins it.
COMPILER_WRAPPER = ("1.1.0", "a07b35081d14b0729090bc1e5790a5dda2d5b997e064c62da39a1224ee249b2a")


def compiler_wrapper_script(spack: OfflineSpack) -> Path | None:
    """The compiler wrapper script (cc.sh) in Spack's release, the one installed here."""
    return next(
        (spack.root / "var" / "spack" / "test_repos").glob(
            "spack_repo/*/packages/compiler_wrapper/cc.sh"
        ),
        None,
    )


def _compiler_wrapper(spack: OfflineSpack, dest: Path) -> None:
    """The compiler wrapper's archive, which the offline kit lacks: Spack's release carries
    the script (cc.sh, for its own tests' compiler-wrapper package), packed here as the
    archive the builtin package fetches. Spack pins another digest: install --no-checksum,
    as for the kit's repacked OpenFOAM archives."""
    version, sha256 = COMPILER_WRAPPER
    tarball = spack.home / "sources" / f"compiler-wrapper-{version}.tar.gz"
    if not tarball.is_file():
        script = compiler_wrapper_script(spack)
        if script is None:
            return  # Spack's install then says that no fetcher found it (why_it_stopped)
        tarball.parent.mkdir(parents=True, exist_ok=True)
        part = sources.part_of(tarball)
        with tarfile.open(part, "w:gz") as tar:
            tar.add(script, arcname=f"compiler-wrapper-{version}/cc.sh")
        part.rename(tarball)
    _link(tarball, dest / "compiler-wrapper" / tarball.name)
    _link(tarball, dest / _by_digest(sha256, "tar.gz"))


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
    """``link`` -> ``target``, replaced in one step (rename), so that a Spack reading the
    mirror meanwhile finds the old link or the new one, never none."""
    link.parent.mkdir(parents=True, exist_ok=True)
    part = sources.part_of(link)
    part.unlink(missing_ok=True)
    part.symlink_to(target.resolve())
    os.replace(part, link)


def _pack(tree: Path, tarball: Path, top: str) -> None:
    """Upstream's part of Debian's tree (without debian/ and quilt's .pc/) as ``top``."""
    tarball.parent.mkdir(parents=True, exist_ok=True)
    part = sources.part_of(tarball)
    with tarfile.open(part, "w:gz", compresslevel=1) as tar:
        for entry in sorted(tree.iterdir()):
            if entry.name not in ("debian", ".pc"):
                tar.add(entry, arcname=f"{top}/{entry.name}")
    part.rename(tarball)


# -- installing here ----------------------------------------------------------------------

#: The Debian package behind each external of site-configs/local.spack.yaml, whose version
#: the external must state (dpkg's upstream part).
DEBIAN_PACKAGES = {
    "gcc": "gcc-12",
    "openmpi": "libopenmpi-dev",
    "scotch": "libscotch-dev",
    "hwloc": "libhwloc-dev",
    "ucx": "libucx0",
    "flex": "flex",
    "bison": "bison",
    "zlib": "zlib1g-dev",
    "cmake": "cmake",
    "json-c": "libjson-c-dev",
    "libyaml": "libyaml-dev",
    "readline": "libreadline-dev",
    "gmake": "make",
    "m4": "m4",
    "pkgconf": "pkgconf",
    "fftw": "libfftw3-dev",
    "boost": "libboost1.74-dev",
    "cgal": "libcgal-dev",
    "mpfr": "libmpfr-dev",
    "yaml-cpp": "libyaml-cpp-dev",
    "nlohmann-json": "nlohmann-json3-dev",
    "pugixml": "libpugixml-dev",
}


def debian_versions(packages: list[str]) -> dict[str, str | None]:
    """The upstream version of each installed Debian package (no epoch, no Debian revision
    or repack suffix: 1:1.2.13.dfsg-1 gives 1.2.13); None for one not installed. One
    dpkg-query for all (it names the unknown ones on stderr and lists the rest)."""
    found: dict[str, str | None] = dict.fromkeys(packages)
    if not packages:
        return found
    done = subprocess.run(
        ["dpkg-query", "-W", "-f", "${Package} ${db:Status-Status} ${Version}\n", *packages],
        capture_output=True,
        text=True,
    )
    for line in done.stdout.splitlines():
        name, status, version = (line.split(" ", 2) + ["", ""])[:3]
        if name in found and status == "installed":
            upstream = version.split(":", 1)[-1]
            found[name] = re.match(r"\d+(?:\.\d+)*", upstream).group(0)
    return found


def site_file(site: str) -> Path:
    return paths.REPO / "site-configs" / f"{site}.spack.yaml"


def external_mismatches(site_yaml: Path) -> list[str]:
    """Externals of a site file for this machine that are not what Debian installed here:
    one line each, naming the file, the external and the fix."""
    packages = (yaml.safe_load(site_yaml.read_text()) or {}).get("packages", {})
    installed = debian_versions(
        sorted({DEBIAN_PACKAGES[n] for n in packages if n in DEBIAN_PACKAGES})
    )
    wrong = []
    for name, settings in packages.items():
        for external in (settings or {}).get("externals", []):
            spec = external.get("spec", "")
            declared = re.match(r"[\w-]+@=?([\w.]+)", spec)
            deb = DEBIAN_PACKAGES.get(name)
            if not declared or not deb:
                continue
            have = installed[deb]
            if have is None:
                wrong.append(
                    f"{site_yaml}: external {spec.split()[0]} is not on this machine "
                    f"(Debian's {deb} is not installed) -- run ./bench setup"
                )
            elif have != declared.group(1):
                wrong.append(
                    f"{site_yaml}: external {spec.split()[0]}, but Debian's {deb} here is "
                    f"{have} -- state @{have} there"
                )
    return wrong


def wanted_sources_missing(
    site: str | None, absent: dict[str, str], named: list[str] | None = None
) -> list[str]:
    """The missing sources (mirror()'s) of the OpenFOAMs the install would build: those
    ``named`` on its command line, else every one the environment holds."""
    config = yaml.safe_load((paths.REPO / "spack.yaml").read_text())["spack"]
    if site is not None:
        config = yaml.safe_load(site_file(site).read_text()) or {}
    wanted = named or [
        str(spec)
        for definition in config.get("definitions", [])
        if "openfoams" in definition  # spack.yaml's holds all three, for no site
        for spec in definition["openfoams"]
    ]
    return [
        why for spec, why in absent.items() if any(w.startswith(spec.split("^")[0]) for w in wanted)
    ]


def named_specs(spack_args: list[str]) -> list[str]:
    """The specs an install names (``install --no-checksum openfoam-org@12``): its words
    that are not options nor their numbers (``-j 2``)."""
    after = spack_args[spack_args.index("install") + 1 :] if "install" in spack_args else []
    return [a for a in after if not a.startswith("-") and not a.isdigit()]


#: How an install stops, as Spack 1.1 says it, and what to do ({0}, {1}: the pattern's
#: groups; a rerun continues: Spack keeps a failed stage and its patched tree, and wmake
#: compiles only what is missing).
_STOPS = (
    (
        r"(\w+) checksum failed for (\S+)",
        "{1}: its {0} is not the one Spack's package pins -- an archive repacked from git (as "
        "the offline kit's are) needs 'install --no-checksum'; any other: fetch it again",
    ),
    (
        r"All fetchers failed for (?:spack-stage-)?(\S+?)(?:-[a-z0-9]{32})?$",
        "no source for {0}, neither in the mirror {mirror} nor online -- put its archive there "
        "(an OpenFOAM's: in TOPOFOAM_SOURCES, the offline kit's sources/) and rerun",
    ),
    (
        r"Patch (\S+) failed\.",
        "{0} does not apply to the staged release -- rewrite it against that release "
        "(patches/), then rerun: Spack restages the source",
    ),
    (
        r"Couldn't find patch for package (\S+) with sha256",
        "a patch of {0} changed after Spack indexed the repository -- run './bench spack "
        "clean -m' (Spack's caches) and './bench spack -e . concretize -f', then rerun",
    ),
    (
        r"See build log for details:\s+(\S+)",
        "the build failed: see {0} -- fix the cause and rerun the same command: it continues "
        "in the kept stage",
    ),
)


def why_it_stopped(output: str, mirror_dir: Path) -> str | None:
    """One line saying why a Spack command stopped, and the fix; None when Spack's own
    words do not say."""
    for pattern, explain in _STOPS:
        found = re.search(pattern, output, re.M)
        if found:
            return explain.format(*found.groups(), mirror=mirror_dir)
    return None


# -- what Spack installed here ------------------------------------------------------------

#: What the local site installs with Spack (site-configs/local.spack.yaml), by the names of
#: ./bench build's flavours.
SPACK_SPECS = {"org12": "openfoam-org@12", "v2512": "openfoam@2512"}

#: What every job loads beside the OpenFOAM (site-configs/sitekit/cluster.py:
#: spack_environment), for rankmap: roots of the environment, like the OpenFOAMs.
JOB_LOADS = ("hwloc", "scotch")


def lock_key(site: str | None) -> str:
    """What the environment concretizes from, as a digest: spack.yaml, the overlay repository,
    the patch series and the site's file. The same key, the same spec hashes."""
    digest = hashlib.sha256(f"{site or ''}\0".encode())
    files = [paths.REPO / "spack.yaml"]
    files += sorted(f for d in ("spack", "patches") for f in (paths.REPO / d).rglob("*"))
    if site:
        files.append(site_file(site))
    for path in files:
        if path.is_file() and path.suffix not in (".md", ".pyc"):
            digest.update(str(path.relative_to(paths.REPO)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def _kept_lock(spack: OfflineSpack, site: str | None) -> Path:
    return spack.root / "topofoam-locks" / f"{site or 'all'}-{lock_key(site)}.lock"


def kept_lock(site: str | None) -> Path | None:
    """The lock that an install kept for ``site`` and the current inputs (keep_lock), if any."""
    if missing():
        return None
    kept = _kept_lock(_keyed(kit_dir()), site)
    return kept if kept.is_file() else None


def keep_lock(site: str | None) -> Path | None:
    """After an install: the repository's spack.lock, kept in the offline Spack's folder
    under the inputs' key, so that a fresh clone (git ignores spack.lock) still finds what
    was installed for the same inputs."""
    lock = paths.REPO / "spack.lock"
    spack = None if missing() else _keyed(kit_dir())
    if spack is None or not lock.is_file():
        return None
    kept = _kept_lock(spack, site)
    kept.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(lock, kept)
    return kept


def lock_is_stale(site: str | None) -> bool:
    """Whether the repository's spack.lock was concretized from other inputs than the
    current ones (keep_lock kept no lock like it under the current key): a changed recipe,
    patch, spack.yaml or site file, or another site. Spack installs what a lock says and
    does not look at the recipes again, so an install over it would build the old spec."""
    lock = paths.REPO / "spack.lock"
    spack = None if missing() else _keyed(kit_dir())
    if spack is None or not lock.is_file():
        return False
    kept = _kept_lock(spack, site)
    return not kept.is_file() or kept.read_bytes() != lock.read_bytes()


def _root_hashes(lock: Path) -> set[str]:
    """The hashes of the root specs a Spack lock concretized (none if it cannot be read)."""
    try:
        return {root["hash"] for root in json.loads(lock.read_text()).get("roots", [])}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return set()


def restore_lock(site: str, installed_hash: str) -> str:
    """Give the repository the lock ``installed_hash`` was installed from (keep_lock), when it
    has none: the jobs' `spack load` reads the environment. A lock of other inputs is left
    as it is, and said in one line with the fix. Returns what it did ("" for nothing)."""
    lock = paths.REPO / "spack.lock"
    kept = _kept_lock(_keyed(kit_dir()), site)
    if lock.is_file():
        if installed_hash in _root_hashes(lock):
            return ""
        return (
            f"{lock} was concretized for other inputs than the installed {installed_hash[:7]}: "
            f"its jobs will not find it -- TOPOFOAM_SITE={site} ./bench spack -e . concretize -f"
        )
    shutil.copyfile(kept, lock)
    return f"spack.lock: the lock of the installed {installed_hash[:7]} ({kept})"


def installs() -> dict[str, dict]:
    """Per flavour of SPACK_SPECS: installed by ``TOPOFOAM_SITE=local ./bench spack -e .
    install`` for the current inputs (lock_key: the lock that install kept), with what a job
    needs to load it; else why not. Reads Spack's files, runs no Spack (./bench writes these
    facts on every start)."""
    install = "'TOPOFOAM_SITE=local ./bench spack -e . install --no-checksum'"
    why = missing()
    spack = None if why else _keyed(kit_dir())
    if spack is not None and not (spack.home / ".ready").is_file():
        why = f"the offline Spack is not set up -- {install} sets it up and installs"
    if why:
        return {name: {"installed": False, "why_not": why} for name in SPACK_SPECS}
    db = spack.root / "opt" / "spack" / ".spack-db" / "index.json"
    try:
        records = json.loads(db.read_text())["database"]["installs"]
        roots = json.loads(_kept_lock(spack, "local").read_text())
    except (OSError, ValueError, KeyError):
        records, roots = {}, {}
    concrete = {
        spec["name"]: h
        for h, spec in ((r["hash"], roots.get("concrete_specs", {}).get(r["hash"], {}))
                        for r in roots.get("roots", []))
        if spec
    }  # fmt: skip
    found = {}
    for name, spec in SPACK_SPECS.items():
        package = spec.split("@")[0]
        record = records.get(concrete.get(package, ""), {})
        lacking = [
            p for p in JOB_LOADS if not records.get(concrete.get(p, ""), {}).get("installed")
        ]
        if record.get("installed") and lacking:  # a job's `spack load` would stop
            found[name] = {
                "installed": False,
                "why_not": f"{spec} is installed, but not {' and '.join(lacking)}, which its "
                f"jobs load with it -- 'TOPOFOAM_SITE=local ./bench spack -e . install "
                f"--no-checksum {' '.join(lacking)}'",
            }
        elif record.get("installed"):
            found[name] = {
                "installed": True,
                "spec": spec,
                "hash": concrete[package],
                "prefix": record["path"],
                "setup": str(spack.root / "share" / "spack" / "setup-env.sh"),
                "env": {k: v for k, v in spack.environ().items() if k.startswith("SPACK_")},
            }
        else:
            found[name] = {
                "installed": False,
                "why_not": f"{spec} is not installed for the current recipes and patches -- "
                f"'TOPOFOAM_SITE=local ./bench spack -e . install --no-checksum {spec} "
                f"{' '.join(JOB_LOADS)}'",
            }
    return found
