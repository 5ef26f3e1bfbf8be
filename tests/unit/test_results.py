"""The results layer (topofoam/results): one perflog reader and one merge rule, used by the
report, the tuning file, the performance references and the latency table. Perflogs here
are TEST DATA written by the tests, in the layout ReFrame writes (sitekit/common.py)."""

import json
import subprocess

import pytest
import yaml

from conftest import PYTHON, REPO
from topofoam.results import perflog, stages
from topofoam.results.merge import group, robust

COLUMNS = [
    "job_completion_time",
    "reframe version",
    "result",
    "system",
    "partition",
    "environ",
    "stage",
    "setting",
    "timing",
    "nodes",
    "ppn",
    "binding",
    "ucx",
    "coll",
    "ucx_inter",
    "defaults",
    "wall_value",
    "wall_unit",
]


def line(**values) -> str:
    row = {
        "job_completion_time": "2026-01-01T00:00:00",
        "reframe version": "reframe 4.10.4",
        "result": "pass",
        "system": "oci",
        "partition": "nps2",
        "environ": "esi2512_patched",
        "stage": "intra1",
        "setting": "motorbike/small/1x36/standard/block/auto/default/-",
        "timing": "measured",
        "nodes": "1",
        "ppn": "36",
        "binding": "block",
        "ucx": "auto",
        "coll": "default",
        "ucx_inter": "auto",
        "defaults": "",
        "wall_value": "10.0",
        "wall_unit": "s",
    }
    row.update({k: str(v) for k, v in values.items()})
    return "|".join(row[c] for c in COLUMNS)


def write_log(results, check, lines, partition="nps2"):
    path = results / "perflogs" / "oci" / partition / f"{check}.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(["|".join(COLUMNS), *lines]) + "\n")
    return path


def test_rows_are_typed_and_units_kept(tmp_path):
    write_log(tmp_path, "Intra1Run", [line(ppn=18, wall_value=12.5)])
    logs = perflog.read_system(tmp_path / "perflogs" / "oci")
    [row] = logs.rows
    assert (row["ppn"], row["nodes"], row["wall"], row["check"]) == (18, 1, 12.5, "Intra1Run")
    assert (row["system"], row["partition"], row["time"]) == ("oci", "nps2", "2026-01-01T00:00:00")
    assert logs.units == {"wall": "s"} and logs.notes == []


def test_a_moved_results_folder_keeps_its_runs_output_folders(tmp_path):
    """Results copied off the cluster (a report written elsewhere): a run's logged output
    folder is found under the results folder the perflog is in now; one that is nowhere
    stays as logged."""
    logged = "/scratch/gone/results/reframe/output/oci/nps2/env/Intra1Run_ab12"
    moved = tmp_path / "reframe/output/oci/nps2/env/Intra1Run_ab12"
    moved.mkdir(parents=True)
    write_log(tmp_path, "Intra1Run", [line(ppn=18)], partition="nps2")
    path = tmp_path / "perflogs/oci/nps2/Intra1Run.log"
    text = path.read_text().splitlines()
    header = text[0] + "|outputdir"
    path.write_text("\n".join([header, text[1] + f"|{logged}", text[1].replace("|18|", "|36|")
                               + "|/scratch/gone/elsewhere/Intra1Run_cd34"]) + "\n")  # fmt: skip
    rows = perflog.read_system(tmp_path / "perflogs" / "oci").rows
    assert {r["ppn"]: r["outputdir"] for r in rows} == {
        18: str(moved),
        36: "/scratch/gone/elsewhere/Intra1Run_cd34",
    }


def test_what_is_not_a_run_is_never_a_row(tmp_path):
    """A line cut by a crash, the header repeated by concatenation (and the copy of a run
    it brings) and a --dry-run's pass without values are left out, each said once."""
    good = line(wall_value=12.7)
    cut = line(ppn=2, wall_value=1.0)[:-25]
    header = "|".join(COLUMNS)
    dry = line(ppn=4, wall_value="")
    path = write_log(tmp_path, "Intra1Run", [good, cut, header, good, dry, ""])
    logs = perflog.read_system(tmp_path / "perflogs" / "oci")
    assert [r["wall"] for r in logs.rows] == [12.7]
    assert logs.merged == 1
    assert logs.notes == [
        f"{path}: 1 line(s) do not match the header's {len(COLUMNS)} columns and were left "
        f"out (a line cut by a crash, or edited by hand)",
        f"{path}: the header line is repeated 1 time(s) inside the file (logs concatenated); "
        f"those lines were skipped",
        f"{path}: 1 passed row(s) without any measured value were left out (written by a "
        f"--dry-run, where nothing ran)",
        "1 copied row(s) of runs already read were merged: every run counts once (logs "
        "concatenated or copied)",
    ]


def test_a_failed_run_without_values_is_kept_as_a_failure(tmp_path):
    write_log(tmp_path, "Intra1Run", [line(result="fail", wall_value="")])
    [row] = perflog.read_system(tmp_path / "perflogs" / "oci").rows
    assert row["result"] == "fail" and row["wall"] is None


def test_foreign_files_and_older_column_sets(tmp_path):
    base = tmp_path / "perflogs" / "oci" / "nps2"
    base.mkdir(parents=True)
    (base / "Notes.log").write_text("some|thing\n1|2\n")
    (base / "Intra1Run.log.h0").write_text(
        "job_completion_time|result|ppn|wall_value\nt|pass|8|3\n"
    )
    (base / "README").write_text("not a perflog\n")
    logs = perflog.read_system(tmp_path / "perflogs" / "oci")
    assert [(r["check"], r["ppn"], r["wall"]) for r in logs.rows] == [("Intra1Run", 8, 3.0)]
    assert logs.notes == [
        f'{base / "Intra1Run.log.h0"}: no "environ" column; its rows are compared as one '
        f"environment (log with sitekit's perflog format, site-configs/sitekit/common.py, to "
        f"tell them apart)",
        f'{base / "Notes.log"}: no header line with a "result" column; file '
        f"skipped (not a perflog of this suite)",
    ]
    assert perflog.read_system(tmp_path / "nothing").notes == [
        f"no perflogs under {tmp_path / 'nothing'}"
    ]


def test_a_report_over_perflogs_without_environ_says_so(tmp_path):
    """Such rows once ended the report in a KeyError (issue 56); now a note says how they
    were taken."""
    from topofoam.reporting.build import build

    base = tmp_path / "perflogs" / "oci" / "nps2"
    base.mkdir(parents=True)
    (base / "Intra1Run.log").write_text(
        "job_completion_time|result|ppn|openfoam|wall_value|wall_unit\n"
        "2026-01-01T00:00:00|pass|8|v2512|3|s\n"
    )
    md = build(tmp_path, "oci", images=False, say=lambda _: None).markdown.read_text()
    assert 'Intra1Run.log: no "environ" column; its rows are compared as one environment' in md


@pytest.mark.parametrize(
    "values, merged",
    [
        ([3.0], 3.0),
        ([1.0, 9.0], 5.0),
        ([1.0, 2.0, 30.0], 2.0),  # the median: one outlier does not move it
        ([1.0, 2.0, 3.0, 4.0, 100.0], 3.0),
        ([10.0, 1.0, 2.0, 2.5, 4.0, 100.0], 3.25),
    ],
)
def test_the_one_merge_rule(values, merged):
    assert robust(values) == pytest.approx(merged)


def test_site_values_do_not_split_a_configuration():
    rows = [
        {
            "partition": "p",
            "check": "C",
            "stage": "cost",
            "nodes": 2,
            "wall": 1.0,
            "result": "pass",
            "node_hour_price": 0.5,
            "time": "1",
        },
        {
            "partition": "p",
            "check": "C",
            "stage": "cost",
            "nodes": 2,
            "wall": 2.0,
            "result": "pass",
            "node_hour_price": 0.6,
            "time": "2",
        },
    ]
    [g] = group(rows, {"wall"})
    assert g.value("wall") == 1.5 and g.first("node_hour_price") == 0.6


def test_defaults_column_round_trip():
    values = stages.defaults(
        {"ppn": [36, 18], "ucx": ["auto"], "coll": ["hcoll"], "ucx_inter": ["rc-128k"]}
    )
    assert stages.parse_defaults(stages.format_defaults(values)) == {
        k: str(v) for k, v in values.items()
    }
    assert stages.parse_defaults(None) == {}


def tool(*args):
    return subprocess.run(
        [PYTHON, "-m", *args], cwd=REPO, capture_output=True, text=True, timeout=120
    )


def test_tuning_never_picks_a_cut_or_dry_run_row(tmp_path):
    """The cut row's 1.0 s and the dry run's empty value must not make ppn 2 or 4 the best."""
    write_log(
        tmp_path,
        "Intra1Run",
        [
            line(ppn=36, wall_value=12.7),
            line(ppn=18, wall_value=14.0),
            line(ppn=2, wall_value=1.0)[:-10],
            line(ppn=4, wall_value=""),
        ],
    )
    out = tmp_path / "tuning.json"
    done = tool("topofoam.results.tuning", str(tmp_path / "perflogs" / "oci"), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text()) == {"nps2": {"ppn": 36}}
    assert done.stdout.splitlines()[0] == (
        "nps2 intra1: ppn=36 -- the fastest; the default was not measured"
    )
    assert "1 line(s) do not match the header" in done.stderr


def test_tuning_inter1_per_node_count(tmp_path):
    write_log(
        tmp_path,
        "Inter1Run",
        [
            line(stage="inter1", nodes=4, ucx_inter="auto", wall_value=5.0),
            line(stage="inter1", nodes=4, ucx_inter="ud-128k", wall_value=4.0),
            line(stage="inter1", nodes=2, ucx_inter="rc-128k", wall_value=7.0),
            line(stage="inter1", nodes=2, ucx_inter="auto", wall_value=6.0),
        ],
    )
    out = tmp_path / "tuning.json"
    assert (
        tool(
            "topofoam.results.tuning", str(tmp_path / "perflogs" / "oci"), "--out", str(out)
        ).returncode
        == 0
    )
    assert json.loads(out.read_text()) == {"nps2": {"ucx_inter": {"2": "auto", "4": "ud-128k"}}}


def test_references_merge_repeats_and_skip_what_is_not_a_run(tmp_path):
    setting = "motorbike/small/1x36/standard/block/auto/default/-"
    write_log(
        tmp_path,
        "VariantRun",
        [line(stage="variants", wall_value=w) for w in (10.0, 11.0, 12.0, 13.0, 50.0)]
        + [
            line(stage="variants", wall_value=1.0)[:-12],
            line(stage="variants", timing="emulated", wall_value=0.5),
        ],
    )
    out = tmp_path / "refs.yaml"
    done = tool(
        "topofoam.results.references", str(tmp_path / "perflogs" / "oci"), "--out", str(out)
    )
    assert done.returncode == 0, done.stderr
    refs = yaml.safe_load(out.read_text())
    assert refs["VariantRun"]["oci:nps2"][setting]["wall"] == [12.0, None, 0.1, "s"]


def test_p2p_table_from_pingpong_rows(tmp_path):
    cols = [
        "job_completion_time",
        "result",
        "system",
        "partition",
        "level",
        "stage",
        "rtt_10_value",
        "rtt_10_unit",
    ]
    path = tmp_path / "perflogs" / "oci" / "nps2" / "PingPongRun.log"
    path.parent.mkdir(parents=True)
    rows = [f"t|pass|oci|nps2|intra_numa_node|p2p|{v}|us" for v in (0.4, 0.5, 0.6)]
    rows += ["t|pass|oci|nps2|inter_numa_node|p2p|0.9|us", "t|pass|oci|nps2|inter_numa_node|p2p|"]
    path.write_text("\n".join(["|".join(cols), *rows]) + "\n")
    out = tmp_path / "p2p.csv"
    done = tool("topofoam.results.p2p", str(tmp_path / "perflogs" / "oci"), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert out.read_text().splitlines()[1:] == [
        "system,size,intra_numa_node,inter_numa_node,inter_numa_domain,inter_node",
        "oci:nps2,10,0.5,0.9,,",
    ]


def test_resume_leaves_out_what_passed_since_the_run_started(tmp_path):
    cols = ["job_completion_time", "result", "partition", "hashcode", "stage", "wall_value"]
    path = tmp_path / "perflogs" / "oci" / "nps2" / "Intra1Run.log"
    path.parent.mkdir(parents=True)
    rows = [
        "2026-01-01T09:00:00|pass|nps2|aaaa0000|intra1|1.0",  # an earlier run
        "2026-01-01T10:00:01|pass|nps2|bbbb1111|intra1|1.0",
        "2026-01-01T10:00:02|fail|nps2|cccc2222|intra1|",
        "2026-01-01T10:00:03|pass|nps2|dddd3333|intra1|1.0|cut",
    ]
    path.write_text("\n".join(["|".join(cols), *rows]) + "\n")
    done = tool(
        "topofoam.results.resume",
        str(tmp_path / "perflogs" / "oci"),
        "--since",
        "2026-01-01T10:00:00",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "-x /bbbb1111\n"
    assert done.stderr.startswith("resume: 1 test case(s) passed since 2026-01-01T10:00:00")
    bad = tool("topofoam.results.resume", str(tmp_path / "perflogs" / "oci"), "--since", "10:00")
    assert bad.returncode == 2 and "is not a time YYYY-MM-DDTHH:MM:SS" in bad.stderr


@pytest.mark.parametrize(
    "repeats, kept",
    [
        ((1.0,), 36),  # one run each: 18 looks faster, but nothing is significant
        ((0.98, 0.99, 1.0, 1.01, 1.02), 36),  # 2 % apart, 2 % noise: within noise
        ((0.995, 0.998, 1.0, 1.002, 1.005), 18),  # 10 % apart, tight: significant
    ],
)
def test_a_tuning_stage_keeps_the_default_without_a_significant_winner(tmp_path, repeats, kept):
    """TEST DATA: ppn 18 is faster than the default 36 by 2 % or 10 %."""
    defaults = "ppn=36 binding=block ucx=auto coll=default ucx_inter=auto"
    faster = 0.98 if len(repeats) != 5 or repeats[0] == 0.98 else 0.9
    write_log(
        tmp_path,
        "Intra1Run",
        [line(ppn=36, wall_value=10.0 * f, defaults=defaults) for f in repeats]
        + [line(ppn=18, wall_value=10.0 * faster * f, defaults=defaults) for f in repeats],
    )
    out = tmp_path / "tuning.json"
    done = tool("topofoam.results.tuning", str(tmp_path / "perflogs" / "oci"), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text()) == {"nps2": {"ppn": kept}}
    said = done.stdout.splitlines()[0]
    if kept == 36:
        assert said.startswith("nps2 intra1: ppn=36 -- default kept: the fastest is not")
    else:
        assert said == "nps2 intra1: ppn=18 -- significantly faster than the default, p=0.0079"
