"""`./bench spack -e . install` on this machine's Spack site (site-configs/local.spack.yaml):
what stops an install says so in one line, naming what and the fix, before Spack runs where
it can (a missing archive, an external that is not this machine's) and after it otherwise (a
checksum, a series that does not apply); a stopped install continues in its kept stage.

Every Spack here is the offline kit's (TOPOFOAM_SPACK_KIT); each test works in an environment
copy and a stage folder of its own, so the clone's spack.lock and the real stage stay as they
are. The install to the end, and the checks on it, are tests/system/test_spack_checks.py.
"""

import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from test_spack import environment_copy

from conftest import (
    PYTHON,
    REPO,
    SPACK_LOCKS,
    bench_cli,
    left_running,
    runs_on,
    side_by_side,
)
from localsite import flavours, sources
from localsite import spack as offline_spack

needs_spack = pytest.mark.skipif(
    offline_spack.missing() is not None, reason=str(offline_spack.missing())
)
SITE_FILE = REPO / "site-configs" / "local.spack.yaml"


def stage_scope(tmp_path: Path, own_caches: bool = False, own_store: bool = False) -> Path:
    """A config scope giving this test a stage folder of its own, and with ``own_caches``
    caches of its own: Spack keeps its index of a repository's patches by the repository's
    name, so an altered copy of the overlay would leave its patches there for the next run
    with the real one. With ``own_store`` an install tree of its own: one in the shared
    store (``./bench spack -e . install`` run to the end) would leave nothing to build."""
    scope = tmp_path / "scope"
    scope.mkdir()
    config = f"config:\n  build_stage:\n  - {tmp_path / 'stage'}\n"
    if own_caches:
        config += f"  misc_cache: {tmp_path / 'misc-cache'}\n"
    if own_store:
        config += f"  install_tree:\n    root: {tmp_path / 'store'}\n"
    (scope / "config.yaml").write_text(config)
    return scope


def said(done: subprocess.CompletedProcess) -> list[str]:
    """What ./bench itself said (Spack's own lines aside)."""
    return [line for line in done.stderr.splitlines() if line.startswith("bench: ")]


def bench_spack(*args: str, timeout: float = 900, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k != "TOPOFOAM_SITE"}
    return bench_cli("spack", *args, env=dict(environ, **env), timeout=timeout)


def overlay_with_series_copy(tmp_path: Path, package: str, folder: str) -> tuple[Path, Path]:
    """A copy of the overlay (spack/) whose ``package`` reads its ``folder`` series from a copy
    in ``tmp_path`` that the test may alter: (the spack/ copy, the series copy)."""
    spack_dir = tmp_path / "spack"
    shutil.copytree(
        REPO / "spack", spack_dir, symlinks=True, ignore=shutil.ignore_patterns("__pycache__")
    )
    (tmp_path / "patches").symlink_to(REPO / "patches")  # for the copy's relative links
    series = tmp_path / folder
    shutil.copytree(REPO / "patches" / folder, series)
    link = spack_dir / "repos/spack_repo/topofoam/packages" / package / folder
    link.unlink()
    link.symlink_to(series)
    return spack_dir, series


# -- before Spack runs ---------------------------------------------------------------------


def test_the_local_sites_externals_are_this_machines():
    """Every external of the local site is the version Debian installed here."""
    assert offline_spack.external_mismatches(SITE_FILE) == []


def test_an_external_of_another_version_or_not_installed_is_named(tmp_path, monkeypatch):
    text = SITE_FILE.read_text()
    site = tmp_path / "local.spack.yaml"
    site.write_text(text.replace("openmpi@4.1.4", "openmpi@4.1.9"))
    # hwloc's Debian package as if it were not installed (a name no machine has)
    monkeypatch.setitem(offline_spack.DEBIAN_PACKAGES, "hwloc", "topofoam-no-such-package")
    found = offline_spack.external_mismatches(site)
    assert found == [
        f"{site}: external openmpi@4.1.9, but Debian's libopenmpi-dev here is 4.1.4 -- state "
        f"@4.1.4 there",
        f"{site}: external hwloc@2.9.0 is not on this machine (Debian's "
        f"topofoam-no-such-package is not installed) -- run ./bench setup",
    ]


def missing_line(archive: sources.Archive, folder: Path) -> str:
    return (
        f"bench: spack: {archive.name} is not in TOPOFOAM_SOURCES={folder} (nor "
        f"{archive.mirror_path} there) -- put the archive there, or unset "
        f"TOPOFOAM_SOURCES to download it from {archive.url}"
    )


@needs_spack
def test_install_without_the_archive_stops_before_spack_in_one_line(tmp_path):
    """The whole environment: one line per OpenFOAM archive missing; an install that names
    OpenFOAM-12: its line alone."""
    empty = tmp_path / "sources"
    empty.mkdir()
    for named, archives in (
        ([], [flavours.ORG12.archive, flavours.V2512.archive]),
        (["openfoam-org@12"], [flavours.ORG12.archive]),
    ):
        done = bench_spack(
            "-e", ".", "install", *named, TOPOFOAM_SITE="local", TOPOFOAM_SOURCES=str(empty),
            timeout=300,
        )  # fmt: skip
        assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
        assert sorted(said(done)) == sorted(missing_line(a, empty) for a in archives)
        assert "Traceback" not in done.stdout + done.stderr
        assert not (REPO / "spack.lock").exists() or "Installing" not in done.stdout


# -- when Spack stops ----------------------------------------------------------------------


def checksum_run(tmp_path: Path) -> subprocess.CompletedProcess:
    """``spack patch`` of OpenFOAM-12 from the kit's archive, checksum checked."""
    env = environment_copy(tmp_path / "env")
    return bench_spack(
        "-C", str(stage_scope(tmp_path)), "-e", str(env), "patch", "openfoam-org@12",
        timeout=600,
    )  # fmt: skip


def not_applying_run(tmp_path: Path) -> tuple[subprocess.CompletedProcess, Path]:
    """``spack patch`` of OpenFOAM-12 with a series copy in which a patch expects lines the
    release lacks: (the run, that patch as the environment's overlay reaches it)."""
    spack_dir, series = overlay_with_series_copy(tmp_path, "openfoam_org", "org-12")
    # its first patch's first hunk finds none of its context lines in the release
    broken = sorted(series.glob("*.patch"))[0]
    head, hunk, rest = re.split(r"(?m)^(@@ .*\n(?:[ +-].*\n)*)", broken.read_text(), maxsplit=1)
    hunk = re.sub(r"(?m)^ .*$", " not a line of OpenFOAM-12", hunk)
    broken.write_text(head + hunk + rest)
    link = spack_dir / "repos/spack_repo/topofoam/packages/openfoam_org/org-12"
    env = environment_copy(tmp_path / "env", spack_dir)
    done = bench_spack(
        "-C", str(stage_scope(tmp_path, own_caches=True)), "-e", str(env), "patch", "--no-checksum",
        "openfoam-org@12", timeout=600,
    )  # fmt: skip
    return done, env / link.relative_to(tmp_path) / broken.name


def changed_series_run(tmp_path: Path) -> subprocess.CompletedProcess:
    """``concretize -f`` on the local site with v2512's series changed (a line more in a
    patch's description)."""
    spack_dir, series = overlay_with_series_copy(tmp_path, "openfoam", "esi-v2512")
    changed = sorted(series.glob("*.patch"))[0]
    changed.write_text("A line of description more: another patch file.\n" + changed.read_text())
    env = environment_copy(tmp_path / "env", spack_dir)
    return bench_spack(
        "-C", str(stage_scope(tmp_path, own_caches=True)), "-e", str(env), "concretize", "-f",
        timeout=900, TOPOFOAM_SITE="local",
    )  # fmt: skip


def org12_archive() -> tuple[Path | None, str | None]:
    """OpenFOAM-12's archive in TOPOFOAM_SOURCES, or why there is none."""
    try:
        return sources.find(flavours.ORG12.archive, download=False), None
    except sources.SourceError as e:
        return None, str(e)


def org12_missing() -> str | None:
    return org12_archive()[1]


def checksum_missing() -> str | None:
    """Why the checksum test cannot run: no archive, or the release's own (it matches)."""
    archive, why = org12_archive()
    if archive is not None and sources.checksum(archive) == flavours.ORG12.archive.sha256:
        why = f"{archive} is the release's own archive: its checksum matches"
    return why


def v2512_missing() -> str | None:
    installed = offline_spack.installs()["v2512"]
    return None if installed["installed"] else installed["why_not"]


#: The tests of this section: each one's Spack run, and why it cannot run where it cannot.
STOPPING = {
    "test_a_checksum_mismatch_is_one_line_naming_the_archive_and_the_fix": (
        checksum_run, checksum_missing,
    ),
    "test_a_series_that_does_not_apply_is_one_line_naming_the_patch": (
        not_applying_run, org12_missing,
    ),
    "test_a_changed_series_is_a_new_openfoam_not_the_installed_one": (
        changed_series_run, v2512_missing,
    ),
}  # fmt: skip


@pytest.fixture(scope="module")
def stopping(request, tmp_path_factory):
    """The Spack runs of this section's requested tests, side by side (each is one
    single-threaded Spack process, so two take the time of one): test name -> its run's
    result, or why it cannot run here (str)."""
    if offline_spack.missing():
        pytest.skip(str(offline_spack.missing()))
    names = {getattr(item, "originalname", None) for item in request.session.items} & set(STOPPING)
    why = {name: STOPPING[name][1]() for name in names}
    runs = side_by_side(
        lambda name: STOPPING[name][0](tmp_path_factory.mktemp(name[5:30])),
        sorted(name for name in names if why[name] is None),
    )
    return {name: why[name] if why[name] else runs[name] for name in names}


def stopping_run(stopping, request):
    """This test's run from ``stopping``; skipped, saying why, where it cannot run."""
    result = stopping[request.node.originalname]
    if isinstance(result, str):
        pytest.skip(result)
    if isinstance(result, Exception):  # a timeout, say: this test's alone (side_by_side)
        raise result
    return result


@needs_spack
def test_a_checksum_mismatch_is_one_line_naming_the_archive_and_the_fix(stopping, request):
    done = stopping_run(stopping, request)
    assert done.returncode != 0
    assert len(said(done)) == 1, done.stdout[-3000:] + done.stderr[-3000:]
    (line,) = said(done)
    assert re.fullmatch(
        r"bench: spack: \S+/version-12\.tar\.gz: its sha256 is not the one Spack's package "
        r"pins -- an archive repacked from git \(as the offline kit's are\) needs 'install "
        r"--no-checksum'; any other: fetch it again",
        line,
    ), line


@needs_spack
def test_a_series_that_does_not_apply_is_one_line_naming_the_patch(stopping, request):
    done, broken = stopping_run(stopping, request)
    assert done.returncode != 0
    assert len(said(done)) == 1, done.stdout[-3000:] + done.stderr[-3000:]
    (line,) = said(done)
    assert line == (
        f"bench: spack: {broken} does not apply to the staged release -- rewrite it against "
        f"that release (patches/), then rerun: Spack restages the source"
    ), done.stdout[-3000:]


@needs_spack
def test_a_changed_series_is_a_new_openfoam_not_the_installed_one(stopping, request):
    """Spack's default (reuse: true) concretized a changed series to the installed OpenFOAM,
    the old patches in it; spack.yaml keeps the OpenFOAMs out of reuse. The control, the
    series unchanged giving the installed hash, is test_spack.py's local concretization."""
    runs_on("v2512-spack", request.node.nodeid)  # it needs Spack's v2512: its skip is that one's
    done = stopping_run(stopping, request)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    # "[+]  6xvmten  openfoam@2512..." installed, " -   hhb7ipf  openfoam@2512..." to build
    found = re.search(r"^\s*\S+\s+([a-z0-9]{7})\s+openfoam@2512\b", done.stdout, re.M)
    assert found, done.stdout[-3000:]
    assert found.group(1) != offline_spack.installs()["v2512"]["hash"][:7], found.group(0)


@needs_spack
def test_a_stopped_install_continues_in_its_kept_stage(tmp_path, request):
    """The install is stopped (SIGTERM, as a job's end or a closed session sends) once it
    compiles; it says how to go on, and the rerun builds on in the same tree: nothing staged
    or patched again, the objects compiled before kept, not compiled again."""
    if org12_missing():
        pytest.skip(org12_missing())
    env = environment_copy(tmp_path / "env")
    # The lock the local install kept for these inputs, or else the one this session's
    # concretization of the local site wrote (test_spack.py), where there is one: the
    # install then builds at once instead of concretizing first (about 90 s here).
    concretized = request.config.stash.get(SPACK_LOCKS, {})
    kept = offline_spack.kept_lock("local") or concretized.get("local")
    if kept:
        shutil.copyfile(kept, env / "spack.lock")
    scope = stage_scope(tmp_path, own_store=True)
    args = ["-C", str(scope), "-e", str(env), "install", "--no-checksum", "openfoam-org@12"]
    before: dict[Path, float] = {}
    for attempt in range(2):
        log = tmp_path / f"install-{attempt}.log"
        with open(log, "w") as out:
            run = subprocess.Popen(
                [PYTHON, "-m", "localsite.cli", "spack", *args],
                cwd=REPO, stdout=out, stderr=subprocess.STDOUT,
                env=dict(os.environ, TOPOFOAM_SITE="local"),
            )  # fmt: skip
            _wait_for_objects(tmp_path / "stage", more_than=len(before))
            run.send_signal(signal.SIGTERM)
            assert run.wait(timeout=120) != 0
        text = log.read_text()
        assert text.rstrip().endswith(
            "bench: spack: stopped before the end -- rerun the same command: the build "
            "continues in Spack's kept stage"
        ), text[-2000:]
        assert "Traceback" not in text
        assert not left_running(tmp_path / "stage")  # nothing of the build is left running
        if attempt == 1:
            assert "Applied patch" not in text and "Already patched openfoam-org" in text
            after = _objects(tmp_path / "stage")
            assert {p: after.get(p) for p in before} == before  # kept, not compiled again
            assert len(after) > len(before)
        before = _objects(tmp_path / "stage")


def _objects(stage: Path) -> dict[Path, float]:
    """The staged build's object files and their times."""
    return {
        p: p.stat().st_mtime
        for p in stage.glob("spack-stage-openfoam-org-*/OpenFOAM-12/platforms/*/src/**/*.o")
    }


def _wait_for_objects(stage: Path, more_than: int, timeout: float = 900) -> None:
    """Until the staged build has more than ``more_than`` object files."""
    deadline = time.monotonic() + timeout
    while len(_objects(stage)) <= more_than:
        if time.monotonic() > deadline:
            raise AssertionError(f"no more than {more_than} objects in {stage} after {timeout} s")
        time.sleep(5)
