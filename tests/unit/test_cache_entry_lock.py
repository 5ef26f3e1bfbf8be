"""One maker at a time for a cache entry (topofoam.contents.exclusive): the OpenFOAM builds,
prepared cases and meshes. Two makers of one build (a test beside a build started by hand)
built it twice at once, and the second replaced the first's folder under its users."""

import subprocess
import sys
from pathlib import Path

import pytest

from topofoam import contents

#: A first maker: holds the entry's lock, says so, then makes the entry and lets go.
FIRST = """
import sys, time
from pathlib import Path
from topofoam import contents
entry = Path(sys.argv[1])
with contents.exclusive(entry, "the test cache", RuntimeError):
    print("held", flush=True)
    time.sleep(1)
    entry.mkdir()
    contents.mark_complete(entry)
"""


def test_a_second_maker_waits_for_the_first_and_finds_the_entry_made(tmp_path):
    entry = tmp_path / "cache" / "entry"
    first = subprocess.Popen(
        [sys.executable, "-c", FIRST, str(entry)], stdout=subprocess.PIPE, text=True
    )
    assert first.stdout.readline() == "held\n"
    said = []
    with contents.exclusive(entry, "the test cache", RuntimeError, say=said.append):
        assert contents.is_complete(entry)
    assert first.wait() == 0
    assert said == [f"another process (pid {first.pid}) is making {entry}; waiting for it"]
    assert not Path(f"{entry}.lock").exists()  # each maker removes the lock it held


def test_a_maker_alone_does_not_wait_or_say_anything(tmp_path):
    said = []
    with contents.exclusive(tmp_path / "entry", "the test cache", RuntimeError, say=said.append):
        pass
    assert said == []


def test_a_cache_folder_that_cannot_be_made_is_refused_naming_it_and_the_setting(tmp_path):
    (tmp_path / "file").write_text("")
    entry = tmp_path / "file" / "cache" / "entry"
    with pytest.raises(ValueError) as refused:
        with contents.exclusive(entry, "the test cache", ValueError):
            pass
    assert str(refused.value) == (
        f"cannot use the test cache {entry.parent} (Not a directory) -- set TOPOFOAM_CACHE "
        f"to a folder you can write"
    )
