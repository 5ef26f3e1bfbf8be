"""The site mirror's links (localsite/spack.py: _link) are replaced in one step: two ./bench
spack runs lay the same links at once (two terminals, or the Spack tests side by side), and a
Spack reading the mirror meanwhile must find each link, old or new, never none. Before, a
link was removed and made again: a second run met 'File exists', and a reader could find
nothing."""

import subprocess
import sys
import time

from conftest import REPO

LAY = """
import sys
from pathlib import Path
from localsite.spack import _link
targets = [Path(sys.argv[1]), Path(sys.argv[2])]
for i in range(int(sys.argv[4])):
    _link(targets[i % 2], Path(sys.argv[3]))
"""


def test_two_processes_relinking_never_leave_the_link_missing(tmp_path):
    targets = [tmp_path / "a.tar.gz", tmp_path / "b.tar.gz"]
    for target in targets:
        target.write_text(target.name)
    link = tmp_path / "mirror" / "openfoam" / "archive.tar.gz"
    layers = [
        subprocess.Popen(
            [sys.executable, "-c", LAY, *map(str, targets), str(link), "1000"],
            cwd=REPO,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for _ in range(2)
    ]
    seen, missing = 0, 0
    while any(layer.poll() is None for layer in layers):
        if link.is_symlink():  # once the first is laid: always there, old or new
            seen += 1
            missing += not link.exists()
        elif seen:
            missing += 1
        time.sleep(0)
    errors = [layer.stderr.read() for layer in layers]
    assert [layer.returncode for layer in layers] == [0, 0], errors
    assert seen > 0 and missing == 0, (seen, missing)
    assert link.read_text() in ("a.tar.gz", "b.tar.gz")
    # nothing of the two runs' own names left beside the link
    assert sorted(p.name for p in link.parent.iterdir()) == ["archive.tar.gz"]
