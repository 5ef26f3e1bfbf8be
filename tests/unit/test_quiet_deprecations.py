"""topofoam.checks.quiet_deprecations: ReFrame's deprecation warnings skip their stack walk only where
ReFrame suppresses them, and still warn everywhere else."""

import inspect
import warnings

import pytest
import reframe.core.fields
import reframe.core.variables
import reframe.core.warnings as rfm_warnings

from topofoam.checks import quiet_deprecations


def test_installed_where_reframe_calls_it():
    for module in (rfm_warnings, reframe.core.fields, reframe.core.variables):
        assert module.user_deprecation_warning is quiet_deprecations.user_deprecation_warning


def test_a_suppressed_warning_walks_no_stack(monkeypatch):
    walked = []
    monkeypatch.setattr(inspect, "stack", lambda *a, **k: walked.append(1) or [])
    with rfm_warnings.suppress_deprecations(), warnings.catch_warnings(record=True) as seen:
        rfm_warnings.user_deprecation_warning("old name")
    assert walked == [] and seen == []


def test_an_unsuppressed_warning_still_warns():
    with pytest.warns(rfm_warnings.ReframeDeprecationWarning, match="old name"):
        rfm_warnings.user_deprecation_warning("old name")
