"""Numbers that cannot lie: every value is checked once where it is read, every run counts
once, and bad input ends in one line. The perflogs, latency rows and settings here are TEST
DATA written by the tests, in the layout ReFrame writes (sitekit/common.py); the property
tests (Hypothesis) generate any mix of valid, invalid and copied rows.
"""

import json
import math
import os
import re
import subprocess
import tempfile
from dataclasses import astuple
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import PYTHON, REPO, one_line, run_tool
from topofoam.reporting import analysis
from topofoam.reporting.build import build
from topofoam.results import p2p, perflog, references, stats, tuning
from topofoam.results.merge import group
from topofoam.results.stages import STAGES

COLUMNS = [
    "job_completion_time",
    "reframe version",
    "result",
    "system",
    "partition",
    "environ",
    "hashcode",
    "jobid",
    "job_completion_time_unix",
    "stage",
    "setting",
    "timing",
    "case",
    "size",
    "nodes",
    "ppn",
    "variant",
    "binding",
    "ucx",
    "coll",
    "ucx_inter",
    "defaults",
    "node_hour_price",
    "currency",
    "wall_value",
    "wall_unit",
    "node_hours_value",
    "node_hours_unit",
]
DEFAULTS = "ppn=36 binding=block ucx=auto coll=default ucx_inter=auto"


def row(i: int, **values) -> dict:
    """One run's row; ``i`` makes its identity (hash code, job id, completion time)."""
    out = {
        "job_completion_time": f"2026-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}",
        "reframe version": "reframe 4.10.4",
        "result": "pass",
        "system": "oci",
        "partition": "nps2",
        "environ": "esi2512_patched",
        "hashcode": f"{i:08x}",
        "jobid": str(1000 + i),
        "job_completion_time_unix": str(1795000000 + i),
        "stage": "intra1",
        "setting": "motorbike/small/1x36/standard/block/auto/default/auto",
        "timing": "measured",
        "case": "motorbike",
        "size": "small",
        "nodes": "1",
        "ppn": "36",
        "variant": "standard",
        "binding": "block",
        "ucx": "auto",
        "coll": "default",
        "ucx_inter": "auto",
        "defaults": DEFAULTS,
        "node_hour_price": "2.5",
        "currency": "EUR",
        "wall_value": "10.0",
        "wall_unit": "s",
        "node_hours_value": "",
        "node_hours_unit": "node-h",
    }
    out.update({k: str(v) for k, v in values.items()})
    if out["wall_value"] and not out["node_hours_value"]:
        try:
            hours = float(out["nodes"]) * float(out["wall_value"]) / 3600
            out["node_hours_value"] = repr(hours)
        except ValueError:
            pass
    return out


def line(r: dict) -> str:
    return "|".join(r[c] for c in COLUMNS)


def write(results: Path, check: str, rows: list[dict], partition="nps2") -> Path:
    path = results / "perflogs" / "oci" / partition / f"{check}.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(["|".join(COLUMNS), *map(line, rows)]) + "\n")
    return path


def logs_of(results: Path):
    return perflog.read_system(results / "perflogs" / "oci")


# -- values outside their domain reject their row, with the reason counted ---------------------


@pytest.mark.parametrize(
    "wall, reason",
    [
        ("nan", "wall is NaN"),
        ("NaN", "wall is NaN"),
        ("inf", "wall is infinite"),
        ("-inf", "wall is infinite"),
        ("-2.5", "wall is negative"),
        ("0", "wall is zero"),
        ("0.0", "wall is zero"),
        ("1e300", "wall is implausibly large"),
        ("fast", "wall is 'fast', not a number"),
    ],
)
def test_an_impossible_time_rejects_its_row(tmp_path, wall, reason):
    write(tmp_path, "Intra1Run", [row(1), row(2, wall_value=wall, node_hours_value="1")])
    logs = logs_of(tmp_path)
    assert [r["wall"] for r in logs.rows] == [10.0]
    assert [why for _, why in logs.rejected] == [reason]
    assert any(f"1 row(s) rejected: {reason} (1)" in n for n in logs.notes), logs.notes


@pytest.mark.parametrize(
    "column, text, reason",
    [
        ("nodes", "nan", "nodes is NaN, not a whole number"),
        ("nodes", "1.5", "nodes is 1.5, not a whole number"),
        ("nodes", "0", "nodes is zero, below 1"),
        ("nodes", "four", "nodes is 'four', not a whole number"),
        ("ppn", "-2", "ppn is negative, below 1"),
        ("ppn", "inf", "ppn is infinite, not a whole number"),
        ("node_hour_price", "-1", "node_hour_price is negative"),
        ("node_hour_price", "nan", "node_hour_price is NaN"),
    ],
)
def test_a_layout_or_price_outside_its_domain_rejects_its_row(tmp_path, column, text, reason):
    write(tmp_path, "Intra1Run", [row(1), row(2, **{column: text, "node_hours_value": "1"})])
    logs = logs_of(tmp_path)
    assert len(logs.rows) == 1 and [why for _, why in logs.rejected] == [reason]


@pytest.mark.parametrize(
    "metric, unit, text, kept",
    [
        ("allreduce", "calls", "-1", False),
        ("allreduce", "calls", "2.5", False),
        ("allreduce", "calls", "0", True),
        ("ClockTime", "s", "0", True),  # whole seconds: a short run reports 0
        ("ExecutionTime", "s", "0", False),
        ("rtt_1000", "us", "-0.4", False),
    ],
)
def test_each_metric_has_its_own_domain(tmp_path, metric, unit, text, kept):
    path = tmp_path / "perflogs" / "oci" / "nps2" / "Probe.log"
    path.parent.mkdir(parents=True)
    path.write_text(
        f"job_completion_time|result|hashcode|jobid|{metric}_value|{metric}_unit\n"
        f"2026-01-01T00:00:00|pass|abcd|1|{text}|{unit}\n"
    )
    logs = logs_of(tmp_path)
    assert (len(logs.rows) == 1) == kept, (logs.rows, logs.rejected)


def variants(results: Path, extra: list[dict] = ()) -> Path:
    """Five standard and five local+global runs (TEST DATA), plus ``extra`` rows."""
    rows = []
    for k, wall in enumerate((10.0, 10.2, 9.9, 10.1, 10.05)):
        rows.append(row(k, stage="variants", wall_value=wall))
    for k, wall in enumerate((8.0, 8.1, 7.9, 8.2, 8.05)):
        rows.append(
            row(
                10 + k,
                stage="variants",
                variant="local+global",
                binding="rankmap",
                setting="motorbike/small/1x36/local+global/rankmap/auto/default/auto",
                wall_value=wall,
            )
        )
    return write(results, "VariantRun", rows + list(extra))


def test_the_report_counts_what_it_rejected_and_prints_no_nan(tmp_path):
    bad = [
        row(50, stage="variants", wall_value="nan"),
        row(51, stage="variants", wall_value="nan"),
        row(52, stage="variants", wall_value="-3", variant="local+global", binding="rankmap"),
    ]
    variants(tmp_path, bad)
    report = build(tmp_path, "oci", images=False, say=lambda _: None)
    md = report.markdown.read_text()
    assert "3 row(s) rejected: wall is NaN (2), wall is negative (1)" in md
    # every number the report shows is finite (the rejection notes name the NaN they left out)
    shown = re.sub(r"rejected: [^;|]*", "", md)
    assert not re.search(r"\b(nan|inf|infinity)\b", shown, re.I), "a non-finite number"
    assert "runs collected" in md and "10 runs collected" in md
    runs = report.table.read_text()
    assert "nan" not in runs.lower() and "-3" not in runs


def test_tuning_and_references_never_take_a_rejected_row(tmp_path):
    rows = [row(k, wall_value=10 + k / 10) for k in range(5)]
    # an impossible 'fastest' setting: its times are negative or NaN
    rows += [
        row(20 + k, ppn=8, wall_value=w, setting="motorbike/small/1x8/standard")
        for k, w in enumerate(("-5", "-5", "nan", "-5", "-5"))
    ]
    write(tmp_path, "Intra1Run", rows)
    out = tmp_path / "tuning.json"
    done = run_tool(
        "topofoam.results.tuning", str(tmp_path / "perflogs" / "oci"), "--out", str(out)
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text())["nps2"]["ppn"] == 36
    assert "5 row(s) rejected: wall is negative (4), wall is NaN (1)" in done.stderr
    refs = tmp_path / "refs.yaml"
    done = run_tool(
        "topofoam.results.references", str(tmp_path / "perflogs" / "oci"), "--out", str(refs)
    )
    assert done.returncode == 0, done.stderr
    values = [
        v["wall"][0]
        for entry in yaml.safe_load(refs.read_text()).values()
        for part, settings_ in entry.items()
        if part != "$index"
        for v in settings_.values()
    ]
    assert values and all(math.isfinite(v) and v > 0 for v in values), values
    assert "rejected" in done.stderr


def pingpong(results: Path, lines: list[str], columns="result|level|rtt_1000_value|rtt_1000_unit"):
    path = results / "perflogs" / "oci" / "nps2" / "PingPongRun.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join([columns, *lines]) + "\n")


def test_the_latency_table_says_which_rows_it_left_out(tmp_path):
    pingpong(
        tmp_path,
        [
            "pass|intra_numa_node|0.4|us",
            "pass|inter_socket|0.9|us",  # no such hardware level
            "pass|intra_numa_node|nan|us",
        ],
    )
    out = tmp_path / "p2p.csv"
    done = run_tool("topofoam.results.p2p", str(tmp_path / "perflogs" / "oci"), "--out", str(out))
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert "name no known hardware level ('inter_socket': 1" in done.stderr
    assert "1 row(s) rejected: rtt_1000 is NaN (1)" in done.stderr
    assert out.read_text().splitlines()[-1] == "oci:nps2,1000,0.4,,,"


def test_a_latency_perflog_without_a_level_column(tmp_path):
    pingpong(tmp_path, ["pass|0.4|us"], columns="result|rtt_1000_value|rtt_1000_unit")
    done = run_tool(
        "topofoam.results.p2p", str(tmp_path / "perflogs" / "oci"), "--out", str(tmp_path / "p.csv")
    )
    one_line(done, 2, r"^p2p: no passed PingPongRun rows under .* -- run")
    assert "name no known hardware level (none: 1" in done.stderr


def test_tuning_from_perflogs_without_the_columns_it_decides(tmp_path):
    path = tmp_path / "perflogs" / "oci" / "nps2" / "Intra1Run.log"
    path.parent.mkdir(parents=True)
    path.write_text("result|stage|wall_value|wall_unit\npass|intra1|3.0|s\n")
    done = run_tool(
        "topofoam.results.tuning",
        str(tmp_path / "perflogs" / "oci"),
        "--out",
        str(tmp_path / "t.json"),
    )
    one_line(done, 2, r"^tuning: no passed intra1/intra2/inter1 runs under")
    assert "nps2 intra1: 1 row(s) without ppn" in done.stderr


# -- every run counts once ------------------------------------------------------------------


def decrease_cells(results: Path) -> list[tuple]:
    logs = logs_of(results)
    groups = group(logs.rows, set(logs.units))
    return [
        (d.label, d.comparison.n_a, d.comparison.n_b, d.comparison.verdict, d.percent)
        for d in analysis.decreases(groups)
    ]


def test_a_copied_row_counts_once(tmp_path):
    path = variants(tmp_path)
    before = decrease_cells(tmp_path)
    text = path.read_text().splitlines()
    path.write_text("\n".join(text + text[1:] + text[6:]) + "\n")  # logs concatenated
    after = decrease_cells(tmp_path)
    assert after == before and before[0][1:3] == (5, 5)
    assert logs_of(tmp_path).merged == 15


def test_copies_never_make_a_setting_significantly_faster(tmp_path):
    """Two runs a side are within noise; the same two runs copied five times are still two."""
    rows = [row(k, wall_value=w) for k, w in enumerate((10.0, 10.4))]
    rows += [
        row(10 + k, ppn=18, wall_value=w, setting="motorbike/small/1x18/standard")
        for k, w in enumerate((9.6, 9.9))
    ]
    write(tmp_path, "Intra1Run", rows * 5)
    out = tmp_path / "tuning.json"
    done = run_tool(
        "topofoam.results.tuning", str(tmp_path / "perflogs" / "oci"), "--out", str(out)
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text())["nps2"]["ppn"] == 36, done.stdout
    assert "16 copied row(s) of runs already read were merged" in done.stderr


def test_two_different_rows_of_one_run_are_both_rejected(tmp_path):
    write(tmp_path, "Intra1Run", [row(1), row(1, wall_value=3.0), row(2)])
    logs = logs_of(tmp_path)
    assert [r["hashcode"] for r in logs.rows] == [f"{2:08x}"]
    assert [why for _, why in logs.rejected] == ["one run logged twice with different values"] * 2


# -- settings variables, host lists, output paths, archives -----------------------------------


@pytest.mark.parametrize(
    "name, value, pattern",
    [
        (
            "TOPOFOAM_COMPARE",
            "al",
            r"TOPOFOAM_COMPARE='al' is not a value it takes -- give one of all",
        ),
        ("TOPOFOAM_REPEATS", "0", r"TOPOFOAM_REPEATS='0' is not a whole number 1 or more"),
        ("TOPOFOAM_REPEATS", "five", r"TOPOFOAM_REPEATS='five' is not a whole number"),
        (
            "TOPOFOAM_VALIDATE_REPEATS",
            "2",
            r"TOPOFOAM_VALIDATE_REPEATS='2' is not a whole number 3 to 100",
        ),
        (
            "TOPOFOAM_VALIDATE_REPEATS",
            "100000",
            r"TOPOFOAM_VALIDATE_REPEATS='100000' is not a whole number 3 to 100",
        ),
        (
            "TOPOFOAM_EMU_SLURMCTLD_PORT",
            "65535",
            r"TOPOFOAM_EMU_SLURMCTLD_PORT='65535' is not a whole number 1 to 65534",
        ),
        (
            "TOPOFOAM_SLURMCTLD_PORT",
            "abc",
            r"TOPOFOAM_SLURMCTLD_PORT='abc' is not a whole number 1 to 65535",
        ),
        (
            "TOPOFOAM_SLURMD_PORT",
            "70000",
            r"TOPOFOAM_SLURMD_PORT='70000' is not a whole number 1 to 65535",
        ),
        (
            "TOPOFOAM_EMU_SUBNET",
            "8.8.8",
            r"TOPOFOAM_EMU_SUBNET='8.8.8' is not the first three octets of a private /24",
        ),
        (
            "TOPOFOAM_EMU_SUBNET",
            "10.77",
            r"TOPOFOAM_EMU_SUBNET='10.77' is not the first three octets",
        ),
    ],
)
def test_a_setting_outside_its_domain_is_refused_not_ignored(name, value, pattern):
    env = dict(os.environ, **{name: value})
    one_line(run_tool("localsite.cli", "run", env=env), 2, "^bench: " + pattern)


@pytest.mark.parametrize("verb", [["run"], ["slurm", "start"]])
def test_one_port_for_both_slurm_daemons_is_refused(verb):
    env = dict(os.environ, TOPOFOAM_SLURMCTLD_PORT="7000", TOPOFOAM_SLURMD_PORT="7000")
    one_line(
        run_tool("localsite.cli", *verb, env=env),
        2,
        r"^bench: TOPOFOAM_SLURMCTLD_PORT and TOPOFOAM_SLURMD_PORT are both 7000: slurmctld and "
        r"slurmd cannot listen on one port -- give them two",
    )


def reframe(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(Path(PYTHON).parent / "reframe"), *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_local_site_file_refuses_a_bad_setting_too():
    env = dict(os.environ, TOPOFOAM_COMPARE="everything")
    done = reframe("-C", "site-configs/local.py", "-c", "reframe/p2p.py", "-l", env=env)
    assert done.returncode != 0
    assert (
        "site-configs/local.py: TOPOFOAM_COMPARE='everything' is not a value it takes"
        in done.stdout + done.stderr
    )


@pytest.mark.parametrize(
    "hosts, pattern",
    [
        ("a,,b", r"--hosts holds an empty host name -- give host names separated by single commas"),
        ("a,b,a", r"--hosts names a more than once, which would put two nodes' ranks on one host"),
        ("a b,c", r"--hosts holds the host name 'a b' -- give host names"),
    ],
)
def test_host_lists_with_empty_or_repeated_names(tmp_path, hosts, pattern):
    done = run_tool(
        "rankmap", "map", "grid:4x4", "--topology", "vsc5", "--nodes", "2",
        "--hosts", hosts, "--out", str(tmp_path / "m"),
    )  # fmt: skip
    one_line(done, 2, "^rankmap: " + pattern)
    assert not (tmp_path / "m").exists()


def test_output_paths_of_the_wrong_kind(tmp_path):
    variants(tmp_path / "results")
    taken = tmp_path / "file"
    taken.write_text("keep me\n")
    one_line(
        run_tool("topofoam.reporting", "--results", str(tmp_path / "results"), "--out", str(taken)),
        2,
        r"^report: --out: .*file is a file, not a folder -- name a folder$",
    )
    assert taken.read_text() == "keep me\n"
    folder = tmp_path / "folder"
    folder.mkdir()
    one_line(
        run_tool(
            "topofoam.results.tuning",
            str(tmp_path / "results" / "perflogs" / "oci"),
            "--out",
            str(folder),
        ),
        2,
        r"^tuning: --out .*folder is a folder -- give the tuning file's path",
    )


def test_a_tuning_file_with_a_malformed_inter_node_preset(tmp_path):
    bad = tmp_path / "tuning.json"
    bad.write_text(json.dumps({"zen3_0512": {"ucx_inter": {"two": "auto"}}}))
    env = dict(os.environ, TOPOFOAM_TUNING=str(bad))
    done = reframe(
        "-C", "site-configs/vsc5.py", "--system", "vsc5", "-c", "reframe/sweep.py", "-l", env=env
    )
    text = done.stdout + done.stderr
    assert "Traceback" not in text
    assert "ucx_inter {'two': 'auto'} is not an object keyed by node count" in text


def test_another_systems_tuning_file_is_refused_not_ignored(tmp_path):
    """OCI's tuning file given to VSC-5: its settings would have been silently ignored."""
    oci = tmp_path / "oci-tuning.json"
    oci.write_text(json.dumps({"nps2": {"ppn": 36}}))
    env = dict(os.environ, TOPOFOAM_TUNING=str(oci))
    done = reframe(
        "-C", "site-configs/vsc5.py", "--system", "vsc5", "-c", "reframe/sweep.py", "-l", env=env
    )
    text = done.stdout + done.stderr
    assert done.returncode != 0 and "Traceback" not in text
    assert (
        f"TOPOFOAM_TUNING={oci} holds partition(s) nps2, which vsc5 does not have (its: "
        "zen3_0512) -- give vsc5's own tuning file, or unset TOPOFOAM_TUNING"
    ) in text


def test_a_truncated_source_archive_leaves_no_cache_entry(tmp_path):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "OpenFOAM-12.tar.gz").write_bytes(b"\x1f\x8b\x08\x00" + b"\0" * 4000)
    env = dict(os.environ, TOPOFOAM_SOURCES=str(mirror), TOPOFOAM_CACHE=str(tmp_path / "cache"))
    one_line(
        run_tool("localsite.cli", "build", "org12", env=env),
        1,
        r"^bench: the OpenFOAM-12 \(Foundation\) build did not start: .*OpenFOAM-12\.tar\.gz "
        r"is not a usable OpenFOAM-12\.tar\.gz \(the line above says why\) -- replace it",
    )
    assert list((tmp_path / "cache" / "openfoam").iterdir()) == []


def test_a_source_archive_of_another_release_is_named(tmp_path):
    kit = Path(os.environ.get("TOPOFOAM_SOURCES", "")) / "OpenFOAM-v2512.tar.gz"
    if not kit.is_file():
        pytest.skip("needs OpenFOAM-v2512.tar.gz in TOPOFOAM_SOURCES (CI: ../shared/offline)")
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "OpenFOAM-12.tar.gz").symlink_to(kit)
    env = dict(os.environ, TOPOFOAM_SOURCES=str(mirror), TOPOFOAM_CACHE=str(tmp_path / "cache"))
    done = run_tool("localsite.cli", "build", "org12", env=env)
    one_line(done, 1, r"build did not start")
    assert "holds OpenFOAM v2512, not 12 -- put the OpenFOAM-12 source archive there" in done.stderr
    assert list((tmp_path / "cache" / "openfoam").iterdir()) == []


def test_a_truncated_spack_kit_leaves_no_half_unpacked_spack(tmp_path):
    kit = tmp_path / "kit"
    kit.mkdir()
    for name in ("spack-1.1.1.tar.gz", "spack-packages-releases-v2026.06.tar.gz"):
        (kit / name).write_bytes(b"\x1f\x8b\x08\x00" + b"\0" * 4000)
    env = dict(os.environ, TOPOFOAM_SPACK_KIT=str(kit), TOPOFOAM_CACHE=str(tmp_path / "cache"))
    one_line(
        run_tool("localsite.cli", "spack", "--version", env=env),
        1,
        r"^bench: .*spack-1\.1\.1\.tar\.gz cannot be unpacked \(.*\): damaged or cut short -- "
        r"copy it into TOPOFOAM_SPACK_KIT again",
    )
    assert list((tmp_path / "cache" / "spack").iterdir()) == []


# -- properties: any mix of valid, invalid and copied rows --------------------------------------

TEXTS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["", "None", "fast", "0", "-0.0", "1e400", "nan", "-inf"]),
    st.floats(min_value=0.01, max_value=1e4).map(repr),
)
RUN = st.fixed_dictionaries(
    {
        "ppn": st.sampled_from(["8", "18", "36", "0", "nan", "1.5", "x"]),
        "wall_value": TEXTS,
        "result": st.sampled_from(["pass", "pass", "pass", "fail"]),
        "stage": st.sampled_from(["intra1", "variants"]),
        "variant": st.sampled_from(["standard", "local+global"]),
    }
)


def outputs(results: Path) -> dict:
    """Everything the results layer computes from the perflogs: per configuration its
    summary, the comparisons, tuning's choices, the references."""
    logs = logs_of(results)
    groups = group(logs.rows, set(logs.units))
    summaries = {}
    for g in groups:
        s = g.summary("wall")
        if s is not None:
            summaries[str(g.key)] = (s.n, s.median, s.low, s.high, s.spread)
    compared = [
        (d.label, d.percent, d.low, d.high, d.comparison and d.comparison.p)
        for d in analysis.decreases(groups)
    ]
    staged = [r for r in logs.rows if r.get("stage") == "intra1"]
    chosen = {str(k): v for k, v in tuning.best(staged, *STAGES["intra1"]).items()}
    walls = defaultdict_walls(logs.rows)
    refs = references.references(walls, 0.1) if walls else {}
    return {"summaries": summaries, "compared": compared, "chosen": chosen, "refs": refs}


def defaultdict_walls(rows):
    walls: dict = {}
    for r in perflog.passed(rows, "wall"):
        if r.get("setting"):
            walls.setdefault("Intra1Run", {}).setdefault("oci:nps2", {}).setdefault(
                r["setting"], []
            ).append(r["wall"])
    return walls


def numbers(value):
    """Every number inside ``value`` (nested tuples, lists, dicts)."""
    if isinstance(value, bool):
        return
    if isinstance(value, int | float):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from numbers(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from numbers(v)


def perflog_of(runs: list[dict], copies: list[int]) -> list[dict]:
    rows = [
        row(i, setting=f"motorbike/small/1x{r['ppn']}/{r['variant']}", **r)
        for i, r in enumerate(runs)
    ]
    return rows + [rows[i % len(rows)] for i in copies] if rows else rows


@settings(
    max_examples=100, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(runs=st.lists(RUN, max_size=14), copies=st.lists(st.integers(0, 40), max_size=10))
def test_any_rows_give_finite_numbers_and_copies_change_nothing(runs, copies):
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp)
        write(results, "Intra1Run", perflog_of(runs, []))
        once = outputs(results)
        write(results, "Intra1Run", perflog_of(runs, copies))
        copied = outputs(results)
    assert copied == once
    for value in numbers(once):
        assert math.isfinite(value), once


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    a=st.lists(st.floats(min_value=1e-3, max_value=1e6), min_size=1, max_size=12),
    b=st.lists(st.floats(min_value=1e-3, max_value=1e6), min_size=1, max_size=12),
)
def test_statistics_of_valid_times_are_finite(a, b):
    s = stats.summarise(a)
    assert all(math.isfinite(v) for v in (s.median, s.spread) if v is not None)
    c = stats.compare(a, b)
    assert all(math.isfinite(v) for v in (c.ratio, c.low, c.high, c.p) if v is not None)
    choice = stats.choose("a", {"a": a, "b": b})
    assert choice.chosen in ("a", "b")


def test_a_grid_too_large_to_hold_is_refused():
    done = run_tool(
        "rankmap", "analyze", "grid:100000x100000", "--topology", "vsc5", "--nodes", "1"
    )
    one_line(done, 2, r"^rankmap: grid:100000x100000 has 10,000,000,000 ranks, more than the")


FIELD = st.one_of(
    st.sampled_from(
        [
            "",
            "pass",
            "fail",
            "nan",
            "inf",
            "-1",
            "0",
            "1",
            "2.5",
            "36",
            "None",
            "variants",
            "intra1",
            "cases",
            "standard",
            "local+global",
            "block",
            "rankmap",
            "measured",
        ]
    ),  # fmt: skip
    # any text a file can hold (lone surrogates cannot be written as UTF-8)
    st.text(
        alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="|\n\r"),
        max_size=8,
    ),
)
HEADERS = st.lists(
    st.sampled_from(
        ["result", "nodes", "ppn", "stage", "setting", "level", "hashcode", "jobid", "case",
         "wall_value", "wall_unit", "rtt_1000_value", "rtt_1000_unit", "_value", "x_unit",
         "node_hour_price", "variant", "binding", "timing", "defaults", "partition"]
    ),
    min_size=1,
    max_size=12,
    unique=True,
)  # fmt: skip


@settings(
    max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(header=HEADERS, data=st.data())
def test_any_perflog_text_is_read_without_an_exception(header, data):
    """Whatever a perflog holds (any columns, any field text), every tool reads it without an
    exception, and every number it computes is finite."""
    width = st.integers(len(header) - 1, len(header) + 1)
    lines = data.draw(
        st.lists(width.flatmap(lambda n: st.lists(FIELD, min_size=n, max_size=n)), max_size=8)
    )
    with tempfile.TemporaryDirectory() as tmp:
        logs = Path(tmp) / "perflogs" / "oci"
        for check in ("Intra1Run", "PingPongRun"):
            path = logs / "nps2" / f"{check}.log"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("\n".join(["|".join(header), *map("|".join, lines)]) + "\n")
        read = perflog.read_system(logs)
        groups = group(read.rows, set(read.units))
        found = [astuple(s) for g in groups for m in read.units if (s := g.summary(m))]
        found += [d.percent for d in analysis.decreases(groups)]
        for points in analysis.series(groups).values():
            found += [(p.wall, p.node_hours, p.efficiency) for p in points]
            best = analysis.cost_optimal(points)
            found += [best.node_hours] if best else []
        found += [r.speedup for r in analysis.stages(groups)]
        found += list(analysis.noise_floor(groups).values())
        said, _ = tuning.update({}, logs)
        walls, _ = references.baseline(logs)
        table = p2p.table(logs, [])
    for value in numbers([found, walls, table]):
        assert math.isfinite(value)
    assert isinstance(said, list)


@pytest.mark.parametrize(
    "text, pattern",
    [
        ("VariantRun: {$index: [$partition, setting], 'oci:nps2': {s1: {wall: [.nan, null, 0.1, s]}}}",
         r"VariantRun on oci:nps2, s1: the reference wall is \[nan, None, 0\.1, 's'\], not \[value > 0"),
        ("VariantRun: {'oci:nps2': {s1: {wall: [-3, null, 0.1, s]}}}", r"the reference wall is \[-3,"),
        ("VariantRun: {'oci:nps2': {s1: {wall: fast}}}", r"the reference wall is 'fast'"),
        ("VariantRun: [1, 2", r"cannot be read as YAML"),
        ("- 1\n- 2\n", r"is not a references file"),
    ],
)  # fmt: skip
def test_a_references_file_with_impossible_values_is_refused(tmp_path, text, pattern):
    path = tmp_path / "oci.yaml"
    path.write_text(text + "\n")
    assert re.search(pattern, references.problem(path) or "")


def test_references_written_by_the_tool_are_accepted(tmp_path):
    variants(tmp_path)
    out = tmp_path / "refs.yaml"
    done = run_tool(
        "topofoam.results.references", str(tmp_path / "perflogs" / "oci"), "--out", str(out)
    )
    assert done.returncode == 0, done.stderr
    assert references.problem(out) is None


def test_a_perflog_with_bytes_that_are_not_text(tmp_path):
    path = tmp_path / "perflogs" / "oci" / "nps2" / "Intra1Run.log"
    path.parent.mkdir(parents=True)
    path.write_bytes(
        b"result|hashcode|jobid|wall_value|wall_unit\npass|a|1|\xff\xfe|s\npass|b|2|3.5|s\n"
    )
    logs = logs_of(tmp_path)
    assert [r["wall"] for r in logs.rows] == [3.5]
    assert [why for _, why in logs.rejected] == ["wall is '\ufffd\ufffd', not a number"]
