"""Bad input at every entry point a user reaches without OpenFOAM: one line that names what is
wrong, where, and the fix ('-- ...'); exit status 2 (1 where the input is fine but the
machine lacks something); never a traceback; nothing already written lost or overwritten.

The inputs are made up by the tests (TEST DATA): broken cell distributions of a tiny
hand-written mesh, damaged hwloc XML, latency tables, perflogs, site files, tuning files.
The case cache's damaged entries are in tests/integration/test_cases.py (they need meshes).
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import PYTHON, REPO, one_line, run_tool

REFRAME = str(Path(sys.executable).parent / "reframe")

HEADER = """FoamFile
{{
    version     2.0;
    format      ascii;
    class       {cls};
    location    "{loc}";
    object      {obj};
}}
"""


def foam(path: Path, cls: str, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    loc, obj = path.parent.name, path.name
    path.write_text(HEADER.format(cls=cls, loc=loc, obj=obj) + body + "\n")


def tiny_case(root: Path, cell_dist: str | None = "3(0 1 1)") -> Path:
    """Three cells in a row (two internal faces, two wall faces) and a cell distribution
    (TEST DATA, written the way decomposePar -dry-run -cellDist writes it)."""
    mesh = root / "constant" / "polyMesh"
    foam(mesh / "owner", "labelList", "4(0 1 0 2)")
    foam(mesh / "neighbour", "labelList", "2(1 2)")
    foam(
        mesh / "boundary",
        "polyBoundaryMesh",
        "1\n(\n    walls\n    {\n        type wall;\n        nFaces 2;\n        startFace 2;\n    }\n)",
    )
    if cell_dist is not None:
        foam(
            root / "0" / "cellDist",
            "volScalarField",
            "dimensions [0 0 0 0 0 0 0];\ninternalField nonuniform List<scalar> "
            f"{cell_dist};\nboundaryField {{ walls {{ type zeroGradient; }} }}",
        )
    return root


def run(*args, env=None, cwd=REPO):
    return subprocess.run([*args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def rankmap(*args, **kwargs):
    return run_tool("rankmap", *args, **kwargs)


# -- rankmap: graphs, cell distributions, topologies, outputs, cost tables ----------------------


def test_a_good_tiny_case_is_read(tmp_path):
    """The control: the hand-written mesh and distribution are valid input."""
    done = rankmap(
        "analyze",
        str(tiny_case(tmp_path / "c")),
        "--topology",
        "pack:1 core:2 pu:1",
        "--nodes",
        "1",
        "--placement",
        "block",
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    "dist, pattern",
    [
        ("3(0 1", r"0/cellDist: cannot be read as an OpenFOAM list \(\w+\) -- write it again"),
        ("2(0 1)", r"the cell distribution has 2 cells, the mesh 3 -- write it again"),
        ("4(0 1 1 1)", r"the cell distribution has 4 cells, the mesh 3 -- write it again"),
        ("3(0 one 1)", r"0/cellDist: cannot be read as an OpenFOAM list"),
        ("0()", r"0/cellDist: holds no per-cell processor numbers -- write it again"),
        ("3(0 -1 1)", r"0/cellDist: processor number -1 is negative -- write it again"),
        ("3(0 1.5 1)", r"holds values that are not whole processor numbers -- write it again"),
        ("3(0 2 2)", r"0/cellDist: processor\(s\) 1 own no cells \(of 3\) -- decompose again"),
    ],
    ids=[
        "truncated",
        "short",
        "long",
        "non-numeric",
        "empty",
        "negative",
        "fraction",
        "empty-processor",
    ],
)
def test_broken_cell_distributions(tmp_path, dist, pattern):
    case = tiny_case(tmp_path / "c", dist)
    one_line(
        rankmap("analyze", str(case), "--topology", "pack:1 core:4 pu:1", "--nodes", "1"),
        2,
        "^rankmap: .*" + pattern,
    )


def test_binary_cell_distribution(tmp_path):
    case = tiny_case(tmp_path / "c", None)
    (case / "0").mkdir()
    (case / "0" / "cellDist").write_bytes(bytes(range(256)) * 4)
    one_line(
        rankmap("analyze", str(case), "--topology", "vsc5", "--nodes", "1"),
        2,
        r"0/cellDist: cannot be read as an OpenFOAM list",
    )


def test_no_cell_distribution_and_a_damaged_mesh(tmp_path):
    case = tiny_case(tmp_path / "c", None)
    one_line(
        rankmap("analyze", str(case), "--topology", "vsc5", "--nodes", "1"),
        2,
        r"no constant/cellDecomposition or 0/cellDist -- write one with 'decomposePar",
    )
    case = tiny_case(tmp_path / "d")
    (case / "constant" / "polyMesh" / "owner").write_text("FoamFile { class labelList; }\n4(0 1")
    one_line(
        rankmap("analyze", str(case), "--topology", "vsc5", "--nodes", "1"),
        2,
        r"polyMesh/owner: cannot be read as an OpenFOAM list .* -- write the mesh again",
    )
    case = tiny_case(tmp_path / "e")
    (case / "constant" / "polyMesh" / "neighbour").unlink()
    one_line(
        rankmap("analyze", str(case), "--topology", "vsc5", "--nodes", "1"),
        2,
        r"constant/polyMesh/neighbour is missing -- the case needs its mesh",
    )


def test_a_missing_case_and_impossible_grids(tmp_path):
    one_line(
        rankmap("analyze", str(tmp_path / "none"), "--topology", "vsc5", "--nodes", "1"),
        2,
        r"does not exist -- give a decomposed case or grid:NXxNYxNZ",
    )
    one_line(
        rankmap("analyze", "grid:0x4", "--topology", "vsc5", "--nodes", "1"),
        2,
        r"grid:0x4: every dimension of a grid must be at least 1 -- e\.g\. grid:4x4x2",
    )


@pytest.mark.parametrize(
    "nodes, pattern",
    [
        ("0", r"--nodes must be at least 1, not 0"),
        ("3", r"16 ranks do not divide onto 3 nodes -- choose a node count that divides 16"),
        ("1", r"16 ranks on 1 nodes are 16 per node, more than the 12 cores .* -- use at least"),
    ],
)
def test_layouts_that_cannot_be(nodes, pattern):
    one_line(
        rankmap("analyze", "grid:4x4", "--topology", "pack:2 numa:2 core:3 pu:1", "--nodes", nodes),
        2,
        pattern,
    )


XML_CORE = (
    '<object type="Core" os_index="{i}" cpuset="{cs}">'
    '<object type="PU" os_index="{pu}" cpuset="{cs}"/></object>'
)


def hwloc_xml(cores: str) -> str:
    return (
        '<?xml version="1.0"?><topology><object type="Machine" os_index="0" cpuset="0x3">'
        '<object type="Package" os_index="0" cpuset="0x3">'
        '<object type="NUMANode" os_index="0" cpuset="0x3"/>' + cores + "</object></object>"
        "</topology>"
    )


@pytest.mark.parametrize(
    "text, pattern",
    [
        ("<topology><object type=", r"not valid XML .* -- write it with 'lstopo-no-graphics"),
        (hwloc_xml(""), r"no Core objects -- is this an hwloc topology\?"),
        (
            hwloc_xml(XML_CORE.format(i=0, cs="0xzz", pu=0)),
            r"cpuset '0xzz' is not an hwloc cpuset -- the file is damaged",
        ),
        (
            hwloc_xml(
                '<object type="Core" os_index="0" cpuset="0x1"><object type="PU" '
                'cpuset="0x1"/></object>'
            ),
            r"a PU has no valid os_index \(None\) -- the file is damaged",
        ),
    ],
    ids=["not-xml", "no-cores", "bad-cpuset", "pu-without-os-index"],
)
def test_damaged_hwloc_topologies(tmp_path, text, pattern):
    path = tmp_path / "node.xml"
    path.write_text(text)
    one_line(
        rankmap("analyze", "grid:2x1", "--topology", str(path), "--nodes", "1"),
        2,
        "^rankmap: .*" + pattern,
    )


@pytest.mark.parametrize(
    "spec, pattern",
    [
        ("vsc6", r"unknown topology 'vsc6' -- give a preset"),
        ("pack:2 nonsense:3", r"hwloc rejects the synthetic description"),
        (
            "pack:64 numa:64 core:256",
            r"'pack:64 numa:64 core:256' makes a node of 1,048,576 hardware threads, more than "
            r"16,384 -- describe one node",
        ),
        (str(Path("/nonexistent/node.xml")), r"cannot read topology file .* -- write one with"),
    ],
)
def test_unknown_topologies(spec, pattern):
    one_line(rankmap("analyze", "grid:2x1", "--topology", spec, "--nodes", "1"), 2, pattern)


def test_outputs_that_cannot_be_written(tmp_path):
    taken = tmp_path / "file"
    taken.write_text("keep me\n")
    one_line(
        rankmap(
            "map",
            "grid:4x4",
            "--topology",
            "vsc5",
            "--nodes",
            "1",
            "--hosts",
            "a",
            "--out",
            str(taken),
        ),
        2,
        r"cannot write .*file .* -- give --out",
    )
    assert taken.read_text() == "keep me\n"
    one_line(
        rankmap(
            "schedule",
            "grid:4x4",
            "--topology",
            "vsc5",
            "--nodes",
            "1",
            "--placement",
            "block",
            "--out",
            str(tmp_path / "no" / "dir" / "s"),
        ),
        2,
        r"cannot write .*no/dir/s \(No such file or directory\) -- give --out",
    )


@pytest.mark.parametrize(
    "row, pattern",
    [
        (
            "t,1000,-0.5,0.9,,",
            r"intra_numa_node of t at 1000 is '-0.5' -- a round-trip time "
            r"must be a positive number",
        ),
        ("t,1000,,0.9,,", r"intra_numa_node of t at 1000 is empty -- the fastest level needs"),
        ("t,1000,0.4,fast,,", r"inter_numa_node of t at 1000 is 'fast' -- a round-trip time"),
        ("t,1000,0.4,0,,", r"inter_numa_node of t at 1000 is '0' -- a round-trip time"),
        ("other,1000,0.4,0.9,,", r"no latency row for t at size 1000 in .* -- choose"),
    ],
    ids=["negative", "blank-first", "word", "zero", "no-row"],
)
def test_bad_cost_tables(tmp_path, row, pattern):
    table = tmp_path / "p2p.csv"
    table.write_text(
        "system,size,intra_numa_node,inter_numa_node,inter_numa_domain,inter_node\n" + row + "\n"
    )
    one_line(
        rankmap(
            "analyze",
            "grid:4x4",
            "--topology",
            "vsc5",
            "--nodes",
            "1",
            "--cost-table",
            str(table),
            "--cost-system",
            "t",
            "--cost-size",
            "1000",
        ),
        2,
        pattern,
    )
    one_line(
        rankmap(
            "analyze",
            "grid:4x4",
            "--topology",
            "vsc5",
            "--nodes",
            "1",
            "--cost-table",
            str(tmp_path / "none.csv"),
        ),
        2,
        r"cannot read the latency table",
    )


def test_unknown_placement_and_partitioner():
    one_line(
        rankmap(
            "analyze", "grid:4x4", "--topology", "vsc5", "--nodes", "1", "--placement", "zigzag"
        ),
        2,
        r"zigzag",
    )
    done = rankmap(
        "map",
        "grid:4x4",
        "--topology",
        "vsc5",
        "--nodes",
        "1",
        "--hosts",
        "a",
        "--partitioner",
        "metis",
        "--out",
        "/tmp/x",
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "metis" in done.stderr


# -- the results tools ---------------------------------------------------------------------


def perflog(results: Path, system="oci", rows=("2026-01-01T00:00:00|pass|1|36|intra1|10.0|s",)):
    path = results / "perflogs" / system / "nps2" / "Intra1Run.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    header = "job_completion_time|result|nodes|ppn|stage|wall_value|wall_unit|environ\n"
    path.write_text(header + "\n".join(f"{r}|e" for r in rows) + "\n")
    return path


@pytest.mark.parametrize(
    "args, pattern",
    [
        (["--results", "/nonexistent"], r"/nonexistent is not a folder -- give the results"),
        (
            ["--since", "2026-13-45T99:99:99"],
            r"--since '2026-13-45T99:99:99' is not a time "
            r"YYYY-MM-DDTHH:MM:SS -- e\.g\.",
        ),
        (["--since", "yesterday"], r"--since 'yesterday' is not a time"),
        (["--system", "nosuch"], r"no perflogs of system 'nosuch' under .* -- choose from oci"),
    ],
    ids=["results", "impossible-date", "words", "system"],
)
def test_report_arguments(tmp_path, args, pattern):
    perflog(tmp_path)
    done = run_tool("topofoam.reporting", "--results", str(tmp_path), *args)
    one_line(done, 2, "^report: " + pattern)
    assert not (tmp_path / "report").exists()


def test_a_report_since_the_future_keeps_the_existing_one(tmp_path):
    perflog(tmp_path)
    first = run_tool("topofoam.reporting", "--results", str(tmp_path), "--no-images")
    assert first.returncode == 0, first.stderr
    report = tmp_path / "report" / "oci" / "report.md"
    before = report.read_text()
    done = run_tool(
        "topofoam.reporting", "--results", str(tmp_path), "--since", "2099-01-01T00:00:00"
    )
    one_line(
        done,
        2,
        r"no runs of oci ended at or after 2099-01-01T00:00:00 .* was left as it "
        r"was",
    )
    assert report.read_text() == before


def test_report_without_perflogs_and_out_for_several_systems(tmp_path):
    one_line(
        run_tool("topofoam.reporting", "--results", str(tmp_path)),
        2,
        r"no perflogs under .* -- run the suite first",
    )
    perflog(tmp_path, "oci")
    perflog(tmp_path, "vsc5")
    one_line(
        run_tool("topofoam.reporting", "--results", str(tmp_path), "--out", str(tmp_path / "r")),
        2,
        r"--out names one folder but several systems have runs -- add --system",
    )


def test_tuning_inputs(tmp_path):
    logs = tmp_path / "perflogs" / "oci"
    one_line(
        run_tool("topofoam.results.tuning", str(logs), "--out", str(tmp_path / "t.json")),
        2,
        r"is not a folder -- give the system folder of the perflogs",
    )
    perflog(tmp_path)
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    one_line(
        run_tool("topofoam.results.tuning", str(logs), "--out", str(bad)),
        2,
        r"bad\.json cannot be read as JSON .* -- remove it or fix it",
    )
    assert bad.read_text() == "{not json"
    listed = tmp_path / "list.json"
    listed.write_text("[1, 2]\n")
    one_line(
        run_tool("topofoam.results.tuning", str(logs), "--out", str(listed)),
        2,
        r"list\.json is not a tuning file .* -- remove it or give another --out",
    )
    assert listed.read_text() == "[1, 2]\n"
    # A missing folder is made (topofoam.output); a file where a folder must be is refused.
    done = run_tool("topofoam.results.tuning", str(logs), "--out", str(tmp_path / "no" / "t.json"))
    assert done.returncode == 0 and (tmp_path / "no" / "t.json").is_file(), done.stderr
    one_line(
        run_tool("topofoam.results.tuning", str(logs), "--out", str(bad / "t.json")),
        2,
        r"^tuning: --out: .*bad\.json is a file, not a folder -- name a folder$",
    )
    empty = tmp_path / "empty" / "perflogs" / "oci"
    empty.mkdir(parents=True)
    one_line(
        run_tool("topofoam.results.tuning", str(empty), "--out", str(tmp_path / "t.json")),
        2,
        r"no passed intra1/intra2/inter1 runs under .* -- run those stages first",
    )


def test_references_and_p2p_inputs(tmp_path):
    logs = tmp_path / "perflogs" / "oci"
    one_line(
        run_tool("topofoam.results.references", str(logs), "--out", str(tmp_path / "r.yaml")),
        2,
        r"is not a folder -- give the system folder",
    )
    perflog(tmp_path)
    one_line(
        run_tool(
            "topofoam.results.references",
            str(logs),
            "--out",
            str(tmp_path / "r.yaml"),
            "--tolerance",
            "0",
        ),
        2,
        r"--tolerance 0\.0 is not a fraction such as 0\.1",
    )
    one_line(
        run_tool("topofoam.results.references", str(logs), "--out", str(tmp_path / "r.yaml")),
        2,
        r"no passed, measured sweep runs under .* -- run a baseline first",
    )
    one_line(
        run_tool("topofoam.results.p2p", str(logs), "--out", str(tmp_path / "p.csv")),
        2,
        r"no passed PingPongRun rows under .* -- run 'reframe \.\.\. -t p2p' first",
    )
    assert not (tmp_path / "r.yaml").exists() and not (tmp_path / "p.csv").exists()


# -- python -m cases before anything is meshed; ./bench verbs that need no daemons --------------


@pytest.mark.parametrize(
    "args, pattern",
    [
        (["prepare", "nosuch"], r"unknown case 'nosuch'"),
        (["prepare", "pitzDaily", "--size", "huge"], r"unknown size 'huge' for pitzDaily"),
        (["prepare", "pitzDaily", "-n", "0"], r"subdomains must be at least 1, not 0"),
        (["prepare", "pitzDaily", "--steps", "0"], r"steps must be at least 1, not 0"),
        (
            ["prepare", "pitzDaily", "--steps", "99999999999"],
            r"steps must be at most 2,147,483,647 \(OpenFOAM counts time steps in a 32-bit "
            r"label\), not 99,999,999,999$",
        ),
        (["run", "pitzDaily", "--steps", "2147483648"], r"steps must be at most 2,147,483,647"),
        (["prepare", "pitzDaily", "--size", "100"], r"pitzDaily cannot be made with 100 cells"),
    ],
    ids=["case", "size", "subdomains", "steps", "steps-label", "run-steps-label", "cells"],
)
def test_cases_requests(args, pattern):
    env = dict(os.environ, WM_PROJECT_DIR="/usr/share/openfoam")
    one_line(run(PYTHON, "-m", "cases", *args, env=env), 2, "^cases: " + pattern)


def test_cases_without_an_openfoam_environment():
    env = {k: v for k, v in os.environ.items() if k != "WM_PROJECT_DIR"}
    one_line(
        run(PYTHON, "-m", "cases", "prepare", "cavity2D", env=env),
        2,
        r"^cases: no OpenFOAM environment \(WM_PROJECT_DIR is not set\) -- load one",
    )


def test_building_a_flavour_without_its_sources(tmp_path):
    empty = tmp_path / "mirror"
    empty.mkdir()
    env = dict(os.environ, TOPOFOAM_SOURCES=str(empty), TOPOFOAM_CACHE=str(tmp_path / "cache"))
    one_line(
        run(PYTHON, "-m", "localsite.cli", "build", "org12", env=env),
        1,
        rf"OpenFOAM-12\.tar\.gz is not in TOPOFOAM_SOURCES={empty} .* -- put the archive "
        r"there",
    )
    assert not (tmp_path / "cache").exists()


@pytest.mark.parametrize(
    "setting, code, pattern",
    [
        (
            {"TOPOFOAM_SITE": "nosuch"},
            2,
            r"TOPOFOAM_SITE=nosuch: there is no site-configs/nosuch\.spack\.yaml -- choose hpc2, local, oci, vsc5, or unset it",
        ),
        (
            {"TOPOFOAM_SPACK_KIT": "EMPTY"},
            1,
            r"TOPOFOAM_SPACK_KIT=\S+ lacks spack-1\.1\.1\.tar\.gz, spack-packages-releases-v2026\.06\.tar\.gz -- put the archives there",
        ),
        (
            {"TOPOFOAM_SPACK_KIT": None},
            1,
            r"TOPOFOAM_SPACK_KIT is not set -- point it at a folder with spack-1\.1\.1\.tar\.gz",
        ),
    ],
)
def test_the_offline_spack_without_its_kit_or_with_an_unknown_site(
    tmp_path, setting, code, pattern
):
    env = dict(os.environ, TOPOFOAM_CACHE=str(tmp_path / "cache"), TOPOFOAM_SPACK_KIT=str(tmp_path))
    for key, value in setting.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = str(tmp_path) if value == "EMPTY" else value
    one_line(run(PYTHON, "-m", "localsite.cli", "spack", "--version", env=env), code, pattern)
    assert not (tmp_path / "cache").exists()
