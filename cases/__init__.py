"""The benchmark cases: templates in this folder, sized by one parameter, prepared (meshed,
renumbered, decomposed) and cached by ``prepare``; ``python -m cases`` is the CLI."""

from cases.catalog import CASES, Case, Check, Size
from cases.errors import CaseError
from cases.prepare import Prepared, Request, prepare
from cases.sizes import background_cells, resolve

__all__ = [
    "CASES",
    "Case",
    "CaseError",
    "Check",
    "Prepared",
    "Request",
    "Size",
    "background_cells",
    "prepare",
    "resolve",
]
