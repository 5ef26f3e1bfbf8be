"""Sanity of a solver run on a prepared case: it ended, did the planned steps, and the
physical checks of the case hold (continuity, Courant number, boundedness, conservation)."""

from __future__ import annotations

import math
import re

from cases.catalog import Check


def check_log(log: str, steps: int, checks: list[Check | dict]) -> list[str]:
    """What is wrong with a solver log, one line each; empty when the run is sane."""
    problems = []
    if not re.search(r"^End\s*$", log, re.M):
        problems.append("the solver did not reach 'End'")
    done = len(re.findall(r"^Time = ", log, re.M))
    if done != steps:
        problems.append(f"the solver did {done} time steps, the case asks for {steps}")
    for check in checks:
        check = check if isinstance(check, Check) else Check(**check)
        problem = evaluate(check, log)
        if problem:
            problems.append(problem)
    return problems


def evaluate(check: Check, log: str) -> str | None:
    """None if ``check`` holds on ``log``, otherwise why not."""
    values = [float(v) for v in re.findall(check.pattern, log, re.M)]
    if not values:
        return f"{check.name}: not in the log (pattern {check.pattern!r})"
    if any(math.isnan(v) or math.isinf(v) for v in values):
        return f"{check.name}: the solver logged nan or inf"
    if check.kind == "max":
        worst = max(values)
        if not worst <= check.bound:
            return f"{check.name}: {worst:g} exceeds {check.bound:g}"
    elif check.kind == "min":
        worst = min(values)
        if not worst >= check.bound:
            return f"{check.name}: {worst:g} is below {check.bound:g}"
    elif check.kind == "drift":
        first, last = values[0], values[-1]
        drift = abs(last - first) / abs(first) if first else abs(last - first)
        if not drift <= check.bound:
            return (
                f"{check.name}: {first:g} -> {last:g} is a drift of {drift:.3g}, "
                f"more than {check.bound:g}"
            )
    elif check.kind == "falls":
        first, last = values[0], values[-1]
        if not last <= check.bound * first:
            return (
                f"{check.name}: {first:g} -> {last:g}, it did not fall below "
                f"{check.bound:g} of its first value"
            )
    else:
        return f"{check.name}: unknown kind '{check.kind}' (max, min or drift)"
    return None
