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
"""

from __future__ import annotations

import math

#: Units whose values are times or time-like costs: above zero.
TIME_UNITS = {"s", "ms", "us", "ns", "min", "h", "s/step", "node-h"}
#: Units of rates and normalised times (the figures of merit, topofoam.results.merit): above zero.
RATE_UNITS = {"cells/s", "core-s/cell"}
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
