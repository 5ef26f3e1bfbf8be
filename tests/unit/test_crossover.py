"""Seed 001's crossover (topofoam.prediction.crossover): Table 8 read, the published crossover
found in it, the pricing of each solver's step on seed 001's node, and what moves the
predicted crossover. The solvers' laws and sweeps here are TEST DATA (stated numbers, not
counted runs: those are localsite.publishedbench's); the decompositions are structured
grids standing in for SCOTCH's (tests/integration/test_published_scale.py decomposes)."""

import math
import subprocess

import pytest

from conftest import PYTHON, REPO
from rankmap.graph import grid
from topofoam.prediction import calls as law
from topofoam.prediction import crossover, papers
from topofoam.prediction.model import INTER_NODE, ModelError
from topofoam.reporting import published


def test_table8_s_crossover_is_found_where_the_paper_has_it():
    """optMULES+PCG against the pipelined solvers: PCG faster up to 192 cores, both
    pipelined solvers faster from 384 (21.01 s against 22.33 and 25.94; 18.98 against
    16.77 and 17.19)."""
    times = crossover.published(published.scaling())
    assert sorted(times) == list(crossover.CORES)
    assert times[192] == {"PCG": 21.01, "PiPePCG": 22.33, "RePiPePCG": 25.94}
    assert crossover.first_faster(times, "PiPePCG") == 384
    assert crossover.first_faster(times, "RePiPePCG") == 384
    assert crossover.first_faster({12: {"PCG": 1.0, "PiPePCG": 2.0}}, "PiPePCG") is None


def test_only_the_inter_node_latency_is_scaled():
    base, doubled = crossover.costs(1.0), crossover.costs(2.0)
    assert doubled.latency[INTER_NODE] == pytest.approx(2 * base.latency[INTER_NODE])
    others = [i for i in range(len(base.latency)) if i != INTER_NODE]
    assert [doubled.latency[i] for i in others] == [base.latency[i] for i in others]
    assert doubled.bandwidth == base.bandwidth
    assert "hpc2" in doubled.source and "x 2" in doubled.source


def _solver(name, sweep_s, **per_step):
    """TEST DATA: a solver whose calls per rank and step do not depend on size or ranks."""
    fit = law.CallLaw(name, {k: (math.log(v), 0.0, 0.0) for k, v in per_step.items()}, 9)
    return crossover.Solver(name, fit, papers.Compute(sweep_s, 5e9, "test data"))


#: PCG: 2 blocking sums an iteration; the pipelined form 1 non-blocking one and 20 % more
#: sweep time (its extra vector updates). 50 iterations a step, one halo exchange each.
PCG = _solver("PCG", 1.0e-8, halo=50, allreduce=100)
PIPE = _solver("PiPePCG", 1.2e-8, halo=50, iallreduce=50)


def _grid(cores):
    nx = 2 ** math.ceil(math.log2(math.isqrt(cores)))
    return grid(nx, cores // nx)


@pytest.mark.parametrize("cores", [12, 96, 768])
def test_a_step_is_compute_and_the_solver_s_own_reductions(cores):
    link = crossover.costs()
    graph = _grid(cores)
    pcg = crossover.step(PCG, cores, link, graph)
    pipe = crossover.step(PIPE, cores, link, graph)
    cells = 2_041_200
    assert pcg["terms"]["compute"] == pytest.approx(PCG.compute.on("seed001") * cells / cores * 50)
    assert pipe["terms"]["compute"] == pytest.approx(1.2 * pcg["terms"]["compute"])
    assert "iallreduce" in pipe["terms"] and pipe["terms"].get("allreduce", 0) == 0
    assert pcg["step_s"] == pytest.approx(sum(pcg["terms"].values()))


def test_the_pipelined_solver_pays_from_a_core_count_that_falls_as_latency_grows():
    """Few cores: the extra sweep time costs more than the blocking sums; many: the sums'
    latency outgrows the sweep it hides behind. A slower network moves the crossover to
    fewer cores, never to more."""
    firsts = []
    graphs = {c: _grid(c) for c in (12, 48, 192, 768, 1536)}
    for factor in (0.5, 4.0, 16.0):
        link = crossover.costs(factor)
        times = {
            c: {s.name: crossover.step(s, c, link, g)["step_s"] for s in (PCG, PIPE)}
            for c, g in graphs.items()
        }
        assert times[12]["PiPePCG"] > times[12]["PCG"]
        firsts.append(crossover.first_faster(times, "PiPePCG") or math.inf)
    assert firsts == sorted(firsts, reverse=True)
    assert firsts[-1] < math.inf and firsts[-1] < firsts[0]


def test_cores_that_are_not_whole_nodes_are_refused():
    with pytest.raises(ModelError, match="13 cores is not whole nodes of 12"):
        crossover.step(PCG, 13, crossover.costs(), _grid(12))


def test_without_pcg_s_runs_there_is_no_prediction():
    with pytest.raises(ModelError, match="PCG's counted runs are missing"):
        crossover.predict({"PiPePCG": PIPE}, published.scaling())


def papers_crossover(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [PYTHON, "-m", "topofoam.reporting.papers", "crossover", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_without_counted_runs_the_command_says_what_to_run(tmp_path):
    r = papers_crossover("--calls", str(tmp_path))
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("papers: damBreak2D with PCG: no prediction")
    assert len(r.stderr.strip().splitlines()) == 1
    assert "python -m localsite.publishedbench calls" in r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize(
    "edit, says",
    [
        (("999.75,383.47", "999.75,fast"), "column c24, is 'fast', not a number"),
        (("c12,c24", "n12,c24"), "the header's column 'n12' is not c<count>"),
        (("999.75", "-999.75"), "at 12 cores is -999.75 s, not a runtime"),
        (("case,solution", "case,variant"), "the header is not"),
    ],
)
def test_a_bad_scaling_table_is_one_line(tmp_path, edit, says):
    bad = tmp_path / "scaling.csv"
    bad.write_text(published.SCALING.read_text().replace(*edit, 1))
    r = papers_crossover("--table", str(bad))
    assert r.returncode == 2 and r.stdout == "", r.stderr
    assert r.stderr.startswith("papers: ") and says in r.stderr and str(bad) in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_the_table_sets_each_ratio_beside_the_published_one():
    """TEST DATA for the predictions: PiPePCG 10 % slower than PCG up to 96 cores, 10 %
    faster from 192 (one core count before the paper's crossover); the published side is
    Table 8's."""
    from topofoam.reporting.papers import render_crossover

    predicted = {
        f: {c: {"PCG": 1.0, "PiPePCG": 1.1 if c < 192 / f else 0.9} for c in crossover.CORES}
        for f in crossover.LATENCY_FACTORS
    }
    shares = {c: {"compute": 0.75} for c in crossover.CORES}
    x = crossover.Crossover(
        predicted, crossover.published(published.scaling()), shares, ("PCG", "PiPePCG")
    )
    text = render_crossover(x)
    assert "RePiPePCG" not in text  # not counted: no rows
    row = next(line for line in text.splitlines() if line.split()[:2] == ["384", "32"])
    assert row.split()[2] == f"{16.77 / 18.98:.3f}" and row.split()[4] == "0.900"
    assert row.split()[-1] == "25.0"
    assert (
        "PiPePCG faster than PCG from: published 384 cores; predicted 384 cores (x0.5), "
        "192 cores (x1), 96 cores (x2), 48 cores (x4)" in text
    )
    assert "over 9 core counts" in text


def test_a_table_without_a_solver_s_row_is_refused_naming_it(tmp_path):
    bad = tmp_path / "scaling.csv"
    bad.write_text(
        published.SCALING.read_text().replace("damBreak2D,optMULES+OFPiPePCG,", "damBreak2D,x,")
    )
    with pytest.raises(ModelError, match=r"no row damBreak2D,optMULES\+OFPiPePCG -- restore"):
        crossover.published(published.scaling(bad))
