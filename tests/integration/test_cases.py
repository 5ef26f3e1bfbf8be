"""The benchmark cases: published sizes exact, every case meshed and run for real at ci size,
fixed work, write interval, caching, and the errors for bad input."""

import dataclasses
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from cases import CASES, CaseError, Request, background_cells, catalog, prepare, resolve
from cases.prepare import tutorials_dir
from cases.run import run
from conftest import PYTHON, REPO, foam_env
from topofoam import paths


def cases_cli(*args, env=None, timeout=900):
    return subprocess.run(
        [PYTHON, "-m", "cases", *args],
        cwd=REPO,
        env=env or foam_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_a_cell_count_resolves_to_the_nearest_mesh():
    case = CASES["pitzDaily"]
    resolved = resolve(case, "2M")
    k = resolved.size.k
    got = background_cells(case, resolved.size.params)
    assert got == 12225 * k * k
    for other in (k - 1, k + 1):
        assert abs(got - 2_000_000) <= abs(12225 * other * other - 2_000_000)
    done = cases_cli("cells", "pitzDaily", "--size", "2M")
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        f"pitzDaily 2000000: {got:,} cells (nearest to 2,000,000 asked for), deltaT 1, 100 steps\n"
    )


def test_every_case_runs_at_ci_size_on_two_ranks():
    """Meshed, decomposed and run for real; the sanity checks of every case pass."""
    done = cases_cli("run", "--size", "ci", "-n", "2")
    print(done.stdout)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    rows = [line.split() for line in done.stdout.splitlines()[1:-1]]
    assert [r[0] for r in rows] == list(CASES)
    assert all(r[-1] == "ok" for r in rows)
    assert re.search(
        rf"^{len(CASES)} case\(s\), 0 failed; solver time \S+ s, \S+ s in all on 2 rank",
        done.stdout.splitlines()[-1],
    )


@pytest.mark.parametrize("name", list(CASES))
def test_prepared_case_matches_its_description(name):
    """checkMesh agrees with the computed count; the subdomains hold every cell."""
    prepared = prepare(Request(name, "ci"), env=foam_env())
    if CASES[name].mesher == "blockMesh":
        assert prepared.cells == background_cells(CASES[name], CASES[name].sizes["ci"].params)
        checkmesh = (prepared.path / "log.checkMesh").read_text()
        assert re.search(rf"^\s*cells:\s+{prepared.cells}$", checkmesh, re.M)
    assert len(prepared.processor_cells) == 2 and sum(prepared.processor_cells) == prepared.cells
    assert sorted(p.name for p in prepared.path.glob("processor*")) == ["processor0", "processor1"]


def _solved_iterations(log: str, field: str) -> list[int]:
    return [int(n) for n in re.findall(rf"Solving for {field},.* No Iterations (\d+)", log)]


def test_fixed_work_does_the_same_iterations_every_solve(tmp_path):
    env = foam_env()
    fixed = prepare(Request("cavity2D", "ci"), env=env).copy_to(tmp_path / "fixed")
    free = prepare(Request("cavity2D", "ci", fixed_work=False), env=env).copy_to(tmp_path / "free")
    for prepared in (fixed, free):
        assert run(prepared, env).problems == []
    fixed_log = (fixed.path / "log.icoFoam").read_text()
    free_log = (free.path / "log.icoFoam").read_text()
    p_fixed = _solved_iterations(fixed_log, "p")
    assert len(p_fixed) == 2 * 50 and set(p_fixed) == {10}
    assert set(_solved_iterations(fixed_log, "Ux")) == {2}
    # Solved to the template's tolerances, the counts vary: the fixed mode is what fixes them.
    assert len(set(_solved_iterations(free_log, "p"))) > 1


def test_fixed_work_leaves_gamgs_coarsest_level_its_tolerance(tmp_path):
    """GAMG's N cycles are fixed by minIter = maxIter; its tolerance is what its coarsest
    level's PCG iterates to. At tolerance 0 that PCG ran to its own limit in every cycle,
    and cavity2D's steps were 92 % that PCG's all-reduces (issue 55). Counted against the
    same case with tolerance 0: the same cycles, at least 5 times fewer all-reduces."""
    from foamlib import FoamFile

    from topofoam.jobs import mpicount

    env = foam_env()
    fixed = prepare(Request("cavity2D", "ci", steps=4), env=env)
    solution = FoamFile(fixed.path / "system" / "fvSolution")
    assert solution["solvers", "p", "tolerance"] > 0 and solution["solvers", "p", "minIter"] == 10
    assert solution["solvers", "U", "tolerance"] == 0  # not GAMG: tolerance 0, as before
    lib = mpicount.build(tmp_path / "lib")
    allreduces = {}
    for name in ("kept", "zero"):
        work = fixed.copy_to(tmp_path / name)
        if name == "zero":
            for entry in ("p", "pFinal"):
                FoamFile(work.path / "system" / "fvSolution")["solvers", entry, "tolerance"] = 0
        counts = tmp_path / f"counts-{name}"
        assert run(work, dict(env, **mpicount.preload(lib, counts))).problems == []
        log = (work.path / "log.icoFoam").read_text()
        assert set(_solved_iterations(log, "p")) == {10}
        allreduces[name] = mpicount.read(counts, ranks=2)["MPI_Allreduce"]
    assert allreduces["zero"] >= 5 * allreduces["kept"], allreduces


def test_write_interval(tmp_path):
    env = foam_env()
    prepared = prepare(Request("cavity2D", "ci", steps=30, write_interval=10), env=env)
    work = prepared.copy_to(tmp_path / "case")
    assert run(work, env).problems == []
    times = sorted(
        float(p.name)
        for p in (work.path / "processor0").iterdir()
        if re.fullmatch(r"[\d.e-]+", p.name)
    )
    dt = work.delta_t
    assert times == pytest.approx([0, 10 * dt, 20 * dt, 30 * dt])


def test_prepared_cases_are_cached():
    env = foam_env()
    first = prepare(Request("cavity3D", "ci"), env=env)
    stamp = (first.path / "log.blockMesh").stat().st_mtime_ns
    second = prepare(Request("cavity3D", "ci"), env=env)
    # Nothing was made again (the mesh's log untouched); how fast is the machine's load.
    assert second.path == first.path
    assert (second.path / "log.blockMesh").stat().st_mtime_ns == stamp
    other = prepare(Request("cavity3D", "ci", subdomains=3), env=env)
    assert other.path != first.path and len(other.processor_cells) == 3


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _remove(path: Path) -> None:
    path.unlink()


def _garble(path: Path) -> None:
    path.write_text("{ not json")


def _flip(path: Path) -> None:
    """Damage in place: the same size, other bytes (a disk error, an edit by hand)."""
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle] = (data[middle] + 1) % 256
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    "rel, damage, why",
    [
        ("case.json", _remove, "no readable case.json"),
        ("case.json", _garble, "no readable case.json"),
        ("processor0/constant/polyMesh/faces", _truncate, "processor0/constant/polyMesh/faces has"),
        (
            "processor1/constant/polyMesh/owner",
            _remove,
            "processor1/constant/polyMesh/owner is missing",
        ),
        ("files.json", _remove, "no readable files.json"),
        (
            "processor0/constant/polyMesh/points",
            _flip,
            "processor0/constant/polyMesh/points changed since it was made (its content hash "
            "differs)",
        ),
    ],
    ids=["no-case-json", "bad-case-json", "cut-mesh", "missing-mesh", "no-manifest", "same-size"],
)
def test_a_damaged_cache_entry_is_prepared_again(tmp_path, rel, damage, why):
    """A cached case that lost or cut a file is never handed to a run: it is prepared again,
    saying why, and leaves no temporary folder behind."""
    env = foam_env()
    first = prepare(Request("cavity2D", "ci"), cache=tmp_path, env=env)
    damage(first.path / rel)
    said = []
    again = prepare(Request("cavity2D", "ci"), cache=tmp_path, env=env, progress=said.append)
    assert again.path == first.path
    assert any(why in line and "preparing it again" in line for line in said), said
    assert not any(p.name.endswith(".tmp") for p in tmp_path.iterdir())
    assert prepare(Request("cavity2D", "ci"), cache=tmp_path, env=env).path == first.path


def test_two_million_cells_meshed_and_decomposed_here():
    """Seed 001's 2D damBreak at its published 2,041,200 cells (a few minutes once; cached)."""
    prepared = prepare(Request("damBreak2D", "seed001", subdomains=2), env=foam_env())
    assert prepared.cells == 2_041_200
    assert sum(prepared.processor_cells) == 2_041_200


def test_a_time_step_beyond_the_courant_limit_fails_the_sanity(tmp_path, monkeypatch):
    """The physical checks bite on a real run: five times the time step, Courant > 1."""
    bad = dataclasses.replace(CASES["cavity2D"], dt0=5 * CASES["cavity2D"].dt0)
    monkeypatch.setitem(catalog.CASES, "cavity2D", bad)
    env = foam_env()
    prepared = prepare(Request("cavity2D", "ci", steps=5), cache=tmp_path, env=env)
    problems = run(prepared, env).problems
    assert any(p.startswith("Courant number (max): ") and "exceeds 1" in p for p in problems)


# --- bad input --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["prepare", "bogus"],
            f"cases: unknown case 'bogus' -- choose from {', '.join(CASES)} (cases/catalog.py)",
        ),
        (
            ["prepare", "pitzDaily", "--size", "huge"],
            "cases: unknown size 'huge' for pitzDaily -- use one of ci, small, vsc5, hpc2 or a cell "
            "count such as 250k or 2M",
        ),
        (
            ["prepare", "pitzDaily", "--size", "100"],
            "cases: pitzDaily cannot be made with 100 cells: its meshes span 12,225 to 1,956,000,000 "
            "cells -- ask for a count in that range or a named size (ci, small, vsc5, hpc2)",
        ),
        (
            ["prepare", "pitzDaily", "-n", "20000"],
            "cases: pitzDaily at size ci has 12,225 cells: it cannot be split into 20,000 subdomains "
            "-- use a larger size or fewer subdomains",
        ),
        (
            ["prepare", "motorbike", "--size", "1M"],
            "cases: motorbike takes named sizes only (ci, small, S, M, L): its final cell count comes "
            "from snappyHexMesh, so a count cannot be aimed at",
        ),
    ],
)
def test_bad_input_is_one_line(args, message):
    done = cases_cli(*args)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", message + "\n")


def test_a_failed_mesher_names_the_step_and_its_log(tmp_path, monkeypatch):
    # An inside-out block (negative depth): the cell counts are fine, blockMesh refuses it.
    case = CASES["cavity2D"]
    broken = dict(
        case.sizes,
        ci=dataclasses.replace(case.sizes["ci"], params={**case.sizes["ci"].params, "depth": -0.1}),
    )
    monkeypatch.setitem(catalog.CASES, "cavity2D", dataclasses.replace(case, sizes=broken))
    with pytest.raises(CaseError) as err:
        prepare(Request("cavity2D", "ci", subdomains=1), cache=tmp_path, env=foam_env())
    message = str(err.value)
    log = re.search(r"-- see (\S+/log\.blockMesh);", message)
    assert message.startswith("meshing failed (blockMesh exited with 1) -- see ") and log
    assert "FOAM FATAL" in open(log.group(1)).read()
    # Nothing half-made is left where a later request would find it.
    assert [p.name for p in tmp_path.iterdir() if not p.name.endswith((".lock", ".failed"))] == []


def test_unwritable_cache_is_one_line(tmp_path):
    (tmp_path / "file").write_text("")
    env = dict(foam_env(), TOPOFOAM_CACHE=str(tmp_path / "file"))
    done = cases_cli("prepare", "cavity2D", env=env)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"cases: cannot use the case cache {tmp_path}/file/cases (Not a "
        f"directory) -- set TOPOFOAM_CACHE to a folder you can write\n"
    )


@pytest.mark.parametrize("setting", ["FOAM_TUTORIALS", "TOPOFOAM_TUTORIALS"])
def test_missing_motorbike_geometry_names_the_setting_used(tmp_path, setting):
    """Whichever variable named the tutorials is the one the error names and the fix
    changes; TOPOFOAM_TUTORIALS wins over FOAM_TUTORIALS (never silently ignored)."""
    env = dict(foam_env(), TOPOFOAM_CACHE=str(tmp_path / "cache"), FOAM_TUTORIALS="/usr")
    env[setting] = str(tmp_path / "none")
    done = cases_cli("prepare", "motorbike", env=env)
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        f"cases: meshing: {tmp_path}/none/resources/geometry/motorBike.obj.gz is missing "
        f"({setting}={tmp_path}/none) -- point {setting} at the OpenFOAM tutorials, or unset it"
    )


def test_a_truncated_motorbike_geometry_is_named_with_the_fix(tmp_path):
    """The real geometry cut short (as a broken download or a full disk leaves it): one line
    naming the file, not a traceback from gzip."""
    real = Path(tutorials_dir(foam_env())) / "resources" / "geometry" / "motorBike.obj.gz"
    geometry = tmp_path / "tut" / "resources" / "geometry" / "motorBike.obj.gz"
    geometry.parent.mkdir(parents=True)
    geometry.write_bytes(real.read_bytes()[: real.stat().st_size // 2])
    env = dict(foam_env(), TOPOFOAM_CACHE=str(tmp_path / "cache"))
    env["TOPOFOAM_TUTORIALS"] = str(tmp_path / "tut")
    done = cases_cli("prepare", "motorbike", env=env)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert re.fullmatch(
        rf"cases: meshing: {re.escape(str(geometry))} cannot be read as gzip \(EOFError: .*; "
        r"truncated or damaged\?\) -- point TOPOFOAM_TUTORIALS at intact OpenFOAM tutorials",
        done.stderr.splitlines()[-1],
    ), done.stderr[-1000:]


# --- the log checks themselves ----------------------------------------------------------------


# --- what is blamed: the decomposition method, the OpenFOAM, an interrupt ----------------------


def test_an_unknown_decomposition_method_is_refused_before_meshing(tmp_path):
    env = dict(foam_env(), TOPOFOAM_CACHE=str(tmp_path))
    done = cases_cli("prepare", "cavity2D", "--method", "foo", env=env)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "cases: unknown decomposition method 'foo' -- choose from scotch, simple, "
        "hierarchical, random, metis, kahip (--method)\n"
    )
    assert not (tmp_path / "cases").exists() or not any((tmp_path / "cases").iterdir())


def test_an_openfoam_folder_that_is_not_one_is_not_blamed_on_meshing(tmp_path):
    env = dict(foam_env(), TOPOFOAM_CACHE=str(tmp_path), WM_PROJECT_DIR=str(tmp_path / "none"))
    done = cases_cli("prepare", "cavity2D", env=env)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines() == [
        f"cases: WM_PROJECT_DIR={tmp_path}/none holds no OpenFOAM installation (no "
        f"etc/controlDict) -- point it at the OpenFOAM folder (Debian: /usr/share/openfoam), "
        f"or load that OpenFOAM's environment"
    ]


def test_debians_stub_scotch_is_named_not_a_failed_decomposition(tmp_path):
    env = dict(foam_env(), TOPOFOAM_CACHE=str(tmp_path))
    env["LD_LIBRARY_PATH"] = ""  # Debian's own libscotchDecomp: a stub
    done = cases_cli("prepare", "cavity2D", env=env)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert re.search(
        r"^cases: decomposing: this OpenFOAM's SCOTCH decomposition library is "
        r"a stub .* -- run through './bench cases'.*--method hierarchical$",
        done.stderr.splitlines()[-1],
    ), done.stderr


def stopped_midway(command: list[str], env: dict, cue: str, stop: str) -> str:
    """Run ``command`` until its output shows ``cue``, then stop it as Ctrl-C does (SIGINT
    to its process group, as a terminal does) or as kill or a batch system does (SIGTERM to
    the first process only). Asserts exit 130 and no traceback; returns the output after it."""
    proc = subprocess.Popen(
        command,
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        # A test run started in the background (nohup ... &) ignores SIGINT, and the child
        # would inherit that: Ctrl-C as a terminal delivers it needs the default disposition.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    for line in proc.stdout:
        if cue in line:
            break
    time.sleep(0.5)
    if stop == "SIGINT":
        os.killpg(proc.pid, signal.SIGINT)
    else:
        os.kill(proc.pid, signal.SIGTERM)
    rest = proc.stdout.read()
    assert proc.wait(timeout=120) == 130, rest
    assert "Traceback" not in rest, rest
    return rest


@pytest.mark.parametrize(
    "command, stop",
    [
        (["cases"], "SIGINT"),
        (["cases"], "SIGTERM"),
        (["localsite.cli", "cases"], "SIGINT"),  # ./bench cases: Ctrl-C reaches both
        (["localsite.cli", "cases"], "SIGTERM"),  # a SIGTERM to ./bench is passed on
    ],
    ids=["cases-ctrl-c", "cases-sigterm", "bench-ctrl-c", "bench-sigterm"],
)
def test_an_interrupted_preparation_exits_130_and_keeps_nothing(tmp_path, command, stop):
    if command[0] == "cases":
        env, cases = dict(foam_env(), TOPOFOAM_CACHE=str(tmp_path)), tmp_path / "cases"
    else:  # ./bench cases needs the machine's cache (its OpenFOAM source, SCOTCH library)
        env, cases = dict(os.environ), paths.cache_dir() / "cases"
    before = {p.name for p in cases.iterdir()} if cases.is_dir() else set()
    steps = str(1000 + time.time_ns() % 100000)  # a case no earlier run has cached
    rest = stopped_midway(
        [PYTHON, "-m", *command, "prepare", "cavity3D", "--size", "small", "--steps", steps],
        env,
        "meshing",
        stop,
    )
    assert rest.strip().splitlines()[-1] == "cases: interrupted; no unfinished case was kept"
    left = {p.name for p in cases.iterdir() if not p.name.endswith(".lock")} - before
    assert left == set(), left


def test_a_damaged_build_is_built_again(tmp_path):
    """The real SCOTCH library (seconds to build), damaged in place at the same size."""
    from localsite import openfoam

    cache = tmp_path / "cache"
    (cache / "src").mkdir(parents=True)
    tree = openfoam.source_tree()
    (cache / "src" / tree.name).symlink_to(tree)
    env = dict(os.environ, TOPOFOAM_CACHE=str(cache))
    first = subprocess.run(
        [PYTHON, "-m", "localsite.openfoam", "scotch"], env=env, capture_output=True, text=True
    )
    assert first.returncode == 0, first.stderr
    lib = Path(first.stdout.strip()) / "libscotchDecomp.so"
    _flip(lib)
    again = subprocess.run(
        [PYTHON, "-m", "localsite.openfoam", "scotch"], env=env, capture_output=True, text=True
    )
    assert again.returncode == 0, again.stderr
    assert (
        f"the cached scotch build {lib.parent.parent} is damaged (lib/libscotchDecomp.so changed "
        f"since it was made (its content hash differs)); building it again" in again.stderr
    )
    shutil.copy(lib, tmp_path / "rebuilt.so")
    assert lib.stat().st_size > 0
    third = subprocess.run(
        [PYTHON, "-m", "localsite.openfoam", "scotch"], env=env, capture_output=True, text=True
    )
    assert third.returncode == 0 and "damaged" not in third.stderr


@pytest.mark.parametrize(
    "out, pattern",
    [
        ("", r"^cases: --out '' names no folder -- give the path of a new folder$"),
        ("/nonexistent/d/x", r"^cases: --out /nonexistent/d/x: the folder /nonexistent/d does not exist"),
        ("/proc/x", r"^cases: cannot copy the prepared case to /proc/x \(.*\) -- give --out a folder"),
    ],
)  # fmt: skip
def test_an_out_folder_that_cannot_be_is_one_line(tmp_path, out, pattern):
    done = cases_cli("prepare", "cavity2D", "--out", out)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert re.search(pattern, done.stderr.splitlines()[-1]), done.stderr


def test_a_run_request_no_case_can_take_is_refused_once():
    done = cases_cli("run", "cavity2D", "pitzDaily", "-n", "0")
    assert (done.returncode, done.stdout, done.stderr) == (
        2,
        "",
        "cases: subdomains must be at least 1, not 0\n",
    )


@pytest.mark.parametrize("stop", ["SIGINT", "SIGTERM"])
def test_an_interrupted_scotch_build_exits_130_and_keeps_nothing(tmp_path, stop):
    """./bench cases builds the real SCOTCH library first where it is missing: stopped
    then, one line and 130, and no unfinished build left (a cache of its own, sharing the
    machine's OpenFOAM source)."""
    (tmp_path / "src").symlink_to(paths.cache_dir() / "src")
    env = dict(os.environ, TOPOFOAM_CACHE=str(tmp_path))
    rest = stopped_midway(
        [PYTHON, "-m", "localsite.cli", "cases", "list"], env, "build-openfoam: lnInclude", stop
    )
    assert rest.strip().splitlines()[-1] == "bench: interrupted; no unfinished build was kept"
    built = tmp_path / "openfoam"
    assert not built.exists() or [p.name for p in built.iterdir()] == [], list(built.iterdir())


def test_a_snappyhexmesh_mesh_is_made_once_for_every_rank_count(tmp_path):
    """The motorbike's mesh (hours at the published sizes) is kept apart from its prepared
    cases: a second rank count copies it instead of meshing again, the same mesh; a kept
    mesh that was damaged is made again."""
    from cases.meshgraph import mesh_pairs
    from cases.prepare import kept_mesh

    env = foam_env()
    assert kept_mesh("motorbike", "ci", env, tmp_path) is None  # not made yet: not made here
    first = prepare(Request("motorbike", "ci", subdomains=2), cache=tmp_path, env=env)
    assert (first.path / "log.snappyHexMesh").is_file()
    (kept,) = [p for p in (tmp_path / "meshes").iterdir() if p.is_dir()]
    assert kept_mesh("motorbike", "ci", env, tmp_path) == kept / "polyMesh"
    second = prepare(Request("motorbike", "ci", subdomains=3), cache=tmp_path, env=env)
    assert not (second.path / "log.snappyHexMesh").exists()  # not meshed again
    assert second.cells == first.cells and second.subdomains == 3
    poly = "constant/polyMesh"
    assert (mesh_pairs(second.path / poly) == mesh_pairs(first.path / poly)).all()
    (kept / "polyMesh" / "owner").write_text("damaged")
    assert kept_mesh("motorbike", "ci", env, tmp_path) is None  # damaged: not offered
    third = prepare(Request("motorbike", "ci", subdomains=4), cache=tmp_path, env=env)
    assert (third.path / "log.snappyHexMesh").is_file() and third.cells == first.cells
