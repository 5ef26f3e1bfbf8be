"""One ccache for ./bench build and Spack's build of the same OpenFOAM (localsite/flavours.py:
ccache_environ): a file compiled the way wmake compiles it in ./bench build's tree is a hit
when Spack's compiler wrapper (the real script, from the offline kit) compiles it in a stage,
for the local site's target (x86_64); a build for another target does not get those objects.

The compiles are real (g++, ccache); the command lines are wmake's (OpenFOAM-12's c++ rules)
and the wrapper's own reordering of them, with Spack's build environment's locale (C).
"""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from localsite import flavours
from localsite import spack as offline_spack

pytestmark = pytest.mark.skipif(shutil.which("ccache") is None, reason="ccache not installed")

HEADER = """#ifndef field_H
#define field_H
#include <vector>
inline double weighted(const std::vector<double>& v)
{
    double s = 0;
    for (const double x : v) { s += x*x; }
    return s;
}
#endif
"""

# __FILE__, as OpenFOAM's FatalError puts it into objects: the path must hash the same in
# both trees (base_dir makes it relative).
SOURCE = """#include "field.H"
const char* where() { return __FILE__; }
double sumSquares(const std::vector<double>& v) { return weighted(v); }
"""

#: OpenFOAM-12's wmake flags for a library object (linux64Gcc, c++ and c++Opt rules).
WMAKE_FLAGS = [
    "-std=c++14",
    "-m64",
    "-Dlinux64",
    "-DWM_ARCH_OPTION=64",
    "-DWM_DP",
    "-DWM_LABEL_SIZE=32",
    "-Wall",
    "-Wextra",
    "-O3",
    "-DNoRepository",
    "-ftemplate-depth-100",
]


def tree(root: Path) -> Path:
    """A library folder of an OpenFOAM tree (its lnInclude beside it); returns the folder."""
    lib = root / "src" / "field"
    (lib / "lnInclude").mkdir(parents=True)
    (lib / "lnInclude" / "field.H").write_text(HEADER)
    (lib / "field.C").write_text(SOURCE)
    return lib


def stats(env: dict) -> dict[str, int]:
    out = subprocess.run(
        ["ccache", "--print-stats"], env=env, capture_output=True, text=True, check=True
    ).stdout
    numbers = dict(line.split("\t") for line in out.splitlines() if "\t" in line)
    return {
        "hit": int(numbers["direct_cache_hit"]) + int(numbers["preprocessed_cache_hit"]),
        "miss": int(numbers["cache_miss"]),
    }


@pytest.fixture(scope="module")
def wrapper(tmp_path_factory) -> Path:
    """Spack's compiler wrapper as the Spack here installs it (the kit's cc.sh), named c++."""
    why = offline_spack.missing()
    if why:
        pytest.skip(why)
    script = offline_spack.compiler_wrapper_script(offline_spack.ensure())
    folder = tmp_path_factory.mktemp("wrapper")
    shutil.copy(script, folder / "c++")
    (folder / "c++").chmod(0o755)
    return folder


@pytest.fixture
def cache(tmp_path, monkeypatch) -> tuple[Path, dict]:
    """A cache folder of the test's own and the environment every build here compiles in."""
    monkeypatch.setenv("TOPOFOAM_CACHE", str(tmp_path / "cache"))
    env = dict(os.environ, **flavours.ccache_environ())
    subprocess.run(["ccache", "-z"], env=env, check=True, capture_output=True)
    return tmp_path / "cache", env


def bench_build_compile(lib: Path, env: dict) -> Path:
    """How ./bench build compiles: ccache in front of g++ (/usr/lib/ccache), wmake's flags."""
    obj = lib.parents[1] / "platforms" / "linux64GccDPInt32Opt" / "src" / "field" / "field.o"
    obj.parent.mkdir(parents=True)
    cmd = ["ccache", "g++", *WMAKE_FLAGS, f"-I{lib / 'lnInclude'}", "-I.", "-fPIC"]
    subprocess.run([*cmd, "-c", "field.C", "-o", str(obj)], cwd=lib, env=env, check=True)
    return obj


def spack_compile(lib: Path, env: dict, wrapper: Path, target_args: str) -> Path:
    """How Spack's build compiles: its wrapper, with the target's flags and ccache, the
    rules' c++-spack (c++Opt plus the install's rpath) and Spack's build locale."""
    obj = lib.parents[1] / "platforms" / "linux64GccDPInt32-spack" / "src" / "field" / "field.o"
    obj.parent.mkdir(parents=True)
    spack_env = dict(
        env,
        LC_ALL="C",  # Spack's config:build_language
        PATH=f"{wrapper}:{env['PATH']}",
        SPACK_COMPILER_WRAPPER_PATH=str(wrapper),
        SPACK_DEBUG_LOG_DIR=str(lib),
        SPACK_DEBUG_LOG_ID="openfoam-org",
        SPACK_SHORT_SPEC="openfoam-org@12",
        SPACK_SYSTEM_DIRS="/usr:/usr/include:/usr/lib",
        SPACK_MANAGED_DIRS=str(lib.parents[3]),
        SPACK_CXX=shutil.which("g++"),
        SPACK_CXX_RPATH_ARG="-Wl,-rpath,",
        SPACK_CXX_LINKER_ARG="-Wl,",
        SPACK_TARGET_ARGS_CXX=target_args,
        SPACK_CCACHE_BINARY=shutil.which("ccache"),
    )
    rpath = "-Wl,-rpath,/opt/spack/openfoam-org-12/platforms/linux64GccDPInt32-spack/lib"
    cmd = [str(wrapper / "c++"), *WMAKE_FLAGS, rpath, f"-I{lib / 'lnInclude'}", "-I."]
    subprocess.run(
        [*cmd, "-fPIC", "-c", "field.C", "-o", str(obj)], cwd=lib, env=spack_env, check=True
    )
    return obj


@pytest.mark.parametrize("spack_first", [False, True], ids=["bench-then-spack", "spack-then-bench"])
def test_either_build_hits_what_the_other_compiled(cache, wrapper, spack_first):
    folder, env = cache
    local = tree(folder / "openfoam" / "org12-building" / "OpenFOAM-12")
    stage = tree(folder / "spack" / "stage" / "spack-stage-openfoam-org-12-x" / "spack-src")
    builds = [
        lambda: bench_build_compile(local, env),
        lambda: spack_compile(stage, env, wrapper, flavours.SPACK_TARGET_FLAGS),
    ]
    if spack_first:
        builds.reverse()
    first = builds[0]()
    assert stats(env) == {"hit": 0, "miss": 1}
    second = builds[1]()
    assert stats(env) == {"hit": 1, "miss": 1}, "the second build's compile of the file missed"
    assert first.read_bytes() == second.read_bytes()


def test_another_target_is_compiled_anew(cache, wrapper):
    """The negative control: a tuned build (VSC-5's zen3) must not get the generic objects."""
    folder, env = cache
    bench_build_compile(tree(folder / "openfoam" / "org12-building" / "OpenFOAM-12"), env)
    stage = tree(folder / "spack" / "stage" / "spack-stage-openfoam-org-12-y" / "spack-src")
    spack_compile(stage, env, wrapper, "-march=znver3 -mtune=znver3")
    assert stats(env) == {"hit": 0, "miss": 2}


def test_the_target_flags_are_gcc_defaults(tmp_path):
    """Why ccache may leave them out: gcc gives the same object with and without them."""
    (tmp_path / "field.H").write_text(HEADER)
    (tmp_path / "field.C").write_text(SOURCE)
    objects = []
    for extra in ([], flavours.SPACK_TARGET_FLAGS.split()):
        obj = tmp_path / f"field{len(objects)}.o"
        cmd = ["g++", *extra, *WMAKE_FLAGS, "-fPIC", "-c", "field.C", "-o", obj.name]
        subprocess.run(cmd, cwd=tmp_path, check=True)
        objects.append(obj.read_bytes())
    assert objects[0] == objects[1]
