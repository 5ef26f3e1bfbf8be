"""The storage check for real on the local scheduler: decompose, solve and reconstruct in the
stage folder and on a node-local copy, at three write intervals."""

import csv
import os
import re
from pathlib import Path

from conftest import bench_cli, free_port


def test_storage_steps_timed_on_shared_and_local(tmp_path):
    scratch = tmp_path / "node-local"
    scratch.mkdir()
    env = dict(
        os.environ,
        TOPOFOAM_RESULTS=str(tmp_path),
        TOPOFOAM_RUN=str(tmp_path / "run"),
        TOPOFOAM_SLURMCTLD_PORT=str(free_port()),
        TMPDIR=str(scratch),
    )
    done = bench_cli("run", "--partition", "cpu", "--tag", "storage", env=env, timeout=1800)
    assert done.returncode == 0, done.stdout[-3000:]
    # The build, the prepared case, 2 storages x 3 write intervals.
    assert "  local:cpu: 8/8 test cases passed" in done.stdout
    with open(tmp_path / "perflogs" / "local" / "cpu" / "StorageRun.log", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="|"))
    assert sorted((r["storage"], r["write_every"]) for r in rows) == [
        (s, w) for s in ("local", "shared") for w in ("0", "1", "10")
    ]
    for row in rows:
        log = (Path(row["outputdir"]) / "rfm_job.out").read_text()
        steps = dict(re.findall(r"^step (\w+) seconds (\S+)$", log, re.M))
        assert sorted(steps) == ["copy_back", "decompose", "reconstruct", "solve", "stage_in"]
        assert float(row["total_value"]) == sum(map(float, steps.values()))
        rundir = re.search(r"^rundir (\S+)$", log, re.M).group(1)
        if row["storage"] == "local":
            # Run on the node-local copy ($TMPDIR here), copied back, and removed.
            assert Path(rundir).parent == scratch and not Path(rundir).exists()
        else:
            assert rundir == row["stagedir"].rstrip("/")
    assert list(scratch.glob("topofoam-storage.*")) == []
