"""The check files a tag selection loads (reframe/topofoam/checks/checkfiles.py): never narrower
than ReFrame's own selection, and a file left out only when it can be read to hold no
selected check."""

import json
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
from reframe.frontend.filters import have_not_tag, have_tag

from conftest import PYTHON, REPO
from topofoam.checks import checkfiles
from topofoam.paths import CHECKS


@pytest.fixture(scope="module")
def described():
    """Every test case ReFrame makes of reframe/ on the local site: (its file, its tags)."""
    done = subprocess.run(
        [str(Path(PYTHON).parent / "reframe"), "-C", "site-configs/local.py", "-c", str(CHECKS),
         "--system", "local", "--describe"],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return [(Path(case["@file"]), set(case["tags"])) for case in json.loads(done.stdout)]


def reframe_selects(tags: set[str], patterns: list[str]) -> bool:
    """ReFrame's own -t filters, as its command line applies them."""
    case = SimpleNamespace(check=SimpleNamespace(tags=tags))
    return all(
        have_not_tag(p[1:])(case) if p.startswith("!") else have_tag(p)(case) for p in patterns
    )


SELECTIONS = [["p2p"], ["validate"], ["solver"], ["sweep", "cost"], ["!sweep"], ["s"],
              ["^fast$"], ["seed001"], ["storage"], ["schedule"], ["cases", "!sweep"]]  # fmt: skip


@pytest.mark.parametrize("patterns", SELECTIONS, ids=" ".join)
def test_every_file_reframe_selects_from_is_loaded(described, patterns):
    """The partitions this machine lists here (not the emulated cluster's, which need it
    running) hold checks of every file but multinode.py."""
    wanted = {file for file, tags in described if reframe_selects(tags, patterns)}
    assert wanted, "a selection of no check here tests nothing"
    assert wanted <= set(checkfiles.for_tags(patterns))


def test_a_selection_loads_only_the_files_of_its_checks():
    assert checkfiles.for_tags(["p2p"]) == [CHECKS / "p2p.py"]
    assert checkfiles.for_tags(["multinode"]) == [CHECKS / "multinode.py"]
    assert checkfiles.for_tags(["sweep", "cost"]) == [CHECKS / "sweep.py"]
    assert CHECKS / "sweep.py" not in checkfiles.for_tags(["!sweep"])


@pytest.mark.parametrize("patterns", [[], ["no-such-tag"], ["(unclosed"]], ids=repr)
def test_no_tags_an_unknown_tag_or_a_bad_pattern_loads_the_whole_folder(patterns):
    assert checkfiles.for_tags(patterns) == [CHECKS]


def test_a_file_is_kept_whenever_its_checks_tags_cannot_be_read(tmp_path):
    (tmp_path / "stated.py").write_text(
        "import reframe as rfm\n\n@rfm.simple_test\nclass A(Base):\n    tags = {'alpha'}\n"
    )
    (tmp_path / "inherited.py").write_text(
        "import reframe as rfm\n\n@rfm.simple_test\nclass B(Base):\n    pass\n"
    )
    (tmp_path / "computed.py").write_text(
        "import reframe as rfm\n\n@rfm.simple_test\nclass C(Base):\n    tags = {'a' + 'b'}\n"
    )
    (tmp_path / "called.py").write_text(
        "import reframe as rfm\n\nclass F(Base):\n    tags = {'gamma'}\n\nrfm.simple_test(F)\n"
    )
    (tmp_path / "broken.py").write_text("class D(:\n")
    (tmp_path / "unregistered.py").write_text("class E(Base):\n    tags = {'beta'}\n")
    names = lambda patterns: [f.name for f in checkfiles.for_tags(patterns, tmp_path)]  # noqa: E731
    unread = ["broken.py", "called.py", "computed.py", "inherited.py"]
    assert names(["alpha"]) == unread + ["stated.py"]
    # A class ReFrame does not register selects nothing: only the unreadable files stay
    # (a check registered by a call, not a decorator, among them).
    assert names(["beta"]) == unread
    assert names(["!alpha"]) == unread


@pytest.mark.parametrize(
    "hook", ["self.tags |= {'beta'}", "self.tags.add('beta')", "self.tags = {'beta'}"]
)
def test_tags_changed_at_run_time_load_every_file(tmp_path, hook):
    (tmp_path / "a.py").write_text(
        "import reframe as rfm\n\n@rfm.simple_test\nclass A(Base):\n    tags = {'alpha'}\n"
    )
    library = tmp_path / "lib"
    library.mkdir()
    (library / "base.py").write_text(f"class Base:\n    def hook(self):\n        {hook}\n")
    assert checkfiles.for_tags(["beta"], tmp_path) == [tmp_path]
    # Reading the tags is not changing them.
    (library / "base.py").write_text("class Base:\n    def hook(self):\n        self.tags == 1\n")
    assert checkfiles.for_tags(["beta"], tmp_path) == [tmp_path]  # nothing selected: the folder
    assert checkfiles.for_tags(["alpha"], tmp_path) == [tmp_path / "a.py"]


@pytest.mark.parametrize(
    "args, tags",
    [
        (["-t", "p2p", "-n", "PingPong"], ["p2p"]),
        (["--tag", "sweep", "--tag=cost", "-l"], ["cost", "sweep"]),
        (["-n", "Inter1Run", "-r"], []),
        (["-l", "-t"], []),  # a -t without its pattern selects nothing more
    ],
)
def test_a_command_lines_tags_give_its_check_files(args, tags):
    """``./bench twin run`` and the site tests narrow ReFrame's -c by the command line's
    own -t patterns; without one, the whole folder."""
    assert sorted(checkfiles.tags_of(args)) == tags
    files = checkfiles.options(args)
    assert files[::2] == ["-c"] * (len(files) // 2)
    assert [Path(f) for f in files[1::2]] == checkfiles.for_tags(checkfiles.tags_of(args))
    if not tags:
        assert files == ["-c", str(CHECKS)]
