"""ReFrame's deprecation warnings, skipped where ReFrame itself suppresses them.

ReFrame 4.10's ``user_deprecation_warning`` walks ``inspect.stack()`` (reading the source
of every frame) before it looks whether the warning is wanted. Every test instance sets the
deprecated ``variables`` alias of ``env_vars`` while ReFrame injects its variables, inside
``suppress_deprecations()``: measured on the VSC-5 site's ``intra2`` dry run, 6,938 such
calls took 109 of its 146 s, and nothing was ever printed. This module makes the call return
at once when the innermost warnings filter is exactly the one ``suppress_deprecations``
installs; otherwise (a deprecated name used in a check of ours, say) ReFrame's own function
runs and warns as before (tests/unit/test_layout.py checks both).

Imported by topofoam.checks.fixtures, which every check imports.
"""

from __future__ import annotations

import warnings

import reframe.core.fields
import reframe.core.variables
import reframe.core.warnings as rfm_warnings

_original = rfm_warnings.user_deprecation_warning


def _suppressed() -> bool:
    """Whether the innermost warnings filter ignores ReFrame's deprecation warnings."""
    if not warnings.filters:
        return False
    action, message, category, module, _ = warnings.filters[0]
    return (
        action == "ignore"
        and message is None
        and module is None
        and category is rfm_warnings.ReframeDeprecationWarning
    )


def user_deprecation_warning(message, from_version="0.0.0"):
    if _suppressed():
        return
    _original(message, from_version)


def install() -> None:
    """Use the quick check in every ReFrame module that names the function (idempotent)."""
    for module in (rfm_warnings, reframe.core.fields, reframe.core.variables):
        if getattr(module, "user_deprecation_warning", None) is _original:
            module.user_deprecation_warning = user_deprecation_warning


install()
