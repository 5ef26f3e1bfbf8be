"""The judgement: each expectation against a session's measurements, with false alarms
controlled across all of them, and the verdict.

Per expectation, in the direction where a ratio above 1 is worse (time / expected time; for
rates, expected rate / rate):

- against a baseline's samples: the two-sided Mann-Whitney U test and the Hodges-Lehmann
  ratio with its 95 % CI (topofoam.results.stats), its p-value made one-sided for "worse";
- against one published value: a sign test of "the median is worse than value x (1 +
  margin)", and the 95 % CI of the median.

The one-sided p-values of all expectations in the verdict are adjusted by Holm's step-down
method (the family-wise error rate stays at 5 %: one verdict, one chance of a false alarm).
Then:

- FAIL          significantly worse (Holm) AND worse than the margin (the ratio's estimate);
- PASS          not FAIL, and the CI shows it no worse than the margin (its upper end within);
- INCONCLUSIVE  neither: the noise is too wide to judge the margin, or too few repeats.

Faster is never a failure; a significant improvement is reported beside PASS.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from dataclasses import dataclass

from topofoam.results import stats, values
from topofoam.validation.expectations import Expectation, ExpectationsError
from topofoam.validation.sessions import Key, Session

ALPHA = 1 - stats.CONFIDENCE
PASS, FAIL, INCONCLUSIVE = stats.PASS, stats.FAIL, stats.INCONCLUSIVE

METHOD = (
    "Each expectation is tested one-sided for 'worse' (against a baseline's repeats: "
    "Mann-Whitney U with the Hodges-Lehmann ratio and its 95 % CI; against a published value: "
    "a sign test against value x (1 + margin)). The p-values of all expectations are adjusted "
    "by Holm's method, so that the whole verdict has at most a 5 % chance of a false alarm. "
    "FAIL: significantly worse after adjustment and worse than the margin. PASS: the 95 % CI "
    "shows it no worse than the margin. INCONCLUSIVE: neither (noise or too few repeats)."
)


@dataclass
class Judgement:
    key: Key
    status: str
    unit: str
    margin: float
    expected: str  # "2.31 us [2.28, 2.35] (n=8)" or "2.9 us (seed 000 Table 2)"
    measured: str
    ratio: float | None = None  # > 1: worse
    low: float | None = None
    high: float | None = None
    p: float | None = None  # one-sided, for "worse"
    p_adjusted: float | None = None
    reason: str = ""
    source: str = ""
    faster: bool = False
    #: What a ratio above 1 means: 'slower' (times) or 'lower' (rates).
    worse: str = "slower"
    #: The smallest worsening this line FAILs when it is the only one worse in its verdict
    #: (a ratio - 1, larger is worse): beyond the margin, and significant at the level
    #: Holm's first step asks of the verdict's m tests (ALPHA / m); None where the repeats
    #: are too few to tell.
    detectable: float | None = None
    #: The smallest worsening significant at a one-sided level (a function of it), from
    #: which ``judge`` sets ``detectable`` once it knows m.
    significant_from: object = dataclasses.field(default=None, repr=False, compare=False)
    #: Judged against a published value (indicative), not against this site's baseline.
    published: bool = False

    def line(self) -> str:
        """``<check> on <partition>: <what> expected <x>, measured <y> (n=..), p=..``."""
        k = self.key
        what = f"{k.metric} of {k.setting}" if k.setting not in ("", "-") else k.metric
        head = f"{self.status}: {k.check} on {k.partition}: {what} expected {self.expected}, measured {self.measured}"
        if self.ratio is not None:
            head += f"; {self.change()} (margin {self.allowed()})"
        if self.p_adjusted is not None:
            head += f", p={_p(self.p_adjusted)} (Holm)"
        if self.detectable is not None:
            head += f", detects from {self.as_change(1 + self.detectable)}"
        return head + (f": {self.reason}" if self.reason else "")

    def allowed(self) -> str:
        """The margin as the change it allows, read as ``change()`` reads: a time '+10 %',
        a rate '-23 %' (the judgement's limit is the ratio 1 + margin either way)."""
        return self.as_change(1 + self.margin)

    def as_change(self, ratio: float) -> str:
        """An oriented ratio (above 1 is worse) as the change it is: a time's '+10 %', a
        rate's '-9.1 %'."""
        return _pct(ratio if self.worse == "slower" else 1 / ratio)

    def change(self) -> str:
        """The measured change as it reads: time '+19.4 % [+12.2 %, +29.3 %]' (slower is
        +), rate 'rate -28.2 % [...]' (a lower rate is -)."""
        if self.worse == "slower":
            ratio, low, high, word = self.ratio, self.low, self.high, "time"
        else:  # the ratio is expected / measured rate: measured / expected is its inverse
            ratio, word = 1 / self.ratio, "rate"
            low, high = (1 / self.high, 1 / self.low) if self.low is not None else (None, None)
        ci = f" [{_pct(low)}, {_pct(high)}]" if low is not None else ""
        return f"{word} {_pct(ratio)}{ci}"

    def as_dict(self) -> dict:
        return {
            **self.key.as_dict(),
            "status": self.status,
            "unit": self.unit,
            "margin": self.margin,
            "allowed": self.allowed(),
            "expected": self.expected,
            "measured": self.measured,
            "ratio": self.ratio,
            "change": self.change() if self.ratio is not None else None,
            "ratio_ci": [self.low, self.high] if self.low is not None else None,
            "p_one_sided": self.p,
            "p_holm": self.p_adjusted,
            "faster": self.faster,
            "reason": self.reason,
            "source": self.source,
            "detectable": self.as_change(1 + self.detectable) if self.detectable else None,
        }


def _pct(ratio: float | None) -> str:
    if ratio is None or not math.isfinite(ratio):
        return "?"
    return f"{(ratio - 1) * 100:+.1f} %"


def _p(p: float) -> str:
    return f"{p:.2g}" if p >= 0.001 else f"{p:.1e}"


def fmt(x: float) -> str:
    return f"{x:.3g}" if abs(x) < 1000 else f"{x:,.0f}"


def describe(values, unit: str) -> str:
    s = stats.summarise(values)
    ci = f" [{fmt(s.low)}, {fmt(s.high)}]" if s.low is not None else ""
    return f"{fmt(s.median)} {unit}{ci} (n={s.n})"


def _oriented(values, way: str) -> list[float]:
    """Values where larger is worse: times as they are, rates inverted."""
    return [float(v) for v in values] if way == "lower" else [1 / float(v) for v in values]


def _one(e: Expectation, measured: list[float], medians: list[float] = ()) -> Judgement:
    """``measured``: the judged repeats; ``medians``: each judged session's median, where
    several sessions are judged together (sessions.together)."""
    said = describe(measured, e.unit) + (f", {len(medians)} sessions" if medians else "")
    j = Judgement(e.key, INCONCLUSIVE, e.unit, e.margin, "", said, source=e.source)
    j.worse = "slower" if e.better == "lower" else "lower"
    x = _oriented(measured, e.better)
    if e.sessions:
        k = len(e.sessions)
        judged = _oriented(medians, e.better) if medians else statistics.median(x)
        d = stats.drift(_oriented(e.sessions, e.better), judged)
        j.expected = (
            f"{fmt(statistics.median(e.sessions))} {e.unit} (median of {k} sessions, "
            f"session-to-session spread {d.spread * 100:.1f} %)"
        )
        j.ratio, j.low, j.high, j.p = d.ratio, d.low, d.high, d.p_larger
        j.faster = 1 - d.p_larger < ALPHA / 2
        j.significant_from = d.significant_from
    elif e.samples:
        j.expected = describe(e.samples, e.unit)
        c = stats.compare(_oriented(e.samples, e.better), x)
        j.ratio, j.low, j.high = c.ratio, c.low, c.high
        if c.p is not None:
            j.p = c.p / 2 if c.ratio > 1 else 1 - c.p / 2
        j.faster = c.verdict == "faster"
        samples = _oriented(e.samples, e.better)
        j.significant_from = lambda alpha: _detectable(samples, x, alpha)
    else:
        j.published = True
        j.expected = f"{fmt(e.value)} {e.unit} ({e.source})"
        reference = _oriented([e.value], e.better)[0]
        threshold = reference * (1 + e.margin)
        j.ratio = statistics.median(x) / reference
        ci = stats.median_ci(x)
        if ci:
            j.low, j.high = ci[0] / reference, ci[1] / reference
        if len(x) >= 2:
            above = sum(v > threshold for v in x)
            j.p = sum(math.comb(len(x), i) for i in range(above, len(x) + 1)) / 2 ** len(x)

            # Judged against value x (1 + margin): significant beyond that, not beyond 1.
            def beyond_margin(alpha, x=x, margin=e.margin):
                noise = _detectable(x, [], alpha)
                return None if noise is None else (1 + margin) * (1 + noise) - 1

            j.significant_from = beyond_margin
    return j


def _detectable(a: list[float], b: list[float], alpha: float | None = None) -> float | None:
    """The smallest worsening that would be significant (one-sided, at ``alpha``, ALPHA by
    default) between samples ``a`` and ``b`` of this spread, on the log scale: t(n - 2) x
    the pooled standard deviation x sqrt(1/n_a + 1/n_b); with ``b`` empty, of one sample's
    mean (sqrt(1/n_a)). None below 2 repeats a side."""
    alpha = ALPHA if alpha is None else alpha
    groups = [[math.log(v) for v in g] for g in (a, b) if g]
    if any(len(g) < 2 for g in groups):
        return None
    dof = sum(len(g) - 1 for g in groups)
    pooled = math.sqrt(sum((len(g) - 1) * statistics.variance(g) for g in groups) / dof)
    scale = math.sqrt(sum(1 / len(g) for g in groups))
    return math.expm1(stats.t_quantile(1 - alpha, dof) * pooled * scale)


def _in_unit(e: Expectation, unit: str) -> Expectation:
    """``e`` in the unit its measurement is in (an expectation in ms of a time measured in
    s is converted); ExpectationsError when the units are of two quantities."""
    if unit == e.unit:
        return e
    factor = values.convert(1.0, e.unit, unit)
    if factor is None:
        raise ExpectationsError(
            f"{e.key} is expected in {e.unit} but measured in {unit} -- correct the "
            f"expectation's unit (or record it again)"
        )
    return dataclasses.replace(
        e,
        unit=unit,
        samples=tuple(v * factor for v in e.samples),
        sessions=tuple(v * factor for v in e.sessions),
        value=None if e.value is None else e.value * factor,
    )


def holm(ps: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given."""
    m = len(ps)
    order = sorted(range(m), key=lambda i: ps[i])
    adjusted = [1.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * ps[i]))
        adjusted[i] = running
    return adjusted


#: What a metric's FAIL means on a node, where its name does not say it.
MEANS = {
    "wall_over_cpu": "time was taken from the ranks (another process on their cores, or a "
    "CPU limit on the job; topofoam.checks.oncore)",
}
#: A time, and the ratio of the same measurement that tells whether time was taken from its
#: ranks (topofoam.checks.oncore): a time that did not PASS beside a ratio that did moved
#: with the cores' own speed.
ON_CORE = {"wall": "wall_over_cpu"}


def decide(j: Judgement) -> None:
    limit = 1 + j.margin
    if j.p is None:
        j.status, j.reason = INCONCLUSIVE, "too few repeats to test (2 a side at least)"
        return
    if j.p_adjusted < ALPHA and j.ratio > limit:
        j.status, j.reason = FAIL, "significantly worse, beyond the margin"
        if j.key.metric in MEANS:
            j.reason += f": {MEANS[j.key.metric]}"
        return
    if j.high is not None and j.high <= limit:
        j.status = PASS
        if j.faster:
            j.reason = "significantly better"
        return
    j.status = INCONCLUSIVE
    if j.high is None:
        j.reason = "too few repeats for a confidence interval (3 at least)"
    elif j.p_adjusted < ALPHA:
        j.reason = "significantly worse, but the estimate is within the margin and its CI is not"
    else:
        reach = j.high if j.worse == "slower" else 1 / j.high
        j.reason = (
            f"the noise is too high to judge a {j.allowed()} margin (the CI reaches {_pct(reach)})"
        )


def _on_core(judgements: list[Judgement]) -> None:
    """A time that did not PASS while its ranks kept their cores (ON_CORE's ratio PASSed)
    says so: the cores themselves ran slower or faster, which the ratio cannot show."""
    status = {j.key: j.status for j in judgements}
    for j in judgements:
        pair = ON_CORE.get(j.key.metric)
        if j.status == PASS or pair is None:
            continue
        if status.get(dataclasses.replace(j.key, metric=pair)) == PASS:
            j.reason += (
                f"; the ranks kept their cores ({pair} PASS): the cores' own speed differs "
                f"from the baseline's"
            )


@dataclass
class Verdict:
    status: str
    judgements: list[Judgement]
    failed_cases: list[str]
    missing: list[Key]
    unexpected: list[Key]
    partitions: list[str]
    session: str

    def lines(self) -> list[str]:
        # One session's label, or several judged together ("3 sessions, A to B").
        what = self.session if " sessions, " in self.session else f"session {self.session}"
        head = f"Validation verdict: {self.status} ({what})"
        if self.unexpected:
            checks = sorted({k.check for k in self.unexpected})
            head += (
                f"; NOT JUDGED: {len(self.unexpected)} measurement(s) of {', '.join(checks)} "
                f"have no expectation"
            )
        if self.judgements and all(j.published for j in self.judgements):
            head += "; judged only against published values, which are indicative"
        out = [head]
        out += [f"FAIL: {case}" for case in self.failed_cases]
        out += [
            f"FAIL: {k}: expected but not measured -- the check did not run or no longer "
            f"exists: rerun it, or record the expectations again"
            for k in self.missing
        ]
        order = {FAIL: 0, INCONCLUSIVE: 1, PASS: 2}
        for j in sorted(self.judgements, key=lambda j: (order[j.status], str(j.key))):
            out.append(j.line())
        if self.unexpected:
            out.append(
                f"not judged: {len(self.unexpected)} measurement(s) without an expectation "
                f"(e.g. {self.unexpected[0]}); add them with 'record --add'"
            )
        return out

    def counts(self) -> dict[str, int]:
        c = {PASS: 0, FAIL: len(self.failed_cases) + len(self.missing), INCONCLUSIVE: 0}
        for j in self.judgements:
            c[j.status] += 1
        return c


def judge(expectations: list[Expectation], session: Session) -> Verdict:
    """``session`` against ``expectations``: only the partitions the session ran are judged
    (a validation of one partition says nothing of the others)."""
    ran = session.partitions
    wanted = [e for e in expectations if e.key.partition in ran]
    judgements, missing = [], []
    for e in wanted:
        if e.key in session.samples:
            judgements.append(
                _one(
                    _in_unit(e, session.units[e.key]),
                    session.samples[e.key],
                    session.medians.get(e.key, ()),
                )
            )
        else:
            missing.append(e.key)
    tested = [j for j in judgements if j.p is not None]
    for j, p in zip(tested, holm([j.p for j in tested])):
        j.p_adjusted = p
    for j in judgements:
        found = j.significant_from(ALPHA / max(1, len(tested))) if j.significant_from else None
        j.detectable = None if found is None else max(j.margin, found)
    for j in judgements:
        decide(j)
    _on_core(judgements)
    expected = {e.key for e in expectations}
    unexpected = sorted(k for k in session.samples if k not in expected)
    v = Verdict(
        INCONCLUSIVE,
        judgements,
        [*session.failed, *session.invalid],
        missing,
        unexpected,
        sorted(ran),
        session.label(),
    )
    counts = v.counts()
    if counts[FAIL]:
        v.status = FAIL
    elif counts[INCONCLUSIVE] or not judgements:
        v.status = INCONCLUSIVE
    else:
        v.status = PASS
    return v
