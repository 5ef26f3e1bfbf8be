"""Debian's OpenFOAM on the local site: where it is, and the libraries we build for it.

The build (``build-openfoam.sh``) is cached outside the clone under
``<cache>/openfoam/v<source version>-<target>-<key>``. The key is made of the declared
inputs only: the Debian source version, ``BUILD_VERSION`` (bump it when a change to the
build script changes what it produces; editing a comment does not) and, for the patched
libraries, the contents of every patch of the series. A second run, another clone and CI
reuse it; a change to an input rebuilds.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from localsite import lowpriority
from topofoam import contents, paths

#: Version of what build-openfoam.sh produces: part of every build's cache key.
BUILD_VERSION = "2"
BUILD_SCRIPT = Path(__file__).with_name("build-openfoam.sh")
# Debian's installed OpenFOAM: only WM_PROJECT_DIR is needed to run it (its bashrc prints errors).
PROJECT_DIR = Path("/usr/share/openfoam")
EXAMPLES = Path("/usr/share/doc/openfoam-examples/examples")


class BuildError(RuntimeError):
    """The local OpenFOAM build cannot run or failed; the message names the fix."""


def source_version() -> str:
    """The version of the installed Debian openfoam source package, e.g. 1912.200626-1."""
    try:
        out = subprocess.run(
            ["dpkg-query", "-W", "-f=${source:Version}", "openfoam"],
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        raise BuildError(
            "Debian's openfoam package is not installed -- run ./bench setup"
        ) from None
    return out.stdout.strip()


def source_tree(version: str | None = None) -> Path:
    return paths.cache_dir() / "src" / f"openfoam-{version or source_version()}"


PATCHES = paths.PATCHES / "esi-v1912"
TARGETS = ("scotch", "patched")


def build_prefix(target: str = "scotch", version: str | None = None) -> Path:
    """Where the build of ``target`` for the current inputs lives (built or not): keyed by the
    source version, BUILD_VERSION and, for the patched libraries, every patch file."""
    version = version or source_version()
    digest = hashlib.sha256(f"{target}\0{version}\0{BUILD_VERSION}\0".encode())
    if target == "patched":
        for patch in sorted(PATCHES.glob("*.patch")):
            digest.update(patch.name.encode() + b"\0" + patch.read_bytes())
    return paths.cache_dir() / "openfoam" / f"v{version}-{target}-{digest.hexdigest()[:16]}"


def lib_dir(target: str = "scotch") -> Path:
    """The folder to put first in LD_LIBRARY_PATH for ``target``."""
    return build_prefix(target) / "lib"


def is_built(target: str = "scotch") -> bool:
    return contents.is_complete(build_prefix(target))


def ensure_built(target: str = "scotch") -> Path:
    """Build ``target`` unless the cache has it; returns its lib folder."""
    if target not in TARGETS:
        raise BuildError(f"unknown build target '{target}' -- choose from {', '.join(TARGETS)}")
    version = source_version()
    prefix = build_prefix(target, version)
    with contents.exclusive(prefix, "the build cache", BuildError, say=lowpriority.say):
        _build_unless_cached(target, version, prefix)
    return prefix / "lib"


def _build_unless_cached(target: str, version: str, prefix: Path) -> None:
    if contents.is_complete(prefix):
        problem = contents.check_or_record(prefix, _products(prefix), prefix / CONTENTS)
        if problem:
            lowpriority.say(
                f"the cached {target} build {prefix} is damaged ({problem}); building it again"
            )
            shutil.rmtree(prefix)
    if not contents.is_complete(prefix):
        tree = source_tree(version)
        if not (tree / "etc" / "bashrc").is_file():
            raise BuildError(
                f"no OpenFOAM {version} source in {tree} -- run './bench setup' with the same "
                f"TOPOFOAM_CACHE ({paths.cache_dir()}); it fetches the source package"
            )
        what = (
            "the real SCOTCH decomposition library"
            if target == "scotch"
            else f"libOpenFOAM and libPstream with {PATCHES.relative_to(paths.REPO)} "
            f"(10-18 min on 2 cores)"
        )
        print(f"building {what} into {prefix} (once; cached)", file=sys.stderr, flush=True)
        cmd = ["bash", str(BUILD_SCRIPT), target, str(tree), str(prefix)]
        if target == "patched":
            cmd.append(str(PATCHES))
        if lowpriority.run(cmd) != 0:
            log = Path(f"{prefix}.failed.log")
            raise BuildError(
                f"the OpenFOAM build ({target}) failed (see the lines above) -- fix the cause "
                f"and rerun" + (f"; full log: {log}" if log.exists() else "")
            )
        contents.record(prefix, _products(prefix), prefix / CONTENTS)


#: The libraries and programs a build made, with their sizes and content hashes.
CONTENTS = ".contents.json"


def _products(prefix: Path) -> list[Path]:
    return [p for sub in ("lib", "bin") for p in (prefix / sub).rglob("*") if p.is_file()]


def main(argv: list[str] | None = None) -> int:
    """python -m localsite.openfoam {scotch,patched}: build if missing, print the lib folder."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0] not in TARGETS:
        print(f"usage: python -m localsite.openfoam {{{','.join(TARGETS)}}}", file=sys.stderr)
        return 2
    # A SIGTERM stops it as Ctrl-C does: the unfinished build is removed, one line, 130.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        print(ensure_built(args[0]))
    except BuildError as e:
        lowpriority.say(str(e))
        return 1
    except KeyboardInterrupt:  # build-openfoam.sh removes its unfinished folder
        lowpriority.say("interrupted; no unfinished build was kept")
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())


def run_env(base: dict | None = None) -> dict:
    """Environment to run Debian's OpenFOAM with the real SCOTCH library (built if missing)."""
    env = dict(os.environ if base is None else base)
    env["WM_PROJECT_DIR"] = str(PROJECT_DIR)
    env["LD_LIBRARY_PATH"] = f"{ensure_built('scotch')}:{env.get('LD_LIBRARY_PATH', '')}"
    return env
