"""The time-per-step model beside the measured runs: predicted vs measured, per variant and
node count, from one system's perflogs.

    python -m topofoam.prediction.modelcheck results/perflogs/<system> [--json FILE]

For each partition, environment, fabric profile and launcher of the multi-node check
(reframe/multinode.py), each variant's workload is its one-node runs (their median time per
step and MPI calls per step, topofoam.prediction.model.Workload; for one rank a node, the
one-node runs of as many ranks: one_node_rows), the link costs are the p2p check's
round trips on that partition under the same fabric profile, and each node count's graph is
the one its run kept (commgraph.csv in its output folder). Every (variant, nodes) gets the
median measured time per step with its 95 % interval, the prediction and the error; the model
orders the variants at each node count, and so do the measurements: where they disagree
the table says so. A prediction it cannot make says why instead of a number.

Beyond one node, each prediction is of a run the model did not see (it saw the one-node runs'
time and the p2p check's costs, and the run's own call counts and graph, not its time), and
is judged against the model's stated accuracy (ACCURACY): within it (PASS) when the measured
median's 95 % interval keeps the prediction within it, off (FAIL) when the interval keeps it
beyond, else INCONCLUSIVE. It is judged only where each rank had a core: ranks that share
cores (an emulated cluster's) also wait for one, which the model does not price.
``--costs-under PROFILE`` prices every series with the p2p costs
measured under another fabric profile: calibrated on one fabric, tested on another.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rankmap.errors import InputError
from rankmap.graph import read_edges
from rankmap.topology import LEVELS, load
from topofoam import output
from topofoam.config import fabric as profiles
from topofoam.config import settings
from topofoam.prediction import model
from topofoam.results import p2p as p2p_table
from topofoam.results import perflog, stats
from topofoam.results.stats import compare, summarise

CHECK = "MultiNodeRun"
#: perflog columns of the MPI call counter (CountsMpiCalls: the name without MPI_, lower case)
COUNTS = ("allreduce", "reduce", "bcast", "isend", "send", "iallreduce", "alltoall", "alltoallv")
#: The accuracy verdicts' words (topofoam.results.stats, shared with the validation).
PASS, FAIL, INCONCLUSIVE = stats.PASS, stats.FAIL, stats.INCONCLUSIVE
#: The accuracy the model states for a step it did not see: the prediction within 25 % of
#: the measured time per step (either way, on the log scale). Why that much and no more: the
#: planner's figures choose a configuration and quote node-hours for a report, where a
#: quarter is the least that changes a choice (seed 002's node-hours differ by more between
#: its configurations); it is no claim about gains smaller than that.
ACCURACY = 0.25
#: Why an emulated partition's runs without a fabric profile are not predicted, and what to run:
#: the links under a profile, and in the same run (one report) the cpu partition's p2p, which
#: times the levels inside a node (emu's p2p times only the links between its nodes).
NO_PROFILE = (
    "the emulated links had no fabric profile, so the p2p check did not time them -- to "
    "predict, run with one: TOPOFOAM_FABRIC=vsc5x100 ./bench run --partition cpu "
    "--partition emu --tag 'multinode|p2p'"
)
#: wall-clock time per step (topofoam.jobs.stepclock): what the model predicts
MEASURE = "wall_per_step"


@dataclass
class Line:
    partition: str
    environ: str
    fabric: str
    launcher: str
    variant: str
    nodes: int
    repeats: int
    measured: float | None
    low: float | None
    high: float | None
    predicted: float | None
    error: float | None  # (predicted - measured) / measured
    reason: str = ""
    values: list[float] = field(default_factory=list)  # the measured repeats
    terms: dict[str, float] = field(default_factory=dict)  # the prediction's, seconds per step
    #: What ran: the case and the ranks a node (runs at two scales never share a line, and a
    #: site's prediction says at which scale it holds).
    scale: Scale | None = None
    #: The cores the ranks shared (an emulated cluster's nodes share one machine's); None:
    #: a core each, as on a cluster.
    cores: int | None = None

    @property
    def shared_cores(self) -> bool:
        """More ranks than cores: each waits for a core as well as for its messages."""
        return bool(
            self.cores and self.scale and self.nodes * self.scale.ranks_per_node > self.cores
        )


@dataclass(frozen=True, order=True)
class Scale:
    """The ranks a node and the case of a series of runs (the multi-node check's mesh grows
    with the ranks at a site's scale, so the cells are the node count's, not the series')."""

    ranks_per_node: int
    case: str

    def __str__(self) -> str:
        return f"{self.case}, {self.ranks_per_node} ranks a node"


def _scale(row: dict) -> Scale:
    try:
        ranks = int(float(row.get("num_tasks_per_node") or 0))
    except (TypeError, ValueError):
        ranks = 0
    return Scale(ranks, str(row.get("case") or "?"))


def _series(row: dict) -> tuple:
    return (
        row["partition"],
        row.get("environ", ""),
        row.get("fabric") or "none",
        row.get("launcher_kind", ""),
        _scale(row),
    )


def kept_graph(rows: list[dict]):
    """The decomposition the runs kept (commgraph.csv in a run's output folder), or why none.
    A case run again at other ranks a node (``-S PreparedCavityRanks.ranks_per_node=``) has
    the same output folder, so a graph of other ranks than a row's is another run's."""
    other = ""
    for row in rows:
        path = Path(row.get("outputdir") or "/nonexistent") / "commgraph.csv"
        if path.is_file():
            try:
                graph = read_edges(path)
            except InputError as e:
                return None, str(e)
            try:
                ranks = int(float(row.get("num_tasks") or graph.n))
            except (TypeError, ValueError):  # not logged: the graph is all there is
                ranks = graph.n
            if graph.n == ranks:
                return graph, ""
            other = other or (
                f"{path} is of {graph.n} ranks, the runs had {ranks}: a later run of the case "
                f"at another scale replaced it -- run the multinode check again"
            )
    return None, other or "no run kept its commgraph.csv (run the multinode check again)"


def partition_costs(
    perflogs: Path, partition: str, fabric: str, emulated: bool, cache: dict, published=None
):
    """(LinkCosts, "") of the partition under ``fabric``, or (None, why not). An emulated
    partition's nodes are this machine: the p2p check measures only between them there, and
    the levels inside a node are the ones measured on the machine's other partitions. Where
    the partition has no p2p measurement, ``published`` (partition -> system) names its
    row of seed 000 Table 2, as the site file's ``published_costs`` does."""

    def measured(under: str | None) -> list[dict]:  # the p2p table, read once per call's cache
        if ("p2p table", under, None) not in cache:
            keep = None if under is None else (lambda r: (r.get("fabric") or "none") == under)
            cache["p2p table", under, None] = p2p_table.table(perflogs, keep=keep)
        return cache["p2p table", under, None]

    key = (partition, fabric)
    if key not in cache and (published or {}).get(partition):
        rows = measured(fabric)
        if not any(r["system"] == f"{perflogs.name}:{partition}" for r in rows):
            system = published[partition]
            try:
                cache[key] = model.link_costs(model.fabric.TABLE, system), ""
            except model.ModelError as e:
                cache[key] = None, str(e)
    if key not in cache:
        system = f"{perflogs.name}:{partition}"
        mine = [r for r in measured(fabric) if r["system"] == system]
        if emulated and fabric == profiles.NONE and not mine:
            # The p2p check does not time links that cost nothing set (pingpong.py): say
            # what gives them a cost, not that a check is missing.
            cache[key] = None, NO_PROFILE
            return cache[key]
        source = f"PingPongRun ({fabric})"
        if emulated:
            inside = [r for r in measured(None) if r["system"] != system]
            merged = {}
            for row in inside + mine:  # its own measurements last: they win
                into = merged.setdefault(
                    row["size"],
                    {"system": system, "size": row["size"], **dict.fromkeys(LEVELS, "")},
                )
                into.update({lv: row[lv] for lv in LEVELS if row[lv] != ""})
            mine = [merged[size] for size in sorted(merged)]
            machines = sorted({r["system"] for r in inside})
            source += f"; inside a node: {', '.join(machines) or 'nothing measured'}"
        try:
            cache[key] = model.costs_of_rows(mine, system, source), ""
        except model.ModelError as e:
            cache[key] = None, f"{e}"
    return cache[key]


def workload(rows: list[dict], graph) -> tuple[model.Workload | None, str]:
    """The runs' workload (median time per step, median calls per step per rank), or why
    there is none."""
    missing = [n for n in COUNTS if not all(isinstance(r.get(n), float) for r in rows)]
    if missing:
        return None, (
            f"runs on {rows[0].get('nodes')} node(s) did not count "
            f"MPI_{missing[0].capitalize()} (logged by an older suite): run the multinode "
            f"check again"
        )
    steps = rows[0].get("expected_steps")
    if not steps:
        return None, f"runs on {rows[0].get('nodes')} node(s) logged no expected_steps"
    calls = {f"MPI_{n.capitalize()}": statistics.median(r[n] for r in rows) for n in COUNTS}
    work = model.Workload.from_counts(
        calls,
        steps=int(steps),
        ranks=graph.n,
        neighbours=len(graph.adjncy),
        step_s=statistics.median(r[MEASURE] for r in rows),
    )
    return work, ""


def grouped(perflogs: Path, since: str = "") -> tuple[dict, list[str]]:
    """The multi-node check's passed, clocked rows: series -> (variant, nodes) -> rows; and
    notes (rows left out)."""
    logs = perflog.read_system(perflogs, checks=(CHECK,))
    notes = list(logs.notes)
    by = defaultdict(lambda: defaultdict(list))
    unclocked = 0
    for row in logs.rows:
        if str(row.get("time") or "") < since or row.get("result") != "pass":
            continue
        if not isinstance(row.get(MEASURE), float):
            unclocked += 1
            continue
        by[_series(row)][row.get("variant"), int(row.get("nodes") or 0)].append(row)
    if unclocked:
        notes.append(
            f"{unclocked} passed {CHECK} run(s) logged no {MEASURE} (an older suite, before "
            f"topofoam.jobs.stepclock): run the multinode check again"
        )
    return by, notes


@dataclass
class Inputs:
    """What the model needs for one (variant, nodes): the one-node workload and its graph,
    the calls per step and graph of the runs on ``nodes``."""

    work: model.Workload
    base: object  # CommGraph of the one-node run
    calls: model.Workload
    graph: object  # CommGraph of the runs on the node count


def one_node_rows(by: dict, series: tuple, variant: str, nodes: int) -> list[dict]:
    """The one-node runs a (variant, nodes) of ``series`` is predicted from: its own series'
    (the same ranks a node), else those of the series alike in all but its ranks a node,
    whose one node held as many ranks as the ``nodes`` do (the same decomposition, spread
    out: OpenFOAM runs no single rank in parallel, so one rank a node has no one-node run
    of its own)."""
    own = by[series].get((variant, 1))
    scale = series[4]
    if own or not scale.ranks_per_node:
        return own or []
    alike = (*series[:4], Scale(nodes * scale.ranks_per_node, scale.case))
    return by.get(alike, {}).get((variant, 1)) or []


def _inputs(base_rows: list[dict], rows: list[dict]) -> tuple[Inputs | None, str]:
    graph, why_graph = kept_graph(rows)
    base, why_base = kept_graph(base_rows or [])
    reason = (
        ("" if base_rows else "no one-node run of this variant to measure its work")
        or why_graph
        or why_base
    )
    if not reason:
        work, reason = workload(base_rows, base)
    if not reason:
        calls, reason = workload(rows, graph)
    if reason:
        return None, reason
    return Inputs(work, base, calls, graph), ""


def _price(line: Line, inputs: Inputs, on: model.Machine) -> None:
    """Set the line's prediction (or its reason) from ``inputs`` on ``on``."""
    try:
        p = model.predict(
            line.variant,
            line.nodes,
            inputs.graph,
            on,
            inputs.work,
            inputs.base,
            calls=inputs.calls,
        )
    except InputError as e:  # a decomposition that does not fit the node's layout
        line.reason = str(e)
        return
    line.predicted, line.reason = p.step_s, p.reason
    line.terms = {k: float(v) for k, v in p.terms.items()}
    if p.step_s is not None and line.measured:
        line.error = (p.step_s - line.measured) / line.measured


def _series_machine(
    perflogs: Path, series: tuple, runs: dict, cache: dict, published=None, costs_under=""
) -> tuple[model.Machine | None, str]:
    """(the series' own partition as the model prices it, "") or (None, why not); with
    ``costs_under``, its links as the p2p check measured them under that fabric profile."""
    partition, _environ, fabric, _launcher, _scale = series
    fabric = costs_under or fabric
    any_row = next(iter(runs.values()))[0]
    emulated = any_row.get("timing") == "emulated"
    costs, why_not = partition_costs(perflogs, partition, fabric, emulated, cache, published)
    try:
        node = load(any_row.get("topology") or "local")
    except InputError as e:
        return None, why_not or f"the runs' topology: {e}"
    if costs is None:
        return None, why_not
    # An emulated cluster's nodes share the cores of the machine it ran on, which is this
    # one: its perflogs are never anywhere else.
    return model.Machine(node, costs, os.cpu_count() if emulated else None), ""


def check(
    perflogs: Path, since: str = "", published=None, costs_under: str = ""
) -> tuple[list[Line], list[str]]:
    """Every (series, variant, nodes) of the multi-node check, predicted and measured; and
    notes (rows left out). ``since``: only runs that ended then or later (the perflogs'
    local time, YYYY-MM-DDTHH:MM:SS); ``published``: see partition_costs; ``costs_under``:
    price every series with the p2p costs measured under that fabric profile."""
    if costs_under:  # the perflogs name a profile by its label (SettingError: not one)
        costs_under = getattr(profiles.profile(costs_under), "label", lambda: profiles.NONE)()
    by, notes = grouped(perflogs, since)
    lines: list[Line] = []
    costs_cache: dict = {}
    for series, runs in sorted(by.items()):
        machine, why_not = _series_machine(
            perflogs, series, runs, costs_cache, published, costs_under
        )
        for (variant, nodes), rows in sorted(runs.items()):
            measured = summarise([r[MEASURE] for r in rows])
            line = Line(
                *series[:4],
                variant,
                nodes,
                measured.n,
                measured.median,
                measured.low,
                measured.high,
                None,
                None,
                values=[r[MEASURE] for r in rows],
                scale=series[4],
                cores=machine.cores if machine else None,
            )
            lines.append(line)
            base = one_node_rows(by, series, variant, nodes)
            inputs, reason = (None, why_not) if why_not else _inputs(base, rows)
            if reason:
                line.reason = reason
                continue
            _price(line, inputs, machine)
    return lines, notes


def accuracy(line: Line, need: float = ACCURACY) -> tuple[str, str]:
    """(PASS, FAIL or INCONCLUSIVE, the line that says so) for a prediction beyond one node
    against ``need``: PASS when every value of the measured median's 95 % interval (its
    range below 6 repeats) puts the prediction within ``need`` of it, FAIL when every value
    puts it beyond, else INCONCLUSIVE (the interval reaches across: more repeats)."""
    what = f"{line.partition} ({line.fabric}), {line.variant} on {line.nodes} node(s)"
    if line.scale and line.scale.ranks_per_node:
        what += f" x {line.scale.ranks_per_node}"
    if line.predicted is None or not line.measured:
        return INCONCLUSIVE, f"{what}: no prediction to judge ({line.reason or 'no measurement'})"
    said = (
        f"{what}: predicted {_ms(line.predicted)} ms, measured {_ms(line.measured)} ms"
        f"{f' [{_ms(line.low)}, {_ms(line.high)}]' if line.low is not None else ''} "
        f"({line.error * 100:+.0f} %, {line.repeats} run(s))"
    )
    bound = f"+-{need * 100:.0f} %"
    if line.shared_cores:
        ranks = line.nodes * line.scale.ranks_per_node
        return INCONCLUSIVE, (
            f"{said}: not judged -- its {ranks} ranks shared {line.cores} cores, whose waits "
            f"the model does not price (it prices the links; a cluster gives a rank a core)"
        )
    if line.low is None or line.high is None:
        return INCONCLUSIVE, f"{said}: 3 runs at least to judge it against {bound}"
    limit = math.log1p(need)
    near = [math.log(line.predicted / m) for m in (line.low, line.high)]
    if all(abs(x) <= limit for x in near):
        return PASS, f"{said}: within {bound}"
    if all(x > limit for x in near) or all(x < -limit for x in near):
        return FAIL, f"{said}: off by more than {bound}"
    return INCONCLUSIVE, f"{said}: its interval reaches across {bound} (more runs)"


def judgements(lines: list[Line]) -> list[str]:
    """What the report says of the model's accuracy beyond one node: one line for the
    predictions not judged because their ranks shared cores (so that their error column is
    not read as the model's), then each judged prediction's verdict and line. Lines without a
    prediction are left to ``reasons``."""
    beyond = [ln for ln in lines if ln.nodes > 1 and ln.predicted is not None and ln.measured]
    shared = [ln for ln in beyond if ln.shared_cores]
    said = []
    if shared:
        cores = " or ".join(str(c) for c in sorted({ln.cores for ln in shared}))
        said.append(
            f"Accuracy: {len(shared)} of the {len(beyond)} predictions beyond one node not "
            f"judged: their ranks outnumbered the {cores} cores they shared, so each rank also "
            f"waited for a core, which the model does not price (a cluster gives a rank a "
            f"core): their errors above hold that wait (docs/model.md, How close it comes)."
        )
    return said + [f"Accuracy: {': '.join(accuracy(ln))}" for ln in beyond if not ln.shared_cores]


def accuracies(lines: list[Line]) -> list[str]:
    """ "STATUS: line" of every prediction beyond one node (accuracy)."""
    return [": ".join(accuracy(ln)) for ln in lines if ln.nodes > 1]


def orderings(lines: list[Line], margin: float = 0.05) -> list[str]:
    """At each node count, whether the model orders each variant against standard as the
    measurements do: predicted faster or slower by more than ``margin``, else no different;
    measured faster, slower or within noise by the suite's significance test."""
    out = []
    groups = defaultdict(dict)
    for ln in lines:
        groups[(ln.partition, ln.environ, ln.fabric, ln.launcher, ln.scale, ln.nodes)][
            ln.variant
        ] = ln
    for (part, _env, fabric, launcher, scale, nodes), variants in sorted(groups.items()):
        std = variants.get("standard")
        if std is None or std.predicted is None:
            continue
        if nodes == 1:
            continue  # there the prediction is the measurement it starts from
        for name, ln in sorted(variants.items()):
            if name == "standard" or ln.predicted is None:
                continue
            ratio = ln.predicted / std.predicted
            said = (
                "faster"
                if ratio < 1 - margin
                else "slower"
                if ratio > 1 + margin
                else "no different"
            )
            seen = compare(std.values, ln.values).verdict
            if seen.startswith("no verdict"):
                agree = "no verdict"
            else:
                agree = (
                    "agrees"
                    if said == seen or (said, seen) == ("no different", "within noise")
                    else "differs"
                )
            out.append(
                f"{part} ({fabric}, {launcher}), {nodes} node(s)"
                f"{f' x {scale.ranks_per_node}' if scale and scale.ranks_per_node else ''}: "
                f"{name} predicted {said} than "
                f"standard ({ratio:.2f}x), measured {seen}: {agree}"
            )
    return out


def pays(lines: list[Line], steps: int = 1000) -> list[str]:
    """Per series, from which node count each variant is predicted to pay (topofoam.prediction.model:
    pays_from), and every prediction's node-hours for ``steps`` steps."""
    out = []
    series = defaultdict(list)
    for ln in lines:
        if ln.predicted is not None:
            series[(ln.partition, ln.fabric, ln.launcher, ln.scale)].append(ln)
    for (part, fabric, launcher, scale), mine in sorted(series.items()):
        preds = [model.Prediction(ln.variant, ln.nodes, ln.predicted) for ln in mine]
        found = model.pays_from(preds)
        said = ", ".join(
            f"{v} from {n} node(s)" if n else f"{v} nowhere" for v, n in sorted(found.items())
        )
        hours = "; ".join(
            f"{ln.variant} x{ln.nodes}: {ln.nodes * ln.predicted * steps / 3600:.3g}"
            for ln in sorted(mine, key=lambda x: (x.nodes, x.variant))
        )
        out.append(
            f"{part} ({fabric}, {launcher}; {scale}): predicted to pay (5 % or more faster than "
            f"standard): {said or 'no variant beside standard'}; node-hours per {steps:,} "
            f"steps: {hours}"
        )
    return out


def effects(lines: list[Line]) -> str:
    """Whether any variant came out significantly faster than standard at more than one node,
    and the model's reading of why (not) (where_the_time_goes says what it can act on)."""
    said = orderings(lines)
    faster = [s for s in said if "measured faster" in s]
    if faster:
        agreed = [s for s in faster if s.endswith("agrees")]
        return (
            f"{len(faster)} variant and node count(s) came out significantly faster than "
            f"standard, {len(agreed)} of them where the model predicted it."
        )
    if not any("measured" in s and "no verdict" not in s for s in said):
        return "No comparison with enough repeats for a verdict (the rank test needs 4 a side)."
    shares = [
        sum(ln.terms.get(k, 0.0) for k in PLACED) / sum(ln.terms.values())
        for ln in lines
        if ln.variant == "standard" and ln.nodes > 1 and ln.terms
    ]
    head = "No variant came out significantly faster than standard on more than one node."
    if shares and max(shares) < 0.5:
        return (
            f"{head} The model's reading: at most {100 * max(shares):.0f} % of standard's "
            f"step is where placement and schedule act (halo exchanges, tree reductions); the "
            f"rest is MPI's own all-reduces and the compute, which no variant here changes."
        )
    return (
        f"{head} The model expected the variants to act on up to "
        f"{100 * max(shares or [0]):.0f} % of the step: it misses here (see the errors above)."
    )


#: What the variants change (docs/model.md): placement and schedule act on these terms only.
PLACED = ("halo", "tree")


def where_the_time_goes(lines: list[Line]) -> list[str]:
    """Per series, what the model puts into standard's step at its largest node count: which
    share the variants' placement and schedule can act on at all."""
    out = []
    largest = {}
    for ln in lines:
        key = (ln.partition, ln.environ, ln.fabric, ln.launcher, ln.scale)
        if ln.variant == "standard" and ln.terms and ln.nodes > largest.get(key, (0,))[0]:
            largest[key] = (ln.nodes, ln)
    for (part, _env, fabric, launcher, scale), (nodes, ln) in sorted(largest.items()):
        total = sum(ln.terms.values())
        shares = sorted(((v / total, k) for k, v in ln.terms.items() if v > 0), reverse=True)
        placed = sum(ln.terms.get(k, 0.0) for k in PLACED) / total
        out.append(
            f"{part} ({fabric}, {launcher}; {scale}), standard on {nodes} node(s): the model puts "
            + ", ".join(f"{100 * s:.0f} % in {k}" for s, k in shares if s >= 0.005)
            + f" of the step; placement and schedule act on {100 * placed:.0f} % of it "
            f"(halo exchanges and tree reductions; MPI's all-reduces and the compute stay)"
        )
    return out


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x * 1e3:.2f}"


HEADER = (
    "partition",
    "fabric",
    "launcher",
    "ranks a node",
    "variant",
    "nodes",
    "n",
    "measured ms [95 % CI]",
    "predicted ms",
    "error",
)


def cells(ln: Line) -> list[str]:
    """A line's cells under HEADER."""
    ci = f" [{_ms(ln.low)}, {_ms(ln.high)}]" if ln.low is not None else ""
    return [
        ln.partition,
        ln.fabric,
        ln.launcher,
        str(ln.scale.ranks_per_node) if ln.scale else "-",
        ln.variant,
        str(ln.nodes),
        str(ln.repeats),
        f"{_ms(ln.measured)}{ci}",
        _ms(ln.predicted) if ln.predicted is not None else "no prediction",
        f"{100 * ln.error:+.0f} %" if ln.error is not None else "-",
    ]


def reasons(lines: list[Line]) -> list[str]:
    """Why lines have no prediction, each reason once, after the lines it holds for."""
    held = defaultdict(list)
    for ln in lines:
        if ln.reason:
            held[ln.reason].append(ln)
    said = []
    for reason, which in held.items():
        pairs = {(ln.variant, ln.nodes) for ln in which}
        variants = list(dict.fromkeys(ln.variant for ln in which))
        nodes = sorted({ln.nodes for ln in which})
        if len(pairs) == len(variants) * len(nodes):  # every variant on every node count
            which = f"{', '.join(variants)} on {', '.join(map(str, nodes))} node(s)"
        else:
            which = "; ".join(f"{v} on {n} node(s)" for v, n in sorted(pairs))
        said.append(f"{which}: {reason}")
    return sorted(said)


def table(lines: list[Line]) -> str:
    rows = [list(HEADER)] + [cells(ln) for ln in lines]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEADER))]
    text = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    return "\n".join(text + [f"no prediction: {r}" for r in reasons(lines)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m topofoam.prediction.modelcheck", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("perflogs", type=Path, help="one system's perflog folder")
    parser.add_argument("--json", type=Path, help="also write the lines as JSON")
    parser.add_argument(
        "--costs-under",
        default="",
        metavar="PROFILE",
        help="price every series with the p2p costs measured under this fabric profile",
    )
    args = parser.parse_args(argv)
    return output.main("modelcheck", lambda: _main(args))


def _main(args) -> int:
    if args.json:
        output.file(args.json, "--json")  # before the check
    if not args.perflogs.is_dir():
        print(
            f"modelcheck: {args.perflogs} is not a folder -- give one system's perflog "
            f"folder (results/perflogs/<system>)",
            file=sys.stderr,
        )
        return 2
    try:
        lines, notes = check(args.perflogs, costs_under=args.costs_under)
    except settings.SettingError as e:
        print(f"modelcheck: --costs-under {args.costs_under}: {e}", file=sys.stderr)
        return 2
    if not lines:
        print(
            f"modelcheck: no passed {CHECK} rows with {MEASURE} under {args.perflogs} -- run "
            f"the multinode check first (reframe ... -t multinode)",
            file=sys.stderr,
        )
        return 2
    print(table(lines))
    for line in orderings(lines) + [effects(lines)] + where_the_time_goes(lines):
        print(line)
    for line in accuracies(lines):
        print(f"accuracy: {line}")
    for note in notes:
        print(f"modelcheck: left out: {note}", file=sys.stderr)
    if args.json:
        output.write_text(args.json, json.dumps([asdict(ln) for ln in lines], indent=1), "--json")
        print(f"modelcheck: wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
