"""What the local Spack site has installed for the current inputs (localsite/spack.py:
installs), read from Spack's files as Spack 1.1.1 writes them: its database and the lock the
install kept. A flavour counts as installed only with what its jobs load beside it
(JOB_LOADS): `spack load openfoam@2512 hwloc scotch` failed on an install of openfoam@2512
alone, where Debian's hwloc, an external root, was never registered (2026-11-27). The
database and lock here are written for the test (TEST DATA); the real ones are read in
tests/system/test_spack_checks.py."""

import json

import pytest

from localsite import spack

HASHES = {"openfoam-org": "o" * 32, "openfoam": "e" * 32, "hwloc": "h" * 32, "scotch": "s" * 32}


@pytest.fixture
def site(tmp_path, monkeypatch):
    """A kit, its offline Spack marked ready, and the lock kept for the local site; returns
    write(installed names) -> installs()."""
    kit = tmp_path / "kit"
    kit.mkdir()
    for archive in (spack.SPACK_ARCHIVE, spack.PACKAGES_ARCHIVE):
        (kit / archive).write_bytes(archive.encode())
    monkeypatch.setenv(spack.KIT_SETTING, str(kit))
    monkeypatch.setenv("TOPOFOAM_CACHE", str(tmp_path / "cache"))
    offline = spack._keyed(kit)
    offline.home.mkdir(parents=True)
    (offline.home / ".ready").touch()
    lock = spack._kept_lock(offline, "local")
    lock.parent.mkdir(parents=True)
    lock.write_text(
        json.dumps(
            {
                "roots": [{"hash": h, "spec": name} for name, h in HASHES.items()],
                "concrete_specs": {h: {"name": name} for name, h in HASHES.items()},
            }
        )
    )
    db = offline.root / "opt" / "spack" / ".spack-db" / "index.json"
    db.parent.mkdir(parents=True)

    def write(*installed):
        records = {
            h: {"installed": name in installed, "path": f"/opt/{name}-{h[:7]}"}
            for name, h in HASHES.items()
        }
        db.write_text(json.dumps({"database": {"installs": records}}))
        return spack.installs()

    return write


def test_installed_with_what_its_jobs_load(site):
    got = site("openfoam", "hwloc", "scotch")["v2512"]
    assert got["installed"] and got["spec"] == "openfoam@2512"
    assert got["hash"] == HASHES["openfoam"] and got["prefix"] == f"/opt/openfoam-{'e' * 7}"


def test_an_openfoam_without_hwloc_is_not_installed_naming_what_to_install(site):
    got = site("openfoam", "scotch")["v2512"]
    assert not got["installed"]
    assert got["why_not"] == (
        "openfoam@2512 is installed, but not hwloc, which its jobs load with it -- "
        "'TOPOFOAM_SITE=local ./bench spack -e . install --no-checksum hwloc'"
    )


def test_an_openfoam_not_installed_names_the_command_for_it_and_its_companions(site):
    got = site("openfoam", "hwloc", "scotch")["org12"]
    assert not got["installed"]
    assert got["why_not"] == (
        "openfoam-org@12 is not installed for the current recipes and patches -- "
        "'TOPOFOAM_SITE=local ./bench spack -e . install --no-checksum openfoam-org@12 "
        "hwloc scotch'"
    )
