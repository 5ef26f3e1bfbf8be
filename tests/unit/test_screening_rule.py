"""Screening the nodes of an allocation (topofoam.validation.screening): a slow node is named,
not the peers its links touch; a slow link between healthy nodes is named as a link; noise
within the margin is never an outlier; figures that are not measurements, two ranks on one
node and too few nodes are refused in one line. The figures are TEST DATA (seeded draws
around bandwidths and round trips of the emulated cluster's order); the real measurement is
tests/system/test_screening.py's."""

import itertools
import random

import pytest

from topofoam.config import settings
from topofoam.validation import screening
from topofoam.validation.screening import Link, ScreeningError


def fabric(n=6, slow_node=None, slow_link=None, noise=0.08, seed=0, factor=0.1):
    """All links of ``n`` nodes, bandwidth about 3,000 MB/s and round trip about 50 us, each
    within +-``noise``; the slow node's links or the slow link at ``factor`` of the bandwidth."""
    rng = random.Random(seed)
    nodes = [f"n{i}" for i in range(1, n + 1)]
    links = []
    for a, b in itertools.combinations(nodes, 2):
        mbps = 3000 * (1 + rng.uniform(-noise, noise))
        rtt = 50 * (1 + rng.uniform(-noise, noise))
        if slow_node in (a, b) or {a, b} == set(slow_link or ()):
            mbps *= factor
        links.append(Link(a, b, rtt, mbps))
    return links


def text(links):
    lines = [f"screening ranks {len({x.a for x in links} | {x.b for x in links})} mode serial"]
    lines += [
        f"link {i} {i + 1} {x.a} {x.b} rtt_us {x.rtt_us:.3f} MBps {x.mbps:.1f}"
        for i, x in enumerate(links)
    ]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("n", [3, 4, 8, 64])
def test_a_slow_node_is_named_and_its_peers_are_not(n):
    found = screening.screen(fabric(n, slow_node="n2", seed=n))
    assert [o.what for o in found.outliers] == ["node n2"]
    assert found.slowest_node == "n2"
    (line,) = [o.line() for o in found.outliers]
    assert line.startswith("node n2 is slow: bandwidth ") and "its peers' median" in line


@pytest.mark.parametrize("n", [4, 8, 64])
def test_a_slow_link_between_healthy_nodes_is_named_as_the_link(n):
    found = screening.screen(fabric(n, slow_link=("n1", "n3"), seed=n))
    assert [o.what for o in found.outliers] == ["link n1-n3"]
    assert found.slowest_link == "n1-n3"


@pytest.mark.parametrize("seed", range(20))
def test_noise_within_the_margin_is_no_outlier(seed):
    found = screening.screen(fabric(8, noise=0.15, seed=seed))
    assert found.outliers == []
    assert "no outlier(s)" in found.summary()


def test_a_node_slower_than_the_margin_but_not_by_it_passes_and_beyond_it_fails():
    """15 % slower is within the 25 % bandwidth margin; 40 % slower is not."""
    assert screening.screen(fabric(6, slow_node="n4", noise=0.02, factor=0.85)).outliers == []
    found = screening.screen(fabric(6, slow_node="n4", noise=0.02, factor=0.6))
    assert [o.what for o in found.outliers] == ["node n4"]
    # A wider margin of the partition's own takes it back.
    assert (
        screening.screen(fabric(6, slow_node="n4", noise=0.02, factor=0.6), {"MB/s": 0.5}).outliers
        == []
    )


def test_a_slow_node_among_widely_spread_peers_is_named():
    """Measured on the emulated cluster (CI, 2026-11-25): node3 limited to 200 Mbit/s, its
    healthy peers' links between 1,300 and 2,400 MB/s. Counted among its own peers, node3
    widened their MAD until it hid itself; judged against its peers alone it is named."""
    links = [
        Link("node1", "node2", 22.9, 2410.3),
        Link("node1", "node3", 24.6, 25.3),
        Link("node1", "node4", 26.0, 1302.7),
        Link("node2", "node3", 33.9, 25.3),
        Link("node2", "node4", 26.1, 2417.8),
        Link("node3", "node4", 23.3, 25.3),
    ]
    found = screening.screen(links, {"MB/s": 0.6, "us": 1.0})  # the emulated cluster's
    assert [o.line().split(":")[0] for o in found.outliers] == ["node node3 is slow"]


def test_a_node_with_slow_round_trips_is_named():
    links = [Link(x.a, x.b, x.rtt_us * (4 if "n5" in (x.a, x.b) else 1), x.mbps) for x in fabric(6)]
    found = screening.screen(links)
    assert [(o.what, o.figure) for o in found.outliers] == [("node n5", "round trip")]
    assert "above" in found.outliers[0].line()


def test_the_printed_links_are_read_back():
    links = fabric(4, slow_node="n3")
    back = screening.parse(text(links))
    assert [(x.a, x.b) for x in back] == [(x.a, x.b) for x in links]
    assert [x.mbps for x in back] == pytest.approx([x.mbps for x in links], rel=1e-3)


@pytest.mark.parametrize(
    "line, said",
    [
        ("link 0 1 n1 n2 rtt_us nan MBps 3000.0", "not a measurement"),
        ("link 0 1 n1 n2 rtt_us 50.0 MBps -1.0", "not a measurement"),
        ("link 0 1 n1 n2 rtt_us 50.0 MBps 0.0", "not a measurement"),
        ("link 0 1 n1 n1 rtt_us 50.0 MBps 3000.0", "two ranks ran on node n1"),
    ],
)
def test_figures_that_are_not_measurements_are_refused(line, said):
    with pytest.raises(ScreeningError, match=said):
        screening.parse(line + "\n")


@pytest.mark.parametrize("n", [0, 2])
def test_fewer_than_three_nodes_cannot_be_screened(n):
    with pytest.raises(ScreeningError, match=f"^{n} node.s. measured.*needs 3 at least"):
        screening.screen(fabric(n))


@pytest.mark.parametrize(
    "value, said",
    [
        ("node3", "is not NODE=RATE"),
        ("node3=fast", "is not NODE=RATE"),
        ("node9=1gbit", "is not NODE=RATE"),
        ("node3=0mbit", "is not NODE=RATE"),
        ("node3=100mbps", "is not NODE=RATE"),
        ("node3=1gbit,node3=2gbit", "names node3 twice"),
    ],
)
def test_a_link_limit_outside_its_domain_is_refused(monkeypatch, value, said):
    monkeypatch.setenv("TOPOFOAM_EMU_LINKS", value)
    with pytest.raises(settings.SettingError, match=said):
        settings.emu_links()


def test_link_limits_as_given(monkeypatch):
    monkeypatch.setenv("TOPOFOAM_EMU_LINKS", "node3=100mbit, node1=2.5gbit")
    assert settings.emu_links() == {"node3": "100mbit", "node1": "2.5gbit"}
    monkeypatch.delenv("TOPOFOAM_EMU_LINKS")
    assert settings.emu_links() == {}
