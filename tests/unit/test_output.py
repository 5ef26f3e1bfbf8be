"""One checked way to write outputs (topofoam.output): every kind of bad output path gets one
line, ``<tool>: <what> -- <fix>`` and exit 2, before any work; a stop mid-write leaves the old
file. Checked on the module and through the tools that write files."""

import shutil
import subprocess
import tempfile
import textwrap
from pathlib import Path

import pytest

from conftest import IS_ROOT, PYTHON, REPO, as_nobody, one_line, run_tool
from topofoam import output


def test_a_file_where_a_folder_is_meant_is_refused_and_kept(tmp_path):
    taken = tmp_path / "taken"
    taken.write_text("keep me\n")
    with pytest.raises(output.OutputError, match=r"taken is a file, not a folder -- name a folder"):
        output.folder(taken, "--out-dir")
    with pytest.raises(output.OutputError, match=r"taken is a file, so .* cannot be made under"):
        output.folder(taken / "sub" / "deeper", "--out-dir")
    with pytest.raises(output.OutputError, match=r"is a file, not a folder"):
        output.file(taken / "x.json", "--json")
    assert taken.read_text() == "keep me\n"


def test_a_folder_where_a_file_is_meant_is_refused(tmp_path):
    with pytest.raises(output.OutputError, match=r"is a folder, not a file -- name a file, e\.g\."):
        output.write_text(tmp_path, "x", "--json")


def test_missing_parents_are_made_and_the_file_written_whole(tmp_path):
    path = tmp_path / "a" / "b" / "c.json"
    assert output.write_text(path, "{}\n", "--json") == path
    assert path.read_text() == "{}\n"
    assert sorted(p.name for p in path.parent.iterdir()) == ["c.json"]  # no temporary left


def test_an_error_inside_the_block_keeps_the_old_file(tmp_path):
    path = tmp_path / "verdict.json"
    path.write_text("old\n")
    with pytest.raises(ValueError), output.replacing(path, "verdict") as f:
        f.write("half of the new")
        raise ValueError("stopped half-way")
    assert path.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["verdict.json"]


STOPPED_MID_WRITE = textwrap.dedent(
    """
    import os, signal, sys
    from topofoam import output

    def run():
        with output.replacing(sys.argv[1], "--out") as f:
            f.write("half of the new")
            f.flush()
            os.kill(os.getpid(), signal.SIGTERM)  # a real signal, mid-write
            f.write(" and the rest")
        return 0

    sys.exit(output.main("tool", run))
    """
)


def test_sigterm_mid_write_leaves_the_old_file_and_exits_130(tmp_path):
    path = tmp_path / "report.md"
    path.write_text("old\n")
    done = subprocess.run(
        [PYTHON, "-c", STOPPED_MID_WRITE, str(path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stderr) == (130, "tool: interrupted\n"), done.stderr
    assert path.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["report.md"]


@pytest.mark.skipif(not IS_ROOT, reason="needs root to run a tool as another user")
def test_an_unwritable_place_is_refused_before_the_work():
    place = Path(tempfile.mkdtemp(prefix="topofoam-readonly-", dir="/tmp"))
    try:
        place.chmod(0o755)  # root's: the user nobody may look, not write
        done = as_nobody(
            [PYTHON, "-m", "topofoam.jobs.fingerprint", "--json", str(place / "fp.json")],
            cwd=REPO,
            timeout=120,
        )
        one_line(done, 2, r"^fingerprint: --json: .*topofoam-readonly-\S+ is not writable here")
        assert list(place.iterdir()) == []
    finally:
        shutil.rmtree(place)


@pytest.mark.skipif(not IS_ROOT, reason="needs root to mount a small file system")
def test_a_full_file_system_is_refused_before_the_work(tmp_path):
    full = tmp_path / "full"
    full.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(full)], check=True)
    try:
        done = run_tool("topofoam.prediction.modelcheck", str(tmp_path), "--json", str(full / "m"))
        one_line(done, 2, r"^modelcheck: --json: .*full has [\d,]+ bytes free -- free some space")
    finally:
        subprocess.run(["umount", str(full)], check=True)


@pytest.mark.parametrize(
    "tool, args, pattern",
    [
        (
            "topofoam.jobs.fingerprint",
            ["--json", "{folder}"],
            r"^fingerprint: --json: .* is a folder, not a file -- name a file",
        ),
        (
            "topofoam.prediction.modelcheck",
            ["{folder}", "--json", "{file}/m.json"],
            r"^modelcheck: --json: .*taken is a file, not a folder -- name a folder$",
        ),
        (
            "topofoam.validation",
            ["published", "--system", "vsc5", "--partition", "vsc5:zen3", "--environ", "e"]
            + ["--topology", "zen3_0512", "--out", "{folder}"],
            r"^validation: --out: .* is a folder, not a file -- name a file",
        ),
    ],
)
def test_each_tool_refuses_a_bad_output_path_in_one_line(tool, args, pattern, tmp_path):
    taken = tmp_path / "taken"
    taken.write_text("keep me\n")
    folder = tmp_path / "folder"
    folder.mkdir()
    filled = [a.format(folder=folder, file=taken) for a in args]
    one_line(run_tool(tool, *filled), 2, pattern)
    assert taken.read_text() == "keep me\n"
    assert list(folder.iterdir()) == []


def test_the_export_refuses_an_out_that_is_a_file(tmp_path):
    from test_numbers import variants

    results = tmp_path / "results"
    variants(results)
    taken = tmp_path / "taken"
    taken.write_text("keep me\n")
    done = run_tool("topofoam.reporting.export", "--results", str(results), "--out", str(taken))
    one_line(done, 2, r"^export: --out: .*taken is a file, not a folder -- name a folder$")
    assert taken.read_text() == "keep me\n"


def test_a_reader_that_closes_the_pipe_ends_the_tool_quietly():
    """``tool | head -1``: the tool's remaining output has no reader; exit 141, no
    traceback (the validation's verdict piped into head printed one, 2026-12-02)."""
    many = (
        "import sys\nfrom topofoam import output\n"
        "def run():\n    for i in range(200000):\n        print('line', i)\n    return 0\n"
        "sys.exit(output.main('tool', run))\n"
    )
    done = subprocess.run(
        ["bash", "-c", f'{PYTHON} -c "$0" | head -1; echo "${{PIPESTATUS[0]}}" >&2', many],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout == "line 0\n"
    assert done.stderr == "141\n", done.stderr
