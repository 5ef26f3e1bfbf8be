"""The report's numbers, from merged run groups: runtime decrease of each optimized variant
vs standard (seed 000 Table 4), node-hours and the cost-optimal node count (seed 002
section 4), strong scaling and parallel efficiency, the tuning stages, storage."""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass

from topofoam.results import merit, stats
from topofoam.results import stages as kinds
from topofoam.results.merge import Group

#: Solver times below this are start-up dominated on any machine: flagged, never a finding.
SHORT_SECONDS = 1.0

#: What a configuration is, apart from its node count and inter-node UCX preset.
SERIES = (
    "case",
    "size",
    "ppn",
    "variant",
    "binding",
    "ucx",
    "coll",
    "nps",
    "launcher_kind",
    "timing",
    "solver",
)
#: A comparison holds everything but the variant and placement fixed.
SAME_RUN = (
    "case",
    "size",
    "nodes",
    "ppn",
    "ucx",
    "coll",
    "ucx_inter",
    "nps",
    "launcher_kind",
    "timing",
    "solver",
)


def metric(group: Group) -> str:
    """The solver's wall time where the check measures it, else OpenFOAM's ExecutionTime."""
    return (
        "wall" if group.values("wall") or any("wall" in r for r in group.runs) else "ExecutionTime"
    )


def ppn_of(group: Group):
    return group.get("ppn") or group.get("num_tasks_per_node")


def label(group: Group) -> str:
    variant = group.get("variant") or "standard"
    return f"{variant}, {group.get('binding')}" if group.get("binding") else variant


def placement_asked(group: Group) -> str:
    """The placement a run asked for: its binding (the sweeps), rankmap's for the multi-node
    check's local+global, else the launcher's default, block."""
    if group.get("binding"):
        return group.get("binding")
    return "rankmap" if group.get("variant") == "local+global" else "block"


def placement_used(group: Group) -> str:
    """The placement a run ran on: the ``placement_used`` column's first word (rankmap's own
    split shows as rankmap), or what it asked for where the column is missing (a perflog
    from before the column)."""
    used = str(group.get("placement_used") or "").split(" (")[0]
    if not used:
        return placement_asked(group)
    return "rankmap" if used == "split" else used


def solver_runs(groups: list[Group], stages=kinds.SOLVER) -> list[Group]:
    """Groups of solver runs (by their ``stage`` column) that say what they ran (a run that
    failed before ReFrame logged it knows too little: it is listed with the failures only)."""
    return [
        g
        for g in groups
        if g.get("stage") in stages and g.get("nodes") is not None and g.get("case") is not None
    ]


@dataclass
class Decrease:
    partition: str
    check: str
    case: str
    size: str
    nodes: int
    ppn: int
    label: str
    percent: float | None
    low: float | None
    high: float | None
    standard: Group
    optimized: Group
    #: the test behind the verdict (None where a side has no passed run)
    comparison: stats.Comparison | None = None
    #: the time compared ('' : the solver's, see metric())
    compared: str = ""

    @property
    def verdict(self) -> str:
        return self.comparison.verdict if self.comparison else "failed"

    @property
    def same_placement(self) -> bool:
        """The two sides asked for different placements and ran on the same one (rankmap
        found block's placement cheapest): the difference is not the placement's."""
        return placement_asked(self.standard) != placement_asked(self.optimized) and placement_used(
            self.standard
        ) == placement_used(self.optimized)

    @property
    def short(self) -> bool:
        """Either side's median is below SHORT_SECONDS."""
        m = self.compared or metric(self.standard)
        return any((g.value(m) or 0) < SHORT_SECONDS for g in (self.standard, self.optimized))


def _decrease(standard: Group, optimized: Group, m: str, label_: str, compared: str = ""):
    a, b = standard.values(m), optimized.values(m)
    c = stats.compare(a, b) if a and b else None
    return Decrease(
        standard.key[0],
        standard.key[1],
        standard.get("case"),
        standard.get("size"),
        standard.get("nodes"),
        ppn_of(standard),
        label_,
        _percent(c.ratio) if c else None,
        _percent(c.high) if c else None,
        _percent(c.low) if c else None,
        standard,
        optimized,
        c,
        compared,
    )


def decreases(groups: list[Group]) -> list[Decrease]:
    """Every optimized run against the standard run of the same case, size and layout with
    the same MPI settings: 100 (1 - T_opt / T_std) from the Hodges-Lehmann estimate of the
    time ratio, its 95 % CI, and the Mann-Whitney verdict (topofoam.results.stats).
    The standard run is the one with the default (block) placement, as in seed 000."""
    by_run = defaultdict(list)
    for g in solver_runs(groups):
        if g.get("timing") == "emulated":
            continue
        by_run[(g.key[0], g.key[1]) + tuple(g.get(c) for c in SAME_RUN)].append(g)
    out = []
    for _key, members in sorted(by_run.items(), key=lambda kv: str(kv[0])):
        standard = [
            g
            for g in members
            if (g.get("variant") or "standard") == "standard"
            and g.get("binding") in (None, "block")
        ]
        if not standard:
            continue
        std = max(standard, key=lambda g: g.newest)
        m = metric(std)
        for g in members:
            if (
                g is std
                or (g.get("variant") or "standard") == "standard"
                and g.get("binding") in (None, "block")
            ):
                continue
            out.append(_decrease(std, g, m, label(g)))
    return out


def _percent(ratio: float | None) -> float | None:
    """A time ratio T_opt / T_std as a runtime decrease in per cent."""
    return None if ratio is None else 100 * (1 - ratio)


@dataclass
class Merits:
    """The figures of merit of one configuration (topofoam.results.merit): of its merged
    time, the RSD of its repeats, and, for an optimised run, its improvement factors
    against the standard run of ``decreases`` (None for a run that is its own standard)."""

    group: Group
    figures: dict[str, merit.Figure]
    ttsf: merit.Figure | None
    ctsf: merit.Figure | None


def _node_hours(group: Group, m: str) -> list[float]:
    """The repeats' node-hours: logged, else nodes x time."""
    logged = group.values("node_hours")
    if logged:
        return logged
    nodes = group.get("nodes") or 0
    return [nodes * t / 3600 for t in group.values(m)] if nodes else []


def merits(groups: list[Group], compared: list[Decrease] | None = None) -> list[Merits]:
    """Every solver configuration's figures of merit, standard runs included (``compared``:
    decreases(groups), when the caller has it already)."""
    compared = decreases(groups) if compared is None else compared
    against = {id(d.optimized): d for d in compared}
    standards = {id(d.standard) for d in compared}
    out = []
    for g in solver_runs(groups):
        m = metric(g)
        times = g.values(m)
        if times:
            figures = merit.of_run(g.get, g.value(m))
        else:
            figures = dict.fromkeys(
                ("time per iteration", "FVOPS", "FVOPS per node", "T*"),
                merit.Figure(None, "no passed run"),
            )
        figures["RSD"] = merit.rsd(times)
        d = against.get(id(g))
        ttsf = ctsf = None
        if g.get("timing") == "emulated":
            ttsf = ctsf = merit.Figure(None, "emulated timing, not compared")
        elif d is None and id(g) not in standards:
            ttsf = ctsf = merit.Figure(None, "no standard run of this layout to compare with")
        elif d is not None:
            ttsf = merit.improvement(d.standard.values(m), times)
            ctsf = merit.improvement(_node_hours(d.standard, m), _node_hours(g, m))
        out.append(Merits(g, figures, ttsf, ctsf))
    return out


def noise_floor(groups: list[Group]) -> dict[str, tuple[float, int]]:
    """Per partition: the median run-to-run spread, (max - min) / median, of the standard
    configurations with 3 or more passed repeats, and how many there were."""
    spreads = defaultdict(list)
    for g in solver_runs(groups):
        if g.get("timing") == "emulated" or (g.get("variant") or "standard") != "standard":
            continue
        s = g.summary(metric(g))
        if s and s.n >= 3:
            spreads[g.key[0]].append(s.spread)
    return {part: (statistics.median(v), len(v)) for part, v in sorted(spreads.items())}


@dataclass
class Point:
    nodes: int
    wall: float | None
    low: float | None
    high: float | None
    node_hours: float | None
    efficiency: float | None
    group: Group


def series(groups: list[Group]) -> dict[tuple, list[Point]]:
    """Strong-scaling series: (partition, check, SERIES values) -> a point per node count.
    Where runs at one node count differ only in the inter-node UCX preset (an inter1
    sweep), the series takes the fastest."""
    per = defaultdict(dict)
    for g in solver_runs(groups, kinds.SCALING):
        key = (g.key[0], g.key[1]) + tuple(ppn_of(g) if c == "ppn" else g.get(c) for c in SERIES)
        m = metric(g)
        t = g.value(m)
        have = per[key].get(g.get("nodes"))
        if have is None or (t is not None and (have.value(m) is None or t < have.value(m))):
            per[key][g.get("nodes")] = g
    out = {}
    for key, by_nodes in per.items():
        points = []
        for nodes, g in sorted(by_nodes.items()):
            m = metric(g)
            t, s = g.value(m), g.spread(m)
            points.append(
                Point(
                    nodes,
                    t,
                    s and s[0],
                    s and s[1],
                    nodes * t / 3600 if t is not None else None,
                    None,
                    g,
                )
            )
        timed = [p for p in points if p.wall]
        if timed:
            base = timed[0]
            for p in timed:
                p.efficiency = base.wall * base.nodes / (p.wall * p.nodes)
        out[key] = points
    return out


def cost_optimal(points: list[Point]) -> Point | None:
    """The node count that spends the fewest node-hours (the fewer nodes on a tie)."""
    timed = [p for p in points if p.node_hours is not None]
    return min(timed, key=lambda p: (p.node_hours, p.nodes)) if timed else None


# -- seed 002's tuning stages ------------------------------------------------------------


@dataclass
class StageResult:
    stage: str
    partition: str
    group: tuple  # values of the grouping columns
    best: Group  # what the stage keeps (stats.choose)
    default: Group | None
    speedup: float | None  # T_default / T_best, medians
    tried: int
    fastest: Group | None = None
    reason: str = ""


def stages(groups: list[Group]) -> list[StageResult]:
    """Per stage and partition (and node count, for the inter-node stages): the setting the
    stage keeps (the fastest only when significantly faster than the run with the
    partition's defaults, logged in each run's ``defaults`` column), and that default run."""
    out = []
    for stage, (decides, by) in kinds.STAGES.items():
        chosen = defaultdict(list)
        for g in groups:
            if g.get("stage") == stage and g.value(metric(g)) is not None:
                chosen[(g.key[0], tuple(g.get(c) for c in by))].append(g)
        for (partition, values), members in sorted(chosen.items(), key=str):
            fastest = min(members, key=lambda g: g.value(metric(g)))
            want = kinds.parse_defaults(fastest.first("defaults"))
            if stage == "intra1":
                want = {"ppn": max(ppn_of(g) for g in members)}
            default = None
            if want and stage != "inter2":
                default = next(
                    (g for g in members if all(str(g.get(c)) == str(want.get(c)) for c in decides)),
                    None,
                )
            times = {id(g): g.values(metric(g)) for g in members}
            choice = stats.choose(id(default) if default else None, times)
            keep = next(g for g in members if id(g) == choice.chosen)
            speed = default.value(metric(default)) / keep.value(metric(keep)) if default else None
            out.append(
                StageResult(
                    stage,
                    partition,
                    values,
                    keep,
                    default,
                    speed,
                    len(members),
                    fastest,
                    choice.reason,
                )
            )
    return out


def storage_decreases(groups: list[Group]) -> dict[int, Decrease]:
    """Per node-local storage group (by id): its total time (copies included) against the
    shared-storage group of the same partition, case, size and write interval."""
    found = storage(groups)

    def same(g):
        return (g.key[0], g.get("case"), g.get("size"), g.get("write_every"), ppn_of(g))

    shared = {same(g): g for g in found if g.get("storage") == "shared"}
    return {
        id(g): _decrease(shared[same(g)], g, "total", "local storage", "total")
        for g in found
        if g.get("storage") == "local" and same(g) in shared
    }


def storage(groups: list[Group]) -> list[Group]:
    return sorted(
        (g for g in groups if g.get("stage") == "storage"),
        key=lambda g: (
            g.key[0],
            str(g.get("case")),
            str(g.get("storage")),
            int(g.get("write_every") or 0),
        ),
    )
