"""The key under which an install's spack.lock is kept (localsite/spack.py: lock_key): what
the environment concretizes from, so a fresh clone finds the install of the same inputs and
a changed recipe or patch does not pass for installed."""

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
