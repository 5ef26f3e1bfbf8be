"""Sizes: a named size of a case, or the nearest mesh to a requested cell count."""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from cases.catalog import CASES, Case, Size
from cases.errors import CaseError
from cases.template import blockmesh_cells, render

_COUNT = re.compile(r"^(\d+(?:\.\d+)?)([kKmMgG]?)$")
_FACTOR = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9}


def get_case(name: str) -> Case:
    try:
        return CASES[name]
    except KeyError:
        raise CaseError(
            f"unknown case '{name}' -- choose from {', '.join(CASES)} (cases/catalog.py)"
        ) from None


@dataclass(frozen=True)
class Resolved:
    """The size a request resolved to: its name (or the cell count asked for) and the mesh."""

    label: str
    size: Size
    requested_cells: int | None = None


def background_cells(case: Case, params: dict) -> int:
    """Cells in the blockMesh of ``params``, counted from the rendered blockMeshDict."""
    return _cells(case.name, tuple(sorted(params.items())))


@lru_cache(maxsize=4096)
def _cells(name: str, items: tuple) -> int:
    case = CASES[name]
    with tempfile.TemporaryDirectory(prefix="topofoam-size-") as tmp:
        render(case.template, case.variant, dict(items), Path(tmp))
        return blockmesh_cells(Path(tmp))


def parse_cells(text: str) -> int | None:
    """'2M', '500k', '123456' -> a cell count; None if ``text`` is not a count."""
    m = _COUNT.match(str(text).strip())
    if not m:
        return None
    return round(float(m.group(1)) * _FACTOR[m.group(2).lower()])


def resolve(case: Case, size: str | int) -> Resolved:
    """A named size of ``case`` or, for a cell count, the nearest mesh of its family."""
    if isinstance(size, str) and size in case.sizes:
        return Resolved(size, case.sizes[size])
    target = size if isinstance(size, int) else parse_cells(size)
    names = ", ".join(case.sizes)
    if target is None:
        raise CaseError(
            f"unknown size '{size}' for {case.name} -- use one of {names} "
            f"or a cell count such as 250k or 2M"
        )
    if case.family is None:
        raise CaseError(
            f"{case.name} takes named sizes only ({names}): its final cell count "
            f"comes from {case.mesher}, so a count cannot be aimed at"
        )
    lo, hi = case.k_range
    smallest, largest = (background_cells(case, case.family(k)) for k in (lo, hi))
    if not smallest <= target <= largest:
        raise CaseError(
            f"{case.name} cannot be made with {target:,} cells: its meshes span "
            f"{smallest:,} to {largest:,} cells -- ask for a count in that range "
            f"or a named size ({names})"
        )
    # Cell counts grow with k: bisect for the first k at or above the target, then take the
    # nearer of it and its predecessor.
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if background_cells(case, case.family(mid)) < target:
            lo = mid
        else:
            hi = mid
    best = min((lo, hi), key=lambda k: abs(background_cells(case, case.family(k)) - target))
    return Resolved(f"{target}", case.size_for_k(best), requested_cells=target)
