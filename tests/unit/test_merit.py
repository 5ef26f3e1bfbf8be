"""The OpenFOAM HPC committee's figures of merit (topofoam.results.merit): their values from
what a run logged, their n/a with a reason, and the report's table of them.

The perflog below is TEST DATA written by the test, never measured."""

import json
import statistics
import subprocess

import pytest
from test_report import table_after

from conftest import PYTHON, REPO
from topofoam.reporting import analysis
from topofoam.reporting.build import build
from topofoam.results import merit, stats

CELLS, STEPS, NODES, PPN = 8_000_000, 15, 2, 64
#: Wall times of five repeats per variant (TEST DATA).
WALLS = {
    "standard": [30.0, 31.0, 29.5, 30.5, 32.0],
    "local+global": [24.0, 24.5, 25.0, 23.5, 24.2],
}
HEADER = (
    "job_completion_time|reframe version|result|binding|case|coll|hashcode|"
    "job_completion_time_unix|nodes|partition|ppn|num_tasks|expected_cells|expected_steps|"
    "size|system|timing|ucx|ucx_inter|variant|stage|wall_value|wall_unit|"
    "node_hours_value|node_hours_unit"
)


def row(i, variant, wall, *, cells=CELLS, steps=STEPS, case="mb1Cavity3D"):
    binding = "block" if variant == "standard" else "rankmap"
    return "|".join(
        [
            f"2026-11-25T00:00:{i:02d}",
            "reframe 4.10.4",
            "pass",
            binding,
            case,
            "default",
            f"{i:08x}",
            str(1795000000 + i),
            str(NODES),
            "zen3_0512",
            str(PPN),
            str(NODES * PPN),
            "" if cells is None else str(cells),
            "" if steps is None else str(steps),
            "8M",
            "vsc5",
            "measured",
            "auto",
            "auto",
            variant,
            "variants",
            repr(wall),
            "s",
            repr(NODES * wall / 3600),
            "node-h",
        ]
    )


def report_of(tmp_path, lines):
    results = tmp_path / "results"
    path = results / "perflogs" / "vsc5" / "zen3_0512" / "VariantRun.log"
    path.parent.mkdir(parents=True)
    path.write_text("\n".join([HEADER, *lines]) + "\n")
    report = build(results, "vsc5", images=False, say=lambda _: None)
    return report, report.markdown.read_text()


def test_definitions():
    """FVOPS = cells / (wall / steps); per node; T* = t x cores / cells = cores / FVOPS."""
    f = merit.fvops(CELLS, STEPS, 30.0)
    assert f.value == pytest.approx(CELLS / (30.0 / STEPS))
    assert merit.fvops_per_node(CELLS, STEPS, 30.0, NODES).value == pytest.approx(f.value / NODES)
    t = merit.t_star(CELLS, STEPS, 30.0, NODES * PPN)
    assert t.value == pytest.approx(NODES * PPN / f.value)
    assert merit.rsd([1.0, 1.0, 1.0]).value == 0
    assert merit.rsd([9.0, 11.0]).value == pytest.approx(statistics.stdev([9, 11]) / 10)


@pytest.mark.parametrize(
    "figure, reason",
    [
        (merit.fvops(None, STEPS, 30.0), "no cell count"),
        (merit.fvops(CELLS, None, 30.0), "no step count"),
        (merit.fvops(CELLS, STEPS, 0.0), "time is zero"),
        (merit.fvops(CELLS, STEPS, float("nan")), "time is NaN"),
        (merit.fvops(CELLS, STEPS, -3.0), "time is negative"),
        (merit.time_per_iteration(None, STEPS), "no time"),
        (merit.fvops_per_node(CELLS, STEPS, 30.0, 0), "node count is zero"),
        (merit.t_star(CELLS, STEPS, 30.0, None), "no core count"),
        (merit.fvops("many", STEPS, 30.0), "cell count 'many' is not a number"),
        (merit.rsd([30.0]), "1 repeat(s); an RSD needs 2"),
        (merit.improvement([], [1.0]), "no passed run on either side"),
        (merit.improvement([1.0, 2.0], [0.0, 1.0]), "a time of 0"),
    ],
)
def test_a_figure_that_cannot_be_formed_reads_na_with_the_reason(figure, reason):
    assert figure.value is None
    assert figure.text() == f"n/a ({reason})"


def test_report_table_of_figures_and_improvement_factors(tmp_path):
    lines = [
        row(i, variant, wall)
        for i, (variant, wall) in enumerate((v, w) for v, walls in WALLS.items() for w in walls)
    ]
    report, md = report_of(tmp_path, lines)
    table = table_after(md, "mb1Cavity3D (8M), VariantRun on zen3_0512")
    header, rows = table[0], {r[1]: r for r in table[2:]}
    assert header[:6] == ["layout", "configuration", "cells", "time s", "RSD", "t/iter s"]
    std, opt = rows["standard, block"], rows["local+global, rankmap"]
    t_std = statistics.median(WALLS["standard"])
    assert std[0] == f"{NODES}x{PPN}" and std[2] == f"{CELLS:,}"
    assert std[5] == f"{t_std / STEPS:.3g}"
    assert std[6] == f"{CELLS * STEPS / t_std:.3g}"
    assert std[7] == f"{CELLS * STEPS / t_std / NODES:.3g}"
    assert std[8] == f"{t_std / STEPS * NODES * PPN / CELLS:.3g}"
    rsd = statistics.stdev(WALLS["standard"]) / statistics.fmean(WALLS["standard"])
    assert std[4] == f"{100 * rsd:.1f} %"
    assert std[9] == std[10] == "standard"
    # TTSF = T_std / T_opt from the Hodges-Lehmann ratio, its CI inverted; the same node
    # count on both sides makes the cost factor equal to the time factor.
    c = stats.compare(WALLS["standard"], WALLS["local+global"])
    want = f"{1 / c.ratio:.3g} [{1 / c.high:.3g}, {1 / c.low:.3g}]"
    assert opt[9] == want and opt[10] == want
    assert 1 / c.high > 1  # the test data is significantly faster


def test_runs_without_a_cell_count_or_steps_read_na(tmp_path):
    lines = [row(0, "standard", 30.0, cells=None), row(1, "standard", 31.0, cells=None)]
    lines += [row(2, "standard", 30.0, case="other", steps=None)]
    report, md = report_of(tmp_path, lines)
    no_cells = table_after(md, "mb1Cavity3D (8M), VariantRun on zen3_0512")[2]
    assert no_cells[2] == "n/a (no cell count)"
    assert no_cells[6] == no_cells[7] == no_cells[8] == "n/a (no cell count)"
    assert no_cells[5] != "n/a (no cell count)"  # t/iter needs no cells
    no_steps = table_after(md, "other (8M), VariantRun on zen3_0512")[2]
    assert (
        no_steps[5] == "n/a (no step count)" and no_steps[4] == "n/a (1 repeat(s); an RSD needs 2)"
    )


def test_zero_times_give_no_number(tmp_path):
    """A zero wall time is rejected where it is read; the configuration has no passed run
    left, and every figure says so."""
    report, md = report_of(tmp_path, [row(0, "standard", 0.0), row(1, "standard", 0.0)])
    assert "2 row(s) rejected: wall is zero (2)" in md
    assert not analysis.merits(report.groups)
    assert "No solver run was collected" in md


# -- the OHC-1 export ----------------------------------------------------------------------


def export_cli(*args):
    return subprocess.run(
        [PYTHON, "-m", "topofoam.reporting.export", *map(str, args)],
        cwd=REPO / "reframe",
        capture_output=True,
        text=True,
    )


@pytest.fixture
def vsc5_results(tmp_path):
    lines = [
        row(i, variant, wall)
        for i, (variant, wall) in enumerate((v, w) for v, walls in WALLS.items() for w in walls)
    ]
    report_of(tmp_path, lines)
    return tmp_path / "results"


def test_export_of_a_seed_system_takes_its_published_description(vsc5_results, tmp_path):
    info = tmp_path / "info.json"
    info.write_text('{"memory_gib": 512, "filesystem": "GPFS", "affiliation": "TU Wien"}')
    done = export_cli("--results", vsc5_results, "--system-info", info, "--out", tmp_path / "x")
    assert done.returncode == 0, done.stderr
    document = json.loads((tmp_path / "x" / "ohc1-vsc5.json").read_text())
    system = document["system"]
    assert system["Hardware Spec (CPU)"] == "AMD EPYC 7713"
    assert (system["Cores per Node"], system["Number of Sockets"]) == (128, 2)
    assert system["Network Interconnect"] == "InfiniBand 200 Gbit/s"
    assert (system["Memory per Node [GiB]"], system["Storage File-System"]) == (512, "GPFS")
    assert system["Contributor Affiliation"] == "TU Wien"
    assert "Last-Level Cache" in document["unknown"]  # nobody said
    sims = {s["Variant"]: s for s in document["simulations"]}
    t = statistics.median(WALLS["standard"])
    assert sims["standard"]["FVOPS"] == pytest.approx(CELLS * STEPS / t)
    assert sims["standard"]["Track"] == "hardware"
    assert sims["local+global"]["Track"] == "software"
    assert sims["standard"]["Repeats"] == 5


@pytest.mark.parametrize(
    "text, said",
    [
        ("{", "not JSON"),
        ("[1, 2]", "not a JSON object"),
        ('{"ram": 5}', "unknown key(s) ram -- use cpu, sockets"),
        ('{"sockets": 0}', "sockets is 0 -- give a whole number of 1 or more"),
        ('{"cores_per_node": "many"}', "cores_per_node is 'many'"),
        ('{"memory_gib": -1}', "memory_gib is -1"),
        ('{"filesystem": 3}', "filesystem is 3 -- give it as text"),
    ],
)
def test_a_bad_system_info_file_is_one_line(vsc5_results, tmp_path, text, said):
    info = tmp_path / "info.json"
    info.write_text(text)
    done = export_cli("--results", vsc5_results, "--system-info", info)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(f"export: {info}: ") and said in done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_export_without_runs_or_with_two_systems(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    done = export_cli("--results", empty)
    assert (
        done.returncode == 2 and "holds runs of no system -- name one with --system" in done.stderr
    )
    done = export_cli("--results", empty, "--system", "vsc5")
    assert done.returncode == 2 and "no solver run of vsc5" in done.stderr
    done = export_cli("--results", tmp_path / "nowhere")
    assert done.returncode == 2 and "is not a folder" in done.stderr
