"""The ESI archive the Spack mirror offers (localsite/spack.py: _with_doc): Spack's builtin
``openfoam`` install copies the tree's doc/ (with +source, its default) and stopped at the end
of a whole build without one (2026-11-27). The archives here are small trees made for the
test (TEST DATA); the offline kit's real one is checked in tests/integration/test_spack.py."""

import io
import tarfile

import pytest

from localsite import spack


def archive(path, members):
    """A .tar.gz of ``members`` ({name: text}, a name ending in / being a folder)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:gz") as tar:
        for name, text in members.items():
            info = tarfile.TarInfo(name.rstrip("/"))
            if name.endswith("/"):
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                data = text.encode()
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return path


def contents(path):
    with tarfile.open(path) as tar:
        return {
            m.name: (tar.extractfile(m).read().decode() if m.isfile() else None)
            for m in tar.getmembers()
        }


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TOPOFOAM_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


TREE = {"OpenFOAM-v2512/": "", "OpenFOAM-v2512/Allwmake": "#!/bin/sh\n", "OpenFOAM-v2512/etc/": ""}


def test_an_archive_without_doc_is_repacked_once_with_an_empty_one(tmp_path, cache):
    given = archive(tmp_path / "OpenFOAM-v2512.tar.gz", TREE)
    packed = spack._with_doc(given)
    assert packed.parent == cache / "sources" and packed != given
    got = contents(packed)
    assert got == {**{k.rstrip("/"): (v if not k.endswith("/") else None) for k, v in TREE.items()},
                   "OpenFOAM-v2512/doc": None}  # fmt: skip
    with tarfile.open(packed) as tar:
        assert tar.getmember("OpenFOAM-v2512/doc").isdir()
    stamp = packed.stat().st_mtime_ns
    assert spack._with_doc(given) == packed and packed.stat().st_mtime_ns == stamp


def test_another_archive_is_another_repack(tmp_path, cache):
    first = spack._with_doc(archive(tmp_path / "a" / "OpenFOAM-v2512.tar.gz", TREE))
    changed = dict(TREE, **{"OpenFOAM-v2512/Allwmake": "#!/bin/sh\nexit 1\n"})
    second = spack._with_doc(archive(tmp_path / "b" / "OpenFOAM-v2512.tar.gz", changed))
    assert first != second
    assert contents(second)["OpenFOAM-v2512/Allwmake"] == "#!/bin/sh\nexit 1\n"


@pytest.mark.parametrize(
    "members",
    [
        dict(TREE, **{"OpenFOAM-v2512/doc/": "", "OpenFOAM-v2512/doc/README": "x"}),
        {"one/": "", "two/": ""},  # not one tree: Spack's stage names it
    ],
    ids=["with-doc", "two-tops"],
)
def test_an_archive_with_doc_or_of_two_trees_is_offered_as_it_is(tmp_path, cache, members):
    given = archive(tmp_path / "OpenFOAM-v2512.tar.gz", members)
    assert spack._with_doc(given) == given
    assert not (cache / "sources").exists()
