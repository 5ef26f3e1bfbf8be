"""The reduceTest program (reframe/src/reduceTest) built against Debian's stock OpenFOAM, and
run with the stock or the patched libraries: the patched ones are drop-ins, chosen at run time
through LD_LIBRARY_PATH, so one binary serves both sides of a comparison.

Debian ships no OpenFOAM headers; they come from the cached source package, flattened into one
folder of links the way wmake's lnInclude does.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

from localsite import flavours, openfoam
from topofoam import contents, paths

SOURCE = paths.REPO / "reframe" / "src" / "reduceTest" / "reduceTest.C"
HEADER_DIRS = ("src/OpenFOAM", "src/OSspecific/POSIX")
CXXFLAGS = [
    "-std=c++11",
    "-O2",
    "-pthread",
    "-DOPENFOAM=1912",
    "-DWM_DP",
    "-DWM_LABEL_SIZE=32",
    "-DNoRepository",
    "-ftemplate-depth-100",
    "-Wno-deprecated-declarations",
]


def include_dir() -> Path:
    """One folder with a link to every header and template source of the stock libraries."""
    version = openfoam.source_version()
    dest = paths.cache_dir() / "openfoam" / f"v{version}-include"
    if contents.is_complete(dest):
        return dest
    tree = openfoam.source_tree(version)
    dest.mkdir(parents=True, exist_ok=True)
    for sub in HEADER_DIRS:
        for f in sorted((tree / sub).rglob("*")):
            if f.suffix in (".H", ".C", ".hxx") and "lnInclude" not in f.parts:
                link = dest / f.name
                if not link.exists():
                    link.symlink_to(f)
    contents.mark_complete(dest)
    return dest


def executable() -> Path:
    """The compiled program, cached by its source and the OpenFOAM version."""
    key = hashlib.sha256(
        SOURCE.read_bytes() + openfoam.source_version().encode() + " ".join(CXXFLAGS).encode()
    ).hexdigest()[:16]
    exe = paths.cache_dir() / "openfoam" / f"reduceTest-{key}" / "reduceTest"
    if not exe.exists():
        _compile(exe, CXXFLAGS, [include_dir()], [Path("/usr/lib")])
    return exe


def _compile(
    exe: Path, flags: list[str], includes: list[Path], libdirs: list[Path], env=None
) -> None:
    """reduceTest into ``exe`` (through a temporary name: a cut compile leaves nothing)."""
    exe.parent.mkdir(parents=True, exist_ok=True)
    tmp = exe.with_suffix(".tmp")
    done = subprocess.run(
        [
            "g++",
            *flags,
            *(f"-I{d}" for d in includes),
            str(SOURCE),
            "-o",
            str(tmp),
            *(f"-L{d}" for d in libdirs),
            "-Wl,--no-as-needed",
            "-lOpenFOAM",
            "-lPstream",
            "-ldl",
            "-lm",
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    if done.returncode != 0:
        raise RuntimeError(f"compiling {SOURCE} failed:\n{done.stderr[-3000:]}")
    tmp.rename(exe)


# The flavours built from source (localsite/flavours.py): one build each, its series off
# unless switched on, its own headers and language standard.
BUILT_FLAGS = {
    "org12": [f for f in CXXFLAGS if not f.startswith(("-std=", "-DOPENFOAM="))] + ["-std=c++14"],
    "v2512": [f for f in CXXFLAGS if not f.startswith(("-std=", "-DOPENFOAM="))]
    + ["-std=c++17", "-DOPENFOAM=2512"],
}


def built_executable(name: str) -> Path:
    """reduceTest compiled against the cached build of flavour ``name``, cached by the
    source, the build's folder name (its inputs) and the flags."""
    env = flavours.run_env(flavours.get(name))
    tree = Path(env["WM_PROJECT_DIR"])
    libbin = Path(env["FOAM_LIBBIN"])
    flags = BUILT_FLAGS[name]
    key = hashlib.sha256(
        SOURCE.read_bytes() + str(libbin).encode() + " ".join(flags).encode()
    ).hexdigest()[:16]
    exe = paths.cache_dir() / "openfoam" / f"reduceTest-{name}-{key}" / "reduceTest"
    if not exe.exists():
        headers = [
            tree / "src" / "OpenFOAM" / "lnInclude",
            tree / "src" / "OSspecific" / "POSIX" / "lnInclude",
        ]
        _compile(exe, flags, headers, [libbin, libbin / env["FOAM_MPI"]], env)
    return exe


def built_run(
    name: str, ranks: int, folder: Path, *, schedule: Path | None = None, sums: bool = False
) -> subprocess.CompletedProcess:
    """reduceTest on the built flavour ``name`` in ``folder``. ``sums`` switches
    reductionScheduleSums on: with -opt-switch on ESI's releases; OpenFOAM-12 has none, and
    merges the system/controlDict of the working folder into its switches instead."""
    control = Path(folder) / "system" / "controlDict"
    control.parent.mkdir(parents=True, exist_ok=True)
    esi = flavours.get(name).family == "esi"
    control.write_text(
        "FoamFile { format ascii; class dictionary; object controlDict; }\n"
        + ("OptimisationSwitches { reductionScheduleSums 1; }\n" if sums and not esi else "")
    )
    args = [str(built_executable(name)), "-parallel"]
    if sums and esi:
        args += ["-opt-switch", "reductionScheduleSums=1"]
    return built_mpirun(name, ranks, args, cwd=folder, schedule=schedule)


def built_mpirun(
    name: str,
    ranks: int,
    args: list[str],
    *,
    cwd: Path | None = None,
    schedule: Path | None = None,
    env: dict | None = None,
) -> subprocess.CompletedProcess:
    """A program of the built flavour ``name`` on ``ranks`` MPI ranks (oversubscribed if need
    be), with the schedule at ``schedule`` or none; ``env`` adds variables (forwarded)."""
    run_env = _for_mpirun(flavours.run_env(flavours.get(name)), schedule)
    run_env.update(env or {})
    cmd = ["mpirun", "-np", str(ranks), "--oversubscribe"]
    forwarded = ["PATH", "LD_LIBRARY_PATH", "WM_PROJECT_DIR", "FOAM_REDUCTION_SCHEDULE"]
    for var in dict.fromkeys(forwarded + list(env or {})):
        if var in run_env:
            cmd += ["-x", var]
    return subprocess.run(
        cmd + args, capture_output=True, text=True, env=run_env, cwd=cwd, timeout=600
    )


def environment(patched: bool, schedule: Path | None = None) -> dict:
    """The run environment: stock or patched libraries, and the schedule to use."""
    libs = [openfoam.ensure_built("scotch")]
    if patched:
        libs.insert(0, openfoam.ensure_built("patched"))
    base = dict(
        os.environ,
        WM_PROJECT_DIR=str(openfoam.PROJECT_DIR),
        LD_LIBRARY_PATH=":".join(map(str, libs)),
    )
    return _for_mpirun(base, schedule)


def _for_mpirun(base: dict, schedule: Path | None) -> dict:
    """``base`` for Open MPI's mpirun as any user, with oversubscribed ranks that yield, and
    the schedule at ``schedule`` or none."""
    env = dict(
        base,
        OMPI_ALLOW_RUN_AS_ROOT="1",
        OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
        OMPI_MCA_mpi_yield_when_idle="1",
    )
    env.pop("FOAM_REDUCTION_SCHEDULE", None)
    if schedule is not None:
        env["FOAM_REDUCTION_SCHEDULE"] = str(schedule)
    return env


def mpirun(
    ranks: int,
    args: list[str],
    *,
    patched: bool,
    schedule: Path | None = None,
    sums: bool = False,
    cwd: Path | None = None,
    timeout: float = 600,
) -> subprocess.CompletedProcess:
    """Run an OpenFOAM program on ``ranks`` MPI ranks (oversubscribed if need be) with the
    stock or patched libraries; ``sums`` routes scalar sum/min along the schedule."""
    env = environment(patched, schedule)
    cmd = ["mpirun", "-np", str(ranks), "--oversubscribe"]
    for var in ("LD_LIBRARY_PATH", "WM_PROJECT_DIR", "FOAM_REDUCTION_SCHEDULE"):
        if var in env:
            cmd += ["-x", var]
    cmd += [*args, "-parallel"]
    if sums:
        cmd += ["-opt-switch", "reductionScheduleSums=1"]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout)


def run(
    ranks: int, *, patched: bool, schedule: Path | None = None, sums: bool = False, repeat: int = 0
) -> subprocess.CompletedProcess:
    """The reduceTest program on ``ranks`` ranks."""
    args = [str(executable())] + (["-repeat", str(repeat)] if repeat else [])
    return mpirun(ranks, args, patched=patched, schedule=schedule, sums=sums)


def results(output: str) -> dict[str, list[str]]:
    """The 'name value...' lines the program prints on the master."""
    out = {}
    for line in output.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0][0].isalpha() and parts[0] != "End":
            out[parts[0]] = parts[1:]
    return out


def benchmark(ranks_list=(2, 4, 8), repeat: int = 2000) -> list[dict]:
    """Mean reduction latency, stock vs schedule, for each rank count, in one run."""
    import tempfile

    from rankmap import graph, mapping, scheduledict, topology
    from rankmap.schedule import hierarchical

    machine = topology.load("local")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for ranks in ranks_list:
            nodes = 1
            # More ranks than cores: the placement model needs a node that holds them.
            model = (
                machine if ranks <= machine.cores else topology.load(f"pack:1 core:{ranks} pu:1")
            )
            schedule = scheduledict.write(
                hierarchical(mapping.block(graph.grid(ranks, 1), model, nodes)),
                Path(tmp) / f"reductionSchedule.{ranks}",
                "block",
            )
            row = {"ranks": ranks, "oversubscribed": ranks > machine.cores}
            for name, kwargs in (
                ("stock", dict(patched=False)),
                ("schedule", dict(patched=True, schedule=schedule)),
                ("schedule+sums", dict(patched=True, schedule=schedule, sums=True)),
            ):
                done = run(ranks, repeat=repeat, **kwargs)
                if done.returncode != 0:
                    raise RuntimeError(
                        f"reduceTest on {ranks} ranks ({name}) failed:\n"
                        f"{done.stdout[-1500:]}{done.stderr[-1500:]}"
                    )
                res = results(done.stdout)
                row[name] = {
                    "scalar_sum_us": float(res["latencyScalarSumUs"][0]),
                    "label_max_us": float(res["latencyLabelMaxUs"][0]),
                }
            rows.append(row)
    return rows


def main() -> int:
    """python -m localsite.reducetest: the latency table (builds what is missing first)."""
    rows = benchmark()
    print("mean latency per reduction in microseconds (reduceTest -repeat 2000)")
    print(
        f"{'ranks':>5}  {'scalar sum: stock':>17} {'schedule':>9} {'sched+sums':>10}   "
        f"{'label max: stock':>16} {'schedule':>9}"
    )
    for r in rows:
        note = "  (more ranks than cores: oversubscribed)" if r["oversubscribed"] else ""
        print(
            f"{r['ranks']:5}  {r['stock']['scalar_sum_us']:17.2f} "
            f"{r['schedule']['scalar_sum_us']:9.2f} {r['schedule+sums']['scalar_sum_us']:10.2f}"
            f"   {r['stock']['label_max_us']:16.2f} {r['schedule']['label_max_us']:9.2f}{note}"
        )
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main())
