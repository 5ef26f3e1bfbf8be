"""topofoam.results.stats against reference implementations (scipy) and published tables,
and on synthetic run sets (test data, not measurements): noise is not a finding, a clear
difference is one, with its CI."""

import math

import numpy as np
import pytest
from scipy import stats as ref

from topofoam.results import stats


@pytest.mark.parametrize(
    "n,ranks",
    # Le Boudec, "Performance Evaluation of Computer and Communication Systems", Table A.1
    # (95 % CI of the median: the j-th and k-th of n ordered values)
    [(6, (1, 6)), (8, (1, 8)), (9, (2, 8)), (10, (2, 9)), (20, (6, 15)), (50, (18, 33))],
)
def test_median_ci_ranks_match_the_published_table(n, ranks):
    xs = list(range(1, n + 1))  # the values are their own ranks
    low, high, level = stats.median_ci(xs)
    assert (low, high) == ranks
    assert level >= 0.95


@pytest.mark.parametrize("n", range(3, 41))
def test_median_ci_coverage_is_the_binomial_one(n):
    low, high, level = stats.median_ci(list(range(1, n + 1)))
    j = int(low)
    # scipy: P(B <= j - 1) for B ~ binomial(n, 1/2), on each side
    assert level == pytest.approx(1 - 2 * ref.binom.cdf(j - 1, n, 0.5), abs=1e-12)
    if n >= 6:
        assert level >= 0.95
        # the next narrower interval would miss the confidence
        if j + 1 <= n // 2:
            assert 1 - 2 * ref.binom.cdf(j, n, 0.5) < 0.95
    else:
        assert (low, high) == (1, n) and level < 0.95  # the range, at its own level


def test_five_repeats_give_the_range_at_its_level():
    low, high, level = stats.median_ci([3.0, 1.0, 2.0, 5.0, 4.0])
    assert (low, high) == (1.0, 5.0)
    assert level == pytest.approx(1 - 2 / 32)
    assert stats.median_ci([1.0, 2.0]) is None


@pytest.mark.parametrize("m,n", [(2, 2), (3, 5), (5, 5), (6, 4), (8, 9), (12, 12)])
def test_mann_whitney_p_equals_scipys_exact_one(m, n):
    rng = np.random.default_rng(m * 100 + n)
    for shift in (0.0, 0.05, 0.3):
        a = np.exp(rng.normal(0, 0.05, m))
        b = np.exp(rng.normal(shift, 0.05, n))
        ours = stats.compare(a, b)
        theirs = ref.mannwhitneyu(b, a, alternative="two-sided", method="exact")
        assert ours.p == pytest.approx(theirs.pvalue, rel=1e-9)


def test_mann_whitney_with_ties_uses_the_tie_corrected_normal_approximation():
    a, b = [1.0, 1.0, 2.0, 2.0, 3.0], [2.0, 3.0, 3.0, 4.0, 4.0]
    ours = stats.compare(a, b)
    theirs = ref.mannwhitneyu(b, a, alternative="two-sided", method="asymptotic")
    assert ours.p == pytest.approx(theirs.pvalue, rel=1e-9)


def test_hodges_lehmann_interval_equals_scipys_bounds():
    """The CI of the ratio: order statistics of the pairwise log differences at the U
    distribution's 2.5 % point (k = 3 for 5 and 5, coverage 1 - 2 * 4/252)."""
    a = [10.0, 10.2, 9.9, 10.1, 10.3]
    b = [8.0, 8.1, 7.9, 8.3, 8.2]
    c = stats.compare(a, b)
    diffs = sorted(math.log(y) - math.log(x) for y in b for x in a)
    assert (c.low, c.high) == (
        pytest.approx(math.exp(diffs[2])),
        pytest.approx(math.exp(diffs[22])),
    )
    assert c.ratio == pytest.approx(math.exp(np.median(diffs)))
    assert ref.mannwhitneyu(b, a, method="exact").pvalue == pytest.approx(c.p)


def test_noise_is_reported_as_not_significant():
    """Synthetic run sets (test data): two samples of the same distribution, 2 % noise."""
    rng = np.random.default_rng(7)
    verdicts = []
    for _ in range(40):
        a, b = 1 + 0.02 * rng.standard_normal(5), 1 + 0.02 * rng.standard_normal(5)
        c = stats.compare(a, b)
        verdicts.append(c.verdict)
        if c.verdict == "within noise":
            assert c.low < 1 < c.high  # the CI of the ratio holds 1
    # at the 5 % level about 1 in 20 comparisons of noise is significant, by design
    assert verdicts.count("within noise") >= 34


def test_a_clear_difference_is_reported_with_its_ci():
    a = [2.00, 2.02, 1.99, 2.01, 2.03]
    b = [1.60, 1.62, 1.61, 1.59, 1.63]  # 20 % faster
    c = stats.compare(a, b)
    assert c.verdict == "faster" and c.significant
    assert c.p == pytest.approx(2 / 252)
    assert c.low < c.ratio < c.high < 1
    assert c.ratio == pytest.approx(0.8, rel=0.01)
    assert stats.compare(b, a).verdict == "slower"


def test_single_runs_get_no_verdict():
    c = stats.compare([1.0], [0.5])
    assert c.verdict == "no verdict (n=1)" and not c.significant
    assert c.p is None and c.low is None
    zero = stats.compare([0.0, 1.0, 1.0], [1.0, 1.0, 1.0])
    assert zero.verdict == "no verdict (a time of 0)" and zero.ratio is None


def test_summary_of_repeats():
    s = stats.summarise([1.0, 1.2, 1.1, 1.05, 1.3, 1.15])
    assert (s.n, s.median) == (6, pytest.approx(1.125))
    assert (s.low, s.high) == (1.0, 1.3)
    assert s.spread == pytest.approx(0.3 / 1.125)
    with pytest.raises(ValueError):
        stats.summarise([])
