"""rankmap on real decompositions (Debian's OpenFOAM + real SCOTCH) and real hwloc topologies."""

import json
import re
import shutil
import socket
import subprocess

import numpy as np
import pytest

from conftest import PYTHON, REPO, decomposed_case, foam_env
from rankmap import graph, mapping, outputs, scheduledict, topology
from rankmap.errors import InputError
from rankmap.schedule import hierarchical, openfoam_tree

# Small machines with every level present, as hwloc synthetic descriptions.
SMALL = "pack:2 numa:2 core:3 pu:1"  # 12 cores: 2 domains x 2 NUMA nodes x 3 cores


@pytest.fixture(scope="module")
def cavity2d(tmp_path_factory):
    return decomposed_case(tmp_path_factory.mktemp("c2") / "cavity", (40, 40, 1), 24)


@pytest.fixture(scope="module")
def cavity3d(tmp_path_factory):
    return decomposed_case(tmp_path_factory.mktemp("c3") / "cavity3d", (12, 12, 12), 36)


def shared_faces_from_log(case) -> dict[tuple[int, int], int]:
    """decomposePar's own report: 'Number of faces shared with processor B = N' per A."""
    faces, proc = {}, None
    for line in (case / "log.decomposePar").read_text().splitlines():
        if m := re.match(r"Processor (\d+)$", line.strip()):
            proc = int(m.group(1))
        elif m := re.search(r"faces shared with processor (\d+) = (\d+)", line):
            faces[(proc, int(m.group(1)))] = int(m.group(2))
    return faces


@pytest.mark.parametrize("case", ["cavity2d", "cavity3d"])
def test_graph_equals_decomposepar_report(case, request):
    path = request.getfixturevalue(case)
    g = graph.from_processor_dirs(path)
    u, v, w = g.arcs()
    assert dict(zip(zip(u.tolist(), v.tolist()), w.tolist())) == shared_faces_from_log(path)


def check_schedule_levels(placement, schedule):
    """Tree rooted at rank 0; each level has exactly (groups below - groups above) edges."""
    schedule.check()
    node, dom, numa = placement.node_of, placement.domain_of(), placement.numa_of()
    groups = [
        len(set(zip(node.tolist(), dom.tolist(), numa.tolist()))),
        len(set(zip(node.tolist(), dom.tolist()))),
        placement.nodes,
        1,
    ]
    expected = [placement.node_of.size - groups[0]] + [groups[i] - groups[i + 1] for i in range(3)]
    assert schedule.edges_per_level() == expected
    assert schedule.edges_per_level()[3] == placement.nodes - 1


@pytest.mark.parametrize(
    "case,spec,nodes",
    [
        ("cavity2d", SMALL, 2),  # 12 per node: full nodes
        ("cavity2d", "pack:2 numa:2 core:4 pu:1", 3),  # 8 of 16 cores per node: spread evenly
        ("cavity3d", SMALL, 3),
        ("cavity3d", "oci-nps2", 1),
    ],
)
def test_hierarchical_placement_on_real_decompositions(case, spec, nodes, request):
    g = graph.from_processor_dirs(request.getfixturevalue(case))
    machine = topology.load(spec)
    placement = mapping.hierarchical(g, machine, nodes)
    placement.check()  # one rank per core, equal nodes
    ppn = g.n // nodes
    assert np.bincount(placement.node_of).tolist() == [ppn] * nodes
    # Fewer ranks than cores: NUMA nodes of a node differ by at most one rank.
    per_numa = np.bincount(placement.numa_of()[placement.node_of == 0], minlength=machine.n_numa)
    assert per_numa.max() - per_numa.min() <= 1
    assert (placement.node_of[0], placement.core_of[0]) == (0, 0)
    check_schedule_levels(placement, hierarchical(placement))
    # Placement never crosses nodes more than the default block placement does.
    u, v, w = g.edges()
    block = mapping.block(g, machine, nodes)
    assert w[placement.level_between(u, v) == 3].sum() <= w[block.level_between(u, v) == 3].sum()


def test_default_schedule_is_openfoams_tree_for_block(cavity3d):
    """On the block placement the hierarchical schedule and OpenFOAM's tree cross nodes alike;
    after rankmap's placement OpenFOAM's tree crosses nodes more, the schedule does not."""
    g = graph.from_processor_dirs(cavity3d)
    machine = topology.load(SMALL)
    block = mapping.block(g, machine, 3)
    stock = openfoam_tree(block)
    assert all(stock.above[p] == (p & (p - 1)) for p in range(1, g.n))
    placed = mapping.hierarchical(g, machine, 3)
    assert hierarchical(placed).edges_per_level()[3] == 2
    assert openfoam_tree(placed).edges_per_level()[3] >= 2


def test_rankfile_binds_ranks_where_it_says(tmp_path):
    """Open MPI 4 with rankmap's rankfile on this machine: each rank reports its CPU set."""
    case = decomposed_case(tmp_path / "cavity", (20, 20, 1), 2)
    g = graph.from_processor_dirs(case)
    placement = mapping.hierarchical(g, topology.load("local"), 1)
    host = socket.gethostname()
    rankfile = outputs.rankfile(placement, [host], tmp_path / "rankfile")
    done = subprocess.run(
        [
            "mpirun",
            "-np",
            "2",
            "-rf",
            str(rankfile),
            "bash",
            "-c",
            "echo rank $OMPI_COMM_WORLD_RANK $(grep Cpus_allowed_list /proc/self/status)",
        ],
        capture_output=True,
        text=True,
        env=foam_env(),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    bound = {
        int(m.group(1)): m.group(2)
        for m in re.finditer(r"rank (\d+) Cpus_allowed_list:\s*(\S+)", done.stdout)
    }
    expected = outputs.cpu_maps(placement, [host])[host]
    assert bound == {r: str(expected[r]) for r in range(2)}


def test_launcher_files(cavity3d, tmp_path):
    g = graph.from_processor_dirs(cavity3d)
    machine = topology.load(SMALL)
    placement = mapping.hierarchical(g, machine, 3)
    hosts = ["n1", "n2", "n3"]
    lines = outputs.rankfile(placement, hosts, tmp_path / "rf").read_text().splitlines()
    assert len(lines) == 36
    for r, line in enumerate(lines):
        host, p, c = re.fullmatch(rf"rank {r}=(\w+) slot=(\d+):(\d+)", line).groups()
        core = placement.core_of[r]
        assert (host, int(p), int(c)) == (
            hosts[placement.node_of[r]],
            machine.domain[core],
            machine.core_in_domain[core],
        )
    hostfile = outputs.slurm_hostfile(placement, hosts, tmp_path / "hf").read_text().split()
    assert hostfile == [hosts[n] for n in placement.node_of]
    maps = outputs.cpu_maps(placement, hosts)
    assert all(sorted(cpus) == list(range(12)) for cpus in maps.values())


def test_schedule_dictionary_round_trip_and_errors(cavity3d, tmp_path):
    g = graph.from_processor_dirs(cavity3d)
    schedule = hierarchical(mapping.hierarchical(g, topology.load(SMALL), 3))
    path = scheduledict.write(schedule, tmp_path / "reductionSchedule", "rankmap")
    back = scheduledict.read(path)
    assert back.above.tolist() == schedule.above.tolist()
    assert back.below == schedule.below and back.level.tolist() == schedule.level.tolist()
    bad = tmp_path / "bad"
    bad.write_text(path.read_text().replace("nProcs      36;", "nProcs      35;"))
    with pytest.raises(InputError, match=rf"{bad}: nProcs 35 but above/below/level have 36/36/36"):
        scheduledict.read(bad)
    cut = tmp_path / "cut"
    cut.write_text(path.read_text().replace("above       36(-1 ", "above       36(5 "))
    with pytest.raises(InputError, match=rf"{cut}: rank 0 must be the only root"):
        scheduledict.read(cut)


def test_missing_processor_folder(cavity2d, tmp_path):
    case = tmp_path / "partial"
    shutil.copytree(cavity2d, case)
    shutil.rmtree(case / "processor5")
    shutil.rmtree(case / "processor6")
    with pytest.raises(
        InputError,
        match=rf"{case}: processor folders missing: 5-6 of 0-23 -- "
        r"the decomposition is partial",
    ):
        graph.from_processor_dirs(case)
    (case / "processor7" / "constant" / "polyMesh" / "boundary").unlink()
    shutil.copytree(cavity2d / "processor5", case / "processor5")
    shutil.copytree(cavity2d / "processor6", case / "processor6")
    with pytest.raises(InputError, match=r"processor7/constant/polyMesh/boundary is missing"):
        graph.from_processor_dirs(case)


def test_asymmetric_patch_is_reported(cavity2d, tmp_path):
    case = tmp_path / "asym"
    shutil.copytree(cavity2d, case)
    boundary = case / "processor0" / "constant" / "polyMesh" / "boundary"
    text = boundary.read_text()
    m = re.search(r"(procBoundary0to(\d+)\s*\{[^}]*?nFaces\s+)(\d+);", text)
    boundary.write_text(text[: m.start(3)] + str(int(m.group(3)) + 1) + text[m.end(3) :])
    with pytest.raises(
        InputError,
        match=rf"asymmetric processor patch\(es\): processor0->"
        rf"processor{m.group(2)}: {int(m.group(3)) + 1} faces, "
        rf"back: {m.group(3)}",
    ):
        graph.from_processor_dirs(case)


def test_cli_map_and_errors(cavity3d, tmp_path):
    out = tmp_path / "out"
    done = subprocess.run(
        [
            PYTHON,
            "-m",
            "rankmap",
            "map",
            str(cavity3d),
            "--topology",
            SMALL,
            "--nodes",
            "3",
            "--hosts",
            "a,b,c",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "analysis.json",
        "bind_rank",
        "rankfile",
        "reductionSchedule",
        "reductionSchedule.block",
        "slurm.cpu_bind",
        "slurm.hostfile",
        "srun.cpu_bind",
    ]
    assert scheduledict.read(out / "reductionSchedule").edges_per_level()[3] == 2
    for args, message in [
        (
            ["analyze", str(tmp_path / "none"), "--topology", "vsc5", "--nodes", "1"],
            f"rankmap: case directory {tmp_path / 'none'} does not exist",
        ),
        (
            ["map", str(cavity3d), "--topology", SMALL, "--nodes", "3", "--out", str(out)],
            "rankmap: no hosts: run inside a Slurm allocation",
        ),
    ]:
        done = subprocess.run(
            [PYTHON, "-m", "rankmap", *args],
            capture_output=True,
            text=True,
            cwd=REPO,
            env={k: v for k, v in foam_env().items() if not k.startswith("SLURM_")},
        )
        assert done.returncode == 2
        assert done.stderr.startswith(message) and "Traceback" not in done.stderr


def test_cell_distribution_gives_the_processor_graph(tmp_path):
    """One decomposePar -cellDist run writes processor folders, constant/cellDecomposition and
    0/cellDist: all three give the same graph."""
    case = decomposed_case(tmp_path / "cavity", (10, 10, 10), 12)
    subprocess.run(
        ["decomposePar", "-case", str(case), "-force", "-cellDist"],
        env=foam_env(),
        check=True,
        capture_output=True,
    )
    expected = [a.tolist() for a in graph.from_processor_dirs(case).arcs()]
    no_folders = tmp_path / "no-folders"
    shutil.copytree(case, no_folders, ignore=shutil.ignore_patterns("processor*"))
    assert [a.tolist() for a in graph.from_case(no_folders).arcs()] == expected
    (no_folders / "constant" / "cellDecomposition").unlink()
    assert (no_folders / "0" / "cellDist").exists()
    assert [a.tolist() for a in graph.from_case(no_folders).arcs()] == expected


def test_kahip_partitioner_places_exactly(cavity3d):
    g = graph.from_processor_dirs(cavity3d)
    placement = mapping.hierarchical(g, topology.load(SMALL), 3, partitioner="kahip")
    placement.check()
    check_schedule_levels(placement, hierarchical(placement))


@pytest.fixture(scope="module")
def cavity2d_96(tmp_path_factory):
    return decomposed_case(tmp_path_factory.mktemp("c96") / "cavity", (48, 48, 1), 96)


def test_same_inputs_give_the_same_placement_byte_for_byte(cavity2d_96, tmp_path):
    """Three runs in separate processes, the last limited to one CPU (one SCOTCH try at a time
    instead of several in threads): every output file identical, the analysis apart from its
    own timing."""

    def run(name, *prefix):
        out = tmp_path / name
        done = subprocess.run(
            [
                *prefix,
                PYTHON,
                "-m",
                "rankmap",
                "map",
                str(cavity2d_96),
                "--topology",
                "hpc2",
                "--nodes",
                "4",
                "--hosts",
                "n1,n2,n3,n4",
                "--seed",
                "7",
                "--out",
                str(out),
            ],
            capture_output=True,
            text=True,
            cwd=REPO,
        )
        assert done.returncode == 0, done.stderr
        files = {p.name: p.read_bytes() for p in sorted(out.iterdir())}
        analysis = json.loads(files.pop("analysis.json"))
        for row in analysis if isinstance(analysis, list) else [analysis]:
            row.pop("mapping_seconds", None)
        return files, analysis

    first = run("first")
    assert run("second") == first
    assert run("one-cpu", "taskset", "-c", "0") == first
