"""One ``./bench run`` of the benchmark scripts (localsite.*bench), in a results folder of its
own, with settings variables of its own, timed."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from topofoam import paths

BENCH = str(paths.REPO / "bench")


def bench_run(results: Path, partition: str, tag: str, *reframe_args: str, **settings: str):
    """(the finished process, its seconds): ``./bench run --partition P --tag T [-- ARGS]``
    with TOPOFOAM_RESULTS=results and the given variables (TOPOFOAM_FABRIC="vsc5x100", ...)."""
    env = dict(os.environ, TOPOFOAM_RESULTS=str(results), **settings)
    began = time.monotonic()
    done = subprocess.run(
        [BENCH, "run", "--partition", partition, "--tag", tag]
        + (["--", *reframe_args] if reframe_args else []),
        env=env,
        capture_output=True,
        text=True,
        cwd=paths.REPO,
    )
    return done, time.monotonic() - began
