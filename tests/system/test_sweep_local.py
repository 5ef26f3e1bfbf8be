"""The sweeps on this machine for real: seed 000's variants x placements on the local
scheduler (mpirun with rankmap's rankfile) and on the local Slurm (srun with the arbitrary
distribution and --cpu-bind), through Open MPI's UCX PML."""

import csv
import json
import os
import re
import subprocess
from argparse import Namespace
from pathlib import Path

import pytest

from conftest import IS_ROOT, PYTHON, REPO, bench_cli, free_port
from localsite import estimate

PARTITIONS = ["cpu", "slurm"] if IS_ROOT else ["cpu"]
NO_COSTS = "none: no p2p measurement, none published"

# On one NUMA node cyclic is block, so it is not run: standard with block and rankmap's
# placement, global (block), local+global (rankmap), for pitzDaily and laplacianFoam.
COMBINATIONS = sorted(
    (case, variant, binding)
    for case in ("laplacianFoam", "pitzDaily")
    for variant, binding in (
        ("standard", "block"),
        ("standard", "rankmap"),
        ("global", "block"),
        ("local+global", "rankmap"),
    )
)


def read_perflog(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f, delimiter="|"))


def env_for(results: Path) -> dict:
    return dict(
        os.environ,
        TOPOFOAM_RESULTS=str(results),
        TOPOFOAM_RUN=str(results / "run"),
        TOPOFOAM_SLURMCTLD_PORT=str(free_port()),
        TOPOFOAM_SLURMD_PORT=str(free_port()),
    )


@pytest.fixture(scope="module")
def variants_run(tmp_path_factory):
    results = tmp_path_factory.mktemp("results")
    done = bench_cli(
        "run",
        *(f"--partition={p}" for p in PARTITIONS),
        "--tag",
        "variants",
        env=env_for(results),
        timeout=1800,
    )
    return done, results


def test_variants_pass_on_both_partitions(variants_run):
    done, _ = variants_run
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    for partition in PARTITIONS:
        # 8 runs, a standard run (the fields' reference) and a prepared case per case, the
        # build and MPI call counter fixtures.
        assert f"  local:{partition}: 14/14 test cases passed" in done.stdout, done.stdout


def test_the_run_says_at_its_start_how_long_it_takes_and_records_what_it_took(variants_run):
    """The first line says how long (or that this selection was never timed here); the run's
    own time per partition is then what the next like run is estimated by."""
    done, _ = variants_run
    said = re.search(
        r"^bench: (this run takes about \d+ min|no estimate of how long).*$", done.stdout, re.M
    )
    assert said and done.stdout.index(said.group(0)) < done.stdout.index("bench: ReFrame on")
    args = Namespace(
        tag=["variants"], openfoam="v1912", repeats=None, compare_all=False, reframe_args=[]
    )
    for partition in PARTITIONS:
        like = estimate.last_like(estimate.selection(partition, args))
        assert like is not None and like["cases"] == 14 and like["seconds"] > 0


@pytest.mark.parametrize("partition", PARTITIONS)
def test_perflog_rows_carry_every_setting(variants_run, partition):
    """One row per combination with its settings, the build, the node list and what the
    presets set; every rank ran on the CPU its placement gives (checked by the sanity)."""
    _, results = variants_run
    rows = read_perflog(results / "perflogs" / "local" / partition / "VariantRun.log")
    assert sorted((r["case"], r["variant"], r["binding"]) for r in rows) == COMBINATIONS
    for row in rows:
        assert row["result"] == "pass"
        assert (row["nodes"], row["ppn"], row["num_tasks"]) == ("1", "2", "2")
        assert (row["ucx"], row["coll"], row["run_env"]) == ("auto", "default", "")
        assert re.fullmatch(r"v1912\.\S+-patched-[0-9a-f]{16}", row["openfoam_build"])
        assert row["core_binding"] == "verified"
        assert row["costs"] == NO_COSTS
        assert row["launcher_kind"] == {"cpu": "mpirun", "slurm": "srun"}[partition]
        assert row["nodelist"] == os.uname().nodename
        assert float(row["node_hours_value"]) == pytest.approx(float(row["wall_value"]) / 3600)
        # Every rank's calls of the reduction paths, counted (both cases all-reduce per step).
        assert float(row["allreduce_value"]) > 0
        assert float(row["reduce_value"]) >= 0 and float(row["bcast_value"]) >= 0
        placed = (Path(row["outputdir"]) / "placement.txt").read_text().split("\n")
        cpus = sorted(line.split()[3] for line in placed if line)
        assert cpus == ["0", "1"]


def markdown_table(markdown: str, caption: str) -> dict[str, list[str]]:
    """The Markdown table under ``*caption*``: first cell -> the other cells."""
    lines = markdown.split("\n")
    rows = {}
    for line in lines[lines.index(f"*{caption}*") + 4 :]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        rows[cells[0]] = cells[1:]
    return rows


def test_the_run_ends_with_its_report(variants_run):
    """`./bench run` writes the report of the runs it made and prints where it is; every
    figure the Markdown names exists, and the HTML page carries them all."""
    done, results = variants_run
    report = results / "report" / "local"
    assert f"  report:   {report / 'report.html'}" in done.stdout, done.stdout[-2000:]
    md = (report / "report.md").read_text()
    figures = re.findall(r"\]\((figures/[^)]+\.png)\)", md)
    assert figures and all((report / f).is_file() for f in figures)
    page = (report / "report.html").read_text()
    assert page.count('src="data:image/png;base64,') == len(figures)
    assert "## Runs that did not pass\n\nNone" in md


@pytest.mark.parametrize("partition", PARTITIONS)
def test_report_tables_are_the_perflog_numbers(variants_run, partition):
    """Decrease vs standard/block, wall time and node-hours in the report, recomputed from
    the perflog's own numbers (one repeat each: the merged value is the run's)."""
    _, results = variants_run
    md = (results / "report" / "local" / "report.md").read_text()
    decrease_md, scaling_md = md.split("## Strong scaling")
    rows = read_perflog(results / "perflogs" / "local" / partition / "VariantRun.log")
    for case in ("laplacianFoam", "pitzDaily"):
        wall = {
            (r["variant"], r["binding"]): float(r["wall_value"]) for r in rows if r["case"] == case
        }
        caption = f"{case} (ci), 2 ranks per node, VariantRun on {partition}"
        decrease = markdown_table(decrease_md, caption)
        scaling = markdown_table(scaling_md, caption)
        for (variant, binding), t in wall.items():
            name = f"{variant}, {binding}"
            assert scaling[name][0].startswith(f"{t:.3g} s, E 1, {t / 3600:.3g} node-h (n=1)"), (
                name,
                scaling[name],
            )
            if name != "standard, block":
                # one run a side: no number is claimed (tests/system/test_repeats.py has 5)
                assert decrease[name][0].startswith("no verdict (n=1/1"), (name, decrease[name])


@pytest.mark.parametrize("partition", PARTITIONS)
def test_report_levels_come_from_the_runs(variants_run, partition):
    """The halo shares are those of the runs' map/analysis.json."""
    _, results = variants_run
    md = (results / "report" / "local" / "report.md").read_text()
    rows = read_perflog(results / "perflogs" / "local" / partition / "VariantRun.log")
    for case in ("laplacianFoam", "pitzDaily"):
        levels = markdown_table(
            md,
            f"{case} (ci) on 1 node(s) x 2, {partition}; hop-bytes priced by {NO_COSTS}",
        )
        run = next(r for r in rows if (r["case"], r["variant"]) == (case, "local+global"))
        entry = json.loads((Path(run["outputdir"]) / "map" / "analysis.json").read_text())[-1]
        assert levels["rankmap"][0] == f"{100 * entry['halo_share']['intra_numa_node']:.1f}"
        # No p2p measurement in these results, and none published for this machine.
        assert (levels["rankmap"][-1], entry["hop_bytes"], entry["costs_us"]) == ("–", None, None)


def test_report_image_of_the_final_fields(variants_run):
    """One ParaView image per case, standard vs local+global, and the difference the run
    measured (fields.json, within the sanity's 1e-6)."""
    _, results = variants_run
    md = (results / "report" / "local" / "report.md").read_text()
    images = sorted((results / "report" / "local" / "figures").glob("fields-*-pitzDaily-ci.png"))
    assert len(images) == 1 and images[0].stat().st_size > 10_000
    partition = images[0].name.split("-")[1]
    rows = read_perflog(results / "perflogs" / "local" / partition / "VariantRun.log")
    run = next(r for r in rows if (r["case"], r["variant"]) == ("pitzDaily", "local+global"))
    measured = json.loads((Path(run["outputdir"]) / "fields.json").read_text())
    diff = measured["max_relative_difference"]["p"]
    assert diff <= 1e-6
    assert f"max |difference| / max |p| = {diff:.3g}" in md


@pytest.mark.parametrize("preset, threshold", [("rndv16k", "16K"), ("rndv128k", "128K")])
def test_a_ucx_preset_reaches_the_ranks(preset, threshold, tmp_path):
    """The intra2 stage's UCX preset, with UCX's protocol table switched on: the solver log
    shows that the ranks' UCX starts rendezvous at the preset's threshold. (Building that table,
    UCX 1.13 raises a floating-point exception in ucp_proto_perf_envelope_make, which
    OpenFOAM's trap turns into a crash: FOAM_SIGFPE=false for this run.)"""
    done = bench_cli(
        "run",
        "--partition",
        "cpu",
        "--tag",
        "intra2",
        "--",
        "-n",
        f"Intra2Run%repeat=0%variant=standard.*%ucx={preset}%",
        "-S",
        "env_vars=UCX_PROTO_ENABLE:y,UCX_PROTO_INFO:y,FOAM_SIGFPE:false",
        env=env_for(tmp_path),
        timeout=1800,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (row,) = read_perflog(tmp_path / "perflogs" / "local" / "cpu" / "Intra2Run.log")
    assert row["run_env"] == f"UCX_RNDV_THRESH={threshold.lower()}b"
    log = (Path(row["outputdir"]) / "rfm_job.out").read_text()
    rendezvous = re.findall(r"\|\s+(\S+)\.\.inf \| \(\?\) rendezvous", log)
    assert rendezvous and set(rendezvous) == {threshold}, log[:3000]


def test_tuning_file_carries_the_best_settings_into_the_next_stage(tmp_path):
    """intra1 and intra2 for real on the local scheduler, one run each: topofoam.results.tuning keeps
    the defaults, since no single run is significantly faster (tests/unit/test_results.py
    has repeats that are), and the cost stage then runs with a tuning file's settings."""
    done = bench_cli(
        "run", "--partition", "cpu", "--tag", "intra[12]", env=env_for(tmp_path), timeout=1800
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    perflogs = tmp_path / "perflogs" / "local"
    out = tmp_path / "tuning.json"
    made = subprocess.run(
        [PYTHON, "-m", "topofoam.results.tuning", str(perflogs), "--out", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert made.returncode == 0, made.stderr
    assert json.loads(out.read_text()) == {
        "cpu": {"ppn": 2, "binding": "block", "ucx": "auto", "coll": "default"}
    }
    said = made.stdout.splitlines()
    assert any(s.startswith("cpu intra2: binding=block, ucx=auto, coll=default -- ") for s in said)
    assert all(
        "default kept" in s or "the default is the fastest" in s for s in said if " -- " in s
    ), said
    # The next stage reads such a file: the standard cost run takes its placement and presets
    # (none of them the defaults, so that taking them shows).
    out.write_text(
        json.dumps({"cpu": {"ppn": 2, "binding": "rankmap", "ucx": "rndv128k", "coll": "han"}})
    )
    env = dict(env_for(tmp_path / "next"), TOPOFOAM_TUNING=str(out))
    (tmp_path / "next").mkdir()
    done = bench_cli(
        "run",
        "--partition",
        "cpu",
        "--tag",
        "cost",
        "--",
        "-n",
        "CostRun%repeat=0%variant=standard",
        env=env,
        timeout=1800,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (row,) = read_perflog(tmp_path / "next" / "perflogs" / "local" / "cpu" / "CostRun.log")
    assert (row["binding"], row["ucx"], row["coll"], row["run_env"]) == (
        "rankmap",
        "rndv128k",
        "han",
        "UCX_RNDV_THRESH=128kb OMPI_MCA_coll_han_priority=100",
    )


def test_references_from_a_baseline_fail_a_slower_run(variants_run, tmp_path):
    """The variants run as a baseline: topofoam.results.references writes one reference per partition
    and setting; a run within the tolerance passes, and against references a hundred times
    faster than this machine the same run fails its performance stage, naming the wall time."""
    import yaml

    _, results = variants_run
    refs = tmp_path / "refs"
    made = subprocess.run(
        [
            PYTHON,
            "-m",
            "topofoam.results.references",
            str(results / "perflogs" / "local"),
            "--out",
            str(refs / "local.yaml"),
            "--tolerance",
            "3.0",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert made.returncode == 0, made.stderr
    data = yaml.safe_load((refs / "local.yaml").read_text())
    rows = read_perflog(results / "perflogs" / "local" / "cpu" / "VariantRun.log")
    assert sorted(data) == ["VariantRun"]  # no references for the standard fixtures
    assert data["VariantRun"]["$index"] == ["$partition", "setting"]
    cpu = data["VariantRun"]["local:cpu"]
    assert sorted(cpu) == sorted(r["setting"] for r in rows)
    for row in rows:
        assert cpu[row["setting"]]["wall"] == [round(float(row["wall_value"]), 4), None, 3.0, "s"]
    one = ["-n", r"VariantRun%repeat=0%variant=standard%binding=block.*pitzDaily"]
    done = bench_cli(
        "run",
        "--partition",
        "cpu",
        "--tag",
        "variants",
        "--",
        *one,
        env=dict(env_for(tmp_path / "pass"), TOPOFOAM_REFERENCES=str(refs)),
    )
    assert done.returncode == 0, done.stdout[-3000:]
    for setting in cpu:
        cpu[setting]["wall"][0] /= 100
    (refs / "local.yaml").write_text(yaml.safe_dump(data))
    done = bench_cli(
        "run",
        "--partition",
        "cpu",
        "--tag",
        "variants",
        "--",
        *one,
        env=dict(env_for(tmp_path / "fail"), TOPOFOAM_REFERENCES=str(refs)),
    )
    assert done.returncode == 1
    assert re.search(
        r"FAILED VariantRun %repeat=0 %variant=standard %binding=block .*pitzDaily.* fail "
        r"in performance: .*wall",
        done.stdout,
    ), done.stdout[-3000:]


def test_report_counts_mpi_calls_per_variant(variants_run):
    """The report's call table has every variant run with the perflog's counts."""
    _, results = variants_run
    md = (results / "report" / "local" / "report.md").read_text().split("\n")
    start = next(i for i, line in enumerate(md) if line.startswith("*seed 000's variants: ESI's"))
    header = [c.strip() for c in md[start + 2].strip("|").split(" | ")]
    assert header[-3:] == ["MPI_Allreduce", "MPI_Reduce", "MPI_Bcast"]
    shown = set()
    for line in md[start + 4 :]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        shown.add((cells[0], cells[1].split(" (")[0], cells[3], cells[-3]))
    want = {
        (p, r["case"], f"{r['variant']}, {r['binding']}", f"{float(r['allreduce_value']):,.0f}")
        for p in PARTITIONS
        for r in read_perflog(results / "perflogs" / "local" / p / "VariantRun.log")
    }
    assert shown == want


@pytest.mark.parametrize("partition", PARTITIONS)
def test_perflog_rows_carry_the_figures_of_merit(variants_run, partition):
    """FVOPS, FVOPS per node and T* of every run, from its own cells, steps, tasks and wall."""
    _, results = variants_run
    for row in read_perflog(results / "perflogs" / "local" / partition / "VariantRun.log"):
        cells, steps, wall = (
            int(row["expected_cells"]),
            int(row["expected_steps"]),
            float(row["wall_value"]),
        )
        assert float(row["FVOPS_value"]) == pytest.approx(cells * steps / wall, rel=1e-6)
        assert float(row["FVOPS_per_node_value"]) == pytest.approx(cells * steps / wall)
        assert float(row["T_star_value"]) == pytest.approx(wall / steps * 2 / cells)
        assert (row["FVOPS_unit"], row["T_star_unit"]) == ("cells/s", "core-s/cell")


def test_export_for_the_community(variants_run, tmp_path):
    """One command writes the local results in OHC-1's fields, CSV and JSON: a row per
    configuration with the perflog's numbers, this machine's description, no energy."""
    _, results = variants_run
    out = tmp_path / "export"
    done = subprocess.run(
        [PYTHON, "-m", "topofoam.reporting.export", "--results", str(results), "--out", str(out)],
        cwd=REPO / "reframe",
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    document = json.loads((out / "ohc1-local.json").read_text())
    with open(out / "ohc1-local.csv", newline="") as f:
        table = list(csv.DictReader(f))
    sims = document["simulations"]
    assert len(sims) == len(table) > 0
    assert f"export: {len(sims)} configuration(s) of local" in done.stdout
    perflog = {
        (partition, r["setting"]): r
        for partition in PARTITIONS
        for r in read_perflog(results / "perflogs" / "local" / partition / "VariantRun.log")
    }
    variants = {(s["Partition"], s["Configuration"]): s for s in sims if s["Check"] == "VariantRun"}
    assert variants.keys() == perflog.keys()
    for key, s in variants.items():
        r = perflog[key]
        assert s["Number of Cells"] == int(r["expected_cells"])
        assert (s["Number of Nodes"], s["Number of CPU Cores"]) == (1, 2)
        assert s["Run Wall-Clock Time [s]"] == pytest.approx(float(r["wall_value"]))
        assert s["FVOPS"] == pytest.approx(float(r["FVOPS_value"]), rel=1e-6)
        assert s["OpenFOAM Flavor"] == "ESI v1912"
        reference = (r["variant"], r["binding"]) == ("standard", "block")
        assert s["Track"] == ("hardware" if reference else "software")
        assert s["Run Consumed Energy [kWh]"] is None
    system = document["system"]
    models = {
        line.split(":", 1)[1].strip()
        for line in Path("/proc/cpuinfo").read_text().splitlines()
        if line.startswith("model name")
    }
    assert system["Hardware Spec (CPU)"] == " / ".join(sorted(models))
    assert system["Memory per Node [GiB]"] > 0
    assert system["MPI"].startswith("Open MPI 4.1")
    assert any("energy" in u for u in document["unknown"])
    assert table[0]["Hardware Spec (CPU)"] == system["Hardware Spec (CPU)"]
