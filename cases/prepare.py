"""Materialise a case at a size, mesh it, renumber it, decompose it; cache the result.

The prepared case is kept under ``<cache>/cases/<case>-<size>-n<N>-<method>-<key>``, where the
key hashes everything that shapes it (the template files, the size, the work settings, the
decomposition, the OpenFOAM installation), so a second request is a copy, not a re-mesh. A
case is built in a scratch folder and renamed into place only when every step has passed: a
failure leaves no half-made case behind, only ``<name>.failed`` with the logs.
"""

from __future__ import annotations

import errno
import gzip
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import zlib
from dataclasses import asdict, dataclass
from pathlib import Path

from foamlib import FoamFile

from cases import flavour
from cases.catalog import Case, Size
from cases.errors import CaseError
from cases.sizes import Resolved, background_cells, get_case, resolve
from cases.template import render, template_files
from topofoam import contents

METHODS_WITH_N = ("simple", "hierarchical")
#: decomposePar methods a case can be prepared with (those both flavours build here).
METHODS = ("scotch", "simple", "hierarchical", "random", "metis", "kahip")
META = "case.json"


@dataclass(frozen=True)
class Request:
    case: str
    size: str
    subdomains: int = 2
    method: str = "scotch"
    fixed_work: bool = True
    steps: int | None = None  # override the size's step count
    write_interval: int | None = None  # in steps; default: write once, at the end


@dataclass
class Prepared:
    """A prepared case folder and the facts its runs are checked against."""

    path: Path
    case: str
    size: str
    solver: str
    cells: int
    subdomains: int
    method: str
    steps: int
    delta_t: float
    end_time: float
    fixed_work: bool
    write_interval: int
    requested_cells: int | None = None
    processor_cells: list | None = None

    @classmethod
    def load(cls, path: Path) -> Prepared:
        meta = Path(path) / META
        try:
            data = json.loads(meta.read_text())
        except (OSError, ValueError) as e:
            raise CaseError(
                f"{meta}: not a prepared case ({e}) -- prepare it with 'python -m cases prepare'"
            ) from None
        try:
            data["path"] = Path(path)
            return cls(**data)
        except (TypeError, ValueError):
            raise CaseError(
                f"{meta}: not the case.json of this suite's prepared cases -- prepare the case "
                f"again with 'python -m cases prepare'"
            ) from None

    @property
    def checks(self) -> tuple:
        """The physical sanity checks of the case (from the catalog, so they can be
        tightened without re-meshing)."""
        return get_case(self.case).checks

    def copy_to(self, dest: Path) -> Prepared:
        shutil.copytree(self.path, dest, symlinks=True, dirs_exist_ok=True)
        return Prepared.load(dest)


#: Version of what the preparation steps below produce: part of every prepared case's cache
#: key. Bump it when a change to the steps changes the prepared folder (editing a comment or
#: a message does not, and re-meshing every cached case for it would cost hours at the
#: published sizes).
PREPARE_VERSION = 3
#: The same for a kept snappyHexMesh mesh (``_snappy_kept``): bump it when ``_snappy``
#: makes another mesh from the same inputs.
MESH_VERSION = 1


def default_cache() -> Path:
    from topofoam.paths import cache_dir

    return cache_dir() / "cases"


def prepare(
    request: Request, *, cache: Path | None = None, env: dict | None = None, progress=None
) -> Prepared:
    """The prepared case for ``request``, made (and cached) if it is not there yet."""
    case = get_case(request.case)
    resolved = resolve(case, request.size)
    _check_request(case, resolved, request)
    env = dict(os.environ if env is None else env)
    cache = Path(cache or default_cache())
    key = _key(case, resolved, request, env)
    label = re.sub(r"[^A-Za-z0-9.]+", "_", resolved.label)
    final = cache / f"{case.name}-{label}-n{request.subdomains}-{request.method}-{key}"
    with contents.exclusive(final, "the case cache", CaseError):
        if final.exists():
            problem = damaged(final)
            if problem is None:
                return Prepared.load(final)
            (progress or progress_to_stderr)(
                f"{case.name} {resolved.label}: the cached copy {final} is damaged ({problem}); "
                f"preparing it again"
            )
            try:
                shutil.rmtree(final)
            except OSError as e:
                raise CaseError(
                    f"the cached case {final} is damaged ({problem}) and cannot be removed "
                    f"({e.strerror}) -- remove it with 'rm -rf {final}'"
                ) from None
        work = Path(f"{final}.tmp")
        failed = Path(f"{final}.failed")
        for stale in (work, failed):
            shutil.rmtree(stale, ignore_errors=True)
        try:
            _build(case, resolved, request, work, env, progress or (lambda msg: None), cache)
            _write_manifest(work)
        except CaseError:
            if work.exists():
                work.rename(failed)
            raise
        except OSError as e:  # a full disk, a quota, a cache that went away
            shutil.rmtree(work, ignore_errors=True)
            raise CaseError(
                f"writing the prepared case into {cache} failed ({e.strerror or e}) -- free "
                f"space there or point TOPOFOAM_CACHE at a larger file system"
            ) from None
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise
        work.rename(final)
        return Prepared.load(final)


#: Every file of a prepared case, its size and the SHA-256 of its content, written last: a
#: cached case whose files no longer match (a file cut short, removed, edited or damaged in
#: place at the same size) is prepared again, not run.
MANIFEST = "files.json"


def _write_manifest(folder: Path) -> None:
    contents.record(folder, folder.rglob("*"), folder / MANIFEST)


def damaged(folder: Path) -> str | None:
    """Why a cached prepared case cannot be used as it is, or None."""
    try:
        Prepared.load(folder)
    except CaseError:
        return f"no readable {META}"
    return contents.damaged(folder, folder / MANIFEST)


#: OpenFOAM's time index is a label (32 bits in every build the suite runs): more steps
#: overflow it, and blockMesh dies of a floating-point exception before a step is run.
MAX_STEPS = 2**31 - 1


def too_many_steps(steps: int) -> str:
    return (
        f"steps must be at most {MAX_STEPS:,} (OpenFOAM counts time steps in a 32-bit label), "
        f"not {steps:,}"
    )


def _check_request(case: Case, resolved: Resolved, request: Request) -> None:
    if request.method not in METHODS:
        raise CaseError(
            f"unknown decomposition method {request.method!r} -- choose from "
            f"{', '.join(METHODS)} (--method)"
        )
    if request.subdomains < 1:
        raise CaseError(f"subdomains must be at least 1, not {request.subdomains}")
    if case.mesher == "blockMesh":
        cells = background_cells(case, resolved.size.params)
        if request.subdomains > cells:
            raise CaseError(
                f"{case.name} at size {resolved.label} has {cells:,} cells: it "
                f"cannot be split into {request.subdomains:,} subdomains -- use "
                f"a larger size or fewer subdomains"
            )
    if request.steps is not None and request.steps < 1:
        raise CaseError(f"steps must be at least 1, not {request.steps}")
    if request.steps is not None and request.steps > MAX_STEPS:
        raise CaseError(too_many_steps(request.steps))
    if request.write_interval is not None and request.write_interval < 1:
        raise CaseError(f"write interval must be at least 1 step, not {request.write_interval}")


def _openfoam_identity(env: dict) -> str:
    exe = shutil.which("blockMesh", path=env.get("PATH"))
    if exe is None:
        raise CaseError(
            "blockMesh is not on PATH -- load an OpenFOAM environment first "
            "(Debian: WM_PROJECT_DIR=/usr/share/openfoam, or use './bench cases')"
        )
    project = env.get("WM_PROJECT_DIR", "")
    if not project or not (Path(project) / "etc" / "controlDict").is_file():
        # Every utility would stop at its first look-up: say so before meshing starts.
        raise CaseError(
            f"WM_PROJECT_DIR={project or '(unset)'} holds no OpenFOAM installation "
            f"(no etc/controlDict) -- point it at the OpenFOAM folder (Debian: "
            f"/usr/share/openfoam), or load that OpenFOAM's environment"
        )
    real = Path(exe).resolve()
    return f"{real}:{real.stat().st_mtime_ns}:{env.get('WM_PROJECT_DIR', '')}"


def _templates_digest(case: Case):
    """A sha256 fed with the case's template files: the start of every cache key."""
    digest = hashlib.sha256()
    for rel, path in sorted(template_files(case.template, case.variant).items()):
        digest.update(rel.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest


def _geometry_identity(env: dict) -> list:
    geometry = _geometry(env)
    return [str(geometry), geometry.stat().st_size if geometry.exists() else None]


def _key(case: Case, resolved: Resolved, request: Request, env: dict) -> str:
    digest = _templates_digest(case)
    # What shapes the prepared folder (not the sanity checks, which runs read from the
    # catalog): the steps' version, the case's settings, the size, the request, OpenFOAM.
    digest.update(f"steps {PREPARE_VERSION}\0".encode())
    kind = flavour.of_environment(env)
    if kind != flavour.ESI:  # the rewrite for the flavour shapes the folder too
        digest.update(f"{kind} {flavour.ADAPT_VERSION}\0".encode())
    shaping = (
        case.solver,
        case.mesher,
        case.variant,
        case.dt0,
        case.k0,
        case.fixed_iterations,
        case.remove_in_fixed_work,
        case.edits,
        case.control,
    )
    inputs = [
        shaping,
        asdict(resolved.size),
        asdict(request) | {"size": None},
        _openfoam_identity(env),
    ]
    if case.mesher == "snappyHexMesh":
        inputs.append(_geometry_identity(env))
    digest.update(json.dumps(inputs, sort_keys=True, default=str).encode())
    return digest.hexdigest()[:12]


# --- the steps --------------------------------------------------------------------------------


def _run(app: str, args: list[str], case_dir: Path, env: dict, step: str) -> str:
    """Run an OpenFOAM utility on the case; its output goes to ``log.<app>`` as it is
    written (a meshing of hours can be followed there), and is returned."""
    log = case_dir / f"log.{app}"
    try:
        with open(log, "ab") as f:
            start = f.tell()
            code = subprocess.run(
                [app, *args, "-case", str(case_dir)], env=env, stdout=f, stderr=subprocess.STDOUT
            ).returncode
    except FileNotFoundError:
        raise CaseError(f"{step}: {app} is not on PATH -- load an OpenFOAM environment") from None
    with open(log, "rb") as f:
        f.seek(start)
        text = f.read().decode(errors="replace")
    done = subprocess.CompletedProcess(app, code, text)
    if (code != 0 or "FOAM FATAL" in text) and _full(case_dir):
        # The utility's own write (its log, or its output) met a full file system: said as
        # every other write of the prepared case is (prepare), not as the utility's error.
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    if "dummyScotchDecomp" in done.stdout:
        raise CaseError(
            f"{step}: this OpenFOAM's SCOTCH decomposition library is a stub (Debian's "
            f"libscotchDecomp; see {_failed_path(log)}) -- run through './bench cases', "
            f"which loads the real one, or give --method hierarchical"
        )
    if done.returncode != 0 or "FOAM FATAL" in done.stdout:
        tail = "\n".join(done.stdout.strip().splitlines()[-12:])
        raise CaseError(
            f"{step} failed ({app} exited with {done.returncode}) -- see "
            f"{_failed_path(log)}; last lines:\n{tail}"
        )
    return done.stdout


def _full(folder: Path) -> bool:
    """Whether the file system holding ``folder`` has less than 64 KiB left."""
    try:
        st = os.statvfs(folder)
    except OSError:
        return False
    return st.f_bavail * st.f_frsize < 64 * 1024


def _failed_path(log: Path) -> Path:
    """Where a log of the scratch folder ends up once the folder is kept as ``.failed``."""
    parent = log.parent
    return (
        parent.with_name(parent.name[: -len(".tmp")] + ".failed") / log.name
        if parent.name.endswith(".tmp")
        else log
    )


def _build(
    case: Case,
    resolved: Resolved,
    request: Request,
    work: Path,
    env: dict,
    progress,
    cache: Path,
) -> None:
    size = resolved.size
    kind = flavour.of_environment(env)
    materialise(case, size, request, work, kind)
    steps = request.steps or size.steps
    delta_t = case.delta_t(size)
    write_interval = request.write_interval or steps

    progress(f"{case.name} {resolved.label}: meshing ({case.mesher})")
    if case.mesher == "snappyHexMesh":
        _snappy_kept(case, size, work, env, cache, progress)
    else:
        _run("blockMesh", [], work, env, "meshing")
    cells = _checkmesh_cells(work, env, strict=case.mesher == "blockMesh")
    if case.mesher == "blockMesh":
        expected = background_cells(case, size.params) * 2**size.mirror
        if cells != expected:
            raise CaseError(
                f"meshing: checkMesh counts {cells:,} cells, the blockMeshDict "
                f"gives {expected:,} -- see {_failed_path(work / 'log.checkMesh')}"
            )
    elif request.subdomains > cells:
        raise CaseError(
            f"{case.name} at size {resolved.label} meshed to {cells:,} cells: it "
            f"cannot be split into {request.subdomains:,} subdomains"
        )
    _initial_fields(case, work, env)
    progress(f"{case.name} {resolved.label}: renumbering {cells:,} cells")
    _run("renumberMesh", ["-overwrite"], work, env, "renumbering")
    per_proc = None
    if request.subdomains > 1:
        progress(
            f"{case.name} {resolved.label}: decomposing into {request.subdomains} "
            f"({request.method})"
        )
        per_proc = _decompose(case, work, request, env)
        if sum(per_proc) != cells:
            raise CaseError(
                f"decomposing: the subdomains hold {sum(per_proc):,} cells, the "
                f"mesh {cells:,} -- see {_failed_path(work / 'log.decomposePar')}"
            )
    meta = Prepared(
        path=work,
        case=case.name,
        size=resolved.label,
        solver=flavour.executable(case.solver, kind),
        cells=cells,
        subdomains=request.subdomains,
        method=request.method,
        steps=steps,
        delta_t=delta_t,
        end_time=_end_time(steps, delta_t),
        fixed_work=request.fixed_work,
        write_interval=write_interval,
        requested_cells=resolved.requested_cells,
        processor_cells=per_proc,
    )
    data = asdict(meta)
    del data["path"]
    (work / META).write_text(json.dumps(data, indent=1) + "\n")


def materialise(case: Case, size: Size, request: Request, work: Path, kind: str) -> None:
    """The case's dictionaries at ``size`` in ``work`` for OpenFOAM ``kind``, before
    meshing: the template rendered, the controls, the solvers (fixed work or not), the
    flavour's rewrite."""
    render(case.template, case.variant, size.params, work)
    steps = request.steps or size.steps
    write_interval = request.write_interval or steps
    _set_controls(case, work, steps, case.delta_t(size), write_interval)
    _set_solvers(case, work, request.fixed_work)
    flavour.adapt(work, case.name, case.solver, kind)


def _end_time(steps: int, delta_t: float) -> float:
    # Rounded so that endTime/deltaT is the step count to the last digit OpenFOAM writes.
    return float(f"{steps * delta_t:.12g}")


def _set_controls(case: Case, work: Path, steps: int, delta_t: float, write_interval: int):
    control = FoamFile(work / "system" / "controlDict")
    control["application"] = case.solver
    control["startFrom"] = "startTime"
    control["startTime"] = 0
    control["stopAt"] = "endTime"
    control["deltaT"] = float(f"{delta_t:.12g}")
    control["endTime"] = _end_time(steps, delta_t)
    control["writeControl"] = "timeStep"
    control["writeInterval"] = write_interval
    control["runTimeModifiable"] = False
    for key, value in case.control.items():
        control[key] = value
    for rel, entry, value in case.edits:
        FoamFile(work / rel)[entry] = value


def _solver_of(solvers, name: str) -> str:
    """The linear solver of an fvSolution entry, through ``$other`` references (pFinal)."""
    entry = solvers[name]
    if "solver" in entry:
        return str(entry["solver"])
    ref = next((k[1:] for k in entry if str(k).startswith("$")), None)
    return _solver_of(solvers, ref) if ref and ref in solvers else ""


def _set_solvers(case: Case, work: Path, fixed_work: bool) -> None:
    """Fixed-work mode: every listed linear solver does exactly N iterations (minIter =
    maxIter = N) and early-exit criteria are removed, so all variants do the same work
    whatever their convergence. Krylov and smooth solvers get tolerance 0. GAMG keeps the
    template's tolerance and relTol: they no longer end its N cycles, but they are what
    its coarsest level's PCG iterates to, and at 0 that PCG runs to its own limit in every
    cycle; on cavity2D (2 ranks) that made 92 % of the step's all-reduces and 78 % of its
    sends (87,422 against 7,044 all-reduces in 4 steps; docs/model.md)."""
    if not fixed_work:
        return
    solution = FoamFile(work / "system" / "fvSolution")
    for name, iterations in case.fixed_iterations.items():
        if name not in solution["solvers"]:
            raise CaseError(
                f"{work}/system/fvSolution: no solver entry {name} for fixed-work "
                f"mode -- fix fixed_iterations of {case.name} in cases/catalog.py"
            )
        ends = (
            []
            if _solver_of(solution["solvers"], name) == "GAMG"
            else [("tolerance", 0), ("relTol", 0)]
        )
        for key, value in (*ends, ("minIter", iterations), ("maxIter", iterations)):
            solution["solvers", name, key] = value
    for rel, entry in case.remove_in_fixed_work:
        target = FoamFile(work / rel)
        if entry in target:
            del target[entry]


def _checkmesh_cells(work: Path, env: dict, strict: bool) -> int:
    """The mesh's cell count; with ``strict`` (blockMesh meshes) any failed check is an
    error. snappyHexMesh meshes are held to its own meshQualityDict instead: checkMesh's
    stricter skewness limit flags a few faces of most of them."""
    out = _run("checkMesh", ["-constant"], work, env, "checking the mesh")
    m = re.search(r"^\s*cells:\s+(\d+)", out, re.M)
    if not m:
        raise CaseError(
            f"checking the mesh: no cell count in {_failed_path(work / 'log.checkMesh')}"
        )
    if strict and re.search(r"^\s*Failed \d+ mesh checks", out, re.M):
        raise CaseError(
            f"checking the mesh: checkMesh reports failed checks -- see "
            f"{_failed_path(work / 'log.checkMesh')}"
        )
    return int(m.group(1))


def _initial_fields(case: Case, work: Path, env: dict) -> None:
    """Fields that need the mesh: the water column of the dam breaks."""
    orig = work / "0" / "alpha.water.orig"
    if orig.exists():
        shutil.copyfile(orig, work / "0" / "alpha.water")
        orig.unlink()
        _run("setFields", [], work, env, "setting the initial water column")


def _snappy(case: Case, size, work: Path, env: dict) -> None:
    """The motorbike: geometry from the installation's tutorials, features, background mesh,
    snappyHexMesh, and for the larger sizes mirroring."""
    geometry = _geometry(env)
    if not geometry.is_file():
        setting = _tutorials_setting(env)
        fix = (
            f"point {setting} at the OpenFOAM tutorials, or unset it"
            if setting
            else "install the OpenFOAM tutorials (Debian: openfoam-examples) or set "
            "TOPOFOAM_TUTORIALS"
        )
        where = f" ({setting}={env[setting]})" if setting else ""
        raise CaseError(f"meshing: {geometry} is missing{where} -- {fix}")
    surface = work / "constant" / "triSurface" / "motorBike.obj"
    surface.parent.mkdir(parents=True, exist_ok=True)
    try:
        with gzip.open(geometry, "rb") as src, open(surface, "wb") as dst:
            shutil.copyfileobj(src, dst)
    except (OSError, EOFError, zlib.error) as e:  # gzip's own errors are OSError or EOFError
        setting = _tutorials_setting(env)
        fix = (
            f"point {setting} at intact OpenFOAM tutorials"
            if setting
            else "reinstall the OpenFOAM tutorials (Debian: apt-get install --reinstall "
            "openfoam-examples)"
        )
        raise CaseError(
            f"meshing: {geometry} cannot be read as gzip ({type(e).__name__}: {e}; truncated "
            f"or damaged?) -- {fix}"
        ) from None
    tool = flavour.surface_features(work, flavour.of_environment(env))
    _run(tool, [], work, env, "extracting surface features")
    _run("blockMesh", [], work, env, "meshing (background)")
    _run("snappyHexMesh", ["-overwrite"], work, env, "meshing (snappyHexMesh)")
    for i in range(size.mirror):
        _write_mirror_dict(work, i)
        _run("mirrorMesh", ["-overwrite"], work, env, f"mirroring ({i + 1} of {size.mirror})")
    # snappyHexMesh's refinement history is not needed to run and would only be decomposed.
    for extra in ("cellLevel", "pointLevel", "level0Edge", "surfaceIndex"):
        (work / "constant" / "polyMesh" / extra).unlink(missing_ok=True)


def _kept_mesh_path(case: Case, size, env: dict, cache: Path) -> Path:
    """Where ``_snappy_kept`` keeps ``case``'s mesh at ``size``: keyed by what decides the
    mesh (the case's dictionaries, the size's parameters, the geometry, OpenFOAM), not by the
    subdomains, steps or solver settings of a request."""
    digest = _templates_digest(case)
    inputs = [
        MESH_VERSION,
        flavour.of_environment(env),
        size.params,
        size.mirror,
        _openfoam_identity(env),
        _geometry_identity(env),
    ]
    digest.update(json.dumps(inputs, sort_keys=True, default=str).encode())
    return cache / "meshes" / f"{case.name}-{digest.hexdigest()[:12]}"


def kept_mesh(case_name: str, size_name: str, env: dict | None = None, cache=None) -> Path | None:
    """The polyMesh folder of ``case_name``'s snappyHexMesh mesh at the named size, if it was
    made and is intact; None if not (nothing is meshed here: that can take hours)."""
    case = get_case(case_name)
    size = resolve(case, size_name).size
    env = dict(os.environ if env is None else env)
    kept = _kept_mesh_path(case, size, env, Path(cache or default_cache()))
    if kept.is_dir() and contents.damaged(kept, kept / MANIFEST) is None:
        return kept / "polyMesh"
    return None


def _snappy_kept(case: Case, size, work: Path, env: dict, cache: Path, progress) -> None:
    """``_snappy``'s mesh, kept in ``cache``/meshes and copied from there when the same mesh
    was made before, so one mesh serves every rank count (hours at the published sizes)."""
    kept = _kept_mesh_path(case, size, env, cache)
    mesh = work / "constant" / "polyMesh"
    with contents.exclusive(kept, "the mesh cache", CaseError):
        if kept.is_dir() and contents.damaged(kept, kept / MANIFEST) is None:
            progress(f"{case.name}: the mesh made before ({kept})")
            shutil.rmtree(mesh, ignore_errors=True)
            shutil.copytree(kept / "polyMesh", mesh)
            return
        progress(
            f"{case.name}: snappyHexMesh, serial (hours at S and larger): its log is {work / 'log.snappyHexMesh'}"
        )
        _snappy(case, size, work, env)
        scratch = Path(f"{kept}.tmp")
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.rmtree(kept, ignore_errors=True)
        shutil.copytree(mesh, scratch / "polyMesh")
        contents.record(scratch, scratch.rglob("*"), scratch / MANIFEST)
        scratch.rename(kept)


def _write_mirror_dict(work: Path, i: int) -> None:
    # First across the side plane y = 4 (two bikes side by side), then across y = 12.
    point = (0, 4 + 8 * i, 0)
    text = (
        "FoamFile\n{\n    version 2.0;\n    format ascii;\n    class dictionary;\n"
        "    object mirrorMeshDict;\n}\n\nplaneType pointAndNormal;\n\n"
        f"pointAndNormalDict\n{{\n    point ({point[0]} {point[1]} {point[2]});\n"
        "    normal (0 1 0);\n}\n\nplaneTolerance 1e-3;\n"
    )
    (work / "system" / "mirrorMeshDict").write_text(text)


def _geometry(env: dict) -> Path:
    return Path(tutorials_dir(env)) / "resources" / "geometry" / "motorBike.obj.gz"


#: Where the tutorials may be set, the suite's own setting first: it wins wherever it is set
#: (the local site copies it into FOAM_TUTORIALS inside ReFrame jobs).
TUTORIALS_SETTINGS = ("TOPOFOAM_TUTORIALS", "FOAM_TUTORIALS")


def _tutorials_setting(env: dict) -> str | None:
    return next((name for name in TUTORIALS_SETTINGS if env.get(name)), None)


def tutorials_dir(env: dict) -> str:
    """The OpenFOAM tutorials: TOPOFOAM_TUTORIALS, FOAM_TUTORIALS, else the installation's."""
    setting = _tutorials_setting(env)
    if setting:
        return env[setting]
    project = env.get("WM_PROJECT_DIR", "")
    for candidate in (
        Path(project) / "tutorials",
        Path("/usr/share/doc/openfoam-examples/examples"),
    ):
        if candidate.is_dir():
            return str(candidate)
    return str(Path(project) / "tutorials")


def _decompose(case: Case, work: Path, request: Request, env: dict) -> list[int]:
    path = work / "system" / "decomposeParDict"
    path.write_text(
        "FoamFile\n{\n    version 2.0;\n    format ascii;\n    class dictionary;\n"
        "    object decomposeParDict;\n}\n"
    )
    decompose = FoamFile(path)
    decompose["numberOfSubdomains"] = request.subdomains
    decompose["method"] = request.method
    if request.method in METHODS_WITH_N:
        decompose[f"{request.method}Coeffs"] = {
            "n": list(_grid(request.subdomains, case.variant == "2D")),
            "delta": 0.001,
            "order": "xyz",
        }
    out = _run("decomposePar", ["-force"], work, env, "decomposing")
    return [int(n) for n in re.findall(r"^Processor \d+\s*\n\s*Number of cells = (\d+)", out, re.M)]


def _grid(n: int, flat: bool) -> tuple[int, int, int]:
    """n split into (nx, ny, nz) as evenly as its factors allow (nz = 1 for 2D cases)."""
    best = None
    for nx in range(1, n + 1):
        for ny in range(1, n // nx + 1):
            if n % (nx * ny):
                continue
            nz = n // (nx * ny)
            if flat and nz != 1:
                continue
            dims = (nx, ny) if flat else (nx, ny, nz)
            spread = max(dims) / min(dims)
            if best is None or spread < best[0]:
                best = (spread, (nx, ny, nz))
    return best[1]


def progress_to_stderr(message: str) -> None:
    print(f"cases: {message}", file=sys.stderr, flush=True)
