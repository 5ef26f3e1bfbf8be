"""A file written under a part name (localsite/sources.py: part_of) that its process left
behind when it was killed is removed by the next writer of the same file; a part whose
process still runs (another ./bench writing it now) is kept."""

import os
import subprocess
import sys

from localsite import sources


def dead_pid() -> int:
    """The id of a process that has ended (reaped, so no one runs under it until reused)."""
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    return int(done.stdout)


def test_a_killed_writers_part_is_removed_a_running_ones_kept(tmp_path):
    target = tmp_path / "OpenFOAM-12.tar.gz"
    killed = tmp_path / f"{target.name}.{dead_pid()}-140.part"
    running = tmp_path / f"{target.name}.{os.getppid()}-140.part"
    other = tmp_path / f"OpenFOAM-v2512.tar.gz.{dead_pid()}-140.part"
    for part in (killed, running, other):
        part.write_bytes(b"half an archive")
    mine = sources.part_of(target)
    assert not killed.exists()
    assert running.exists()
    assert other.exists()  # another file's part: not this writer's to judge
    assert mine.name.startswith(f"{target.name}.{os.getpid()}-") and mine.suffix == ".part"
    assert not mine.exists()
