"""The test run ends with one line per flavour: built at the current key or not, its tests run
and skipped, and why (tests/conftest.py: pytest_terminal_summary). A green run that skipped a
flavour says so. Checked on a real pytest run of one test per built flavour."""

import os
import re
import subprocess

from conftest import PYTHON, REPO
from localsite import flavours, sources

ONE_EACH = [
    "tests/integration/test_schedule_built.py::test_reductions_along_the_schedule_equal_stock"
    f"[2-{name}]"
    for name in ("org12", "v2512")
]
TITLES = {"org12": "OpenFOAM-12", "v2512": "ESI v2512"}


def flavours_section(env=None):
    done = subprocess.run(
        [PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", *ONE_EACH],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    return done.stdout.split("= flavours =")[1]


def line_of(section, title):
    (line,) = [x for x in section.splitlines() if x.startswith(f"{title}: ")]
    return line


def archive_here(name):
    try:
        sources.find(flavours.get(name).archive)
    except sources.SourceError:
        return False
    return True


def test_each_flavour_says_whether_it_is_built_and_what_ran():
    section = flavours_section()
    for name, title in TITLES.items():
        line = line_of(section, title)
        if flavours.is_built(flavours.get(name)):
            assert "built at the current key; 1 test(s) run (0 failed), 0 skipped" in line
            continue
        assert f"no cached {'OpenFOAM-12' if name == 'org12' else 'v2512'} build" in line
        if archive_here(name):
            assert re.search(
                r"not built at the current key .*; 0 test\(s\) run .* 1 skipped: ", line
            )
        else:  # no source archive, no key: a newcomer's clone without the offline kit
            assert re.search(r"build state unknown: .* -- .*; 0 test\(s\) run .* 1 skipped: ", line)
    # The same flavours as the local Spack site installs them: installed, or why not.
    for title in ("OpenFOAM-12 (Spack)", "ESI v2512 (Spack)"):
        state, _, counts = line_of(section, title).removeprefix(f"{title}: ").partition("; ")
        assert state == "installed" or " -- " in state, state
        assert counts == "0 test(s) run (0 failed), 0 skipped", counts
    assert "0 test(s) run" in line_of(section, "ESI v1912 (Debian's)")  # both were the built's


def test_a_clone_without_the_offline_kit_says_what_is_missing(tmp_path):
    """As a newcomer runs ./bench test: no ../shared, so no TOPOFOAM_SOURCES nor
    TOPOFOAM_SPACK_KIT, and a cache of its own (this machine's may hold the archives)."""
    env = {
        k: v for k, v in os.environ.items() if k not in ("TOPOFOAM_SOURCES", "TOPOFOAM_SPACK_KIT")
    }
    env["TOPOFOAM_CACHE"] = str(tmp_path / "cache")
    section = flavours_section(env)
    for name, title in TITLES.items():
        archive = flavours.get(name).archive.name
        assert re.fullmatch(
            rf"{title}: build state unknown: {re.escape(archive)} is not in TOPOFOAM_SOURCES"
            r" \(not set\) .* -- .*; 0 test\(s\) run \(0 failed\), 1 skipped: no cached .*",
            line_of(section, title),
        )
    for title in ("OpenFOAM-12 (Spack)", "ESI v2512 (Spack)"):
        assert line_of(section, title) == (
            f"{title}: TOPOFOAM_SPACK_KIT is not set -- point it at a folder with "
            "spack-1.1.1.tar.gz and spack-packages-releases-v2026.06.tar.gz (the offline kit's "
            "spack/) to check the Spack environment; 0 test(s) run (0 failed), 0 skipped"
        )
