"""The model's predictions beside the papers' published results (docs/model.md).

    python -m topofoam.reporting.papers table4 [--calls results/model] [--table FILE]
    python -m topofoam.reporting.papers crossover [--calls results/model] [--table FILE]
    python -m topofoam.reporting.papers nodehours [--calls results/model] [--table FILE]

Seed 000 Table 4, the runtime decrease of the local and global optimisation against
OpenFOAM standard, predicted cell by cell (topofoam.prediction.papers) and set beside the
published figure: each cell's error in percentage points, whether the sign agrees, and the
rank correlation over all cells. Standard is priced twice, at mpirun's block placement and
at srun's default block:cyclic: seed 000 does not say which its runs had.

Seed 001's crossover: from how many cores PiPePCG and RePiPePCG beat PCG on seed 001's
cluster (topofoam.prediction.crossover), the runtime ratios per core count beside Table 8's,
at hpc2's inter-node latency and at multiples of it (seed 001 publishes no link costs).

Seed 002's node-hours: the HPC_motorbike Small's solver time and node seconds on 1 to 8
OCI nodes (topofoam.prediction.nodehours), beside section 4's table and its cost-optimal
node count, with the sweep speed-up the published times need beyond the model.

What cannot be predicted (a case whose calls were not counted, a size this machine cannot
decompose) is one line saying so and what to run; never a number.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from rankmap.errors import InputError
from topofoam import output, paths
from topofoam.prediction import calls as law
from topofoam.prediction import papers
from topofoam.prediction.model import ModelError
from topofoam.reporting import published

#: The comparisons shown: column -> (standard's variant, the optimised variant), one per
#: way MPI's all-reduce may have gone (topofoam.prediction.papers.VARIANTS).
COMPARED = {
    "rounds": ("standard", "local+global"),
    "node-aware": ("standard, node-aware MPI", "local+global, node-aware MPI"),
    "sums": ("standard, node-aware MPI", "local+global, sums on the schedule"),
}


#: Below this many points a decrease is no change: the published table's smallest figures
#: (-0.2 to 0.8) and the model's noise-free ones are alike there.
SAME = 1.0


@dataclass
class Cell:
    case: str
    system: str
    nodes: int
    published: float
    predicted: dict = field(default_factory=dict)  # column -> predicted % decrease
    shares: dict = field(default_factory=dict)  # standard (node-aware): term -> step share
    reason: str = ""


def decrease(times: dict[str, dict], standard: str, optimised: str) -> float:
    return 100 * (1 - times[optimised]["step_s"] / times[standard]["step_s"])


def core_bandwidth() -> float:
    """Bytes/s a core of this machine gets with every core streaming (nodeprobe's triad)."""
    from topofoam.jobs.nodeprobe import memory_bandwidth

    cores = os.cpu_count() or 1
    return memory_bandwidth(cores) * 1e6 / cores


def predict_table4(table: dict, calls_dir: Path, bandwidth: float, log) -> list[Cell]:
    cells: list[Cell] = []
    laws: dict[str, tuple] = {}
    for (case, system), row in sorted(table.items()):
        if case not in laws:
            try:
                runs = law.load(Path(calls_dir) / f"calls-{case}.json")
                laws[case] = (law.CallLaw.fit(runs), papers.compute_of(runs, bandwidth), "")
            except ModelError as e:
                laws[case] = (None, None, str(e))
        fit, compute, why = laws[case]
        for nodes, value in sorted(row.items()):
            cell = Cell(case, system, nodes, value)
            cells.append(cell)
            if fit is None:
                cell.reason = why
                continue
            try:
                times = papers.predict(case, system, nodes, fit, compute)
            except (ModelError, InputError) as e:
                cell.reason = str(e)
                continue
            cell.predicted = {c: decrease(times, *pair) for c, pair in COMPARED.items()}
            std = times["standard, node-aware MPI"]
            cell.shares = {k: v / std["step_s"] for k, v in std["terms"].items()}
            shown = ", ".join(f"{c} {v:+.1f} %" for c, v in cell.predicted.items())
            log(f"papers: {case} {system} {nodes} nodes: {shown}; published {value:+.1f} %")
    return cells


def summary(cells: list[Cell], column: str) -> str:
    from scipy.stats import spearmanr

    done = [c for c in cells if column in c.predicted]
    if len(done) < 3:
        return f"{column}: too few predicted cells ({len(done)}) to summarise"
    pred = [c.predicted[column] for c in done]
    pub = [c.published for c in done]
    errors = sorted(abs(p - q) for p, q in zip(pred, pub))
    # A sign is only compared where both say more than no change (SAME points either way).
    both = [(p, q) for p, q in zip(pred, pub) if abs(p) >= SAME and abs(q) >= SAME]
    signs = sum((p > 0) == (q > 0) for p, q in both)
    same = sum(abs(p) < SAME for p in pred)
    rho, pvalue = spearmanr(pred, pub)
    return (
        f"{column}: {len(done)} of {len(cells)} cells; absolute error mean "
        f"{sum(errors) / len(errors):.1f}, median {errors[len(errors) // 2]:.1f} points; no "
        f"change predicted (under {SAME:g} point) in {same}; of the {len(both)} where both "
        f"change, the sign agrees in {signs}; rank correlation {rho:+.2f} (p = {pvalue:.2g})"
    )


def render(cells: list[Cell]) -> str:
    head = "".join(f"{c:>11}" for c in COMPARED)
    lines = [
        "Seed 000 Table 4: runtime decrease of local+global vs standard, %, predicted beside "
        "published",
        f"  {'case':14}{'system':7}{'nodes':>5}{'published':>10}{head}{'comm %':>8}",
    ]
    for c in cells:
        start = f"  {c.case:14}{c.system:7}{c.nodes:5d}{c.published:10.1f}"
        if not c.predicted:
            lines.append(f"{start}  no prediction: {c.reason}")
            continue
        comm = 100 * (1 - c.shares.get("compute", 0.0))
        lines.append(start + "".join(f"{c.predicted[k]:11.1f}" for k in COMPARED) + f"{comm:8.1f}")
    lines.append(
        "  columns, by how MPI's all-reduce went: rounds = recursive doubling over the rank "
        "numbers; node-aware = in the node, among nodes, in the node (blind to rank numbers); "
        "sums = OpenFOAM's scalar sums along the optimised schedule (standard node-aware); "
        "comm % = the model's communication in standard's step (node-aware), all that "
        "placement and schedule can act on"
    )
    lines += [f"  {summary(cells, column)}" for column in COMPARED]
    return "\n".join(lines)


def counted_solvers(calls_dir: Path) -> tuple[dict[str, list], dict[str, str]]:
    """Seed 001's case, per solver: ({solver: its counted runs}, {solver: why none})."""
    from topofoam.prediction import crossover

    found, missing = {}, {}
    for name in ("PCG", *crossover.PIPELINED):
        try:
            found[name] = law.load(Path(calls_dir) / f"calls-{crossover.CASE}-{name}.json")
        except ModelError as e:
            missing[name] = f"{crossover.CASE} with {name}: no prediction: {e}"
    return found, missing


def _from(cores: int | None) -> str:
    return f"{cores} cores" if cores else "no core count"


def render_crossover(x) -> str:
    from scipy.stats import spearmanr

    from topofoam.prediction import crossover

    factors = crossover.LATENCY_FACTORS
    lines = [
        f"Seed 001 Table 8, {crossover.CASE} at seed 001's size: runtime of each pipelined "
        "solver over PCG's (below 1: faster), published beside predicted at hpc2's inter-node "
        "latency times " + ", ".join(f"{f:g}" for f in factors)
    ]
    head = "".join(f"{'x' + format(f, 'g'):>8}" for f in factors)
    for solver in (s for s in crossover.PIPELINED if s in x.solvers):
        published, predicted = x.ratios(solver), x.ratios(solver, 1.0)
        lines.append(f"  {solver} / PCG")
        lines.append(f"  {'cores':>6}{'nodes':>6}{'published':>10}{head}{'PCG comm %':>11}")
        for cores in crossover.CORES:
            pub = f"{published[cores]:10.3f}" if cores in published else f"{'-':>10}"
            pred = "".join(f"{x.ratios(solver, f)[cores]:8.3f}" for f in factors)
            comm = 100 * (1 - x.shares[cores].get("compute", 0.0))
            nodes = cores // crossover.CORES_PER_NODE
            lines.append(f"  {cores:6d}{nodes:6d}{pub}{pred}{comm:11.1f}")
        both = sorted(set(published) & set(predicted))
        errors = [abs(predicted[c] - published[c]) for c in both]
        rho, pvalue = spearmanr([predicted[c] for c in both], [published[c] for c in both])
        lines.append(
            f"  {solver} faster than PCG from: published {_from(x.first(solver))}; predicted "
            + ", ".join(f"{_from(x.first(solver, f))} (x{f:g})" for f in factors)
            + f"; at x1 the ratio's absolute error mean {sum(errors) / len(errors):.3f}, "
            f"rank correlation {rho:+.2f} (p = {pvalue:.2g}) over {len(both)} core counts"
        )
    return "\n".join(lines)


def nodehours_inputs(calls_dir: Path):
    """Seed 002's inputs made here: (the motorbike's counted runs, their law, its S mesh's
    polyMesh folder, its cells); a missing one is a ModelError saying what to run."""
    from topofoam.prediction import nodehours

    runs = law.load(Path(calls_dir) / f"calls-{nodehours.CASE}.json")
    fit = law.CallLaw.fit(runs)
    poly, cells = nodehours.load_mesh(calls_dir)
    return runs, fit, poly, cells


def _against_one_node(nh) -> str:
    """The node seconds' change from one node, published beside predicted (x1): what the
    comparison turns on, whatever the error of the scaled compute, which one node holds."""
    from scipy.stats import spearmanr

    from topofoam.prediction import nodehours

    more = [n for n in nodehours.NODES if n != 1]
    one_pub, one_pred = nh.published[1][1], nh.predicted[1.0][1].node_s
    pub = {n: 100 * (nh.published[n][1] / one_pub - 1) for n in more}
    pred = {n: 100 * (nh.predicted[1.0][n].node_s / one_pred - 1) for n in more}
    signs = sum((pub[n] < 0) == (pred[n] < 0) for n in more)
    rho, pvalue = spearmanr(
        [nh.published[n][1] for n in nodehours.NODES],
        [nh.predicted[1.0][n].node_s for n in nodehours.NODES],
    )
    return (
        "node seconds against one node's: published "
        + ", ".join(f"{pub[n]:+.1f} %" for n in more)
        + "; predicted (x1) "
        + ", ".join(f"{pred[n]:+.1f} %" for n in more)
        + f" (on {', '.join(str(n) for n in more)} nodes); the sign agrees in {signs} of "
        f"{len(more)}; rank correlation over the {len(nodehours.NODES)} counts {rho:+.2f} "
        f"(p = {pvalue:.2g})"
    )


def render_nodehours(nh) -> str:
    from topofoam.prediction import nodehours

    factors = nodehours.LATENCY_FACTORS
    lines = [
        f"Seed 002 section 4, the HPC_motorbike Small ({nodehours.CASE} {nodehours.SIZE} here: "
        f"{nh.cells:,} cells) on OCI BM.Optimized3.36, {nodehours.ranks_per_node()} ranks a "
        f"node, {nodehours.STEPS} steps: the solver's node seconds, published beside predicted "
        "at hpc2's inter-node latency times " + ", ".join(f"{f:g}" for f in factors),
        f"  {'nodes':>5}{'solver s':>10}{'node s':>8}"
        + "".join(f"{'x' + format(f, 'g'):>8}" for f in factors)
        + f"{'comm %':>8}{'sweep needed':>14}{'vs 1 node':>11}",
    ]
    for n in nodehours.NODES:
        solver_s, node_s = nh.published[n]
        r = nh.predicted[1.0][n]
        needed, ratio = nh.compute_needed(n), nh.superlinear(n)
        lines.append(
            f"  {n:5d}{solver_s:10.0f}{node_s:8.0f}"
            + "".join(f"{nh.predicted[f][n].node_s:8.0f}" for f in factors)
            + f"{100 * (1 - r.terms['compute'] / r.step_s):8.1f}"
            + (f"{needed:13.2f}x" if needed else f"{'-':>14}")
            + (f"{ratio:10.2f}x" if ratio else f"{'-':>11}")
        )
    lines.append(
        f"  cost-optimal: published {nh.cheapest()} node(s); predicted "
        + ", ".join(f"{nh.cheapest(f)} (x{f:g})" for f in factors)
    )
    lines.append(f"  {_against_one_node(nh)}")
    lines.append(
        "  comm % = the model's communication in its step (x1); sweep needed = how much "
        "faster than the model's a cell sweep must be for the published solver time (x1); "
        "vs 1 node = that over one node's: the speed-up from fewer cells a rank (a cache "
        "effect) the model leaves out"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m topofoam.reporting.papers", description=__doc__.split("\n\n")[0]
    )
    sub = p.add_subparsers(dest="what", required=True)
    t = sub.add_parser("table4", help="seed 000 Table 4 predicted beside published")
    t.add_argument("--table", type=Path, default=published.TABLE4, help="Table 4 as CSV")
    t.add_argument("--case", action="append", help="only these cases")
    x = sub.add_parser("crossover", help="seed 001's crossover predicted beside published")
    x.add_argument("--table", type=Path, default=published.SCALING, help="Tables 8 and 10 as CSV")
    n = sub.add_parser("nodehours", help="seed 002's node-hours predicted beside published")
    n.add_argument("--table", type=Path, default=published.NODE_SECONDS, help="section 4 as CSV")
    for each in (t, x, n):
        each.add_argument(
            "--calls", type=Path, help="folder of calls-<case>.json (default results/model)"
        )
        each.add_argument("--out", type=Path, help="also write the table to this file")
    args = p.parse_args(argv)

    def say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    def run() -> int:
        read = {
            "table4": published.table4,
            "crossover": published.scaling,
            "nodehours": lambda path: published.node_seconds("oci", path),
        }
        try:
            table = read[args.what](args.table)
        except published.PublishedError as e:
            print(f"papers: {e}", file=sys.stderr)
            return 2
        calls_dir = args.calls or paths.results_dir() / "model"
        if args.what == "nodehours":  # before the bandwidth is measured: all it needs
            try:
                runs, fit, poly, cells = nodehours_inputs(calls_dir)
            except ModelError as e:
                print(f"papers: no prediction: {e}", file=sys.stderr)
                return 2
        if args.what == "crossover":
            from topofoam.prediction import crossover

            counted, missing = counted_solvers(calls_dir)
            if "PCG" in missing:  # before the bandwidth is measured: nothing to compare with
                print(f"papers: {missing['PCG']}", file=sys.stderr)
                return 2
            for why in missing.values():
                say(f"papers: {why}")
        bandwidth = core_bandwidth()
        say(f"papers: a core here streams {bandwidth / 1e9:.2f} GB/s (all cores at once)")
        if args.what == "nodehours":
            from topofoam.prediction import nodehours

            try:
                graphs = nodehours.decompositions(poly, say)
                text = render_nodehours(
                    nodehours.predict(
                        graphs, cells, fit, papers.compute_of(runs, bandwidth), table, say
                    )
                )
            except (ModelError, InputError) as e:
                print(f"papers: no prediction: {e}", file=sys.stderr)
                return 2
        elif args.what == "table4":
            if args.case:
                table = {k: v for k, v in table.items() if k[0] in args.case}
            text = render(predict_table4(table, calls_dir, bandwidth, say))
        else:
            try:
                solvers = {
                    name: crossover.Solver(
                        name, law.CallLaw.fit(runs), papers.compute_of(runs, bandwidth)
                    )
                    for name, runs in counted.items()
                }
                text = render_crossover(crossover.predict(solvers, table, say))
            except (ModelError, InputError) as e:
                print(f"papers: {e}", file=sys.stderr)
                return 2
        print(text)
        if args.out:
            output.write_text(args.out, text + "\n", "--out")
        return 0

    return output.main("papers", run)


if __name__ == "__main__":
    sys.exit(main())
