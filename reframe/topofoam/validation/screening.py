"""Screening the nodes of an allocation: which node, or which link, is slower than its peers.

``reframe/src/screening`` measures every pair of nodes (one rank each), in several passes of
its own random order: a round trip of 8 bytes (latency) and a stream of large messages each
way (bandwidth, both directions). Here the figures are judged among themselves, not against
an expectation, so that a whole partition can be screened on a system that has no baseline:

- each pass's figures are taken relative to that pass's geometric mean, so that what moved
  every link between passes (a fabric's state, another job's traffic) cancels;
- a node's figure is the median over its links (a slow node makes all its links slow; one
  slow link moves neither end's median): its round trip, and its bandwidth out and in;
- the robust rule: a figure is an outlier when it is worse than the median of its peers'
  figures by more than ``K`` scaled MADs of theirs (1.4826 x the median absolute deviation:
  about K standard deviations of normal noise), or ``K`` times the figures' own spread from
  pass to pass where that is larger, AND by more than the practical ``margin`` (a fraction of
  that median): a difference too small to matter is never a failure. The threshold is thus
  what the measurement resolves, and the summary says what that was;
- a link (its bandwidth one way) is an outlier by the same rule among the links whose two
  nodes are not outliers (those are explained by their node). A link's round trip is not
  judged: it is set by the pair's switch hops (or, on an emulated cluster, by where the
  scheduler put the two ranks), not by the link's health.

It needs 3 nodes at least: with 2 there is one link and nothing to compare it with.
"""

from __future__ import annotations

import math
import re
import statistics
from dataclasses import asdict, dataclass, field

#: How many scaled MADs away an outlier is (Iglewicz and Hoaglin's 3.5 for the modified
#: z-score: an outlier among normal noise about once in 2,000 figures).
K = 3.5
#: The practical margins by unit: an outlier is at least this much worse than the median of
#: its peers. A link trained at half width halves the bandwidth; one switch hop more on a
#: fat tree adds some 20 to 30 % to a small message's round trip, which is no fault.
MARGINS = {"MB/s": 0.20, "us": 0.35}
#: 1 / the normal distribution's third quartile: makes the MAD estimate a standard deviation.
MAD_SCALE = 1.4826
MIN_NODES = 3

_NUM = r"([-\d.eE+]+|nan|inf)"
_PASS = re.compile(
    rf"^pass (\d+) (\d+) (\d+) (\S+) (\S+) rtt_us {_NUM} MBps_ij {_NUM} MBps_ji {_NUM}$", re.M
)


class ScreeningError(ValueError):
    """The measurement cannot be screened: the message says why."""


@dataclass(frozen=True)
class Link:
    a: str
    b: str
    rtt_us: float
    mbps_ab: float  # from a to b
    mbps_ba: float  # from b to a

    @property
    def mbps(self) -> float:
        """The slower direction's bandwidth: what an exchange both ways gets."""
        return min(self.mbps_ab, self.mbps_ba)

    def name(self) -> str:
        return f"{self.a}-{self.b}"

    def record(self) -> dict:
        return {**asdict(self), "mbps": self.mbps}


#: The node figures screened: (attribute, unit, which way is worse, what it is called).
FIGURES = (
    ("mbps_out", "MB/s", "lower", "bandwidth out"),
    ("mbps_in", "MB/s", "lower", "bandwidth in"),
    ("rtt_us", "us", "higher", "round trip"),
)


@dataclass
class Outlier:
    what: str  # "node n3" or "link n1-n2"
    figure: str  # bandwidth or round trip
    value: float
    median: float
    threshold: float
    unit: str

    def line(self) -> str:
        worse = "above" if self.unit in ("s", "us") else "below"
        return (
            f"{self.what} is slow: {self.figure} {_fmt(self.value)} {self.unit}, its peers' median "
            f"{_fmt(self.median)} {self.unit} ({_pct(self.value / self.median)}; outlier "
            f"{worse} {_fmt(self.threshold)} {self.unit})"
        )


def _rule(margins: dict[str, float], repeats: str, distance: dict[str, tuple]) -> str:
    """The rule in one line, with the distance it resolved for each figure and the one the
    noise alone would allow (below the margin: the margin decides, not the noise)."""
    return (
        f"outlier: worse than the median of its peers by more than {K} scaled MADs of theirs "
        f"or of the {repeats}, and by more than "
        f"{', '.join(f'{m:.0%} ({u})' for u, m in margins.items())}; resolved here: "
        + ", ".join(
            f"{figure} {d:.1%} (the noise alone {noise:.1%})"
            for figure, (d, noise) in distance.items()
        )
    )


@dataclass
class Screening:
    nodes: dict[str, dict[str, float]]  # node: {figure attribute: its figure}
    links: list[Link]  # each link's median over the passes
    passes: int
    #: figure: (the rule's distance, the noise's alone) as fractions of the median
    distance: dict[str, tuple[float, float]]
    outliers: list[Outlier] = field(default_factory=list)
    slowest_node: str = ""
    slowest_link: str = ""
    margins: dict[str, float] = field(default_factory=lambda: dict(MARGINS))

    def rule(self) -> str:
        return _rule(self.margins, f"figures' own {self.passes} passes", self.distance)

    def summary(self) -> str:
        bw = [link.mbps for link in self.links]
        return (
            f"{len(self.nodes)} nodes, {len(self.links)} links, {self.passes} pass(es): "
            f"bandwidth median {_fmt(statistics.median(bw))} MB/s, slowest node "
            f"{self.slowest_node}, slowest link {self.slowest_link}; "
            f"{len(self.outliers) or 'no'} outlier(s) ({self.rule()})"
        )


def _fmt(x: float) -> str:
    return f"{x:.3g}" if abs(x) < 1000 else f"{x:,.0f}"


def _pct(ratio: float) -> str:
    return f"{(ratio - 1) * 100:+.0f} %"


def parse(text: str) -> list[list[Link]]:
    """The links the program printed, pass by pass; ScreeningError for figures that are not
    measurements, two ranks on one node, or passes that did not measure the same links."""
    passes: dict[int, list[Link]] = {}
    for k, _, _, a, b, rtt, ab, ba in _PASS.findall(text):
        link = Link(a, b, float(rtt), float(ab), float(ba))
        if not all(0 < x < float("inf") for x in (link.rtt_us, link.mbps_ab, link.mbps_ba)):
            raise ScreeningError(
                f"link {link.name()} in pass {k} has round trip {rtt} us and bandwidth {ab} and "
                f"{ba} MB/s: not a measurement"
            )
        if a == b:
            raise ScreeningError(
                f"two ranks ran on node {a}: the screening needs one rank per node"
            )
        passes.setdefault(int(k), []).append(link)
    named = [sorted(link.name() for link in links) for links in passes.values()]
    if any(names != named[0] for names in named):
        raise ScreeningError("the passes measured different links: the output is damaged")
    return [passes[k] for k in sorted(passes)]


#: d2(n): the mean range of n normal draws in standard deviations (Shewhart's control-chart
#: constant): a figure's range over its repeats / d2 estimates their standard deviation.
D2 = {2: 1.128, 3: 1.693, 4: 2.059, 5: 2.326, 6: 2.534, 7: 2.704, 8: 2.847, 9: 2.970, 10: 3.078}


#: The variance of the median of n standard normal draws (of an even n, the mean of the
#: middle two): a figure that is the median of n repeats has sqrt of it times one repeat's
#: noise. Beyond the table pi / (2 n), a little above the truth.
MEDIAN_VAR = {
    1: 1.0, 2: 0.5, 3: 0.4487, 4: 0.2982, 5: 0.2868,
    6: 0.2147, 7: 0.2104, 8: 0.1682, 9: 0.1661, 10: 0.1383,
}  # fmt: skip


def median_sd(n: int) -> float:
    """The standard deviation of the median of ``n`` draws, in the draws' own."""
    return math.sqrt(MEDIAN_VAR.get(n, math.pi / (2 * n)))


def _spread(logs: list[float]) -> float:
    """One figure's repeat-to-repeat standard deviation on the log scale, estimated from the
    range of its repeats' logarithms (0 with one). A range, not a MAD: with few repeats the
    MAD misses a bimodal figure (3 rounds of 64, 60 and 107 have a MAD of 4). On
    the log scale, so that one pass in which a link collapsed widens the rule by a factor,
    not beyond every value (a spread of 400 % of the median hid a node at 1 % of its peers)."""
    n = len(logs)
    if n < 2:
        return 0.0
    d2 = D2.get(n, 3.078 + 0.2 * math.log(n / 10))  # slowly growing beyond the table
    return (max(logs) - min(logs)) / d2


def _fraction(d: float, worse: str) -> float:
    """A distance on the log scale as the fraction of the median it names: 1 - e^-d below
    it (lower is worse), e^d - 1 above it."""
    return -math.expm1(-d) if worse == "lower" else math.expm1(d)


def _outliers(logs: dict[str, float], worse: str, least: float) -> dict[str, tuple]:
    """{name: (log value, its peers' median, threshold)} of the values beyond the robust
    rule (``least``: the smallest distance, log scale), each judged against the others (its
    peers) only: with a handful of nodes, an outlier counted among its own peers widens
    their MAD until it hides itself (a node at 25 MB/s among peers at 1,300 to 2,400 MB/s
    passed that way)."""
    if len(logs) < 3:
        return {}
    out = {}
    for name, v in logs.items():
        peers = [x for other, x in logs.items() if other != name]
        med = statistics.median(peers)
        mad = statistics.median(abs(x - med) for x in peers)
        distance = max(K * MAD_SCALE * mad, least)
        threshold = med - distance if worse == "lower" else med + distance
        if (v < threshold) if worse == "lower" else (v > threshold):
            out[name] = (v, med, threshold)
    return out


def _distance(logs: dict[str, float], least: float) -> float:
    """The rule's distance over all the figures (log scale): the smallest change of one of
    them it would name."""
    xs = list(logs.values())
    med = statistics.median(xs)
    return max(K * MAD_SCALE * statistics.median(abs(x - med) for x in xs), least)


def judged(
    series: dict[str, list[float]],
    worse: str,
    margin: float,
    best: bool = False,
    of_medians: bool = False,
) -> tuple[dict[str, float], tuple[float, float], dict[str, tuple]]:
    """One figure of several peers, each measured in the same repeats (passes, rounds):
    (each peer's figure, (the rule's distance, the distance the noise alone allows) as
    fractions of the median, the outliers: {name: (value, its peers' median, threshold)}).

    On the log scale: each repeat's values are taken relative to that repeat's geometric
    mean, so that what moved every peer between repeats cancels; a peer's figure is the
    median of its relative values (with ``best``, the best of them: a ceiling such as a
    memory bandwidth, which a fault lowers in every repeat and a passing disturbance in
    one), in the unit of the repeats' typical level. The rule's
    least distance is the margin (worse by that fraction), or K times the peers' own
    repeat-to-repeat spread (their median: one wild peer does not blunt the rule for all)
    where that is larger: a figure is only known to within it. With ``of_medians``, the
    noise is that of what the rule compares, a median of the repeats against the median of
    its peers' medians: one repeat's times median_sd(repeats) x sqrt(1 + median_sd(peers)^2)
    (0.65 for 5 rounds and 3 peers), which holds where the repeats scatter about normally
    (the node probe's rounds); the links' passes on an emulated cluster flip between two
    states, and keep one repeat's, as does a best-of figure."""
    repeats = min(len(v) for v in series.values())
    logs = {name: [math.log(x) for x in v[:repeats]] for name, v in series.items()}
    levels = [statistics.fmean(v[k] for v in logs.values()) for k in range(repeats)]
    relative = {name: [v[k] - levels[k] for k in range(repeats)] for name, v in logs.items()}
    typical = statistics.median(levels)
    pick = (max if worse == "lower" else min) if best else statistics.median
    figures = {name: pick(r) + typical for name, r in relative.items()}
    per_repeat = statistics.median(_spread(r) for r in relative.values())
    peers = len(series) - 1
    shrink = median_sd(repeats) * math.hypot(1, median_sd(peers)) if of_medians else 1.0
    own = K * per_repeat * (1.0 if best else shrink)
    floor = -math.log1p(-min(margin, 0.999)) if worse == "lower" else math.log1p(margin)
    least = max(floor, own)
    outliers = _outliers(figures, worse, least)
    # What the rule resolved among the peers that are not outliers: an outlier in the MAD
    # would report the rule blunter than it was (a node 21 % slow, named, beside "resolved
    # to 29 %").
    peers = {name: v for name, v in figures.items() if name not in outliers} or figures
    resolved = (
        _fraction(_distance(peers, least), worse),
        _fraction(_distance(peers, own), worse),
    )
    found = {name: tuple(math.exp(x) for x in v) for name, v in outliers.items()}
    return {name: math.exp(v) for name, v in figures.items()}, resolved, found


def _node_series(passes: list[list[Link]], node: str) -> dict[str, list[float]]:
    """A node's figures in each pass: the median over its links."""
    out: dict[str, list[float]] = {"mbps_out": [], "mbps_in": [], "rtt_us": []}
    for links in passes:
        mine = [link for link in links if node in (link.a, link.b)]
        out["rtt_us"].append(statistics.median(link.rtt_us for link in mine))
        out["mbps_out"].append(
            statistics.median(link.mbps_ab if link.a == node else link.mbps_ba for link in mine)
        )
        out["mbps_in"].append(
            statistics.median(link.mbps_ba if link.a == node else link.mbps_ab for link in mine)
        )
    return out


def _median_links(passes: list[list[Link]]) -> list[Link]:
    """Each link's figures, the median over the passes."""
    by_name: dict[str, list[Link]] = {}
    for links in passes:
        for link in links:
            by_name.setdefault(link.name(), []).append(link)
    return [
        Link(
            ls[0].a,
            ls[0].b,
            *(
                statistics.median(getattr(x, f) for x in ls)
                for f in ("rtt_us", "mbps_ab", "mbps_ba")
            ),
        )
        for ls in by_name.values()
    ]


def screen(passes: list[list[Link]], margins: dict[str, float] | None = None) -> Screening:
    """Each node's and link's figures judged against their peers' (the module's rule), with
    ``margins`` by unit (MARGINS for the units it does not give)."""
    margins = {**MARGINS, **(margins or {})}
    links = passes[0] if passes else []
    nodes = sorted({link.a for link in links} | {link.b for link in links})
    if len(nodes) < MIN_NODES:
        raise ScreeningError(
            f"{len(nodes)} node(s) measured: screening compares a node with its peers and "
            f"needs {MIN_NODES} at least -- give the check more nodes "
            f"(-S FabricScreening.screen_nodes=N, or 0 for every idle node)"
        )
    series = {n: _node_series(passes, n) for n in nodes}
    out = Screening({n: {} for n in nodes}, _median_links(passes), len(passes), {}, margins=margins)
    flagged: set[str] = set()
    for attr, unit, worse, figure in FIGURES:
        values, out.distance[figure], found = judged(
            {n: s[attr] for n, s in series.items()}, worse, margins[unit]
        )
        for n, v in values.items():
            out.nodes[n][attr] = v
        for name, (v, med, threshold) in found.items():
            out.outliers.append(Outlier(f"node {name}", figure, v, med, threshold, unit))
            flagged.add(name)
    # The links between healthy nodes, by their bandwidth one way each. Not by their round
    # trips: a pair's round trip is set by its switch hops (one leaf, or across the spine:
    # 20 to 50 % apart on a fat tree), or on an emulated cluster by where the scheduler put
    # the two ranks, not by the link's health; a node's median over its links is not.
    healthy = {link.name() for link in links if not {link.a, link.b} & flagged}
    per_link: dict[str, list[float]] = {}
    for ls in passes:
        for link in (x for x in ls if x.name() in healthy):
            per_link.setdefault(f"{link.a}->{link.b}", []).append(link.mbps_ab)
            per_link.setdefault(f"{link.b}->{link.a}", []).append(link.mbps_ba)
    if len(per_link) >= 3:
        _, _, found = judged(per_link, "lower", margins["MB/s"])
        for name, (v, med, threshold) in found.items():
            out.outliers.append(Outlier(f"link {name}", "bandwidth", v, med, threshold, "MB/s"))
    out.slowest_node = min(
        nodes, key=lambda n: min(out.nodes[n]["mbps_out"], out.nodes[n]["mbps_in"])
    )
    out.slowest_link = min(out.links, key=lambda link: link.mbps).name()
    return out


# -- nodes against their peers ---------------------------------------------------------------
#
# NodeScreening's probe (topofoam.jobs.nodeprobe) gives each node, per round, the median wall
# time of serial solver runs on its cores at once and their summed memory bandwidth. A node's
# figure is judged by the same rule as a link's (``judged``: each round relative to the
# round's level, its peers' median, K scaled MADs of theirs or K times the nodes' own
# round-to-round spread, the practical margin): a threshold from what was measured, never
# below the margin.

#: The practical margins of the node figures: a node less than this slower than its peers
#: is never an outlier (the faults sought, a memory channel down or a power-capped CPU, cost
#: 10 to 50 %).
NODE_MARGINS = {"s": 0.10, "MB/s": 0.10}
#: The node figures: (attribute, unit, which way is worse, what it is called, the best
#: round rather than the median). The memory bandwidth is a ceiling, taken as STREAM takes
#: it, the best of the repeats: a channel down lowers every round, while the host of a
#: virtual machine lowers it for seconds at a time (this one: to 57 from about 100 GB/s for
#: some 10 s in every minute or two), which falls on some rounds and not others. The solver's
#: time is the median: a CPU that is capped some of the time is a fault.
NODE_FIGURES = (
    ("solver_s", "s", "higher", "solver time", False),
    ("membw", "MB/s", "lower", "memory bandwidth", True),
)

_ROUND = re.compile(
    r"^nodeprobe (\S+) round (\d+) solver_s ([-\d.eE+]+|nan|inf) membw_MBps ([-\d.eE+]+|nan|inf)$",
    re.M,
)
_PRINT = re.compile(r"^nodeprint (\S+) (\{.*\})$", re.M)


def parse_rounds(text: str) -> dict[str, dict[str, list[float]]]:
    """{node: {"solver_s": [...], "membw": [...]}} of the probe's lines; ScreeningError for a
    figure that is not a measurement."""
    out: dict[str, dict[str, list[float]]] = {}
    for node, n, wall, bw in _ROUND.findall(text):
        wall_, bw_ = float(wall), float(bw)
        if not (0 < wall_ < float("inf") and 0 < bw_ < float("inf")):
            raise ScreeningError(
                f"node {node} round {n}: solver {wall} s, memory {bw} MB/s: not a measurement"
            )
        figures = out.setdefault(node, {"solver_s": [], "membw": []})
        figures["solver_s"].append(wall_)
        figures["membw"].append(bw_)
    return out


def parse_prints(text: str) -> dict[str, dict]:
    """{node: fingerprint} of the probe's ``nodeprint`` lines."""
    import json

    out = {}
    for node, record in _PRINT.findall(text):
        try:
            out[node] = json.loads(record)
        except ValueError:
            raise ScreeningError(f"node {node}'s fingerprint line is not JSON") from None
    return out


@dataclass
class NodeScreening:
    figures: dict[str, dict[str, float]]  # node: {attribute: its figure}
    rounds: int
    #: figure: (the rule's distance, the noise's alone) as fractions of the median
    distance: dict[str, tuple[float, float]]
    outliers: list[Outlier] = field(default_factory=list)
    differences: list[str] = field(default_factory=list)
    margins: dict[str, float] = field(default_factory=lambda: dict(NODE_MARGINS))

    def rule(self) -> str:
        return _rule(self.margins, f"nodes' own {self.rounds} rounds", self.distance)

    def summary(self) -> str:
        walls = [f["solver_s"] for f in self.figures.values()]
        bws = [f["membw"] for f in self.figures.values()]
        bad = len(self.outliers) + len(self.differences)
        return (
            f"{len(self.figures)} nodes, {self.rounds} round(s): solver median "
            f"{_fmt(statistics.median(walls))} s, memory bandwidth median "
            f"{_fmt(statistics.median(bws))} MB/s; {bad or 'no'} finding(s) ({self.rule()})"
        )


def screen_nodes(
    rounds: dict[str, dict[str, list[float]]],
    prints: dict[str, dict] | None = None,
    margins: dict[str, float] | None = None,
    declared: dict | None = None,
) -> NodeScreening:
    """Each node's figures against its peers', and its fingerprint against theirs and
    against what the site file ``declared`` for the partition (``partition``, and where it
    says them ``cores``, ``numa_nodes``, ``nps``: topofoam.jobs.fingerprint's comparison)."""
    margins = {**NODE_MARGINS, **(margins or {})}
    if len(rounds) < MIN_NODES:
        raise ScreeningError(
            f"{len(rounds)} node(s) measured: screening compares a node with its peers and "
            f"needs {MIN_NODES} at least -- give the check more nodes "
            f"(-S NodeScreening.screen_nodes=N, or 0 for every idle node)"
        )
    repeats = min(len(f["solver_s"]) for f in rounds.values())
    out = NodeScreening({n: {} for n in rounds}, repeats, {}, margins=margins)
    for attr, unit, worse, figure, best in NODE_FIGURES:
        values, out.distance[figure], found = judged(
            {n: f[attr] for n, f in rounds.items()}, worse, margins[unit], best, of_medians=True
        )
        for n, v in values.items():
            out.figures[n][attr] = v
        for name, (v, med, threshold) in found.items():
            out.outliers.append(Outlier(f"node {name}", figure, v, med, threshold, unit))
    if declared:
        from topofoam.jobs import fingerprint

        for node, found in sorted((prints or {}).items()):
            try:
                out.differences += fingerprint.differences(
                    found,
                    declared["partition"],
                    declared.get("cores"),
                    declared.get("numa_nodes"),
                    declared.get("nps"),
                )
            except (KeyError, TypeError):
                raise ScreeningError(f"node {node}'s fingerprint has no topology") from None
    out.differences += fingerprint_differences(prints or {})
    return out


#: Fingerprint fields that differ between healthy nodes of one partition.
_OWN_FIELDS = ("node", "topology.source")


def _flat(d: dict, prefix: str = "") -> dict[str, str]:
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = ", ".join(map(str, v)) if isinstance(v, list) else str(v)
    return out


def fingerprint_differences(prints: dict[str, dict]) -> list[str]:
    """A node whose fingerprint differs from most of its peers in a field, one line each:
    ``node n3: software.ucx is 1.99.0, 3 of its 4 peers have 1.13.1``. With fewer than 3
    nodes, or no value that most share, nothing is said."""
    if len(prints) < MIN_NODES:
        return []
    flat = {node: _flat(p) for node, p in prints.items()}
    fields = sorted(set().union(*flat.values()) - set(_OWN_FIELDS))
    out = []
    for name in fields:
        for node, f in sorted(flat.items()):
            peers = [g.get(name, "-") for other, g in flat.items() if other != node]
            common = max(set(peers), key=peers.count)
            if peers.count(common) * 2 > len(peers) and f.get(name, "-") != common:
                out.append(
                    f"node {node}: {name} is {f.get(name, '-')}, {peers.count(common)} of its "
                    f"{len(peers)} peers have {common}"
                )
    return out
