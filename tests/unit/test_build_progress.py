"""The builds' progress lines (localsite/progress.sh, sourced by build-openfoam.sh and
build-tree.sh), driven by real files on disk: what the build produced so far, of about how
much, and the minutes left at the run's own rate; under the builds' set -euo pipefail."""

import re
import subprocess
import time

from conftest import REPO

SCRIPT = r"""
set -euo pipefail
exec 3>&1
started=$SECONDS
elapsed() { local t=$((SECONDS - started)); printf '%d min %02d s' $((t / 60)) $((t % 60)); }
. "$1/localsite/progress.sh"
tree=$2
start_ticker build-tree 10 4 "$tree/platforms" "$tree/build"
trap stop_ticker EXIT
for i in 1 2 3 4; do
    touch "$tree/platforms/o$i.o"
    [ "$i" -le 2 ] && touch "$tree/platforms/lib$i.so"
    sleep 1.2
done
"""


def run_build(tmp_path, made_before=0):
    tree = tmp_path / "tree"
    (tree / "platforms").mkdir(parents=True)  # no build/: the case that stopped the ticker
    for i in range(made_before):
        (tree / "platforms" / f"old{i}.o").touch()
    started = time.monotonic()
    done = subprocess.run(
        ["bash", "-c", SCRIPT, "bash", str(REPO), str(tree)],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "TOPOFOAM_TICK_SECONDS": "1"},
        timeout=60,
    )
    return done, time.monotonic() - started


def test_progress_lines_count_what_the_build_made(tmp_path):
    done, took = run_build(tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) >= 3, done.stdout  # a line a second while the build ran
    pattern = re.compile(
        r"build-tree: (\d) of about 4 libraries, (\d) of about 10 objects, "
        r"0 min 0\d s elapsed, about (\d+) min to go"
    )
    counts = []
    for line in lines:
        m = pattern.fullmatch(line)
        assert m, line
        counts.append(int(m.group(2)))
        assert int(m.group(1)) <= 2
    assert counts == sorted(counts) and counts[-1] >= 3
    # The ticker stops with the build: had it kept on, the run would not have ended (the
    # timeout); how soon it ended is the machine's load, not the script's, so is not asserted.


def test_a_continued_build_estimates_from_its_own_rate(tmp_path):
    """Objects made before this run do not count as this run's speed."""
    done, _ = run_build(tmp_path, made_before=5)
    first = done.stdout.splitlines()[0]
    objects = int(re.search(r"(\d+) of about 10 objects", first).group(1))
    assert objects >= 6
    # 1 new object a second, 10 - objects left: a minute at most, never "0 min"
    assert first.endswith("about 1 min to go") or objects >= 10, first
