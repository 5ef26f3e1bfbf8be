"""The time-per-step model (topofoam.prediction.model) on real rankmap graphs, placements and schedules:
the per-level fit, each term's dependence on what it prices, the one-node consistency, and
"no prediction" where a measurement is missing."""

import dataclasses
import math

import numpy as np
import pytest

from rankmap.graph import grid
from rankmap.mapping import Placement, block
from rankmap.schedule import hierarchical, openfoam_tree
from rankmap.topology import LEVELS, load
from topofoam.prediction import model

TABLE = model.fabric.TABLE  # seed 000 Table 2
SMALL = "pack:2 numa:2 core:2 pu:1"  # 8 cores: 2 domains x 2 NUMA nodes x 2 cores


def costs(latency_us=(0.2, 0.4, 0.8, 50.0), mbytes=(6000, 4000, 2000, 100)):
    return model.LinkCosts(
        tuple(x * 1e-6 for x in latency_us), tuple(b * 1e6 for b in mbytes), "test"
    )


def test_a_level_fit_recovers_latency_and_bandwidth():
    points = [(b, 3e-6 + b / 2e9) for b in (80, 800, 4000, 8000)]
    latency, bandwidth = model.fit_level(points)
    assert latency == pytest.approx(3e-6) and bandwidth == pytest.approx(2e9)


def test_a_flat_level_is_a_latency_alone():
    latency, bandwidth = model.fit_level([(80, 1e-6), (8000, 0.9e-6)])
    assert latency == pytest.approx(0.95e-6) and bandwidth == math.inf


def test_a_level_that_jumps_at_the_large_sizes_keeps_the_small_messages_latency():
    # One CI run's intra-node round trips: 1.3 and 1.9 us, then 106 and 178 us (disturbed).
    points = [(8 * n, rtt / 2 * 1e-6) for n, rtt in ((10, 1.33), (100, 1.923), (500, 106.2),
                                                     (1000, 178.4))]  # fmt: skip
    latency, bandwidth = model.fit_level(points)
    assert latency == pytest.approx(0.665e-6) and 0 < bandwidth < math.inf


def test_the_seed_table_gives_every_level_and_fills_a_missing_one():
    vsc5 = model.link_costs(TABLE, "vsc5")
    assert all(vsc5.has(i) for i in range(4))
    # inter-node is slower than inside a NUMA node, per message of 1,000 scalars
    assert vsc5.message(3, 8000) > vsc5.message(0, 8000)
    hpc2 = model.link_costs(TABLE, "hpc2")  # no NUMA-domain column: a package is a NUMA node
    assert hpc2.latency[2] == hpc2.latency[1] and hpc2.bandwidth[2] == hpc2.bandwidth[1]


def test_a_table_without_inter_node_rows_gives_no_prediction(tmp_path):
    table = tmp_path / "p2p.csv"
    table.write_text(
        "system,size," + ",".join(LEVELS) + "\nemu:cpu,10,1.0,2.0,,\nemu:cpu,1000,3.0,5.0,,\n"
    )
    c = model.link_costs(table, "emu:cpu")
    assert not c.has(3)
    machine = load(SMALL)
    base = grid(2, 2)
    work = model.Workload(step_s=0.01, ranks=4, halo=10, allreduce=5)
    p = model.predict("standard", 2, grid(4, 2), model.Machine(machine, c), work, base)
    assert p.step_s is None and "inter-node" in p.reason and "p2p" in p.reason
    # one node needs no inter-node costs
    assert (
        model.predict("standard", 1, base, model.Machine(machine, c), work, base).step_s is not None
    )


@pytest.mark.parametrize(
    "text,expect",
    [
        ("system,size,intra_numa_node\nvsc5,10,fast\n", "'fast'"),
        ("system,size,intra_numa_node\nvsc5,10,-1\n", "positive"),
        ("system,size,intra_numa_node,inter_node\nvsc5,10,,3\n", "fastest level"),
        ("system,size,intra_numa_node\nother,10,1\n", "no rows of 'vsc5'"),
    ],
)
def test_a_bad_table_is_one_error_naming_it(tmp_path, text, expect):
    table = tmp_path / "bad.csv"
    table.write_text(text)
    with pytest.raises(model.ModelError, match="bad.csv") as e:
        model.link_costs(table, "vsc5")
    assert expect in str(e.value)


def test_a_missing_table_names_the_file(tmp_path):
    with pytest.raises(model.ModelError, match="nothere.csv"):
        model.link_costs(tmp_path / "nothere.csv", "vsc5")


def test_halo_time_grows_with_the_inter_node_faces():
    machine = load(SMALL)
    g = grid(4, 4)  # 16 ranks on 2 nodes of 8
    tidy = block(g, machine, 2)  # rows 0-1 on node 0, rows 2-3 on node 1: 4 cut edges
    # every other rank on the other node: most edges cross
    node_of = np.arange(16) % 2
    scattered = Placement("scattered", node_of, tidy.core_of, machine, 2)
    c = costs()
    assert model.halo_time(g, scattered, c) > model.halo_time(g, tidy, c) > 0
    # on one node all messages stay inside: far cheaper than either
    assert model.halo_time(grid(2, 4), block(grid(2, 4), machine, 1), c) < model.halo_time(
        g, tidy, c
    )


def test_a_linear_tree_over_nodes_costs_more_than_the_hierarchical_one():
    machine = load(SMALL)
    g = grid(4, 2)  # 8 ranks, 2 per node on 4 nodes
    placed = block(g, machine, 4)
    stock, ours = openfoam_tree(placed), hierarchical(placed)
    c = costs()
    # OpenFOAM below 16 ranks: rank 0 receives from all, then sends to the 7 one by one
    inter = c.message(3, 8)
    assert model.tree_time(stock, c) >= 6 * inter
    assert model.tree_time(ours, c) < model.tree_time(stock, c)


def test_one_node_prediction_is_the_measured_step():
    machine = load(SMALL)
    base = grid(2, 4)
    work = model.Workload(step_s=0.02, ranks=8, halo=30, allreduce=20, tree=2, alltoall=1)
    p = model.predict("standard", 1, base, model.Machine(machine, costs()), work, base)
    assert p.step_s == pytest.approx(0.02)
    assert p.terms["compute"] < 0.02


def test_dearer_links_predict_slower_steps_and_more_nodes_less_compute():
    machine = load(SMALL)
    base, wide = grid(2, 4), grid(4, 8)
    work = model.Workload(step_s=0.02, ranks=8, halo=30, allreduce=20, tree=2)
    cheap = model.predict("standard", 4, wide, model.Machine(machine, costs()), work, base)
    dear = model.predict(
        "standard",
        4,
        wide,
        model.Machine(machine, costs(latency_us=(0.2, 0.4, 0.8, 500.0))),
        work,
        base,
    )
    assert dear.step_s > cheap.step_s
    assert cheap.terms["compute"] == pytest.approx(
        model.predict("standard", 1, base, model.Machine(machine, costs()), work, base).terms[
            "compute"
        ]
        / 4
    )
    # an emulated cluster's nodes share one machine's cores: no compute gained
    shared = model.predict("standard", 4, wide, model.Machine(machine, costs(), 2), work, base)
    assert shared.terms["compute"] == pytest.approx(cheap.terms["compute"] * 4)


def test_a_non_blocking_reduction_hides_behind_compute():
    machine = load(SMALL)
    base, wide = grid(2, 4), grid(4, 8)
    c = costs(latency_us=(0.2, 0.4, 0.8, 2000.0))
    blocking = model.Workload(step_s=0.02, ranks=8, halo=30, allreduce=20)
    pipelined = model.Workload(step_s=0.02, ranks=8, halo=30, allreduce=0, iallreduce=20)
    slow = model.predict("standard", 4, wide, model.Machine(machine, c), blocking, base)
    fast = model.predict("standard", 4, wide, model.Machine(machine, c), pipelined, base)
    assert fast.terms["iallreduce"] < slow.terms["allreduce"]
    # with no compute to hide behind, it costs what the blocking one does
    assert model.communication("standard", wide, 4, model.Machine(machine, c), pipelined, 0.0)[
        "iallreduce"
    ] == pytest.approx(slow.terms["allreduce"])


def test_counts_become_calls_per_step():
    calls = {
        "MPI_Isend": 2 * 100 * 6,  # 100 steps, 2 exchanges a step, 6 arcs
        "MPI_Allreduce": 4 * 100 * 15,
        "MPI_Send": 100 * 3 * 2 * 3,  # 3 tree reductions a step over 4 ranks
        "MPI_Alltoall": 4 * 100,
    }
    w = model.Workload.from_counts(calls, steps=100, ranks=4, neighbours=6, step_s=0.1)
    assert (w.halo, w.allreduce, w.tree, w.alltoall) == (2, 15, 3, 1)


def test_a_measured_step_the_costs_exceed_gives_no_prediction():
    machine = load(SMALL)
    base = grid(2, 4)
    work = model.Workload(step_s=1e-6, ranks=8, halo=30, allreduce=20)
    p = model.predict("standard", 1, base, model.Machine(machine, costs()), work, base)
    assert p.step_s is None and "do not fit" in p.reason


def test_a_step_just_under_the_models_communication_is_all_communication():
    # A latency-bound step measured a little shorter than the model's communication (noise):
    # the compute counts as none and the prediction is the communication, above the step.
    machine = load(SMALL)
    base = grid(2, 4)
    work = model.Workload(step_s=1.0, ranks=8, halo=30, allreduce=20)
    comm = sum(
        model.communication(
            "standard", base, 1, model.Machine(machine, costs()), work, 0.0
        ).values()
    )
    inside = dataclasses.replace(work, step_s=comm / (1 + model.FIT_SLACK / 2))
    p = model.predict("standard", 1, base, model.Machine(machine, costs()), inside, base)
    assert p.terms["compute"] == 0.0 and p.step_s == pytest.approx(comm)
    beyond = dataclasses.replace(work, step_s=comm / (1 + 2 * model.FIT_SLACK))
    assert (
        model.predict("standard", 1, base, model.Machine(machine, costs()), beyond, base).step_s
        is None
    )


def test_pays_from_the_first_count_it_stays_ahead():
    P = model.Prediction
    preds = [
        P("standard", 1, 1.0),
        P("standard", 2, 0.6),
        P("standard", 4, 0.5),
        P("global", 1, 1.0),
        P("global", 2, 0.5),
        P("global", 4, 0.4),
        P("esi-nodecomms", 1, 0.9),  # ahead at 1 node only
        P("esi-nodecomms", 2, 0.7),
        P("esi-nodecomms", 4, 0.6),
    ]
    assert model.pays_from(preds) == {"global": 2, "esi-nodecomms": None}


def test_an_edge_list_keeps_the_graph(tmp_path):
    from rankmap.graph import read_edges, write_edges

    g = grid(3, 2, 2, faces=(10, 20, 30))
    back = read_edges(write_edges(g, tmp_path / "g.csv"))
    assert back.n == g.n
    assert [a.tolist() for a in back.edges()] == [a.tolist() for a in g.edges()]


@pytest.mark.parametrize(
    "text,expect",
    [
        ("rank,neighbour,faces\n0,1,4\n", "not an edge list"),
        ("# ranks 2; x\nrank,neighbour,faces\n0,one,4\n", "g.csv:3"),
        ("# ranks 2; x\nrank,neighbour,faces\n0,2,4\n", "outside 0-1"),
        ("# ranks 2; x\nrank,neighbour,faces\n1,1,4\n", "one rank twice"),
        # a header claiming billions: refused before anything is allocated for them
        ("# ranks 99999999999; x\nrank,neighbour,faces\n0,1,4\n", "99,999,999,999 ranks"),
        ("# ranks 0; x\nrank,neighbour,faces\n", "declares 0 ranks"),
    ],
)
def test_a_bad_edge_list_names_the_line_and_the_fix(tmp_path, text, expect):
    from rankmap.errors import InputError
    from rankmap.graph import read_edges

    path = tmp_path / "g.csv"
    path.write_text(text)
    with pytest.raises(InputError, match="rankmap graph") as e:
        read_edges(path)
    assert expect in str(e.value)


def test_the_ordering_check_compares_with_the_rank_test():
    from topofoam.prediction import modelcheck

    def line(variant, predicted, values):
        return modelcheck.Line(
            "emu", "", "vsc5x100", "srun", variant, 4, len(values), None, None, None,
            predicted, None, values=values,
        )  # fmt: skip

    slow = [1.00, 1.01, 1.02, 1.03, 1.04]
    fast = [0.80, 0.81, 0.82, 0.83, 0.84]
    said = modelcheck.orderings(
        [
            line("standard", 1.0, slow),
            line("global", 0.8, fast),  # predicted and measured faster
            line("local+global", 0.8, [1.2, 1.21, 1.22, 1.23, 1.24]),  # measured slower
            line("esi-nodecomms", 0.99, [1.00, 1.05, 0.99, 1.02, 1.01]),  # neither
        ]
    )
    assert any("global predicted faster" in s and s.endswith("agrees") for s in said), said
    assert any("local+global predicted faster" in s and s.endswith("differs") for s in said)
    assert any("esi-nodecomms predicted no different" in s and s.endswith("agrees") for s in said)
    one = modelcheck.orderings([line("standard", 1.0, [1.0]), line("global", 0.5, [0.5])])
    assert one and one[0].endswith("no verdict")


@pytest.mark.parametrize(
    "predicted, values, status",
    [
        (0.95, [0.98, 1.00, 1.03, 1.05], "PASS"),  # -5 %, every value of the range within 25 %
        (0.70, [0.98, 1.00, 1.03, 1.05], "FAIL"),  # -30 %, every value beyond
        (1.40, [0.98, 1.00, 1.03, 1.05], "FAIL"),  # +40 %, beyond the other way
        (0.80, [0.90, 1.00, 1.10, 1.20], "INCONCLUSIVE"),  # -20 %, the range reaches past
        (0.95, [0.98, 1.00], "INCONCLUSIVE"),  # no interval from 2 runs
        (None, [0.98, 1.00, 1.03], "INCONCLUSIVE"),  # no prediction
    ],
)
def test_the_accuracy_verdict_is_the_measured_interval_against_the_stated_need(
    predicted, values, status
):
    from topofoam.prediction import modelcheck
    from topofoam.results.stats import summarise

    m = summarise(values)
    error = None if predicted is None else predicted / m.median - 1
    line = modelcheck.Line(
        "emu", "", "vsc5x100", "srun", "standard", 2, m.n, m.median, m.low, m.high,
        predicted, error, values=values,
    )  # fmt: skip
    got, said = modelcheck.accuracy(line)
    assert got == status, said
    assert said.startswith("emu (vsc5x100), standard on 2 node(s): ")
    if status == "FAIL":
        assert said.endswith("off by more than +-25 %")


@pytest.mark.parametrize(
    "ranks_per_node, cores, status",
    [
        (2, 2, "INCONCLUSIVE"),  # 4 ranks on 2 cores: each waits for a core, not judged
        (1, 2, "PASS"),  # a core each
        (2, None, "PASS"),  # a cluster: a core each
        (64, 128, "PASS"),
        (128, 128, "INCONCLUSIVE"),  # 256 ranks on one machine's 128 cores
    ],
)
def test_the_accuracy_is_judged_only_where_each_rank_has_a_core(ranks_per_node, cores, status):
    from topofoam.prediction import modelcheck
    from topofoam.results.stats import summarise

    m = summarise([0.98, 1.00, 1.03, 1.05])
    line = modelcheck.Line(
        "emu", "", "vsc5x100", "srun", "standard", 2, m.n, m.median, m.low, m.high,
        0.95, 0.95 / m.median - 1, scale=modelcheck.Scale(ranks_per_node, "cavity2D"), cores=cores,
    )  # fmt: skip
    got, said = modelcheck.accuracy(line)
    assert got == status, said
    assert said.startswith(f"emu (vsc5x100), standard on 2 node(s) x {ranks_per_node}: ")
    if status == "INCONCLUSIVE":
        assert f"its {2 * ranks_per_node} ranks shared {cores} cores" in said


def test_one_rank_a_node_is_predicted_from_the_one_node_run_of_as_many_ranks():
    """OpenFOAM runs no single rank in parallel: 2 nodes x 1 rank take the one-node run of
    2 ranks (the same decomposition); a series with its own one-node run keeps it."""
    from collections import defaultdict

    from topofoam.prediction import modelcheck

    def series(rpn, case="cavity2D", launcher="srun"):
        return ("emu", "env", "vsc5x100", launcher, modelcheck.Scale(rpn, case))

    by = defaultdict(lambda: defaultdict(list))
    by[series(2)]["standard", 1] = ["one node x 2"]
    by[series(4)]["standard", 1] = ["one node x 4"]
    by[series(1)]["standard", 2] = ["two nodes x 1"]
    by[series(1)]["standard", 4] = ["four nodes x 1"]
    by[series(1, launcher="mpirun")]["standard", 2] = ["mpirun: two nodes x 1"]
    by[series(2)]["standard", 2] = ["two nodes x 2"]
    assert modelcheck.one_node_rows(by, series(1), "standard", 2) == ["one node x 2"]
    assert modelcheck.one_node_rows(by, series(1), "standard", 4) == ["one node x 4"]
    assert modelcheck.one_node_rows(by, series(2), "standard", 2) == ["one node x 2"]
    assert modelcheck.one_node_rows(by, series(1), "global", 2) == []  # no such variant
    assert modelcheck.one_node_rows(by, series(1, launcher="mpirun"), "standard", 2) == []
    assert modelcheck.one_node_rows(by, series(1, case="pitzDaily"), "standard", 2) == []


def test_a_graph_a_later_run_at_another_scale_replaced_is_not_taken(tmp_path):
    """The case run again at other ranks a node keeps its output folder: a commgraph.csv of
    other ranks than the row's is refused, naming the file, and another repeat's is taken."""
    from rankmap.graph import write_edges
    from topofoam.prediction import modelcheck

    replaced, own = tmp_path / "repeat0", tmp_path / "repeat1"
    for folder, ranks in ((replaced, 2), (own, 4)):
        folder.mkdir()
        write_edges(grid(ranks, 1), folder / "commgraph.csv")
    rows = [{"outputdir": str(replaced), "num_tasks": 4.0}, {"outputdir": str(own), "num_tasks": 4}]
    graph, why = modelcheck.kept_graph(rows)
    assert graph.n == 4 and why == ""
    graph, why = modelcheck.kept_graph(rows[:1])
    assert graph is None
    assert why.startswith(f"{replaced / 'commgraph.csv'} is of 2 ranks, the runs had 4: ")
    assert why.endswith("run the multinode check again")
    graph, why = modelcheck.kept_graph([{"outputdir": str(own), "num_tasks": None}])
    assert graph.n == 4  # not logged: the graph is all there is


def test_the_step_clock_passes_the_log_and_times_its_steps(tmp_path):
    import subprocess
    import sys

    from conftest import REPO
    from topofoam.jobs import stepclock

    writer = (
        "import sys, time\n"
        "for i in range(4):\n"
        "    print(f'Time = {i}'); print('  a solver line'); sys.stdout.flush(); time.sleep(0.2)\n"
    )
    stamps = tmp_path / "stepclock.txt"
    done = subprocess.run(
        f'{sys.executable} -c "{writer}" | {sys.executable} -m topofoam.jobs.stepclock {stamps}',
        shell=True,
        cwd=REPO / "reframe",
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:2] == ["Time = 0", "  a solver line"]
    assert stepclock.per_step(stamps) == pytest.approx(0.2, abs=0.05)
    stamps.write_text("1.0\n")
    with pytest.raises(stepclock.StepClockError, match="at least 2"):
        stepclock.per_step(stamps)


def test_the_effects_line_says_why_no_variant_paid():
    from topofoam.prediction import modelcheck

    def line(variant, nodes, predicted, values, terms):
        return modelcheck.Line(
            "emu", "", "vsc5x100", "srun", variant, nodes, len(values), None, None, None,
            predicted, None, values=values, terms=terms,
        )  # fmt: skip

    same = [1.0, 1.01, 0.99, 1.02, 0.98]
    mostly_allreduce = {"compute": 0.05, "allreduce": 0.8, "halo": 0.15}
    lines = [
        line("standard", 4, 1.0, same, mostly_allreduce),
        line("global", 4, 1.0, [1.01, 1.0, 0.99, 0.98, 1.02], mostly_allreduce),
    ]
    said = modelcheck.effects(lines)
    assert said.startswith("No variant came out significantly faster") and "15 %" in said
    faster = [line("standard", 4, 1.0, same, mostly_allreduce)]
    faster.append(line("global", 4, 0.8, [0.8, 0.81, 0.79, 0.82, 0.78], mostly_allreduce))
    assert modelcheck.effects(faster).startswith("1 variant and node count(s) came out")


def test_mpis_all_reduce_is_priced_round_by_round_on_the_placement():
    """Recursive doubling pairs rank r with r xor 2^j. On VSC-5's node (8 cores a NUMA
    node, 8 NUMA nodes a package) and a block placement of 2 nodes: 3 rounds inside a NUMA
    node, 3 between NUMA nodes, 1 between packages, 1 between nodes. srun's block:cyclic
    makes the first round cross packages and the next three stay in a NUMA node: the same
    sum. A placement that scatters consecutive ranks over the nodes pays the slowest
    level in every round; a rank count that is not a power of two, one round more."""
    from rankmap.mapping import socket_cyclic

    node = load("vsc5")
    c = costs()
    graph = grid(16, 16)  # 256 ranks
    m = [c.message(level, model.FACE_BYTES) for level in range(4)]
    expected = 3 * m[0] + 3 * m[1] + m[2] + m[3]
    assert model.allreduce_rounds(block(graph, node, 2), c) == pytest.approx(expected)
    assert model.allreduce_rounds(socket_cyclic(graph, node, 2), c) == pytest.approx(expected)
    placed = block(graph, node, 2)
    parity = np.array([bin(r).count("1") % 2 for r in range(256)])  # any bit flipped: other node
    scattered = dataclasses.replace(placed, node_of=parity)
    assert model.allreduce_rounds(scattered, c) == pytest.approx(8 * m[3])
    odd = block(grid(12, 10), node, 1)  # 120 ranks: 7 rounds and the fold
    assert model.allreduce_rounds(odd, c) > model.allreduce_rounds(block(grid(8, 8), node, 1), c)


def test_a_log_that_arrives_in_one_chunk_is_timed_by_the_masters_cpu(tmp_path):
    """Ten 1 ms steps whose lines reach the clock at once (srun forwarding a fast solver's
    log in blocks) stamp 0 s a step; the ExecutionTime lines between them say 1 ms: the
    wall time per step is never below the CPU time per step."""
    import subprocess
    import sys

    from conftest import REPO
    from topofoam.jobs import stepclock

    log = "".join(
        f"Time = {i}\nExecutionTime = {0.01 + 0.001 * i:.3f} s  ClockTime = 0 s\n"
        for i in range(10)
    )
    stamps = tmp_path / "stepclock.txt"
    done = subprocess.run(
        [sys.executable, "-m", "topofoam.jobs.stepclock", str(stamps)],
        input=log, cwd=REPO / "reframe", capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0 and done.stdout == log, done.stderr
    assert stepclock.per_step(stamps) == pytest.approx(0.001, rel=1e-6)
    # steps slower than their CPU time (a rank waiting off the CPU): the wall time stands
    stamps.write_text("10.0\ncpu 0.1\n10.5\ncpu 0.2\n11.0\ncpu 0.3\n")
    assert stepclock.per_step(stamps) == pytest.approx(0.5)


def test_a_reason_is_said_once_for_the_lines_it_holds_for():
    """modelcheck.reasons: one line per reason, naming its lines exactly (every variant on
    every node count in short, else each pair)."""
    from topofoam.prediction.modelcheck import Line, reasons

    def line(variant, nodes, reason):
        return Line(
            "emu", "e", "none", "srun", variant, nodes, 1, 1.0, 1.0, 1.0, None, None, reason
        )

    every = [line(v, n, "A") for v in ("standard", "global") for n in (1, 2, 4)]
    assert reasons(every) == ["standard, global on 1, 2, 4 node(s): A"]
    some = [line("standard", 2, "B"), line("global", 4, "B"), line("global", 1, "")]
    assert reasons(every + some) == [
        "global on 4 node(s); standard on 2 node(s): B",
        "standard, global on 1, 2, 4 node(s): A",
    ]


def test_global_sums_prices_its_sums_along_the_schedule_s_tree():
    """global+sums' own one-node run counts no MPI_Allreduce: its scalar sums are blocking
    sends along the schedule, 2 (ranks - 1) a sum. The model prices each as one gather and
    scatter along the block placement's hierarchical schedule, as it prices global's tree
    reductions; what it would price as all-reduces is gone."""
    machine = load(SMALL)
    base, wide = grid(2, 4), grid(4, 8)  # 8 ranks on one node; 32 on 4
    steps, sums, trees = 10, 20, 2
    standard = {"MPI_Isend": steps * 30 * 8, "MPI_Allreduce": steps * sums * 8}
    standard["MPI_Send"] = steps * trees * 2 * 7
    own = dict(standard, MPI_Allreduce=0, MPI_Send=steps * (trees + sums) * 2 * 7)
    c = costs(latency_us=(0.2, 0.4, 0.8, 500.0))
    on = model.Machine(machine, c)
    work = {
        name: model.Workload.from_counts(counts, steps, 8, 8, step_s=0.05)
        for name, counts in (("global", standard), ("global+sums", own))
    }
    got = {v: model.predict(v, 4, wide, on, work[v], base) for v in work}
    summed = got["global+sums"]
    assert summed.step_s is not None and summed.terms["allreduce"] == 0
    tree = model.tree_time(hierarchical(block(wide, machine, 4)), c)
    assert summed.terms["tree"] == pytest.approx((trees + sums) * tree)
    assert got["global"].terms["tree"] == pytest.approx(trees * tree)
    assert got["global"].terms["allreduce"] > 0
    assert model.predict("global+max", 4, wide, on, work["global"], base).reason == (
        "unknown variant 'global+max'"
    )


def test_the_report_says_which_predictions_are_judged_and_why_the_others_are_not():
    """The report's accuracy lines: predictions whose ranks shared cores are named together as
    not judged (their error holds the wait for a core), each other one with its verdict."""
    from topofoam.prediction import modelcheck
    from topofoam.results.stats import summarise

    m = summarise([0.98, 1.00, 1.03, 1.05])

    def line(variant, nodes, ranks_per_node, cores, predicted=0.95):
        return modelcheck.Line(
            "emu", "", "vsc5x100", "srun", variant, nodes, m.n, m.median, m.low, m.high,
            predicted, None if predicted is None else predicted / m.median - 1,
            scale=modelcheck.Scale(ranks_per_node, "cavity2D"), cores=cores,
        )  # fmt: skip

    lines = [
        line("standard", 1, 2, 2),  # one node: the measurement itself, never judged
        line("standard", 2, 2, 2),  # 4 ranks on 2 cores
        line("global", 4, 2, 2),  # 8 ranks on 2 cores
        line("standard", 2, 1, 2),  # a core each: judged
        line("global", 2, 1, 2, predicted=0.70),  # a core each, 30 % off: FAIL
        line("local+global", 2, 1, 2, predicted=None),  # no prediction: left to reasons
    ]
    said = modelcheck.judgements(lines)
    assert said[0].startswith(
        "Accuracy: 2 of the 4 predictions beyond one node not judged: their ranks outnumbered "
        "the 2 cores they shared"
    ), said
    assert said[1].startswith("Accuracy: PASS: emu (vsc5x100), standard on 2 node(s) x 1: ")
    assert said[2].startswith("Accuracy: FAIL: emu (vsc5x100), global on 2 node(s) x 1: ")
    assert len(said) == 3
    assert modelcheck.judgements([line("standard", 2, 1, None)])[0].startswith("Accuracy: PASS")
    assert modelcheck.judgements(lines[:1]) == []
