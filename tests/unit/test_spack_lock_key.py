"""The key under which an install's spack.lock is kept (localsite/spack.py: lock_key): what
the environment concretizes from, so a fresh clone finds the install of the same inputs and
a changed recipe or patch does not pass for installed."""

import os
import shutil

import pytest

from conftest import REPO
from localsite import spack
from topofoam import paths


@pytest.fixture
def tree(tmp_path, monkeypatch):
    for name in ("spack", "patches"):
        shutil.copytree(REPO / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "site-configs").mkdir()
    shutil.copy(REPO / "spack.yaml", tmp_path)
    shutil.copy(REPO / "site-configs" / "local.spack.yaml", tmp_path / "site-configs")
    monkeypatch.setattr(paths, "REPO", tmp_path)
    return tmp_path


def test_the_key_follows_the_recipes_patches_and_site(tree):
    key = spack.lock_key("local")
    assert spack.lock_key("local") == key and spack.lock_key(None) != key
    patch = next((tree / "patches" / "org-12").glob("*.patch"))
    patch.write_bytes(patch.read_bytes() + b"\n")
    assert spack.lock_key("local") != key
    patch.write_bytes(patch.read_bytes()[:-1])
    assert spack.lock_key("local") == key
    site = tree / "site-configs" / "local.spack.yaml"
    site.write_text(site.read_text() + "\n# another external\n")
    assert spack.lock_key("local") != key


def test_a_readme_does_not_change_the_key(tree):
    key = spack.lock_key("local")
    (tree / "spack" / "README.md").write_text("reworded\n")
    assert spack.lock_key("local") == key


@pytest.fixture
def kit(monkeypatch, tmp_path):
    """The offline kit named (its archives are only checksummed here), and a cache of the
    test's own, so the real Spack's kept locks are never touched."""
    found = REPO.parent / "shared" / "offline" / "spack"
    where = os.environ.get(spack.KIT_SETTING) or (str(found) if found.is_dir() else "")
    if not where:
        pytest.skip(f"{spack.KIT_SETTING} is not set and ../shared/offline/spack is absent")
    monkeypatch.setenv(spack.KIT_SETTING, where)
    monkeypatch.setenv("TOPOFOAM_CACHE", str(tmp_path / "cache"))


def test_a_fresh_clone_gets_the_lock_it_was_installed_from(tree, kit):
    lock = tree / "spack.lock"
    lock.write_text('{"roots": [{"hash": "abcdefg1234"}]}')
    kept = spack.keep_lock("local")
    lock.unlink()
    said = spack.restore_lock("local", "abcdefg1234")
    assert lock.read_text() == kept.read_text() and "abcdefg" in said
    assert spack.restore_lock("local", "abcdefg1234") == ""  # it has it now
    # a lock of other inputs is left as it is, and said with the fix
    lock.write_text('{"roots": [{"hash": "zzzzzzz9999"}]}')
    said = spack.restore_lock("local", "abcdefg1234")
    assert "concretize -f" in said and "zzzzzzz" in lock.read_text()


def test_a_lock_that_only_mentions_the_hash_is_of_other_inputs(tree, kit):
    """Only a root of the lock is what it installs: the installed hash as a dependency of
    another root, or a lock that cannot be read, is a lock of other inputs."""
    lock = tree / "spack.lock"
    lock.write_text(
        '{"roots": [{"hash": "zzzzzzz9999"}],'
        ' "concrete_specs": {"zzzzzzz9999": {"dependencies": [{"hash": "abcdefg1234"}]}}}'
    )
    assert "concretize -f" in spack.restore_lock("local", "abcdefg1234")
    lock.write_text("roots: abcdefg1234\n")
    assert "concretize -f" in spack.restore_lock("local", "abcdefg1234")


def test_a_lock_of_other_inputs_is_stale(tree, kit):
    """An install over a lock of other inputs would build the old spec (Spack does not look at
    the recipes again): ./bench spack concretizes first. The lock kept for the current
    inputs is not stale; a changed recipe, or another site, makes it so."""
    lock = tree / "spack.lock"
    assert not spack.lock_is_stale("local")  # no lock: Spack concretizes itself
    lock.write_text('{"roots": [{"hash": "abcdefg1234"}]}')
    assert spack.lock_is_stale("local")  # never kept
    spack.keep_lock("local")
    assert not spack.lock_is_stale("local")
    assert spack.lock_is_stale("oci")
    recipe = tree / "spack" / "repos" / "spack_repo" / "topofoam" / "packages" / "openfoam"
    (recipe / "package.py").write_text((recipe / "package.py").read_text() + "\n# changed\n")
    assert spack.lock_is_stale("local")
