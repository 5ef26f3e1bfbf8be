"""Fabric profiles (topofoam.config.fabric): a system's inter-node costs from seed 000 Table 2, scaled;
every name that is not a profile is one line naming TOPOFOAM_FABRIC and the fix."""

import csv

import numpy as np
import pytest

from topofoam.config import fabric, settings


def table_fit(system):
    """The same fit, computed independently: numpy's least squares over the table's rows."""
    with open(fabric.TABLE) as f:
        rows = [
            r
            for r in csv.DictReader(line for line in f if not line.startswith("#"))
            if r["system"] == system
        ]
    x = np.array([8 * int(r["size"]) for r in rows], float)
    y = np.array([float(r["inter_node"]) / 2 for r in rows])
    slope, intercept = np.polyfit(x, y, 1)
    return intercept, 1 / slope


@pytest.mark.parametrize("system,scale", [("vsc5", 100), ("hpc2", 100), ("vsc5", 40.5)])
def test_a_profile_is_the_systems_fit_scaled(system, scale):
    latency, bandwidth = table_fit(system)
    p = fabric.profile(f"{system}x{scale}")
    assert p.latency_us == pytest.approx(latency * scale, rel=1e-9)
    assert p.mbytes == pytest.approx(bandwidth / scale, rel=1e-9)
    # tc's rate is the same bandwidth in kbit/s
    assert int(p.tc_rate.removesuffix("kbit")) == pytest.approx(p.mbytes * 8000, abs=1)
    assert p.label().startswith(f"{system}x{scale} (L ")


def test_published_costs_the_fit_reproduces():
    """vsc5's inter-node row: 1.5 us one way and about 3 GB/s (the 10-scalar round trip is
    2.9 us, the 1,000-scalar one 8.0 us)."""
    latency, bandwidth = table_fit("vsc5")
    assert 1.3 < latency < 1.6 and 2500 < bandwidth < 3500


def test_none_is_no_profile(monkeypatch):
    assert fabric.profile("none") is None
    monkeypatch.delenv("TOPOFOAM_FABRIC", raising=False)
    assert fabric.from_environment() is None


@pytest.mark.parametrize(
    "name,says",
    [
        ("vsc5", "SYSTEMxSCALE"),
        ("vsc5x0", "SCALE > 0"),
        ("vsc5x-3", "SYSTEMxSCALE"),
        ("oci100", "SYSTEMxSCALE"),
        ("ocix100", "one of hpc2, vsc5"),
        ("VSC5x100", "SYSTEMxSCALE"),
        ("vsc5x100x2", "SYSTEMxSCALE"),
        ("vsc5x1", "choose a scale from 13 to 127"),  # 3 GB/s: beyond tc's faithful range
        ("vsc5x1000", "choose a scale from"),  # 3 MB/s: below it
    ],
)
def test_a_name_that_is_not_a_profile_is_refused_naming_the_fix(monkeypatch, name, says):
    monkeypatch.setenv("TOPOFOAM_FABRIC", name)
    with pytest.raises(settings.SettingError) as e:
        settings.check_all()
    assert f"TOPOFOAM_FABRIC={name!r}" in str(e.value) and says in str(e.value)
    assert "\n" not in str(e.value)
