"""The domain of every value a perflog row carries, checked once, where the row is read.

A value outside its domain makes its row invalid, with a reason ("wall is NaN"); the reader
(topofoam.results.perflog) keeps such rows out of every statistic and counts them by reason,
so that the report, the tuning file, the references and the latency table can say how many
rows they rejected and why. Nothing here guesses: a row is either what a run measured or it
is not used.

Domains:
  - every performance value: a finite number, at most LARGEST;
  - a time (unit s, us, ms, s/step, node-h ...): above zero, but for ZERO_OK, which a run
    may legitimately report as 0 (OpenFOAM's ClockTime is whole seconds; copies to shared
    storage take no time);
  - a figure of merit (cells/s, core-s/cell): above zero;
  - a count (unit calls): zero or more, whole;
  - columns that describe the layout (nodes, ppn, tasks, cells, steps): whole numbers >= 1;
  - the site's node-hour price: a finite number >= 0.

Units: a value logged in another unit of the same quantity (a wall time in ms, a bandwidth
in GB/s) is converted to the unit the suite reads that metric in (``reading_unit``: seconds,
but microseconds for round trips; MB/s; s/step), so that no reader takes milliseconds for
seconds; a unit of another quantity than the metric's (a rate on a round trip) is refused.
"""

from __future__ import annotations

import math

#: Units whose values are times or time-like costs: above zero.
TIME_UNITS = {"s", "ms", "us", "ns", "min", "h", "s/step", "node-h"}
#: Units of rates and normalised times (the figures of merit, topofoam.results.merit; x, a time
#: over another): above zero.
RATE_UNITS = {"cells/s", "core-s/cell", "x"}
#: Units whose values are event counts: zero or more, whole.
COUNT_UNITS = {"calls"}
#: Time metrics a run may report as exactly 0 (see the module's text).
ZERO_OK = {"ClockTime", "copies", "reconstruct"}
#: No measurement of this suite comes near this, in any unit; beyond it, sums overflow.
LARGEST = 1e12
#: Layout columns: whole numbers of at least 1.
WHOLE_POSITIVE = (
    "nodes",
    "ppn",
    "num_tasks",
    "num_tasks_per_node",
    "expected_cells",
    "expected_steps",
)
#: Whole numbers of at least 0.
WHOLE = ("write_every",)
#: Finite numbers of at least 0.
NON_NEGATIVE = ("node_hour_price",)


#: Units of one quantity, each as a multiple of the first: values convert within a family,
#: never across families. (Decimal prefixes, as ReFrame's and the checks' MB/s are.)
FAMILIES = (
    {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9, "min": 60.0, "h": 3600.0},
    {"s/step": 1.0, "ms/step": 1e-3, "us/step": 1e-6},
    {"MB/s": 1.0, "GB/s": 1e3, "kB/s": 1e-3, "B/s": 1e-6, "MiB/s": 1.048576, "GiB/s": 1073.741824},
)
#: Words in a metric's name that say which quantity it is (a latency is a time).
_TIME_WORDS = ("rtt", "latency", "wall", "time", "_us")
_RATE_WORDS = ("bandwidth", "mbps", "rate")


def family(unit: str) -> dict | None:
    return next((f for f in FAMILIES if unit in f), None)


def convert(value: float, unit: str, to: str) -> float | None:
    """``value`` in ``unit`` expressed in ``to``; None when the two are not units of one
    quantity (an empty unit is taken as ``to``: logs of checks that stated none)."""
    if unit == to or not unit:
        return value
    f = family(unit)
    if f is None or to not in f:
        return None
    return value * f[unit] / f[to]


def reading_unit(metric: str, unit: str) -> str:
    """The unit the suite reads ``metric`` in, given one it was logged in: seconds for
    times (microseconds for round trips and latencies, the checks' own), s/step, MB/s; an
    unknown unit is read as it is."""
    f = family(unit)
    if f is None:
        return unit
    first = next(iter(f))
    if first == "s" and any(w in metric.lower() for w in ("rtt", "latency", "_us")):
        return "us"
    return first


def unit_problem(metric: str, unit: str) -> str | None:
    """Why ``unit`` cannot be ``metric``'s (its name says a time and the unit is a rate, or
    the other way round), or None."""
    name = metric.lower()
    f = family(unit)
    if f is FAMILIES[2] and any(w in name for w in _TIME_WORDS) and "rate" not in name:
        return f"{metric} is a time, and {unit} is a rate"
    if f in (FAMILIES[0], FAMILIES[1]) and any(w in name for w in _RATE_WORDS):
        return f"{metric} is a rate, and {unit} is a time"
    return None


def describe(value: float) -> str:
    """How a bad number reads in a reason: NaN, infinite, negative, zero."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "infinite"
    if value < 0:
        return "negative"
    if value == 0:
        return "zero"
    return f"{value:g}"


def performance(metric: str, unit: str, value: float) -> str | None:
    """Why ``value`` of performance variable ``metric`` (in ``unit``) cannot be a
    measurement, or None when it can."""
    if not math.isfinite(value):
        return f"{metric} is {describe(value)}"
    if abs(value) > LARGEST:
        return f"{metric} is implausibly large"
    if unit in COUNT_UNITS:
        if value < 0:
            return f"{metric} is negative"
        if value != int(value):
            return f"{metric} is not a whole count"
        return None
    if unit in TIME_UNITS or unit in RATE_UNITS or metric.startswith("rtt_"):
        if value < 0:
            return f"{metric} is negative"
        if value == 0 and metric not in ZERO_OK:
            return f"{metric} is zero"
    return None


def column(key: str, text: str) -> tuple[object, str | None]:
    """A describing column's typed value, and why it is invalid (or None)."""
    if key in WHOLE_POSITIVE or key in WHOLE:
        least = 1 if key in WHOLE_POSITIVE else 0
        number = _float(text)
        if number is None:
            return text, f"{key} is {text!r}, not a whole number"
        if not math.isfinite(number) or number != int(number):
            return text, f"{key} is {describe(number)}, not a whole number"
        if number < least:
            return int(number), f"{key} is {describe(number)}, below {least}"
        return int(number), None
    if key in NON_NEGATIVE:
        number = _float(text)
        if number is None:
            return text, f"{key} is {text!r}, not a number"
        if not math.isfinite(number) or number < 0:
            return number, f"{key} is {describe(number)}"
        return number, None
    return text, None


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None
