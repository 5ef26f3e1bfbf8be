"""The Spack environment and overlay repository, checked by a real Spack 1.1.1 (offline).

The Spack is the offline kit's (TOPOFOAM_SPACK_KIT, localsite/spack.py): without it every
check here but the first is skipped, saying why. The environment is concretized per site in a
copy of spack.yaml beside links to spack/, site-configs/ and patches/, so a site's own
spack.lock in the clone is never touched; the copy must come out byte-identical.
"""

import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, SPACK_AHEAD, SPACK_LOCKS, outcome, requested, side_by_side
from localsite import spack as offline_spack

OVERLAY = REPO / "spack/repos/spack_repo/topofoam"
SUITE = OVERLAY / "packages/openfoam/suite"
SERIES_OF = {"openfoam": ["esi-v1912", "esi-v2512"], "openfoam_org": ["org-12"]}

needs_spack = pytest.mark.skipif(
    offline_spack.missing() is not None, reason=str(offline_spack.missing())
)


def series(folder: str, without: tuple[str, ...] = ()) -> list[str]:
    return sorted(
        p.name for p in (REPO / "patches" / folder).glob("*.patch") if p.name not in without
    )


#: Per site (None: no TOPOFOAM_SITE): OpenFOAM (name, version, patches of ours expected),
#: Open MPI version (None: any), CPU target, externals the OpenFOAM must use, and (where
#: given) all that Spack may build.
SITES = {
    None: dict(
        openfoams=[
            # 1912_220610 already has the GCC 12 fix of 0001
            (
                "openfoam",
                "1912_220610",
                series("esi-v1912", without=("0001-OSHA1stream-overflow-for-GCC-12.patch",)),
            ),
            ("openfoam-org", "12", series("org-12")),
            ("openfoam", "2512", series("esi-v2512")),
        ],
        mpi=None,
        target=None,
        externals={"gcc"},
    ),
    "vsc5": dict(
        openfoams=[("openfoam-org", "12", series("org-12"))],
        mpi="4.1.4",
        target="zen3",
        externals={"gcc", "pmix", "rdma-core", "slurm"},
    ),
    "hpc2": dict(
        openfoams=[("openfoam-org", "12", series("org-12"))],
        mpi="4.1.5",
        target="skylake_avx512",
        externals={"gcc", "pmix", "rdma-core", "slurm"},
    ),
    "oci": dict(
        openfoams=[("openfoam", "2512", series("esi-v2512"))],
        mpi="5.0.8",
        target="icelake",
        externals={"gcc", "pmix", "rdma-core", "slurm"},
    ),
    # This machine: Debian's packages, only OpenFOAM built (compiler-wrapper and gcc-runtime
    # are Spack's own: a wrapper script, and links to the compiler's runtime libraries), and
    # for v2512 ADIOS2, which Debian 12 lacks.
    "local": dict(
        openfoams=[
            ("openfoam-org", "12", series("org-12")),
            ("openfoam", "2512", series("esi-v2512")),
        ],
        mpi="4.1.4",
        target="x86_64",
        externals={
            "gcc",
            "openmpi",
            "scotch",
            "flex",
            "zlib",
            "cmake",
            "json-c",
            "libyaml",
            "readline",
        },  # fmt: skip
        externals_of={"openfoam": {"fftw", "boost", "cgal", "mpfr", "m4", "yaml-cpp", "pugixml"}},
        built_of={
            "openfoam-org": {"openfoam-org", "compiler-wrapper", "gcc-runtime"},
            "openfoam": {"openfoam", "adios2", "compiler-wrapper", "gcc-runtime"},
        },
    ),
}


@pytest.mark.parametrize(
    "package,folder", [(p, s) for p, folders in SERIES_OF.items() for s in folders]
)
def test_overlay_links_every_patch_of_the_series(package, folder):
    """The overlay reads its patches through a link to patches/: nothing is copied."""
    link = OVERLAY / "packages" / package / folder
    assert link.is_symlink() and link.resolve() == (REPO / "patches" / folder).resolve()
    assert sorted(p.name for p in link.glob("*.patch")) == series(folder)


@pytest.fixture(scope="module")
def spack():
    why = offline_spack.missing()
    if why:
        pytest.skip(why)
    return offline_spack.ensure()


def environment_copy(dest: Path, spack_dir: Path = REPO / "spack") -> Path:
    """spack.yaml copied, what it refers to linked: an environment Spack may write into
    (spack/ from ``spack_dir``: an altered copy of the overlay, if given)."""
    dest.mkdir(parents=True)
    shutil.copy2(REPO / "spack.yaml", dest / "spack.yaml")
    (dest / "spack").symlink_to(spack_dir)
    for name in ("site-configs", "patches"):
        (dest / name).symlink_to(REPO / name)
    return dest


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def tracked_spack_yaml():
    before = sha(REPO / "spack.yaml")
    yield before
    assert sha(REPO / "spack.yaml") == before, "the tests changed the tracked spack.yaml"


@pytest.mark.parametrize("package", ["openfoam", "openfoam_org"])
def test_packages_state_the_suite_they_build(package):
    """Spack hashes a package's own source, not the suite files beside it: each overlay
    package states the suite's digest, so that a changed suite is a new spec (built in a
    new stage, never the kept stage of the old one), and refuses a suite that differs."""
    from localsite.flavours import libclosure

    source = (OVERLAY / "packages" / package / "package.py").read_text()
    stated = re.search(r'^SUITE_SHA256 = "([0-9a-f]{64})"$', source, re.M)
    assert stated, f"{package}/package.py states no SUITE_SHA256"
    assert stated.group(1) == libclosure.digest(SUITE), (
        f"suite/ changed: set SUITE_SHA256 in {package}/package.py to {libclosure.digest(SUITE)}"
    )


@needs_spack
def test_audit_packages(spack, tracked_spack_yaml):
    done = spack.run(
        "-e", ".", "audit", "packages", "topofoam.openfoam", "topofoam.openfoam-org", cwd=REPO
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "passed" in done.stdout


@needs_spack
@pytest.mark.parametrize("missing", ["esi-v1912", "esi-v2512", "org-12"])
def test_a_missing_series_stops_spack(spack, tmp_path, missing):
    """A series folder that is not there fails loudly, naming it, instead of building stock
    OpenFOAM under the patched package's name."""
    repo = tmp_path / "spack_repo" / "topofoam"  # Spack wants that folder name
    shutil.copytree(OVERLAY, repo, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    for package, folders in SERIES_OF.items():
        for folder in folders:
            link = repo / "packages" / package / folder
            link.unlink()
            if folder != missing:
                link.symlink_to(REPO / "patches" / folder)
    (tmp_path / "spack.yaml").write_text(f"spack:\n  repos:\n  - {repo}\n  specs: []\n")
    done = spack.run(
        "-e", str(tmp_path), "audit", "packages", "topofoam.openfoam", "topofoam.openfoam-org"
    )
    assert done.returncode != 0
    assert f"{missing}: no patch series there" in done.stdout + done.stderr


def concretize(spack, site, tmp_path_factory):
    """``site``'s copy of the environment concretized (``concretize -f``), with its roots as
    spack_roots.py lists them: (env, concretize, roots; None where it failed)."""
    env = environment_copy(tmp_path_factory.mktemp("env") / "env")
    extra = {"TOPOFOAM_SITE": site} if site else {}
    done = spack.run("-e", str(env), "concretize", "-f", **extra)
    if done.returncode != 0:
        return env, done, None
    script = str(Path(__file__).with_name("spack_roots.py"))
    return env, done, spack.run("-e", str(env), "python", script, **extra)


@pytest.fixture(scope="module")
def concretized(request, spack, tmp_path_factory):
    """Every requested site's copy of the environment concretized, side by side: site ->
    concretize's result. The one with no site was started with the session where it could
    be (conftest.py: spack_ahead), and is awaited here."""
    ahead = request.config.stash.get(SPACK_AHEAD, None)
    sites = requested(request, "test_concretize_per_site", "site")
    done = side_by_side(
        lambda site: concretize(spack, site, tmp_path_factory),
        [site for site in sites if not (ahead and site is None)],
    )
    if ahead:
        try:
            done[None] = ahead.result()
        except Exception as error:  # noqa: BLE001 - handed to its own test (outcome)
            done[None] = error
    request.config.stash[SPACK_LOCKS] = {
        site: result[0] / "spack.lock"
        for site, result in done.items()
        if not isinstance(result, Exception) and result[1].returncode == 0
    }
    return done


@needs_spack
@pytest.mark.parametrize("site", list(SITES), ids=lambda s: s or "no-site")
def test_concretize_per_site(concretized, tracked_spack_yaml, site):
    env, done, shown = outcome(concretized, site)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    # Spack writes detected compilers and a reformatted repos: list into the manifest of the
    # first environment it meets unless compilers were registered in its own scope first.
    assert sha(env / "spack.yaml") == tracked_spack_yaml, (env / "spack.yaml").read_text()
    assert shown.returncode == 0, shown.stderr[-3000:]
    roots = json.loads(shown.stdout.strip().splitlines()[-1])
    want = SITES[site]
    openfoams = [r for r in roots if r["name"] in ("openfoam", "openfoam-org")]
    assert sorted((r["name"], r["version"]) for r in openfoams) == sorted(
        (name, version) for name, version, _ in want["openfoams"]
    )
    for name, version, patches in want["openfoams"]:
        (root,) = [r for r in openfoams if (r["name"], r["version"]) == (name, version)]
        ours = [Path(p).name for p in root["patches"] if "/spack_repo/topofoam/" in p]
        assert ours == patches, f"{name}@{version}: applied {ours}"
        mpi = root["mpi"]
        assert mpi["fabrics"] == ["ucx"] and mpi["schedulers"] == ["slurm"]
        if "openmpi" not in root["externals"]:  # an external's dependencies are not known
            assert all(mpi["ucx"].values()), f"UCX lacks a transport: {mpi['ucx']}"
        if want["mpi"]:
            assert mpi["version"] == want["mpi"]
        if want["target"]:
            assert root["target"] == want["target"]
        externals = want["externals"] | want.get("externals_of", {}).get(name, set())
        assert externals <= set(root["externals"]), root["externals"]
        if "built_of" in want:
            assert set(root["built"]) == want["built_of"][name], root["built"]
        if site == "local":
            # Unchanged inputs, concretized afresh: what `./bench spack -e . install` installed
            # for them, nothing to rebuild (test_spack_install.py: a changed series is not it).
            flavour = {"openfoam-org": "org12", "openfoam": "v2512"}[name]
            installed = offline_spack.installs()[flavour]
            if installed["installed"]:
                assert root["hash"] == installed["hash"], (name, installed["prefix"])
    assert {"hwloc", "scotch"} <= {r["name"] for r in roots}


@pytest.fixture(scope="module")
def mirror(spack, tmp_path_factory):
    """A file mirror of this machine's OpenFOAM sources, as a config scope for `spack -C`."""
    root = tmp_path_factory.mktemp("spack-mirror")
    absent = offline_spack.mirror(root / "mirror")
    scope = root / "scope"
    scope.mkdir()
    (scope / "mirrors.yaml").write_text(
        f"mirrors:\n  offline:\n    url: file://{root / 'mirror'}\n    signed: false\n"
    )
    # A stage of this run's own: Spack keeps a stage it has patched and does not patch it
    # again, so a stage left by an earlier run would hold that run's suite files.
    (scope / "config.yaml").write_text(f"config:\n  build_stage:\n  - {root / 'stage'}\n")
    return scope, absent


@pytest.fixture(scope="module")
def patched(request, spack, mirror, concretized, tmp_path_factory):
    """``spack patch`` of every requested spec whose archive the mirror has, side by side,
    each in a copy of the environment: spec -> the finished run. Where this session
    concretized the environment without a site (test_concretize_per_site: all three
    OpenFOAMs), each copy gets its lock, as ``spack -e . patch`` after a concretization
    has it: Spack takes the spec from the lock instead of concretizing it again (about 70 s
    a spec here)."""
    scope, absent = mirror
    done = concretized.get(None)
    lock = None if isinstance(done, Exception) or done is None else done[0] / "spack.lock"

    def patch(spec):
        env = environment_copy(tmp_path_factory.mktemp("env") / "env")
        if lock is not None and lock.is_file():
            shutil.copyfile(lock, env / "spack.lock")
        return spack.run("-C", str(scope), "-e", str(env), "patch", "--no-checksum", spec)

    wanted = requested(request, "test_spack_patch_stages_the_series", "spec")
    return side_by_side(patch, [spec for spec in wanted if spec not in absent])


@needs_spack
@pytest.mark.parametrize(
    "spec,folder,without",
    [
        ("openfoam-org@12", "org-12", ()),
        ("openfoam@2512", "esi-v2512", ()),
        (
            f"openfoam@{offline_spack.V1912_PINNED}",
            "esi-v1912",
            ("0001-OSHA1stream-overflow-for-GCC-12.patch",),
        ),
    ],
    ids=["openfoam-org@12", "openfoam@2512", f"openfoam@{offline_spack.V1912_PINNED}"],
)
def test_spack_patch_stages_the_series(mirror, patched, spec, folder, without):
    """`spack patch` from a file mirror: every patch of the series is in the staged tree
    (it reverses cleanly) and the reduction schedule's code is there. The v1912 archive is
    Debian's 1912.200626 tree, which holds the files the series touches."""
    _, absent = mirror
    if spec in absent:
        pytest.skip(absent[spec])
    done = outcome(patched, spec)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    staged = re.search(r"Patched \S+ in (\S+)", done.stdout + done.stderr)
    assert staged, done.stdout[-3000:]
    tree = Path(staged.group(1)) / "spack-src"
    for name in series(folder, without=without):
        check = subprocess.run(
            ["git", "apply", "--check", "--reverse", str(REPO / "patches" / folder / name)],
            cwd=tree,
            capture_output=True,
            text=True,
        )
        assert check.returncode == 0, f"{name} is not applied in {tree}: {check.stderr}"
    pstreams = tree / "src/OpenFOAM/db/IOstreams/Pstreams"
    assert any("reductionSchedule" in f.read_text() for f in pstreams.glob("*.[CH]"))
    assert (tree / "bin/foamEtcFile").is_file()
    # +suite (OpenFOAM-12, v2512): the builtin spack-Allwmake runs the tree's Allwmake-spack,
    # which builds what the series' needs file names with the recipe ./bench build runs.
    build = tree / "Allwmake-spack"
    if folder in ("org-12", "esi-v2512"):
        assert (tree / "spack-Allwmake").is_file()
        assert os.access(build, os.X_OK), sorted(p.name for p in tree.iterdir())
        assert f".topofoam-suite/{folder}.needs" in build.read_text()
        kept = tree / ".topofoam-suite"
        for name in ("build-needed.sh", "libclosure.py", "wmake-needed/wmake", f"{folder}.needs"):
            assert (kept / name).read_bytes() == (SUITE / name).read_bytes(), name
    else:
        assert not build.exists()
