"""The report from perflogs the tests write themselves: a synthetic 2-10 node cluster sweep
(TEST DATA, generated below, never measured) for the decrease, node-hour and cost-optimal
tables, and empty, partial and mixed-version perflogs for the partial report.

The report of a real local run is checked in test_sweep_local.py (it reuses that run)."""

import csv
import json
import re
import statistics
import subprocess

import pytest

from conftest import PYTHON, REPO
from topofoam.reporting import analysis, published
from topofoam.reporting.build import build
from topofoam.reporting.collect import collect
from topofoam.results import stats

# TEST DATA: solver seconds of a made-up cluster at 2..10 nodes. Node-seconds
# (nodes x seconds) fall to 840 at 6 nodes and rise after: the cost optimum is 6 nodes.
STANDARD = {2: 500, 3: 320, 4: 230, 5: 180, 6: 140, 7: 125, 8: 112, 9: 104, 10: 98}
#: The optimized variant's speed-up per node count (made up).
FASTER = {n: 1 - 0.02 * n for n in STANDARD}
#: Five repeats around each time, with an outlier each side (the median ignores them). The
#: spread is wide enough that the small gains at few nodes are within noise and the larger
#: ones at many nodes are not (the Mann-Whitney test on the very numbers decides).
REPEATS = (0.9, 0.99, 1.0, 1.01, 1.2)
HEADER = (
    "job_completion_time|reframe version|result|binding|case|coll|display_name|"
    "hashcode|job_completion_time_unix|nodes|outputdir|partition|ppn|setting|size|"
    "system|timing|ucx|ucx_inter|variant|stage|node_hour_price|currency|wall_value|"
    "wall_unit|node_hours_value|node_hours_unit"
)


def sweep_row(i, check_time, variant, binding, nodes, wall, result="pass", price="2.5"):
    setting = f"pitzDaily/large/{nodes}x128/{variant}/{binding}/auto/default/auto"
    values = [
        check_time,
        "reframe 4.10.4",
        result,
        binding,
        "pitzDaily",
        "default",
        f"VariantRun %variant={variant} %binding={binding}",
        f"{i:08x}",
        str(1795000000 + i),
        str(nodes),
        "",
        "zen3_0512",
        "128",
        setting,
        "large",
        "vsc5",
        "measured",
        "auto",
        "auto",
        variant,
        "variants",
        price,
        "EUR" if price else "",
        "" if wall is None else repr(wall),
        "s",
        "" if wall is None else repr(nodes * wall / 3600),
        "node-h",
    ]
    return "|".join(values)


def write_cluster_perflog(results):
    """A VariantRun perflog of standard (block) and local+global (rankmap) at 2..10 nodes,
    five repeats each, plus one repeat that failed sanity. TEST DATA."""
    lines, i = [HEADER], 0
    for nodes, t in STANDARD.items():
        for variant, binding, base in (
            ("standard", "block", t),
            ("local+global", "rankmap", t * FASTER[nodes]),
        ):
            for factor in REPEATS:
                i += 1
                lines.append(
                    sweep_row(
                        i,
                        f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}",
                        variant,
                        binding,
                        nodes,
                        base * factor,
                    )
                )
    lines.append(
        sweep_row(999, "2026-01-01T01:00:00", "local+global", "rankmap", 4, None, result="fail")
    )
    path = results / "perflogs" / "vsc5" / "zen3_0512" / "VariantRun.log"
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def merged(t):
    return statistics.median(t * f for f in REPEATS)


@pytest.fixture
def cluster_report(tmp_path):
    results = tmp_path / "results"
    write_cluster_perflog(results)
    report = build(results, "vsc5", images=False, say=lambda _: None)
    return report, report.markdown.read_text()


def table_after(markdown, caption):
    """The rows of the Markdown table under ``*caption*``, as lists of cells."""
    lines = markdown.split("\n")
    start = lines.index(f"*{caption}*") + 2
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip("|").split(" | ")])
    return rows


def test_decrease_table_of_a_cluster_sweep(cluster_report):
    """Seed 000 Table 4's form: 100 (1 - T_opt / T_std) per node count with its CI and n,
    a value only where the difference is significant, else 'within noise'; the published
    VSC-5 row beside it."""
    report, md = cluster_report
    rows = {r.nodes: r for r in analysis.decreases(report.groups)}
    assert sorted(rows) == list(STANDARD)
    table = table_after(md, "pitzDaily (large), 128 ranks per node, VariantRun on zen3_0512")
    header_nodes = [int(c.split()[0]) for c in table[0][1:]]
    assert header_nodes == list(STANDARD)
    opt = next(r for r in table if r[0] == "local+global, rankmap")
    verdicts = set()
    for cell, nodes in zip(opt[1:], header_nodes):
        std = [STANDARD[nodes] * f for f in REPEATS]
        ours = [STANDARD[nodes] * FASTER[nodes] * f for f in REPEATS]
        c = stats.compare(std, ours)
        verdicts.add(c.verdict)
        # the same relative repeats on both sides: the Hodges-Lehmann ratio is FASTER exactly
        assert rows[nodes].percent == pytest.approx(100 * (1 - FASTER[nodes]))
        assert rows[nodes].verdict == c.verdict
        failed = ", 1 failed" if nodes == 4 else ""
        if c.significant:
            want = f"{100 * (1 - FASTER[nodes]):+.1f} [{100 * (1 - c.high):+.1f}, "
            assert cell.startswith(want) and cell.endswith(f"(n=5/5{failed})"), (nodes, cell)
        else:
            assert cell == f"within noise (n=5/5{failed}, p={c.p:.2f})", (nodes, cell)
    assert verdicts == {"faster", "within noise"}  # the test data has both
    assert "fail" in md.split("## Runs that did not pass")[1].split("##")[0]
    published_row = next(r for r in table if "published" in r[0])
    pub = published.decrease("vsc5", "pitzDaily")
    assert published_row[1:] == [f"{pub[n]:+.1f}" if n in pub else "–" for n in header_nodes]
    assert "Mann-Whitney U test" in md and "Noise floor" in md


def test_node_hours_and_the_cost_optimum(cluster_report):
    """Node-hours = nodes x merged wall time; the cheapest node count is 6; the site's
    price turns node-hours into money."""
    report, md = cluster_report
    series = analysis.series(report.groups)
    std = next(ps for key, ps in series.items() if "standard" in key)
    for p in std:
        assert p.node_hours == pytest.approx(p.nodes * merged(STANDARD[p.nodes]) / 3600)
        assert p.efficiency == pytest.approx(
            2 * merged(STANDARD[2]) / (p.nodes * merged(STANDARD[p.nodes]))
        )
    assert analysis.cost_optimal(std).nodes == 6
    # the scaling section's table has the same caption: take the second one
    second = md.split("## Strong scaling")[1]
    table = table_after(second, "pitzDaily (large), 128 ranks per node, VariantRun on zen3_0512")
    row = next(r for r in table if r[0] == "standard, block")
    assert row[-1] == "6 node(s)"
    nh = 6 * merged(STANDARD[6]) / 3600
    assert f"{nh:.3g} node-h, {nh * 2.5:.3g} EUR" in row[1 + list(STANDARD).index(6)]
    cheapest = min(STANDARD, key=lambda n: n * merged(STANDARD[n] * FASTER[n]))
    assert f"Cost-optimal: local+global, rankmap on {cheapest} node(s)" in second


def test_the_tidy_table_has_a_row_per_run(cluster_report):
    report, _ = cluster_report
    with open(report.table, newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2 * len(STANDARD) * len(REPEATS) + 1
    assert {"system", "partition", "check", "result", "nodes", "variant", "wall"} <= set(rows[0])
    assert sum(r["result"] == "fail" for r in rows) == 1


def test_html_page_is_self_contained(cluster_report):
    report, md = cluster_report
    page = report.html.read_text()
    assert md.count("](figures/") == page.count('src="data:image/png;base64,') > 0
    assert 'src="figures' not in page


# -- what is missing or broken gives a partial report -------------------------------------


def run_cli(*args):
    return subprocess.run(
        [PYTHON, "-m", "topofoam.reporting", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_no_perflogs_is_one_line_and_exit_2(tmp_path):
    done = run_cli("--results", str(tmp_path))
    assert done.returncode == 2
    assert done.stderr.startswith("report: no perflogs under") and "Traceback" not in done.stderr
    done = run_cli("--results", str(tmp_path / "nowhere"))
    assert done.returncode == 2 and "is not a folder" in done.stderr


def test_empty_perflogs_give_a_report_that_says_so(tmp_path):
    (tmp_path / "perflogs" / "local" / "cpu").mkdir(parents=True)
    (tmp_path / "perflogs" / "local" / "cpu" / "VariantRun.log").write_text("")
    done = run_cli("--results", str(tmp_path), "--no-images")
    assert done.returncode == 0, done.stderr
    md = (tmp_path / "report" / "local" / "report.md").read_text()
    assert "0 runs collected" in md
    assert "no runtime decrease" in md and "no scaling data" in md
    assert "report: missing: no runtime decrease" in done.stdout


def test_partial_and_mixed_version_perflogs(tmp_path):
    """An older suite's file (.h0, fewer columns), a line cut by a crash, a file that is not
    a perflog and a broken run report: every readable run is in, the rest is noted."""
    results = tmp_path / "results"
    new = write_cluster_perflog(results)
    lines = new.read_text().splitlines()
    # the older version had no 'coll' column; its runs are others (ended a year before)
    drop = lines[0].split("|").index("coll")
    unix = lines[0].split("|").index("job_completion_time_unix")

    def older(line):
        cells = line.split("|")
        if cells[unix].isdigit():
            cells[unix] = str(int(cells[unix]) - 365 * 86400)
        return "|".join(c for i, c in enumerate(cells) if i != drop)

    old = [older(line) for line in lines[:11]]
    (new.parent / "VariantRun.log.h0").write_text("\n".join(old) + "\n")
    new.write_text("\n".join(lines) + "\n" + lines[5][:40] + "\n")  # cut by a crash
    (new.parent / "Intra1Run.log").write_text("not|a|perflog\n1|2|3\n")
    reports = results / "reframe" / "reports"
    reports.mkdir(parents=True)
    (reports / "broken.json").write_text('{"runs": ')
    coll = collect(results, "vsc5")
    assert len(coll.rows) == (len(lines) - 1) + 10
    assert sum("coll" not in r for r in coll.rows) == 10
    notes = "\n".join(coll.notes)
    assert "VariantRun.log: 1 line(s) do not match" in notes
    assert 'Intra1Run.log: no header line with a "result" column' in notes
    assert "broken.json: not a ReFrame run report" in notes
    report = build(results, "vsc5", images=False, say=lambda _: None)
    md = report.markdown.read_text()
    assert "## What this report lacks" in md and "do not match the header" in md
    assert "local+global, rankmap" in md


def test_failed_runs_from_run_reports_are_listed(tmp_path):
    """A run that failed before ReFrame logged it (only the run report has it) is a row,
    with its phase and reason; so is the reason of a failed perflog row."""
    results = tmp_path / "results"
    write_cluster_perflog(results)
    reports = results / "reframe" / "reports"
    reports.mkdir(parents=True)
    cases = [
        {
            "name": "VariantRun %variant=global %binding=block",
            "system": "vsc5",
            "partition": "zen3_0512",
            "result": "fail",
            "fail_phase": "setup",
            "fail_reason": "case error: no such case\nsecond line",
            "hashcode": "feedbeef",
            "job_completion_time_unix": None,
        },
        {
            "name": "VariantRun %variant=local+global %binding=rankmap",
            "system": "vsc5",
            "partition": "zen3_0512",
            "result": "fail",
            "fail_phase": "sanity",
            "fail_reason": "final fields differ",
            "hashcode": f"{999:08x}",
            "job_completion_time_unix": 1795000999,
        },
    ]
    (reports / "run.json").write_text(
        json.dumps(
            {"session_info": {"time_start_unix": 1767225600}, "runs": [{"testcases": cases}]}
        )
    )
    coll = collect(results, "vsc5")
    failed = [r for r in coll.rows if r["result"] != "pass"]
    assert len(failed) == 2
    reasons = {r["fail_phase"]: r["fail_reason"] for r in failed}
    assert reasons == {
        "setup": "case error: no such case second line",
        "sanity": "final fields differ",
    }
    md = build(results, "vsc5", images=False, say=lambda _: None).markdown.read_text()
    assert "2 run(s) failed" in md and "final fields differ" in md


def write_rows(path, header, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(["|".join(header)] + ["|".join(map(str, r)) for r in rows]) + "\n")


def test_oci_cost_run_beside_the_published_node_hours(tmp_path):
    """On OCI, the motorbike's node-hours sit beside seed 002's published ones, labelled.
    The measured times are TEST DATA."""
    results = tmp_path / "results"
    header = [
        "job_completion_time",
        "result",
        "case",
        "size",
        "nodes",
        "ppn",
        "variant",
        "binding",
        "ucx",
        "coll",
        "ucx_inter",
        "timing",
        "stage",
        "wall_value",
        "wall_unit",
    ]
    times = {1: 900.0, 2: 430.0, 4: 200.0, 8: 110.0}
    write_rows(
        results / "perflogs" / "oci" / "nps2" / "CostRun.log",
        header,
        [
            [
                f"2026-01-01T00:00:0{n}",
                "pass",
                "motorbike",
                "small",
                n,
                36,
                "standard",
                "cyclic",
                "auto",
                "hcoll",
                "auto",
                "measured",
                "cost",
                t,
                "s",
            ]
            for n, t in times.items()
        ],
    )
    md = build(results, "oci", images=False, say=lambda _: None).markdown.read_text()
    table = table_after(
        md.split("## Strong scaling")[1], "motorbike (small), 36 ranks per node, CostRun on nps2"
    )
    pub = published.node_seconds("oci")
    row = next(r for r in table if r[0].startswith("published (seed 002"))
    assert row[1:-1] == [f"{pub[n][0]:g} s, {pub[n][1] / 3600:.3g} node-h" for n in times]
    assert row[-1] == "8 node(s)"  # 916 node seconds, the fewest published
    measured = next(r for r in table if r[0] == "standard, cyclic")
    assert measured[-1] == "4 node(s)"  # 800 node-s, the fewest of the test data
    assert "Published (seed 002, OCI BM.Optimized3.36)" in md


@pytest.mark.parametrize("repeats", [(1.0,), (0.99, 1.0, 1.01, 0.995, 1.005)])
def test_stage_table_speedup_over_the_defaults(tmp_path, repeats):
    """intra2: the UCX/collectives pair the stage keeps and its speedup over the partition's
    defaults (its first presets, block), as each run logged them: with one run each no
    setting is significantly faster, so the defaults stay; with five, the fastest is.
    TEST DATA."""
    results = tmp_path / "results"
    header = [
        "job_completion_time",
        "result",
        "case",
        "size",
        "nodes",
        "ppn",
        "variant",
        "binding",
        "ucx",
        "coll",
        "ucx_inter",
        "timing",
        "stage",
        "defaults",
        "wall_value",
        "wall_unit",
    ]
    walls = {
        ("block", "auto", "default"): 10.0,
        ("block", "rndv16k", "default"): 8.0,
        ("cyclic", "auto", "default"): 9.0,
    }
    write_rows(
        results / "perflogs" / "vsc5" / "zen3_0512" / "Intra2Run.log",
        header,
        [
            [
                "2026-01-01T00:00:00",
                "pass",
                "motorbike",
                "small",
                1,
                128,
                "standard",
                b,
                u,
                c,
                "auto",
                "measured",
                "intra2",
                "ppn=128 binding=block ucx=auto coll=default ucx_inter=auto",
                t * f,
                "s",
            ]
            for (b, u, c), t in walls.items()
            for f in repeats
        ],
    )
    report = build(results, "vsc5", images=False, say=lambda _: None)
    [stage] = analysis.stages(report.groups)
    assert stage.fastest.get("ucx") == "rndv16k"
    if len(repeats) == 1:
        assert (stage.best.get("ucx"), stage.default.get("ucx")) == ("auto", "auto")
        assert stage.speedup == pytest.approx(1.0)
        assert stage.reason.startswith("default kept")
        md = report.markdown.read_text()
        assert (
            "| intra2 | zen3_0512 | 1 node | binding block, ucx auto, coll default | 10 | "
            "binding block, ucx auto, coll default | 10 | 1.000 | 3 | default kept: the "
            "fastest is not significantly faster, one run a side |"
        ) in md
        return
    assert (stage.best.get("ucx"), stage.default.get("ucx")) == ("rndv16k", "auto")
    assert stage.speedup == pytest.approx(10.0 / 8.0)
    md = report.markdown.read_text()
    assert (
        "| intra2 | zen3_0512 | 1 node | binding block, ucx rndv16k, coll default | 8 | "
        "binding block, ucx auto, coll default | 10 | 1.250 | 3 | significantly faster than "
        "the default, p=0.0079 |"
    ) in md


def test_the_summary_counts_runs_by_openfoam(tmp_path):
    """Runs of both flavours (TEST DATA rows) are counted per OpenFOAM, failed ones included
    (a performance check's row without any value is not a run: the reader leaves it out)."""
    header = [
        "job_completion_time", "reframe version", "result", "case", "display_name", "environ",
        "hashcode", "partition", "stage", "system", "openfoam", "wall_value", "wall_unit",
    ]  # fmt: skip
    rows = [
        ["2026-11-23T02:00:00", "reframe 4.10.4", "pass", "pitzDaily", "CaseRun",
         "openfoam-v1912", "a1", "cpu", "cases", "local", "esi v1912", "1.0", "s"],
        ["2026-11-23T02:00:01", "reframe 4.10.4", "pass", "pitzDaily", "CaseRun",
         "openfoam-org12", "a2", "cpu", "cases", "local", "org 12", "1.1", "s"],
        ["2026-11-23T02:00:02", "reframe 4.10.4", "fail", "cavity2D", "CaseRun",
         "openfoam-org12", "a3", "cpu", "cases", "local", "org 12", "1.2", "s"],
        ["2026-11-23T02:00:03", "reframe 4.10.4", "pass", "cavity2D", "PreparedCase",
         "openfoam-org12", "a4", "cpu", "", "local", "", "", ""],
    ]  # fmt: skip
    results = tmp_path / "results"
    write_rows(results / "perflogs" / "local" / "cpu" / "CaseRun.log", header, rows[:3])
    write_rows(results / "perflogs" / "local" / "cpu" / "PreparedCase.log", header, rows[3:])
    md = build(results, "local", images=False, say=lambda _: None).markdown.read_text()
    table = table_after(md, "Runs by OpenFOAM (esi: ESI's, org: the Foundation's)")
    assert table[0] == ["OpenFOAM", "environment", "runs", "passed"]
    assert table[2:] == [
        ["esi v1912", "openfoam-v1912", "1", "1"],
        ["org 12", "openfoam-org12", "2", "1"],
    ]


@pytest.mark.parametrize(
    "local_totals, cell",
    [
        # TEST DATA: node-local clearly faster than shared (30 s): a decrease with its CI.
        ((20.0, 20.5, 19.8, 20.2, 21.0), r"^\+3\d\.\d \[\+\d+\.\d, \+\d+\.\d\] \(n=5/5\)$"),
        # TEST DATA: the same times on both sides, shuffled: within noise, no number.
        ((30.3, 29.7, 30.1, 29.9, 30.0), r"^within noise \(n=5/5, p=\d\.\d\d\)$"),
    ],
)
def test_storage_local_against_shared_with_a_verdict(tmp_path, local_totals, cell):
    results = tmp_path / "results"
    header = [
        "job_completion_time",
        "result",
        "case",
        "size",
        "storage",
        "write_every",
        "stage",
        "ppn",
        "total_value",
        "total_unit",
    ]
    shared = (30.0, 30.2, 29.8, 30.1, 29.9)
    rows = []
    for storage, totals in (("shared", shared), ("local", local_totals)):
        for i, t in enumerate(totals):
            rows.append(
                [f"2026-01-01T00:0{i}:00", "pass", "motorbike", "ci", storage, 0, "storage", 2]
                + [t, "s"]
            )
    write_rows(results / "perflogs" / "vsc5" / "zen3_0512" / "StorageRun.log", header, rows)
    md = build(results, "vsc5", images=False, say=lambda _: None).markdown.read_text()
    lines = md.split("## Storage")[1].split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith("| partition"))
    table = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        table.append([c.strip() for c in line.strip("|").split(" | ")])
    by_storage = {r[2]: r for r in table}
    assert by_storage["shared"][-1] == ""
    assert by_storage["local"][-2] == "n=5"
    assert re.match(cell, by_storage["local"][-1]), by_storage["local"]


def kept_verdict(results, start, partitions, verdict, counts, judgements=()):
    """One session's verdict file as topofoam.validation keeps it (TEST DATA)."""
    folder = results / "validation" / "verdict-oci"
    folder.mkdir(parents=True, exist_ok=True)
    data = {
        "verdict": verdict,
        "session": f"{start} (abcdef01)",
        "partitions": partitions,
        "counts": dict(zip(("PASS", "FAIL", "INCONCLUSIVE"), counts)),
        "method": "TEST DATA",
        "failed_test_cases": [],
        "missing": [],
        "judgements": list(judgements),
    }
    (folder / f"{start}-abcdef01.json").write_text(json.dumps(data))


def judged(status, partition):
    return {
        "status": status,
        "check": "SolverValidation",
        "partition": partition,
        "setting": "laplacianFoam",
        "metric": "wall",
        "expected": "1 s",
        "measured": "1 s",
        "margin": 0.15,
    }


def test_the_verdict_section_shows_each_partitions_latest_judged_session(tmp_path):
    """A later validation of another partition, or a session that judged nothing, does not
    hide a partition's verdict (issue 56: the emulated screening's empty session had become
    the headline, and the CPU partition's FAIL was gone)."""
    from test_numbers import variants

    results = tmp_path / "results"
    variants(results)
    kept_verdict(results, "20261128T090000+0000", ["oci:nps2"], "PASS", (1, 0, 0),
                 [judged("PASS", "oci:nps2")])  # fmt: skip
    kept_verdict(results, "20261128T100000+0000", ["oci:nps2"], "FAIL", (0, 1, 0),
                 [judged("FAIL", "oci:nps2")])  # fmt: skip
    kept_verdict(results, "20261128T110000+0000", ["oci:nps1"], "PASS", (1, 0, 0),
                 [judged("PASS", "oci:nps1")])  # fmt: skip
    kept_verdict(results, "20261128T120000+0000", ["oci:emu"], "INCONCLUSIVE", (0, 0, 0))
    md = build(results, "oci", images=False, say=lambda _: None).markdown.read_text()
    section = md.split("## Validation verdict: ")[1].split("\n## ")[0]
    assert section.startswith("FAIL\n"), section[:200]  # the worst latest: nps2's
    rows = {ln.split("|")[1].strip(): ln for ln in section.splitlines() if ln.startswith("| oci:")}
    assert "FAIL" in rows["oci:nps2"] and "20261128T100000+0000" in rows["oci:nps2"]
    assert "PASS" in rows["oci:nps1"] and "20261128T110000+0000" in rows["oci:nps1"]
    assert "nothing judged" in rows["oci:emu"]
    assert "1 session(s) judged nothing" in section and "20261128T120000+0000" in section
    # The history: nps2's solver over its sessions, the FAIL marked as the first regressed.
    history = [ln for ln in section.splitlines() if ln.startswith("| SolverValidation on oci:nps2")]
    assert [("PASS" in ln, ln.rstrip("| ").endswith("first regressed")) for ln in history] == [
        (True, False),
        (False, True),
    ]
    # A newer passing session of nps2 makes it PASS, and the headline with it.
    kept_verdict(results, "20261128T130000+0000", ["oci:nps2"], "PASS", (1, 0, 0),
                 [judged("PASS", "oci:nps2")])  # fmt: skip
    md = build(results, "oci", images=False, say=lambda _: None).markdown.read_text()
    assert "## Validation verdict: PASS\n" in md


@pytest.mark.parametrize("runs", [3, {"a": 1}, [1, 2], [{"testcases": 5}]])
def test_a_run_report_whose_runs_are_not_runs_is_named_and_skipped(tmp_path, runs):
    from test_numbers import variants

    results = tmp_path / "results"
    variants(results)
    reports = results / "reframe" / "reports"
    reports.mkdir(parents=True)
    (reports / "odd.json").write_text(
        json.dumps({"runs": runs, "session_info": {"time_start_unix": 1}})
    )
    report = build(results, "oci", images=False, say=lambda _: None)
    assert report.collection.rows  # the perflogs' runs are all there
    if isinstance(runs, list) and all(isinstance(r, dict) for r in runs):
        return  # a list of runs whose test cases are not a list: nothing taken from them
    assert any("odd.json: not a ReFrame run report; skipped" in n for n in report.notes)


@pytest.mark.parametrize("content", ["[1, 2]", "{}", '{"partitions": "oci:nps2"}', "{not json"])
def test_a_verdict_file_that_is_not_a_verdict_is_named_not_a_traceback(tmp_path, content):
    from test_numbers import variants

    results = tmp_path / "results"
    variants(results)
    folder = results / "validation" / "verdict-oci"
    folder.mkdir(parents=True)
    (folder / "20261128T090000+0000-abcdef01.json").write_text(content)
    report = build(results, "oci", images=False, say=lambda _: None)
    md = report.markdown.read_text()
    assert "Validation verdict" not in md
    assert any("20261128T090000+0000-abcdef01.json" in n for n in report.notes), report.notes


def test_a_comparison_on_the_same_placement_is_marked(tmp_path):
    """rankmap's placement_used column: where rankmap ran block's placement (at 4 nodes in
    this TEST DATA), local+global vs standard compares the same placement and the cell says
    so; where it ran its own split, nothing is marked. A perflog without the column marks
    nothing (the cluster sweep above)."""
    results = tmp_path / "results"
    path = write_cluster_perflog(results)
    lines = path.read_text().splitlines()
    out = [lines[0] + "|placement_used"]
    for line in lines[1:]:
        cells = line.split("|")
        nodes, binding = cells[9], cells[3]
        if binding == "block":
            used = "block"
        elif nodes == "4":
            used = "block (hop-bytes: split 2.1e+06, block 1.9e+06, scotch-tleaf 2e+06)"
        else:
            used = "split (hop-bytes: split 1.5e+06, block 1.9e+06, scotch-tleaf 2e+06)"
        out.append(line + "|" + used)
    path.write_text("\n".join(out) + "\n")
    report = build(results, "vsc5", images=False, say=lambda _: None)
    marked = {d.nodes: d.same_placement for d in analysis.decreases(report.groups)}
    assert marked == {n: n == 4 for n in STANDARD}
    table = table_after(
        report.markdown.read_text(),
        "pitzDaily (large), 128 ranks per node, VariantRun on zen3_0512",
    )
    header_nodes = [int(c.split()[0]) for c in table[0][1:]]
    opt = next(r for r in table if r[0] == "local+global, rankmap")
    for cell, nodes in zip(opt[1:], header_nodes):
        assert ("same placement: block" in cell) == (nodes == 4), (nodes, cell)
