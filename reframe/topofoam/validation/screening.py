"""Screening the nodes of an allocation: which node, or which link, is slower than its peers.

``reframe/src/screening`` measures every pair of nodes (one rank each): a round trip of 8
bytes (latency) and the bandwidth of 1 MiB messages. Here the figures are judged among
themselves, not against an expectation, so that a whole partition can be screened on a
system that has no baseline yet:

- a node's figure is the median over its links (a slow node makes all its links slow; one
  slow link moves neither end's median);
- the robust rule: a node is an outlier when its figure is worse than the median of its
  peers' figures (the other nodes') by more than ``K`` scaled MADs of theirs (1.4826 x the
  median absolute deviation: about K standard deviations of normal noise) AND by more than
  the practical ``margin`` (a fraction of that median): the MAD of nodes that are all alike
  is next to zero, and a difference too small to matter is never a failure;
- a link is an outlier by the same rule among the links whose two nodes are not outliers
  (those are explained by their node).

It needs 3 nodes at least: with 2 there is one link and nothing to compare it with.
"""

from __future__ import annotations

import math
import re
import statistics
from dataclasses import dataclass, field

#: How many scaled MADs away an outlier is (Iglewicz and Hoaglin's 3.5 for the modified
#: z-score: an outlier among normal noise about once in 2,000 figures).
K = 3.5
#: The practical margins by unit: an outlier is at least this much worse than the median of
#: its peers. Small-message round trips vary more than bandwidth between unchanged runs.
MARGINS = {"MB/s": 0.25, "us": 0.50}
#: 1 / the normal distribution's third quartile: makes the MAD estimate a standard deviation.
MAD_SCALE = 1.4826
MIN_NODES = 3

_LINK = re.compile(
    r"^link (\d+) (\d+) (\S+) (\S+) rtt_us ([-\d.eE+]+|nan|inf) MBps ([-\d.eE+]+|nan|inf)$",
    re.M,
)


class ScreeningError(ValueError):
    """The measurement cannot be screened: the message says why."""


@dataclass(frozen=True)
class Link:
    a: str
    b: str
    rtt_us: float
    mbps: float

    def name(self) -> str:
        return f"{self.a}-{self.b}"


#: The figures screened: (attribute, unit, which way is worse, what it is called).
FIGURES = (("mbps", "MB/s", "lower", "bandwidth"), ("rtt_us", "us", "higher", "round trip"))


@dataclass
class Outlier:
    what: str  # "node n3" or "link n1-n2"
    figure: str  # bandwidth or round trip
    value: float
    median: float
    threshold: float
    unit: str

    def line(self) -> str:
        worse = "below" if self.figure == "bandwidth" else "above"
        return (
            f"{self.what} is slow: {self.figure} {_fmt(self.value)} {self.unit}, its peers' median "
            f"{_fmt(self.median)} {self.unit} ({_pct(self.value / self.median)}; outlier "
            f"{worse} {_fmt(self.threshold)} {self.unit})"
        )


@dataclass
class Screening:
    nodes: dict[str, dict[str, float]]  # node: {figure attribute: median over its links}
    links: list[Link]
    outliers: list[Outlier] = field(default_factory=list)
    slowest_node: str = ""
    slowest_link: str = ""
    margins: dict[str, float] = field(default_factory=lambda: dict(MARGINS))

    def rule(self) -> str:
        return (
            f"outlier: worse than the median of its peers by more than {K} scaled MADs and by "
            f"more than {', '.join(f'{m:.0%} ({u})' for u, m in self.margins.items())}"
        )

    def summary(self) -> str:
        bw = [link.mbps for link in self.links]
        return (
            f"{len(self.nodes)} nodes, {len(self.links)} links: bandwidth median "
            f"{_fmt(statistics.median(bw))} MB/s, slowest node {self.slowest_node}, slowest "
            f"link {self.slowest_link}; {len(self.outliers) or 'no'} outlier(s) ({self.rule()})"
        )


def _fmt(x: float) -> str:
    return f"{x:.3g}" if abs(x) < 1000 else f"{x:,.0f}"


def _pct(ratio: float) -> str:
    return f"{(ratio - 1) * 100:+.0f} %"


def parse(text: str) -> list[Link]:
    """The links the program printed; ScreeningError for figures that are not measurements."""
    links = []
    for _, _, a, b, rtt, mbps in _LINK.findall(text):
        link = Link(a, b, float(rtt), float(mbps))
        if not (0 < link.rtt_us < float("inf") and 0 < link.mbps < float("inf")):
            raise ScreeningError(
                f"link {link.name()} has round trip {rtt} us and bandwidth {mbps} MB/s: not a "
                f"measurement (two ranks on one node?)"
            )
        if a == b:
            raise ScreeningError(
                f"two ranks ran on node {a}: the screening needs one rank per node"
            )
        links.append(link)
    return links


def _outliers(values: dict[str, float], worse: str, margin: float) -> dict[str, tuple]:
    """{name: (value, its peers' median, threshold)} of the values beyond the robust rule,
    each judged against the others (its peers) only: with a handful of nodes, an outlier
    counted among its own peers widens their MAD until it hides itself (a node at 25 MB/s
    among peers at 1,300 to 2,400 MB/s passed that way)."""
    if len(values) < 3:
        return {}
    out = {}
    for name, v in values.items():
        peers = [x for other, x in values.items() if other != name]
        med = statistics.median(peers)
        mad = statistics.median(abs(x - med) for x in peers)
        distance = max(K * MAD_SCALE * mad, margin * med)
        threshold = med - distance if worse == "lower" else med + distance
        if (v < threshold) if worse == "lower" else (v > threshold):
            out[name] = (v, med, threshold)
    return out


def screen(links: list[Link], margins: dict[str, float] | None = None) -> Screening:
    """Each node's and link's figures judged against their peers' (the module's rule), with
    ``margins`` by unit (MARGINS for the units it does not give)."""
    margins = {**MARGINS, **(margins or {})}
    nodes = sorted({link.a for link in links} | {link.b for link in links})
    if len(nodes) < MIN_NODES:
        raise ScreeningError(
            f"{len(nodes)} node(s) measured: screening compares a node with its peers and "
            f"needs {MIN_NODES} at least -- give the check more nodes "
            f"(-S FabricScreening.screen_nodes=N, or 0 for every idle node)"
        )
    per_node = {
        n: {
            attr: statistics.median(getattr(link, attr) for link in links if n in (link.a, link.b))
            for attr, *_ in FIGURES
        }
        for n in nodes
    }
    out = Screening(per_node, links, margins=margins)
    flagged: set[str] = set()
    for attr, unit, worse, figure in FIGURES:
        for name, (v, med, threshold) in _outliers(
            {n: f[attr] for n, f in per_node.items()}, worse, margins[unit]
        ).items():
            out.outliers.append(Outlier(f"node {name}", figure, v, med, threshold, unit))
            flagged.add(name)
    healthy = [link for link in links if link.a not in flagged and link.b not in flagged]
    for attr, unit, worse, figure in FIGURES:
        for name, (v, med, threshold) in _outliers(
            {link.name(): getattr(link, attr) for link in healthy}, worse, margins[unit]
        ).items():
            out.outliers.append(Outlier(f"link {name}", figure, v, med, threshold, unit))
    out.slowest_node = min(per_node, key=lambda n: per_node[n]["mbps"])
    out.slowest_link = min(links, key=lambda link: link.mbps).name()
    return out


# -- nodes against their peers ---------------------------------------------------------------
#
# NodeScreening's probe (topofoam.jobs.nodeprobe) gives each node, per round, the median wall
# time of serial solver runs on its cores at once and their summed memory bandwidth. A node's
# figure is its median over the rounds; it is an outlier by the same rule as a link's (its
# peers' median, K scaled MADs of theirs, the practical margin), with the distance widened
# to K times the nodes' own round-to-round spread where that is larger: a threshold from
# what was measured, never below the margin.

#: The practical margins of the node figures: a node less than this slower than its peers
#: is never an outlier (the faults sought, a memory channel down or a power-capped CPU, cost
#: 10 to 50 %).
NODE_MARGINS = {"s": 0.10, "MB/s": 0.10}
#: The node figures: (attribute, unit, which way is worse, what it is called).
NODE_FIGURES = (
    ("solver_s", "s", "higher", "solver time"),
    ("membw", "MB/s", "lower", "memory bandwidth"),
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
    figures: dict[str, dict[str, float]]  # node: {attribute: median over its rounds}
    rounds: int
    distance: dict[str, float]  # attribute: the rule's distance as a fraction of the median
    outliers: list[Outlier] = field(default_factory=list)
    differences: list[str] = field(default_factory=list)
    margins: dict[str, float] = field(default_factory=lambda: dict(NODE_MARGINS))

    def rule(self) -> str:
        resolved = ", ".join(
            f"{figure} {self.distance[attr]:.0%}" for attr, _, _, figure in NODE_FIGURES
        )
        return (
            f"outlier: worse than the median of its peers by more than {K} scaled MADs of "
            f"theirs or of the nodes' own {self.rounds} rounds, and by more than "
            f"{', '.join(f'{m:.0%} ({u})' for u, m in self.margins.items())}; resolved here: "
            f"{resolved}"
        )

    def summary(self) -> str:
        walls = [f["solver_s"] for f in self.figures.values()]
        bws = [f["membw"] for f in self.figures.values()]
        bad = len(self.outliers) + len(self.differences)
        return (
            f"{len(self.figures)} nodes, {self.rounds} round(s): solver median "
            f"{_fmt(statistics.median(walls))} s, memory bandwidth median "
            f"{_fmt(statistics.median(bws))} MB/s; {bad or 'no'} finding(s) ({self.rule()})"
        )


#: d2(n): the mean range of n normal draws in standard deviations (Shewhart's control-chart
#: constant): a node's range over its rounds / d2 estimates its rounds' standard deviation.
D2 = {2: 1.128, 3: 1.693, 4: 2.059, 5: 2.326, 6: 2.534, 7: 2.704, 8: 2.847, 9: 2.970, 10: 3.078}


def _spread(values: list[float]) -> float:
    """One node's round-to-round standard deviation, relative to its median, estimated from
    the range of its rounds (0 with one round). A range, not a MAD: with few rounds the MAD
    misses a bimodal figure (this machine's memory bandwidth flips between about 60 and 108
    GB/s from one probe to the next, and 3 rounds of 64, 60 and 107 have a MAD of 4)."""
    n = len(values)
    if n < 2:
        return 0.0
    d2 = D2.get(n, 3.078 + 0.2 * math.log(n / 10))  # slowly growing beyond the table
    return (max(values) - min(values)) / statistics.median(values) / d2


def screen_nodes(
    rounds: dict[str, dict[str, list[float]]],
    prints: dict[str, dict] | None = None,
    margins: dict[str, float] | None = None,
) -> NodeScreening:
    """Each node's figures against its peers', and its fingerprint against theirs."""
    margins = {**NODE_MARGINS, **(margins or {})}
    if len(rounds) < MIN_NODES:
        raise ScreeningError(
            f"{len(rounds)} node(s) measured: screening compares a node with its peers and "
            f"needs {MIN_NODES} at least -- give the check more nodes "
            f"(-S NodeScreening.screen_nodes=N, or 0 for every idle node)"
        )
    counts = {len(f["solver_s"]) for f in rounds.values()}
    figures = {
        node: {attr: statistics.median(f[attr]) for attr, *_ in NODE_FIGURES}
        for node, f in rounds.items()
    }
    out = NodeScreening(figures, min(counts), {}, margins=margins)
    for attr, unit, worse, figure in NODE_FIGURES:
        # The nodes' own round-to-round noise (the median over the nodes, so that one wild
        # node does not blunt the rule for all): a node's figure is only known to within it.
        own = statistics.median(_spread(f[attr]) for f in rounds.values())
        values = {n: f[attr] for n, f in figures.items()}
        found = _outliers(values, worse, max(margins[unit], K * own))
        out.distance[attr] = _distance(values, max(margins[unit], K * own))
        for name, (v, med, threshold) in found.items():
            out.outliers.append(Outlier(f"node {name}", figure, v, med, threshold, unit))
    out.differences = fingerprint_differences(prints or {})
    return out


def _distance(values: dict[str, float], least: float) -> float:
    """The rule's distance over all the nodes, as a fraction of their median: the smallest
    slowdown of one node it would name."""
    xs = list(values.values())
    med = statistics.median(xs)
    mad = statistics.median(abs(x - med) for x in xs)
    return max(K * MAD_SCALE * mad / med, least)


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
