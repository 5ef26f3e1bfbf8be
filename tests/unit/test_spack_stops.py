"""Why a Spack command stopped, in one line (localsite/spack.py: why_it_stopped), read from
what Spack 1.1.1 printed here. The checksum, the patch and the stop are proven end to end in
tests/integration/test_spack_install.py; a fetch that finds nothing cannot be reached that
way (./bench refuses a missing archive before Spack runs), so its words are kept here."""

from pathlib import Path

import pytest

from localsite.spack import V1912_PINNED, named_specs, wanted_sources_missing, why_it_stopped

SPECS = ("openfoam-org@12", "openfoam@2512", f"openfoam@{V1912_PINNED}")
# What mirror() says for a dependency's source: under the OpenFOAM that needs it.
ADIOS2 = "openfoam@2512^adios2"

MIRROR = Path("/cache/spack/site-mirror/mirror")

# Spack 1.1.1, `install` of the local site before the compiler wrapper's archive was in the
# mirror (2026-11-26); the URLs shortened.
FETCH_FAILED = """\
==> Installing compiler-wrapper-1.1.0-ggm6hhbbhwyrzsbdm44g5kac3nh7se27 [3/14]
==> Error: FetchError: All fetchers failed for spack-stage-compiler-wrapper-1.1.0-ggm6hhbbhwyrzsbdm44g5kac3nh7se27
        file:///cache/spack/site-mirror/mirror/_source-cache/archive/a0/a07b.tar.gz: URLError: <urlopen error [Errno 2] No such file or directory>
    https://github.com/spack/compiler-wrapper/releases/download/v1.1.0/compiler-wrapper-1.1.0.tar.gz: DetailedURLError: [Errno -2] Name or service not known
==> Error: Installation request failed.  Refer to reported errors for failing package(s).
"""  # noqa: E501


def test_a_fetch_that_finds_nothing_names_the_package_and_the_mirror():
    assert why_it_stopped(FETCH_FAILED, MIRROR) == (
        f"no source for compiler-wrapper-1.1.0, neither in the mirror {MIRROR} nor online -- "
        f"put its archive there (an OpenFOAM's: in TOPOFOAM_SOURCES, the offline kit's "
        f"sources/) and rerun"
    )


def test_a_stale_patch_index_names_the_package_and_the_commands_that_clear_it():
    """Spack's words (lib/spack/spack/patch.py) when its index of a repository's patches
    predates a changed patch (the sha256 is TEST DATA); the fix goes through ./bench, whose
    Spack it is."""
    said = (
        "==> Error: Couldn't find patch for package topofoam.openfoam with sha256: "
        "13b7681f0e2c5ee9a1ab7a5d2d1b21bb0e5e8c7de1d3c8cc94f6a2ad4c3f0b17\n"
    )
    assert why_it_stopped(said, MIRROR) == (
        "a patch of topofoam.openfoam changed after Spack indexed the repository -- run "
        "'./bench spack clean -m' (Spack's caches) and './bench spack -e . concretize -f', "
        "then rerun"
    )


def test_output_that_names_no_known_stop_gives_none():
    assert why_it_stopped("==> Error: something Spack has not said before\n", MIRROR) is None


@pytest.mark.parametrize(
    "site,wanted",
    [(None, {"openfoam-org@12", "openfoam@2512", "openfoam@1912_220610"}),
     ("local", {"openfoam-org@12", "openfoam@2512"}), ("vsc5", {"openfoam-org@12"}),
     ("oci", {"openfoam@2512"})],
)  # fmt: skip
def test_an_install_asks_only_for_the_sources_of_what_its_environment_holds(site, wanted):
    """A missing archive stops an install before Spack runs only when the environment (the
    site's file, or spack.yaml's three OpenFOAMs without a site) would build it; a missing
    dependency's source (ADIOS2's) only when the OpenFOAM that needs it is built."""
    absent = {spec: f"no {spec}" for spec in (*SPECS, ADIOS2)}
    expected = {f"no {spec}" for spec in wanted}
    if "openfoam@2512" in wanted:
        expected.add(f"no {ADIOS2}")
    assert set(wanted_sources_missing(site, absent)) == expected


def test_an_install_that_names_a_spec_asks_only_for_its_sources():
    absent = {spec: f"no {spec}" for spec in (*SPECS, ADIOS2)}
    args = ["-C", "/scope", "-e", ".", "install", "--no-checksum", "-j", "2", "openfoam-org@12"]
    assert named_specs(args) == ["openfoam-org@12"]
    assert wanted_sources_missing("local", absent, named_specs(args)) == ["no openfoam-org@12"]
    assert named_specs(["-e", ".", "concretize", "-f"]) == []
