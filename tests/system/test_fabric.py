"""The emulated fabric's costs, measured back: on the emulated cluster with a fabric profile
(TOPOFOAM_FABRIC=vsc5x100: VSC-5's inter-node costs of seed 000 Table 2, 100 times dearer),
the p2p check measures round trips and bandwidth near what was set, and every perflog row
and the report say which profile the links had. A name that is no profile stops the run
before anything starts."""

from conftest import FABRIC_PROFILE as PROFILE
from conftest import bench_cli, needs_root, run_env
from topofoam.config import fabric
from topofoam.results import perflog

pytestmark = needs_root


def bench_emu(results, profile, *args):
    return bench_cli("run", "--partition", "emu", *args, env=run_env(results, profile))


def test_the_p2p_check_measures_the_profile_back(emu_p2p):
    set_ = fabric.profile(PROFILE)
    rows = perflog.read_system(emu_p2p / "perflogs" / "local", checks=("PingPongRun",)).rows
    assert rows and {r["fabric"] for r in rows} == {set_.label()}
    row = rows[-1]
    for scalars in (10, 1000):
        one_way = set_.latency_us + 8 * scalars / set_.mbytes
        measured = row[f"rtt_{scalars}"]
        # What is set is in every round trip (a latency not applied fails here); the link's
        # own round trip and the machine's load come on top, so no upper bound is asserted on
        # this wall-clock figure: that each message gets exactly one L, not two, is the
        # interposer's own account's test (tests/integration/test_fabric_interposer.py).
        assert measured >= 2 * one_way, (scalars, measured, one_way)
    # tc's token bucket caps the link: more than its rate means it was not applied (load can
    # only lower the figure, so only the cap is asserted).
    assert 0 < row["bandwidth"] <= 1.1 * set_.mbytes, (row["bandwidth"], set_.mbytes)
    assert row["allreduce_latency"] >= set_.latency_us
    report = (emu_p2p / "report" / "local" / "report.md").read_text()
    assert f"emu's runs with links costing {set_.label()}" in report


def test_a_name_that_is_no_profile_stops_the_run_in_one_line(tmp_path):
    done = bench_emu(tmp_path, "vsc5x1")
    assert done.returncode != 0
    lines = (done.stdout + done.stderr).strip().splitlines()
    assert len(lines) == 1 and "TOPOFOAM_FABRIC='vsc5x1'" in lines[0], lines
    assert "choose a scale from" in lines[0] and "Traceback" not in done.stderr
    assert not (tmp_path / "perflogs").exists()
