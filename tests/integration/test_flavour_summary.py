"""The test run ends with one line per flavour: built at the current key or not, its tests run
and skipped, and why (tests/conftest.py: pytest_terminal_summary). A green run that skipped a
flavour says so. Checked on a real pytest run of one test per built flavour."""

import re
import subprocess

from conftest import PYTHON, REPO
from localsite import flavours

ONE_EACH = [
    "tests/integration/test_schedule_built.py::test_reductions_along_the_schedule_equal_stock"
    f"[2-{name}]"
    for name in ("org12", "v2512")
]
TITLES = {"org12": "OpenFOAM-12", "v2512": "ESI v2512"}


def test_each_flavour_says_whether_it_is_built_and_what_ran():
    done = subprocess.run(
        [PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", *ONE_EACH],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    section = done.stdout.split("= flavours =")[1]
    for name, title in TITLES.items():
        (line,) = [x for x in section.splitlines() if x.startswith(f"{title}: ")]
        if flavours.is_built(flavours.get(name)):
            assert "built at the current key; 1 test(s) run (0 failed), 0 skipped" in line
        else:
            assert re.search(
                r"not built at the current key .*; 0 test\(s\) run .* 1 skipped: ", line
            )
            assert f"no cached {'OpenFOAM-12' if name == 'org12' else 'v2512'} build" in line
    # The same flavours as the local Spack site installs them: installed, or why not.
    for title in ("OpenFOAM-12 (Spack)", "ESI v2512 (Spack)"):
        (line,) = [x for x in section.splitlines() if x.startswith(f"{title}: ")]
        state, _, counts = line.removeprefix(f"{title}: ").partition("; ")
        assert state == "installed" or " -- " in state, line
        assert counts == "0 test(s) run (0 failed), 0 skipped", line
    (default,) = [x for x in section.splitlines() if x.startswith("ESI v1912 (Debian's): ")]
    assert "0 test(s) run" in default  # both tests were the built flavours'
