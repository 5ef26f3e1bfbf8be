"""Which of a release's libraries a build compiles (the Spack overlay's suite/libclosure.py,
which ./bench build and Spack's +suite build both run), read from the real source archives,
and wmake-needed/wmake skipping the others with the release's own wmake."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import BUILT
from localsite import flavours, sources
from localsite.flavours import libclosure

LIBCLOSURE = Path(libclosure.__file__)
WRAPPER = LIBCLOSURE.with_name("wmake-needed") / "wmake"
BUILD_NEEDED = LIBCLOSURE.with_name("build-needed.sh")


def make_files(name: str, dest: Path) -> Path:
    """The flavour's Make/ folders (and wmake/, etc/, bin/), extracted from its archive in the
    source mirror; skips the test without it."""
    flavour = flavours.get(name)
    try:
        archive = sources.find(flavour.archive, download=False)
    except sources.SourceError:
        pytest.skip(
            f"no {BUILT[name][0]} source: set TOPOFOAM_SOURCES to the folder of "
            f"{BUILT[name][1]} (CI: ../shared/offline/sources)"
        )
    dest.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["tar", "-xzf", str(archive), "-C", str(dest), "--strip-components=1", "--wildcards"]
        + ["*/Make/*", "*/wmake/*", "*/etc/*", "*/bin/*"],
        check=True,
    )
    return dest


def closure_of(name: str, tree: Path) -> dict[str, list[str]]:
    flavour = flavours.get(name)
    return libclosure.needed(tree, list(flavour.applications), list(flavour.libraries))


#: Libraries of each release no benchmark case uses: Lagrangian particles, rigid bodies, DSMC.
UNUSED = {
    "v2512": ("lagrangianIntermediate", "rigidBodyDynamics"),
    "org12": ("lagrangianParcel", "DSMC"),
}


@pytest.mark.parametrize("name", ["v2512", "org12"])
def test_closure_holds_what_is_linked_and_loaded_and_leaves_the_rest(name, tmp_path):
    tree = make_files(name, tmp_path)
    flavour = flavours.get(name)
    closure = closure_of(name, tree)
    # What the cases load at run time, and the base libraries everything links.
    for lib in (*flavour.libraries, "OSspecific", "Pstream", "finiteVolume", "meshTools"):
        assert lib in closure, lib
    # Closed: whatever a chosen library links is chosen too.
    every = libclosure.library_folders(tree)
    # and whatever an application's folder builds links, its subfolders' libraries included
    # (a solver module's Allwmake builds its fvModels: VoFCavitation on OpenFOAM-12).
    for app in flavour.applications:
        for options in (tree / app).glob("**/Make/options"):
            for dep in libclosure.linked(options.parent.parent, "EXE_LIBS", "LIB_LIBS"):
                assert dep in closure or dep not in every, f"{options} links {dep}"
    for folders in closure.values():
        for folder in folders:
            for dep in libclosure.linked(tree / folder, "LIB_LIBS"):
                assert dep in closure or dep not in every, f"{folder} links {dep}"
    for lib in UNUSED[name]:
        assert lib in every and lib not in closure, lib
    chosen = sum(libclosure.sources(tree, f) for dirs in closure.values() for f in dirs)
    total = sum(libclosure.sources(tree, f) for dirs in every.values() for f in dirs)
    assert 0.4 * total < chosen < 0.9 * total, (chosen, total)


def test_cli_writes_the_list_and_names_a_library_no_folder_builds(tmp_path):
    tree = make_files("v2512", tmp_path / "tree")
    out = tmp_path / "needed-libs"
    needs = tmp_path / "laplacian.needs"
    needs.write_text("# one solver\napplication applications/solvers/basic/laplacianFoam\n")
    done = subprocess.run(
        [sys.executable, LIBCLOSURE, tree, needs, out], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    folders, objects, every = map(int, done.stdout.split())
    lines = out.read_text().splitlines()
    assert len(lines) == folders < every and objects > 0
    assert "finiteVolume src/finiteVolume" in lines
    needs.write_text(needs.read_text() + "library OpenFOAM\nlibrary nosuchLib\n")
    done = subprocess.run(
        [sys.executable, LIBCLOSURE, tree, needs, out], capture_output=True, text=True
    )
    assert done.returncode == 1
    assert "libnosuchLib" in done.stderr and f"library lines of {needs}" in done.stderr
    done = subprocess.run(
        [sys.executable, LIBCLOSURE, tmp_path / "empty", needs, out],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1 and "no src/" in done.stderr


@pytest.mark.parametrize(
    "text, said",
    [
        ("application a/b\nsolver c\n", ":2: 'solver c' is neither"),
        ("library OpenFOAM\n", "names no application"),
        ("application a b\n", ":1: 'application a b' is neither"),
    ],
)
def test_a_bad_needs_file_is_one_line_naming_file_and_line(tmp_path, text, said):
    needs = tmp_path / "bad.needs"
    needs.write_text(text)
    (tmp_path / "tree" / "src").mkdir(parents=True)
    done = subprocess.run(
        [sys.executable, LIBCLOSURE, tmp_path / "tree", needs, tmp_path / "out"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"libclosure: {needs}") and said in done.stderr, done.stderr


def one_file_libraries(src: Path, *names: str) -> None:
    """A library folder per name under ``src``, each one function in one file (TEST DATA)."""
    for name in names:
        folder = src / name
        (folder / "Make").mkdir(parents=True)
        (folder / f"{name}.C").write_text(f"int {name}() {{ return 1; }}\n")
        (folder / "Make" / "files").write_text(f"{name}.C\n\nLIB = $(FOAM_LIBBIN)/lib{name}\n")
        (folder / "Make" / "options").write_text("EXE_INC =\nLIB_LIBS =\n")


def test_wrapper_skips_unneeded_library_folders_and_builds_needed_ones(tmp_path):
    """Two one-file libraries built through the wrapper with v2512's real wmake: the one on
    the list becomes lib<name>.so, the other is skipped, saying so."""
    tree = make_files("v2512", tmp_path / "OpenFOAM-v2512")
    one_file_libraries(tree / "src", "wanted", "unwanted")
    (tmp_path / "needed-libs").write_text("wanted src/wanted\n")
    script = f"""
set +eu
. "{tree}/etc/bashrc" WM_MPLIB=SYSTEMOPENMPI > /dev/null 2>&1
set -e
(cd "$WM_PROJECT_DIR/wmake/src" && make) > /dev/null
export PATH="{WRAPPER.parent}:$PATH" BUILD_NEEDED_LIBS="{tmp_path}/needed-libs"
cd "$WM_PROJECT_DIR/src"
wmake libso wanted
wmake libso unwanted
echo "LIBBIN=$FOAM_LIBBIN"
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WM_", "FOAM_"))}
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "wmake-needed: skipping unwanted (libunwanted: " in done.stdout
    libbin = Path(done.stdout.split("LIBBIN=")[1].strip())
    assert (libbin / "libwanted.so").is_file()
    assert not (libbin / "libunwanted.so").exists()


def test_build_needed_builds_what_the_needs_file_names_and_names_what_is_missing(tmp_path):
    """build-needed.sh (the recipe of Spack's +suite build and of ./bench build) on v2512's
    real wmake with a small src/: the needed library and the module that links it are built,
    the library nobody needs is skipped, and the one product it cannot make here (libPstream,
    which this small tree lacks) is named, with a non-zero exit."""
    tree = make_files("v2512", tmp_path / "OpenFOAM-v2512")
    (tree / "src" / "Allwmake").write_text(
        "#!/bin/sh\ncd ${0%/*} || exit 1\nwmake libso wanted\nwmake libso unwanted\n"
    )
    (tree / "src" / "Allwmake").chmod(0o755)
    one_file_libraries(tree / "src", "wanted", "unwanted")
    module = tree / "applications" / "modules" / "tiny"
    (module / "Make").mkdir(parents=True)
    (module / "tiny.C").write_text("int wanted();\nint tiny() { return wanted(); }\n")
    (module / "Make" / "files").write_text("tiny.C\n\nLIB = $(FOAM_LIBBIN)/libtiny\n")
    (module / "Make" / "options").write_text("EXE_INC =\nLIB_LIBS = -lwanted\n")
    needs = tmp_path / "tiny.needs"
    needs.write_text("application applications/modules/tiny\nlibrary wanted\n")
    script = f"""
set +eu
. "{tree}/etc/bashrc" WM_MPLIB=SYSTEMOPENMPI > /dev/null 2>&1
set -e
cd "$WM_PROJECT_DIR"
echo "LIBBIN=$FOAM_LIBBIN MPI=$FOAM_MPI"
bash "{BUILD_NEEDED}" "{needs}"
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WM_", "FOAM_"))}
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    assert "wmake-needed: skipping unwanted (libunwanted: " in done.stdout
    libbin, mpi = re.search(r"LIBBIN=(\S+) MPI=(\S+)", done.stdout).groups()
    assert (Path(libbin) / "libwanted.so").is_file() and (Path(libbin) / "libtiny.so").is_file()
    assert not (Path(libbin) / "libunwanted.so").exists()
    said = done.stderr.strip().splitlines()[-1]
    assert said == (
        f"build-needed: the build finished without {mpi}/libPstream.so -- see the output "
        f"above (rerun to continue)"
    ), done.stderr[-2000:]
    # The libraries it chose are kept in the tree, with those of the needs file among them.
    assert "wanted src/wanted" in (tree / "platforms" / "topofoam-needed-libs").read_text()
