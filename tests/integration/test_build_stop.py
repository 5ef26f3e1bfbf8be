"""A stopped `./bench build` (a job's end, a closed session, Ctrl-C: SIGTERM or SIGINT to
./bench) says in one line that it was stopped and how to go on, exits 130, leaves nothing
running, and the same command continues in the same build folder.

The build is OpenFOAM-12's, from TOPOFOAM_SOURCES, in a cache folder of the test's own: it is
stopped while it checks or extracts the archive, long before it compiles anything."""

import os
import signal
import subprocess
from pathlib import Path

import pytest
from test_spack_install import org12_missing

from conftest import PYTHON, REPO, left_running, runs_on


def stopped_build(cache: Path, sig: signal.Signals) -> tuple[int, str]:
    """``./bench build org12`` in ``cache``, sent ``sig`` once its script has started on the
    archive: (exit status, what it wrote to stderr)."""
    env = dict(os.environ, TOPOFOAM_CACHE=str(cache))
    bench = subprocess.Popen(
        [PYTHON, "-m", "localsite.cli", "build", "org12"],
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        # A test run started in the background (nohup ... &) ignores SIGINT and the child
        # would inherit that: a Ctrl-C reaches ./bench with the default disposition.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    said = []
    for line in bench.stderr:
        said.append(line)
        if line.startswith(("build-tree: checking", "build-tree: extracting")):
            bench.send_signal(sig)
            break
    said += bench.stderr.readlines()
    return bench.wait(timeout=60), "".join(said)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stopped_build_says_so_and_the_rerun_continues(tmp_path, sig, request):
    runs_on("org12", request.node.nodeid)  # OpenFOAM-12's build: its skip is that flavour's
    why = org12_missing()
    if why:
        pytest.skip(why)
    cache = tmp_path / "cache"
    for attempt in range(2):
        status, said = stopped_build(cache, sig)
        assert status == 130, said
        last = said.strip().splitlines()[-1]
        assert last == (
            "bench: the build was stopped -- rerun './bench build org12': it continues where "
            "it stopped"
        ), said
        assert "failed" not in said and "Traceback" not in said, said
        if attempt == 1:
            assert "(continuing an interrupted build)" in said, said
        assert not left_running(cache)
    (folder,) = (cache / "openfoam").glob("org12-*")
    assert not (folder / ".complete").exists()
