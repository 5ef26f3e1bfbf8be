"""A dependency's source archive (localsite/sources.py: find_dependency), which Debian lacks
and Spack builds (ADIOS2's): the site's folder first, then the cache, then its registry,
checked against its checksum. The registry here is a file:// address of the test's own, so
the download path runs for real without the network."""

import hashlib
import io
import tarfile

import pytest

from localsite import sources


def archive_at(tmp_path, name="dep-1.0.tar.gz"):
    """A small real tar.gz and the Archive naming it at a file:// address."""
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:gz") as tar:
        info = tarfile.TarInfo("dep-1.0/CMakeLists.txt")
        body = b"project(dep)\n"
        info.size = len(body)
        tar.addfile(info, io.BytesIO(body))
    upstream = tmp_path / "registry" / name
    upstream.parent.mkdir()
    upstream.write_bytes(data.getvalue())
    digest = hashlib.sha256(data.getvalue()).hexdigest()
    return sources.Archive(name, f"dep/{name}", upstream.as_uri(), digest), upstream


@pytest.fixture
def cache(monkeypatch, tmp_path):
    monkeypatch.setenv("TOPOFOAM_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("TOPOFOAM_SOURCES", raising=False)
    return tmp_path / "cache"


def test_a_dependency_is_downloaded_once_and_kept(tmp_path, cache):
    archive, upstream = archive_at(tmp_path)
    with pytest.raises(sources.SourceError, match="dep-1.0.tar.gz is not in"):
        sources.find_dependency(archive, download=False)
    got = sources.find_dependency(archive)
    assert got == cache / "sources" / archive.name
    assert got.read_bytes() == upstream.read_bytes()
    upstream.unlink()
    assert sources.find_dependency(archive) == got  # the cache, no second download


def test_the_sites_folder_comes_first_even_when_it_names_no_openfoam(tmp_path, cache, monkeypatch):
    archive, _ = archive_at(tmp_path)
    folder = tmp_path / "mirror"
    (folder / "dep").mkdir(parents=True)
    (folder / archive.mirror_path).write_bytes(b"the site's own copy")
    monkeypatch.setenv("TOPOFOAM_SOURCES", str(folder))
    assert sources.find_dependency(archive) == folder / archive.mirror_path
    # a folder without it: fetched (an OpenFOAM release would not be: sources.find)
    (folder / archive.mirror_path).unlink()
    assert sources.find_dependency(archive) == cache / "sources" / archive.name


def test_a_download_with_another_checksum_is_refused_and_not_kept(tmp_path, cache):
    archive, _ = archive_at(tmp_path)
    wrong = sources.Archive(archive.name, archive.mirror_path, archive.url, "0" * 64)
    with pytest.raises(sources.SourceError, match="does not have Spack's checksum"):
        sources.find_dependency(wrong)
    assert not list((cache / "sources").glob("dep-1.0*"))


def test_an_address_that_cannot_be_fetched_names_the_folder_to_put_it_in(tmp_path, cache):
    archive, upstream = archive_at(tmp_path)
    upstream.unlink()
    with pytest.raises(sources.SourceError) as e:
        sources.find_dependency(archive)
    said = str(e.value)
    assert "cannot be fetched" in said and "dep/dep-1.0.tar.gz" in said
    assert "TOPOFOAM_SOURCES" in said
