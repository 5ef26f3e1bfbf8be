"""localsite/setup.sh: idempotent, and a clear one-line cause when it cannot proceed."""

import os
import subprocess
import time

import pytest

from conftest import PYTHON, REPO, foam_env, needs_root

SETUP = REPO / "localsite" / "setup.sh"


def run_setup(env=None, prefix=()):
    return subprocess.run(
        [*prefix, "bash", str(SETUP)], capture_output=True, text=True, env=env, timeout=600
    )


def test_second_run_does_nothing_quickly():
    """On a set-up machine setup.sh changes nothing: no output, a few seconds at most (the
    quicker of two runs: another process on the machine can lengthen one, not both alike)."""
    first = run_setup()
    assert first.returncode == 0, first.stderr
    elapsed = []
    for _ in range(2):
        t0 = time.monotonic()
        again = run_setup()
        elapsed.append(time.monotonic() - t0)
        assert again.returncode == 0, again.stderr
        assert again.stdout == "" and again.stderr == ""
    assert min(elapsed) < 10, elapsed


def in_private_mounts(script: str, **kwargs):
    """Run a shell script in a private mount namespace (changes there never leave it)."""
    return subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "bash", "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        **kwargs,
    )


@needs_root
def test_unsupported_system_is_refused(tmp_path):
    fake = tmp_path / "os-release"
    fake.write_text('ID=fedora\nPRETTY_NAME="Fedora Linux 40"\n')
    done = in_private_mounts(f"mount --bind {fake} /etc/os-release && bash {SETUP}")
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "setup: unsupported system 'Fedora Linux 40' -- use a Debian 12 or Ubuntu machine, "
        "or a site config with Spack (see README)"
    ]


@needs_root
def test_not_root_when_there_is_system_work(tmp_path):
    """Non-root without sudo, on a machine that still needs apt work: refused, saying why."""
    sources = tmp_path / "debian.sources"
    sources.write_text(
        "Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm\nComponents: main\n"
    )
    sources.chmod(0o644)
    tmp_path.chmod(0o755)
    done = in_private_mounts(
        f"mount --bind {sources} /etc/apt/sources.list.d/debian.sources && "
        f"setpriv --reuid=nobody --regid=nogroup --clear-groups env HOME=/tmp bash {SETUP}"
    )
    assert done.returncode == 1
    assert done.stderr.startswith("setup: not root and no passwordless sudo -- run as root")
    assert "Traceback" not in done.stderr


@needs_root
@pytest.mark.parametrize("below", ["", "/sub"])
def test_a_cache_that_is_a_file_is_one_line(tmp_path, below):
    taken = tmp_path / "cache"
    taken.write_text("keep me\n")
    done = run_setup(env=dict(os.environ, TOPOFOAM_CACHE=f"{taken}{below}"))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line == (
        f"setup: the cache {taken} is a file, not a folder -- point TOPOFOAM_CACHE at a folder "
        "(unset: ~/.cache/topofoam)"
        if not below
        else f"setup: cannot make or write the cache folder {taken}{below} -- point "
        "TOPOFOAM_CACHE at a writable folder"
    )
    assert taken.read_text() == "keep me\n"


def test_no_space_for_the_cache(tmp_path):
    """A cache on a full file system: refused before any download, naming the folder."""
    cache = tmp_path / "cache"
    cache.mkdir()
    done = in_private_mounts(
        f"mount -t tmpfs -o size=1m tmpfs {cache} && TOPOFOAM_CACHE={cache} bash {SETUP}"
    )
    assert done.returncode == 1
    assert f"free on {cache}" in done.stderr
    assert "free at least" in done.stderr


@needs_root
def test_a_full_case_cache_is_one_line(tmp_path):
    """Preparing a case onto a full file system (a 40 KiB tmpfs in a private mount namespace):
    one line naming the cache and the fix, no traceback, nothing half-written left."""
    cache = tmp_path / "cache"
    cache.mkdir()
    env = foam_env()
    done = in_private_mounts(
        f"mount -t tmpfs -o size=40k tmpfs {cache} && TOPOFOAM_CACHE={cache} "
        f"{PYTHON} -m cases prepare cavity2D; echo exit=$?; ls -A {cache}/cases",
        env=env,
        cwd=REPO,
    )
    assert "Traceback" not in done.stdout + done.stderr
    assert "exit=2" in done.stdout
    assert done.stderr.strip().splitlines()[-1] == (
        f"cases: writing the prepared case into {cache}/cases failed (No space left on device) "
        f"-- free space there or point TOPOFOAM_CACHE at a larger file system"
    )
    assert not any(name.endswith(".tmp") for name in done.stdout.split())
