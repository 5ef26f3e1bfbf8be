"""Statistics of repeated timings, in one place (Hoefler and Belli, "Scientific Benchmarking of
Parallel Computing Systems", SC'15): the median with its nonparametric confidence interval,
and the comparison of two configurations by the Mann-Whitney U test with the Hodges-Lehmann
confidence interval of their time ratio. Nothing assumes normal distributions; everything is
exact for the small samples benchmarks have (up to EXACT_LIMIT repeats per side).

METHOD is the text the report prints once in its method section.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from functools import cache

#: Confidence of every interval, and 1 - the significance level of every test.
CONFIDENCE = 0.95
#: A verdict's words, the same wherever a figure is held against a bound: the validation's
#: expectations and the model's accuracy. INCONCLUSIVE: the interval straddles the bound.
PASS, FAIL, INCONCLUSIVE = "PASS", "FAIL", "INCONCLUSIVE"
#: Up to this many repeats per side the U distribution is computed exactly; above, the normal
#: approximation with tie correction is used.
EXACT_LIMIT = 30

METHOD = (
    "Each configuration's time is the median of its repeats, with the nonparametric 95 % "
    "confidence interval of the median (order statistics of the binomial(n, 1/2) "
    "distribution; it needs 6 repeats, with 5 it is the range at 93.8 %). Two "
    "configurations are compared with the two-sided Mann-Whitney U test at the 5 % level "
    "(exact for up to 30 repeats a side); the change is the Hodges-Lehmann estimate of their "
    "time ratio with its 95 % confidence interval. A change is claimed only when the test is "
    "significant; otherwise it reads 'within noise'. A single run per side gets no verdict."
)


@dataclass(frozen=True)
class Summary:
    """A configuration's repeats: n, median, the CI of the median at ``level`` (None below
    3 repeats, where it is no interval at all), and the spread (max - min) / median."""

    n: int
    median: float
    low: float | None
    high: float | None
    level: float | None
    spread: float


def summarise(values) -> Summary:
    xs = sorted(float(v) for v in values)
    if not xs:
        raise ValueError("no values to summarise")
    median = statistics.median(xs)
    ci = median_ci(xs)
    low, high, level = ci if ci else (None, None, None)
    spread = (xs[-1] - xs[0]) / median if median else 0.0
    return Summary(len(xs), median, low, high, level, spread)


def median_ci(values, confidence: float = CONFIDENCE) -> tuple[float, float, float] | None:
    """(low, high, level): the narrowest symmetric pair of order statistics x_(j), x_(n+1-j)
    whose coverage of the median, 1 - 2 P(B <= j - 1) for B ~ binomial(n, 1/2), is at least
    ``confidence``. Where n is too small for that (n < 6 at 95 %), the range, with its lower
    coverage as ``level``. None below 3 values."""
    xs = sorted(float(v) for v in values)
    n = len(xs)
    if n < 3:
        return None
    best = 1  # the range
    for j in range(1, n // 2 + 1):
        if _coverage(n, j) >= confidence:
            best = j
        else:
            break
    return xs[best - 1], xs[n - best], _coverage(n, best)


def _coverage(n: int, j: int) -> float:
    """P(x_(j) <= median <= x_(n+1-j)) for a continuous distribution."""
    tail = sum(math.comb(n, i) for i in range(j)) / 2**n
    return 1 - 2 * tail


@dataclass(frozen=True)
class Comparison:
    """Configuration b against a (e.g. optimized against standard): the Hodges-Lehmann
    estimate of the ratio b / a with its CI, the two-sided p-value, and the verdict."""

    n_a: int
    n_b: int
    ratio: float | None
    low: float | None
    high: float | None
    p: float | None
    verdict: str  # 'faster', 'slower', 'within noise', or 'no verdict (...)'

    @property
    def significant(self) -> bool:
        return self.verdict in ("faster", "slower")


def compare(a, b, confidence: float = CONFIDENCE) -> Comparison:
    """Whether the times ``b`` differ from ``a``: Mann-Whitney U on the log times (so the
    shift is a ratio), Hodges-Lehmann ratio and its CI from the same U distribution."""
    m, n = len(a), len(b)
    if m == 0 or n == 0:
        raise ValueError("a comparison needs runs on both sides")
    if any(float(v) <= 0 for v in (*a, *b)):
        # a time of 0 (a run too short for its clock) has no ratio
        return Comparison(m, n, None, None, None, None, "no verdict (a time of 0)")
    xa = [math.log(float(v)) for v in a]
    xb = [math.log(float(v)) for v in b]
    diffs = sorted(y - x for y in xb for x in xa)
    ratio = math.exp(statistics.median(diffs))
    if m < 2 or n < 2:
        return Comparison(m, n, ratio, None, None, None, "no verdict (n=1)")
    u = sum(1.0 if y > x else 0.5 if y == x else 0.0 for y in xb for x in xa)
    p = _p_two_sided(u, m, n, xa + xb)
    k = _ci_rank(m, n, 1 - confidence)
    low = high = None
    if k is not None:
        low, high = math.exp(diffs[k - 1]), math.exp(diffs[m * n - k])
    alpha = 1 - confidence
    if p > alpha:
        verdict = "within noise"
    else:
        verdict = "slower" if ratio > 1 else "faster"
    return Comparison(m, n, ratio, low, high, p, verdict)


@cache
def _u_counts(m: int, n: int) -> tuple[int, ...]:
    """Number of arrangements of m and n values giving each U = 0 .. m n (no ties)."""
    # f(m, n, u) = f(m - 1, n, u - n) + f(m, n - 1, u)
    if m == 0 or n == 0:
        return (1,)
    left, right = _u_counts(m - 1, n), _u_counts(m, n - 1)
    out = [0] * (m * n + 1)
    for u, c in enumerate(left):
        out[u + n] += c
    for u, c in enumerate(right):
        out[u] += c
    return tuple(out)


def _p_two_sided(u: float, m: int, n: int, pooled: list[float]) -> float:
    tied = len(set(pooled)) < len(pooled)
    if m <= EXACT_LIMIT and n <= EXACT_LIMIT and not tied:
        counts = _u_counts(m, n)
        total = math.comb(m + n, m)
        extreme = min(u, m * n - u)
        tail = sum(counts[: int(math.floor(extreme)) + 1]) / total
        return min(1.0, 2 * tail)
    # Normal approximation with tie correction and continuity correction.
    mean = m * n / 2
    ties = {}
    for v in pooled:
        ties[v] = ties.get(v, 0) + 1
    big_n = m + n
    correction = sum(t**3 - t for t in ties.values()) / (big_n * (big_n - 1))
    var = m * n / 12 * ((big_n + 1) - correction)
    if var <= 0:
        return 1.0
    z = (abs(u - mean) - 0.5) / math.sqrt(var)
    return min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2)))


def _ci_rank(m: int, n: int, alpha: float) -> int | None:
    """k such that [D_(k), D_(mn+1-k)] of the sorted pairwise differences is the
    Hodges-Lehmann interval: the largest k with P(U < k) <= alpha / 2. None when even the
    extreme differences do not reach the confidence (too few repeats)."""
    if m <= EXACT_LIMIT and n <= EXACT_LIMIT:
        counts = _u_counts(m, n)
        total = math.comb(m + n, m)
        k, below = 0, 0
        while k < len(counts) and (below + counts[k]) / total <= alpha / 2:
            below += counts[k]
            k += 1
        return k if k >= 1 else None
    z = statistics.NormalDist().inv_cdf(1 - alpha / 2)
    k = int(math.floor(m * n / 2 - z * math.sqrt(m * n * (m + n + 1) / 12)))
    return k if k >= 1 else None


@dataclass(frozen=True)
class Choice:
    """A tuning stage's decision among settings: the one chosen, the fastest by median, and
    the comparison of the fastest with the default (None where one of them is missing or
    they are the same)."""

    chosen: object
    fastest: object
    comparison: Comparison | None
    reason: str


def choose(default, times: dict) -> Choice:
    """The setting a stage keeps: the fastest (by median) when it is significantly faster
    than ``default``, else ``default``. ``times``: setting -> its repeats' times. Without a
    measured default, the fastest, saying so."""
    medians = {k: statistics.median(v) for k, v in times.items() if v}
    if not medians:
        raise ValueError("no setting has a time")
    fastest = min(medians, key=lambda k: (medians[k], str(k)))
    if default not in medians:
        return Choice(fastest, fastest, None, "the fastest; the default was not measured")
    if fastest == default:
        return Choice(default, fastest, None, "the default is the fastest")
    c = compare(times[default], times[fastest])
    if c.verdict == "faster":
        return Choice(fastest, fastest, c, f"significantly faster than the default, p={c.p:.2g}")
    if c.p is None:
        why = "one run a side" if c.verdict == "no verdict (n=1)" else c.verdict
    else:
        why = f"p={c.p:.2g}"
    return Choice(
        default, fastest, c, f"default kept: the fastest is not significantly faster, {why}"
    )


# -- between sessions ------------------------------------------------------------------------
#
# A baseline of k sessions holds each session's median. The variance that matters between a
# baseline and a later session is the session-to-session one (another allocation, another day,
# another node's thermal state), which the repeats of one session do not see. A new session's
# median is judged against the session medians as a new draw from their distribution: on the
# log scale, d = log(M) - mean(log m_i) over s * sqrt(1 + 1/k), with s the medians' standard
# deviation, is Student-t with k - 1 degrees of freedom (a prediction interval).


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    tiny, c, d = 1e-300, 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _ibeta(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _betacf(a, b, x) / a
    return 1.0 - math.exp(log_front) * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with ``df`` degrees of freedom."""
    if math.isinf(t):
        return 1.0 if t > 0 else 0.0
    tail = 0.5 * _ibeta(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The t with P(T <= t) = p (bisection: the CDF is monotone)."""
    low, high = -1e3, 1e3
    for _ in range(200):
        mid = (low + high) / 2
        if t_cdf(mid, df) < p:
            low = mid
        else:
            high = mid
    return (low + high) / 2


#: Below this relative spread, session medians are taken as identical (a deterministic
#: measure): the spread is floored here so that the test stays defined.
SPREAD_FLOOR = 1e-6


@dataclass(frozen=True)
class Drift:
    """A session's median M against k earlier sessions' medians: the ratio M / their
    geometric mean, its 95 % prediction interval, the one-sided p of "larger", the
    between-session spread (a relative standard deviation) and the smallest increase this
    baseline detects at the 5 % level (one-sided)."""

    ratio: float
    low: float
    high: float
    p_larger: float
    spread: float
    detectable: float
    sessions: int
    #: The standard error of the log ratio and its degrees of freedom (k - 1).
    scale: float = 0.0
    dof: int = 0

    def significant_from(self, alpha: float) -> float:
        """The smallest increase (a ratio - 1) significant at one-sided level ``alpha``."""
        return math.expm1(t_quantile(1 - alpha, self.dof) * self.scale)


def drift(session_medians, median, confidence: float = CONFIDENCE) -> Drift:
    """``median`` (a new session's, or the medians of m new sessions judged together)
    against ``session_medians`` (3 at least, all > 0). The m sessions' geometric mean is
    compared, its variance s^2 / m: s is the baseline's spread alone (k - 1 degrees of
    freedom), since sessions run back to back to be judged would understate the drift between
    days; averaging them divides the drift's variance by m only where it is independent from
    one session to the next."""
    judged = [float(v) for v in (median if isinstance(median, (list, tuple)) else [median])]
    logs = [math.log(float(v)) for v in session_medians]
    k = len(logs)
    if k < 3 or not judged or min(judged) <= 0:
        raise ValueError("a drift needs 3 session medians at least and positive medians")
    mean = statistics.fmean(logs)
    s = max(statistics.stdev(logs), SPREAD_FLOOR)
    scale = s * math.sqrt(1 / len(judged) + 1 / k)
    d = statistics.fmean(math.log(v) for v in judged) - mean
    half = t_quantile(1 - (1 - confidence) / 2, k - 1) * scale
    return Drift(
        ratio=math.exp(d),
        low=math.exp(d - half),
        high=math.exp(d + half),
        p_larger=1 - t_cdf(d / scale, k - 1),
        spread=math.expm1(s),
        detectable=math.expm1(t_quantile(confidence, k - 1) * scale),
        sessions=k,
        scale=scale,
        dof=k - 1,
    )
