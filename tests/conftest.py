"""Shared helpers for the tests: everything here runs the real programs on this machine."""

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
IS_ROOT = os.geteuid() == 0

needs_root = pytest.mark.skipif(not IS_ROOT, reason="needs root (Slurm daemons, namespaces)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def as_nobody(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    """Run a command as the unprivileged user 'nobody' (needs root to switch)."""
    setpriv = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    env = dict(kwargs.pop("env", os.environ), HOME="/tmp")
    return subprocess.run(setpriv + cmd, capture_output=True, text=True, env=env, **kwargs)


def bench_cli(*args: str, env: dict | None = None, timeout: float = 900,
              ) -> subprocess.CompletedProcess:
    """The local CLI (`./bench` minus the setup step, which the session already ran)."""
    return subprocess.run([PYTHON, "-m", "localsite.cli", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def slurm_ports(monkeypatch):
    """Free ports for a test's own Slurm, so it never meets another one on this machine."""
    ports = free_port(), free_port()
    monkeypatch.setenv("TOPOFOAM_SLURMCTLD_PORT", str(ports[0]))
    monkeypatch.setenv("TOPOFOAM_SLURMD_PORT", str(ports[1]))
    return ports


def foam_env() -> dict:
    """Environment to run Debian's OpenFOAM with the real SCOTCH library (built if missing)."""
    from localsite import openfoam
    lib = openfoam.ensure_built()
    return dict(os.environ, WM_PROJECT_DIR=str(openfoam.PROJECT_DIR),
                LD_LIBRARY_PATH=f"{lib}:{os.environ.get('LD_LIBRARY_PATH', '')}",
                OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def decomposed_case(dest: Path, cells: tuple[int, int, int], parts: int) -> Path:
    """The cavity tutorial with ``cells`` blocks, decomposed by SCOTCH into ``parts``."""
    from foamlib import FoamFile
    from localsite.openfoam import EXAMPLES
    shutil.copytree(EXAMPLES / "incompressible/icoFoam/cavity/cavity", dest)
    mesh = FoamFile(dest / "system" / "blockMeshDict")
    blocks = list(mesh["blocks"])
    blocks[2] = list(cells)
    mesh["blocks"] = blocks
    decompose = FoamFile(dest / "system" / "decomposeParDict")
    decompose["numberOfSubdomains"] = parts
    decompose["method"] = "scotch"
    env = foam_env()
    for app in ("blockMesh", "decomposePar"):
        done = subprocess.run([app, "-case", str(dest)], env=env, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stdout[-2000:]
        (dest / f"log.{app}").write_text(done.stdout)
    return dest


def tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} not found: run ./bench setup first")
    return path
