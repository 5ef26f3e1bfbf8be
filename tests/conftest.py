"""Shared helpers for the tests, and their tiers.

Each test is marked by the folder it is in, so that a tier can be chosen (``./bench test -m
unit``):
  unit         no OpenFOAM, no MPI, no daemons (hwloc, ReFrame listings and pure Python);
               the whole tier runs in under 2 minutes
  integration  real OpenFOAM runs, SCOTCH decompositions, MPI ranks, compilers
  system       root, Slurm daemons, network namespaces, ReFrame runs of the suite
Everything runs the real programs on this machine; nothing is mocked.
"""

import concurrent.futures
import os
import random
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from topofoam import contents
from topofoam.config import fabric
from topofoam.paths import REPO

PYTHON = sys.executable
IS_ROOT = os.geteuid() == 0

# Every test that runs checks and is not about repeats times each comparison once, on every
# case (the local default is 5 repeats on one case per kind: tests/system/test_repeats.py).
os.environ.setdefault("TOPOFOAM_REPEATS", "1")
os.environ.setdefault("TOPOFOAM_COMPARE", "all")

TIERS = ("unit", "integration", "system")


def tier_of(item) -> str:
    return Path(str(item.fspath)).parent.name


def pytest_collection_modifyitems(config, items):
    for item in items:
        if tier_of(item) in TIERS:
            item.add_marker(getattr(pytest.mark, tier_of(item)))
    # The unit tier first: its failures show in minutes, and its one process leaves the
    # second core to the Spack concretization started with the session (spack_ahead).
    items.sort(key=lambda item: tier_of(item) != "unit")


needs_root = pytest.mark.skipif(not IS_ROOT, reason="needs root (Slurm daemons, namespaces)")


#: Ports handed to a test's daemons, below the kernel's ephemeral range (32768 to 60999
#: here): a port the kernel picked as free (bind to 0) is an ephemeral one, and any outgoing
#: connection of the minutes before the daemon starts may take it as its source port (a CI
#: saw "port 58046 is already in use" that way). The emulated cluster's slurmd takes the
#: port after its slurmctld's, so both must be free.
PORTS = range(20000, 32000, 2)


_HANDED: set[int] = set()


def free_port() -> int:
    from localsite.slurm import port_in_use  # the suite's own test of a port

    """A port, and the one after it, that no one uses now, outside the ephemeral range, and
    not handed out before in this test run."""
    for port in random.sample(PORTS, len(PORTS)):
        if port not in _HANDED and not port_in_use(port) and not port_in_use(port + 1):
            _HANDED.add(port)
            return port
    raise RuntimeError(f"no free pair of ports in {PORTS}")


def as_nobody(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    """Run a command as the unprivileged user 'nobody' (needs root to switch)."""
    setpriv = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    env = dict(kwargs.pop("env", os.environ), HOME="/tmp")
    return subprocess.run(setpriv + cmd, capture_output=True, text=True, env=env, **kwargs)


def bench_cli(
    *args: str,
    env: dict | None = None,
    timeout: float = 900,
) -> subprocess.CompletedProcess:
    """The local CLI (`./bench` minus the setup step, which the session already ran)."""
    return subprocess.run(
        [PYTHON, "-m", "localsite.cli", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_env(results, profile: str = "none") -> dict:
    """Environment of a `./bench run` with ``results`` as its results folder, under fabric
    ``profile`` (the emulated partition repeats its timings under one: once here), talking to
    the suite's own emulated cluster (no SLURM_CONF from the caller)."""
    env = dict(
        os.environ, TOPOFOAM_RESULTS=str(results), TOPOFOAM_FABRIC=profile, TOPOFOAM_REPEATS="1"
    )
    env.pop("SLURM_CONF", None)
    return env


#: VSC-5's inter-node costs (seed 000 Table 2), 100 times dearer: the profile ./bench run
#: gives the emulated cluster when TOPOFOAM_FABRIC names none.
FABRIC_PROFILE = fabric.BENCH_DEFAULT
#: The multi-node check's cases cut from 10 steps to 3 (``-S``) where a test needs what the runs
#: did, not a precise time: placement, MPI calls and schedule show from the first step, and on
#: 4 emulated nodes (8 ranks on 2 cores) a step took about 5 s (CI, 2026-11-27).
FEWER_STEPS = "PreparedCavityRanks.steps_override=3"


@pytest.fixture(scope="session")
def emu_p2p(tmp_path_factory):
    """The p2p check on the emulated cluster under FABRIC_PROFILE, run once for the session:
    test_fabric reads it, test_model builds its model on a copy (a run of about 50 s). It
    runs as the main job does, TOPOFOAM_FABRIC unset: the profile is ./bench run's own
    (issue 55: the default report predicts the emulated runs), said in one line."""
    results = tmp_path_factory.mktemp("emu-p2p")
    env = run_env(results)
    del env["TOPOFOAM_FABRIC"]
    done = bench_cli("run", "--partition", "emu", "--tag", "p2p", env=env)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    said = [ln for ln in done.stdout.splitlines() if "the emulated cluster's links cost" in ln]
    assert len(said) == 1 and said[0].startswith(
        f"bench: the emulated cluster's links cost {FABRIC_PROFILE} (L "
    ), done.stdout[-2000:]
    return results


@pytest.fixture
def slurm_ports(monkeypatch):
    """Free ports for a test's own Slurm, so it never meets another one on this machine."""
    ports = free_port(), free_port()
    monkeypatch.setenv("TOPOFOAM_SLURMCTLD_PORT", str(ports[0]))
    monkeypatch.setenv("TOPOFOAM_SLURMD_PORT", str(ports[1]))
    return ports


def foam_env() -> dict:
    """Environment to run Debian's OpenFOAM (real SCOTCH) and mpirun as root."""
    from localsite import openfoam

    return dict(openfoam.run_env(), OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


#: What each flavour built from source is called in a skip message, and its archive.
BUILT = {
    "org12": ("OpenFOAM-12", "OpenFOAM-12.tar.gz"),
    "v2512": ("v2512", "OpenFOAM-v2512.tar.gz"),
}


#: The same flavours as the local Spack site installs them (spack_env).
SPACK_BUILT = {"org12-spack": "OpenFOAM-12 (Spack)", "v2512-spack": "ESI v2512 (Spack)"}

#: The test files that asked for each flavour's build (built_env, spack_env), for the run's
#: summary.
ASKED: dict[str, set[str]] = {name: set() for name in (*BUILT, *SPACK_BUILT)}

#: Tests that need a flavour in a file whose other tests do not (runs_on): test id -> flavour.
ON_FLAVOUR: dict[str, str] = {}


def runs_on(name: str, nodeid: str) -> None:
    """Count test ``nodeid`` under flavour ``name`` in the run's summary, where its file as a
    whole is not that flavour's (test_spack_install.py's changed-series test needs Spack's
    v2512, the file's other tests only the kit)."""
    ON_FLAVOUR[nodeid] = name


def built_env(name: str) -> dict:
    """Environment to run the cached build of flavour ``name`` (localsite/flavours.py, with
    its series); skips the test, saying why, when there is none (it needs the source archive:
    TOPOFOAM_SOURCES)."""
    from localsite import flavours

    current = os.environ.get("PYTEST_CURRENT_TEST", "")
    if current:
        ASKED[name].add(current.split("::")[0])
    flavour = flavours.get(name)
    if not flavours.is_built(flavour):
        title, archive = BUILT[name]
        pytest.skip(
            f"no cached {title} build for the current inputs: './bench build {name}' with "
            f"TOPOFOAM_SOURCES naming the folder of {archive} (CI: ../shared/offline)"
        )
    return dict(
        flavours.run_env(flavour), OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1"
    )


def spack_env(name: str) -> dict:
    """What ``./bench run --openfoam <name>-spack`` needs: the local Spack site's install of
    flavour ``name`` (localsite/spack.py: installs); skips the test, saying why, without it."""
    from localsite import spack as offline_spack

    current = os.environ.get("PYTEST_CURRENT_TEST", "")
    if current:
        ASKED[f"{name}-spack"].add(current.split("::")[0])
    installed = offline_spack.installs()[name]
    if not installed["installed"]:
        pytest.skip(installed["why_not"])
    return installed


def _flavour_of(nodeid: str) -> str:
    """The flavour a test ran on: the one its file asked for (built_env); where its file asked
    for several, the one its parameters name; else the embedded default. A test registered
    by runs_on is its flavour's, whatever its file asked for."""
    if nodeid in ON_FLAVOUR:
        return ON_FLAVOUR[nodeid]
    asked = [n for n, files in ASKED.items() if nodeid.split("::")[0] in files]
    params = nodeid.partition("[")[2]
    named = [n for n in asked if re.search(rf"(^|-){n}(-|\]|$)", params)]
    if len(asked) == 1 or len(named) == 1:
        return (named or asked)[0]
    return "v1912"


def _built_here(name: str) -> str:
    try:
        if name == "v1912":
            from localsite import openfoam

            ok = openfoam.is_built("patched")
            return (
                "patched libraries built at the current key"
                if ok
                else "patched libraries not built"
            )
        if name in SPACK_BUILT:
            from localsite import spack as offline_spack

            installed = offline_spack.installs()[name.removesuffix("-spack")]
            return "installed" if installed["installed"] else installed["why_not"]
        from localsite import flavours, sources

        try:
            # The key is the source archive's: without it, "built or not" cannot be said.
            where = flavours.prefix(flavours.get(name))
        except sources.SourceError as e:
            return f"build state unknown: {e}"
        if contents.is_complete(where):
            return "built at the current key"
        return f"not built at the current key ('./bench build {name}')"
    except Exception as e:  # a summary line must not end the run
        return f"build state unknown ({e})"


def pytest_terminal_summary(terminalreporter):
    """One line per flavour: built at the current key or not, its tests run and skipped, and
    why they were skipped (issue 33: a green run that skipped a flavour must say so)."""
    counts = {
        n: {"passed": 0, "failed": 0, "skipped": 0, "why": set()}
        for n in ("v1912", *BUILT, *SPACK_BUILT)
    }
    for outcome in ("passed", "failed", "error", "skipped"):
        for report in terminalreporter.stats.get(outcome, []):
            nodeid = getattr(report, "nodeid", "")
            if not nodeid or (outcome == "passed" and report.when != "call"):
                continue
            c = counts[_flavour_of(nodeid)]
            c["failed" if outcome == "error" else outcome] += 1
            if outcome == "skipped" and isinstance(report.longrepr, tuple):
                c["why"].add(str(report.longrepr[2]).removeprefix("Skipped: "))
    titles = {
        "v1912": "ESI v1912 (Debian's)",
        "org12": "OpenFOAM-12",
        "v2512": "ESI v2512",
        **SPACK_BUILT,
    }
    terminalreporter.section("flavours")
    for name, c in counts.items():
        ran = c["passed"] + c["failed"]
        why = f": {'; '.join(sorted(c['why']))}" if c["skipped"] else ""
        terminalreporter.line(
            f"{titles[name]}: {_built_here(name)}; {ran} test(s) run ({c['failed']} failed), "
            f"{c['skipped']} skipped{why}"
        )


def left_running(path: Path, within: float = 20) -> str:
    """The processes whose command line names ``path``, once they are gone or ``within``
    seconds have passed (a killed compiler may take a moment to go): empty when none is left."""
    deadline = time.monotonic() + within
    while True:
        found = subprocess.run(["pgrep", "-af", str(path)], capture_output=True, text=True)
        if not found.stdout or time.monotonic() > deadline:
            return found.stdout
        time.sleep(0.5)


def org12_env() -> dict:
    """The cached OpenFOAM-12 build's environment (patches/org-12), or a skip."""
    return built_env("org12")


def decomposed_case(dest: Path, cells: tuple[int, int, int], parts: int) -> Path:
    """The cavity tutorial with ``cells`` blocks, decomposed by SCOTCH into ``parts``."""
    from cases.tutorial import decompose_tutorial

    return decompose_tutorial(
        "incompressible/icoFoam/cavity/cavity", dest, parts, cells=cells, env=foam_env()
    )


def tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} not found: run ./bench setup first")
    return path


def run_tool(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """One of the project's commands (a module to run with this Python, then its arguments)."""
    return subprocess.run(
        [PYTHON, "-m", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )


def one_line(done: subprocess.CompletedProcess, status: int, pattern: str) -> str:
    """A refused input: the exit status, no traceback, and the last line of stderr (the one
    that names the problem and the fix) matching ``pattern``."""
    text = done.stdout + done.stderr
    assert "Traceback" not in text, text[-2000:]
    assert done.returncode == status, (done.returncode, text[-2000:])
    last = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""
    assert re.search(pattern, last), last
    return last


#: The spack.lock each site's environment copy got from this session's concretization
#: (tests/integration/test_spack.py): site -> the lock, for later Spack runs of the same
#: inputs, which then take their specs from it instead of concretizing again.
SPACK_LOCKS = pytest.StashKey[dict]()

#: The environment's concretization with no site, started with the session (spack_ahead): a
#: Future of test_spack.concretize's result.
SPACK_AHEAD = pytest.StashKey[concurrent.futures.Future]()


@pytest.fixture(scope="session", autouse=True)
def spack_ahead(request, tmp_path_factory):
    """The Spack tests' longest command, the environment concretized with no site (all three
    OpenFOAMs: about 3 min of one core), started on a worker thread with the session where the
    unit tier runs first: its tests, one process, leave it the second core. test_spack.py's
    ``concretized`` takes its result. Nothing is started when either is not in the session.
    Spack is set up (unpacked, on a fresh machine) here first, before any other Spack run."""
    from localsite import spack as offline_spack

    items = request.session.items
    wanted = any(
        getattr(item, "originalname", None) == "test_concretize_per_site"
        and item.callspec.params.get("site", "") is None
        for item in items
    )
    if not wanted or tier_of(items[0]) != "unit" or offline_spack.missing():
        return
    test_spack = sys.modules["test_spack"]  # collected, since its test is in the session
    spack = offline_spack.ensure()
    (request.config.stash[SPACK_AHEAD],) = started(
        lambda site: test_spack.concretize(spack, site, tmp_path_factory), [None]
    ).values()


def selected(request, test_name: str) -> bool:
    """Whether this session runs ``test_name`` (a ``-k`` may leave it out)."""
    return any(getattr(item, "originalname", None) == test_name for item in request.session.items)


def requested(request, test_name: str, param: str) -> list:
    """The values of ``param`` with which this session runs ``test_name`` (a ``-k`` may pick
    a few)."""
    return [
        item.callspec.params[param]
        for item in request.session.items
        if getattr(item, "originalname", None) == test_name and hasattr(item, "callspec")
    ]


def side_by_side(work, args: list) -> dict:
    """``work(arg)`` for every arg, as many at once as there are cores: for single-threaded
    processes (a Spack run: clingo, then Python), two of which take the time of one. An
    exception (a timeout, say) is kept as that arg's result, so that only its own test fails
    (``outcome``) and not every test of the fixture."""

    def kept(arg):
        try:
            return work(arg)
        except Exception as error:  # noqa: BLE001 - handed to the arg's own test
            return error

    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        return dict(zip(args, pool.map(kept, args)))


def outcome(results: dict, arg):
    """``side_by_side``'s result for arg, its exception raised here, in arg's own test."""
    result = results[arg]
    if isinstance(result, Exception):
        raise result
    return result


def started(work, args: list) -> dict:
    """``work(arg)`` for every arg, started now on a worker thread of its own, one at a time,
    while the tests go on: arg -> its Future (``result()`` raises its exception in the test
    that reads it). For a module's longest single-threaded commands, which then take the
    second core while its other tests, one process each, take the first."""
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    futures = {arg: pool.submit(work, arg) for arg in args}
    pool.shutdown(wait=False)
    return futures
