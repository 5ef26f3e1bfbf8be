"""Which flavour's line of the run's summary counts a test (tests/conftest.py: _flavour_of):
the flavour its file asked for, the one its parameters name where the file asked for several,
a test's own flavour where runs_on named one, else the embedded default."""

import pytest

import conftest

SPACK_CHECKS = "tests/system/test_spack_checks.py"
INSTALL = "tests/integration/test_spack_install.py"
CHANGED = f"{INSTALL}::test_a_changed_series_is_a_new_openfoam_not_the_installed_one"


@pytest.fixture
def asked(monkeypatch):
    """The summary's registries as a run fills them: the Spack checks' file asked for both
    Spack installs (spack_env), the install tests' file for none."""
    monkeypatch.setattr(
        conftest, "ASKED", {n: set() for n in (*conftest.BUILT, *conftest.SPACK_BUILT)}
    )
    monkeypatch.setattr(conftest, "ON_FLAVOUR", {})
    conftest.ASKED["org12-spack"].add(SPACK_CHECKS)
    conftest.ASKED["v2512-spack"].add(SPACK_CHECKS)


@pytest.mark.parametrize("name", ["org12-spack", "v2512-spack"])
def test_a_file_of_several_flavours_counts_each_test_by_its_parameter(asked, name):
    nodeid = f"{SPACK_CHECKS}::test_checks_pass_on_the_spack_installed_openfoam[{name}]"
    assert conftest._flavour_of(nodeid) == name


def test_a_test_needing_a_flavour_its_file_does_not_is_counted_under_it(asked):
    assert conftest._flavour_of(CHANGED) == "v1912"  # before: its skip counted as v1912's
    conftest.runs_on("v2512-spack", CHANGED)
    assert conftest._flavour_of(CHANGED) == "v2512-spack"
    # The file's other tests stay the embedded default's.
    assert conftest._flavour_of(f"{INSTALL}::test_a_stopped_install_continues") == "v1912"
