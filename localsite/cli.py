"""`./bench` on the local site: run the suite, and start/stop the project's local Slurm.

    ./bench run [--partition cpu|slurm|emu|ompi5 ...] [--openfoam v1912|org12|v2512|all]
                [--tag TAG] [-- REFRAME_ARGS...]
    ./bench build org12|v2512      OpenFOAM-12 / v2512 with their series (resumable, cached)
    ./bench cases ARGS...          python -m cases with this machine's OpenFOAM
    ./bench rankmap-bench ARGS...  python -m rankmap.bench with it
    ./bench slurm start|stop|status
    ./bench cluster start [--nodes N]|stop|status

`run` builds what is missing (cached), starts the local Slurm when a partition needs it (and
stops it again if it started it), runs ReFrame on each partition in turn with the serial
execution policy (so runs do not share the cores), writes the report of the runs it made
(python -m topofoam.reporting), and prints where the perflogs, results and report are. Errors are
one line, "bench: <cause> -- <fix>", and a non-zero exit.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from localsite import estimate, facts, flavours, lowpriority, openfoam, strays
from localsite import spack as offline_spack
from localsite.cluster import EmulatedCluster
from localsite.slurm import LocalSlurm, SlurmError
from topofoam import contents, paths
from topofoam.checks import checkfiles
from topofoam.config import fabric, settings
from topofoam.results import resume

PARTITIONS = ("cpu", "slurm", "emu", "ompi5")
#: What runs unless --partition says otherwise; ompi5 (Open MPI 5, site-configs/local.py) joins
#: them for the OpenFOAM that has it.
DEFAULT_PARTITIONS = ("cpu", "slurm", "emu")
OMPI5_OPENFOAM = "v2512"
EMU_NODES = 4  # the multi-node check runs on 1, 2 and 4 nodes

#: ReFrame reruns a failed test case this often on the emulated cluster (and nowhere else).
#: Under srun, Open MPI 4.1's ob1 PML can take a message from a peer that has finished
#: MPI_Init while it still waits in the modex fence, before its receive callbacks exist:
#: rank 0 dies of SIGSEGV in MPI_Init, before OpenFOAM prints a line (open-mpi/ompi#13559,
#: #12495). On 4 emulated nodes sharing 2 cores it hit 1 srun launch in 40 (measured
#: 2026-11-23). UCX, which the other partitions use, avoids it but logs disconnect errors
#: at MPI_Finalize over TCP in half the runs. The summary names every case that passed
#: only when rerun. ``./bench validate`` never reruns: there a failure is the finding.
EMU_RETRIES = 1
CONFIG = paths.REPO / "site-configs" / "local.py"


class UsageError(RuntimeError):
    """Bad input on the command line; exit code 2."""


# Verbs that run a module with this machine's OpenFOAM; all further arguments are its own.
PASS_THROUGH = {"cases": "cases", "rankmap-bench": "rankmap.bench"}
# The OpenFOAMs those verbs and `run --openfoam` can run with: Debian's v1912, and the
# flavours built from source (site-configs/local.py has environments for each).
OPENFOAMS = ("v1912", *flavours.FLAVOURS)
# `run --openfoam` also runs the flavours as the local Spack site installed them.
SPACK_OPENFOAMS = tuple(f"{name}-spack" for name in offline_spack.SPACK_SPECS)


def _partition_list(values: list[str] | None) -> list[str]:
    chosen = []
    for value in values or list(DEFAULT_PARTITIONS):
        for name in value.split(","):
            if name not in PARTITIONS:
                raise UsageError(
                    f"unknown partition '{name}' -- choose from "
                    f"{', '.join(PARTITIONS)} (site-configs/local.py)"
                )
            if name not in chosen:
                chosen.append(name)
    return chosen


def _with_ompi5(partitions: list[str], args: argparse.Namespace, found: dict) -> list[str]:
    """The ompi5 partition runs the v2512 build on Open MPI 5: chosen by default with that
    OpenFOAM once its Open MPI 5 libPstream is built, refused, saying why, otherwise."""
    has = bool(found["flavours"].get(OMPI5_OPENFOAM, {}).get("openmpi5"))
    runs = args.openfoam in (OMPI5_OPENFOAM, "all")
    if "ompi5" in partitions:
        if not runs:
            raise UsageError(
                f"partition 'ompi5' runs OpenFOAM {OMPI5_OPENFOAM} only -- add "
                f"'--openfoam {OMPI5_OPENFOAM}' (or all)"
            )
        if not has:
            raise UsageError(
                f"partition 'ompi5' needs {OMPI5_OPENFOAM}'s libPstream against Open MPI 5 "
                f"-- run './bench build {OMPI5_OPENFOAM}' (it installs Open MPI 5 from PyPI)"
            )
        return partitions
    if args.partition is None and runs and has and os.geteuid() == 0:
        return [*partitions, "ompi5"]
    return partitions


def _environments(which: str) -> list[str]:
    """ReFrame's -p options for --openfoam: Debian's v1912 (the default), a flavour built
    from source, or all."""
    if which == "all":
        return []
    return ["-p", f"^openfoam-{which}(-patched)?$"]


def _reframe_command(
    partition: str, report: Path, tags: list[str], extra: list[str], retries: int = 0
) -> list[str]:
    # The reframe script of the interpreter running us (the project's virtualenv).
    cmd = [
        str(Path(sys.executable).parent / "reframe"),
        "-C",
        str(CONFIG),
        # Only the check files the tags select: ReFrame loads every file it is given.
        *checkfiles.tag_options(tags),
        "--system",
        f"local:{partition}",
        "--exec-policy",
        "serial",
        "--report-file",
        str(report),
        "-r",
    ]
    if retries:
        cmd += ["--max-retries", str(retries)]
    for tag in tags:
        cmd += ["--tag", tag]
    return cmd + extra


def _why(case: dict) -> str:
    if case["result"] == "fail_deps":
        return "not run: a fixture it needs failed"
    return f"{case['result']} in {case.get('fail_phase')}: {case.get('fail_reason')}"


def summarise_report(report: Path, exit_code: int) -> tuple[int, int, list[str]]:
    """(cases, cases not passed, a line per case not passed or passed only when rerun) from
    a ReFrame run report. With --max-retries the report holds one run per round, the first
    with every case, the later ones with the cases rerun: a case's outcome is its last."""
    try:
        data = json.loads(report.read_text())
    except (OSError, ValueError):
        return (
            0,
            0,
            [
                f"FAILED ReFrame exited with {exit_code} without writing its run report "
                f"(see its output above)"
            ],
        )
    attempts: dict[tuple[str, str, str], list[dict]] = {}
    for run in data.get("runs") or []:
        for case in run["testcases"]:
            key = (case["unique_name"], case["partition"], case["environ"])
            attempts.setdefault(key, []).append(case)
    failures = 0
    lines = []
    for tries in attempts.values():
        case = tries[-1]
        where = f"{case['display_name']} @{case['partition']}"
        if case["result"] not in ("pass", "xfail"):
            failures += 1
            lines.append(f"FAILED {where}: {_why(case)}")
        elif len(tries) > 1:
            lines.append(f"RERUN  {where}: passed on attempt {len(tries)}; first {_why(tries[0])}")
    return len(attempts), failures, lines


def _report(results: Path, since: str, name: str = "local") -> str:
    """The report of this run's results (topofoam.reporting) in ``results/report/<name>``:
    ``./bench run``'s is ``local``, ``./bench validate``'s ``local-validate``, so neither
    replaces the other's. Its path, or why there is none."""
    from topofoam.reporting.build import build

    out = results / "report" / name
    try:
        report = build(
            results,
            "local",
            out,
            since=since,
            say=lambda line: print(f"bench: {line}", flush=True),
        )
    except Exception as e:  # the runs are done and kept: say it, do not lose them
        return (
            f"not written ({type(e).__name__}: {e}) -- rerun it with: python -m "
            f"topofoam.reporting --results {results} --system local --since {since} --out {out}"
        )
    return f"{report.html} (and report.md, runs.csv beside it)"


def _last_run(results: Path) -> Path:
    return results / "reframe" / "last-run.json"


def _resume(args: argparse.Namespace, results: Path) -> tuple[dict[str, list[str]], str]:
    """For --resume: the last run's selection into ``args``, and per partition the ReFrame
    options that leave out what passed in it. What passed is read from the perflogs, where
    ReFrame writes each test's row when the test finishes: a run killed half-way has them
    for what it finished, and no run report at all."""
    if args.partition or args.tag or args.reframe_args:
        raise UsageError(
            "--resume reruns the last run's own selection -- leave out --partition, --tag "
            "and ReFrame options"
        )
    try:
        last = json.loads(_last_run(results).read_text())
        args.partition, args.tag = last["partitions"], last["tags"]
        args.reframe_args, started = last["reframe_args"], last["started"]
        args.openfoam = last.get("openfoam", "v1912")
        args.repeats = last.get("repeats")
        args.compare_all = last.get("compare_all", False)
        args.fabric = last.get("fabric")
    except (OSError, ValueError, KeyError, TypeError):
        raise UsageError(
            f"no earlier './bench run' recorded in {_last_run(results)} -- run './bench run' first"
        ) from None
    skip: dict[str, list[str]] = {}
    for partition in args.partition:
        passed = resume.passed_hashes(results / "perflogs" / "local", started, partition)
        skip[partition] = resume.exclude_options(passed)
        print(
            f"bench: --resume: local:{partition}: {len(passed)} test case(s) passed in the run "
            f"started {started}; rerunning the rest"
        )
    return skip, started


def _emu_fabric(partitions: list[str], recorded: str | None, default: bool) -> str | None:
    """The fabric profile the emulated partition runs under, in TOPOFOAM_FABRIC for the
    cluster and its jobs: the one given, else on a resume the interrupted run's, else (with
    ``default``) fabric.BENCH_DEFAULT, said in one line; None without the emulated partition
    or a profile."""
    if "emu" not in partitions:
        return None
    given = os.environ.get("TOPOFOAM_FABRIC", "").strip()
    if recorded and given and given != recorded:
        raise UsageError(
            f"--resume reruns the last run under its fabric {recorded}, and TOPOFOAM_FABRIC "
            f"names {given} -- unset TOPOFOAM_FABRIC, or start a new run"
        )
    chosen = given or recorded or (fabric.BENCH_DEFAULT if default else None)
    if chosen is None:
        return None
    if not given and not recorded:
        print(
            f"bench: the emulated cluster's links cost {fabric.profile(chosen).label()}, so "
            f"that the report predicts its multi-node runs (TOPOFOAM_FABRIC=none: free links)"
        )
    os.environ["TOPOFOAM_FABRIC"] = chosen
    return chosen


def _hold_results(results: Path):
    """An exclusive lock on the results folder for this run's lifetime (the kernel drops it
    when the process ends, however it ends), so that a second ./bench run there stops at
    once instead of mixing its timings with ours. A run of ReFrame started by hand holds
    none: strays.running_reframe finds that one."""
    try:
        results.mkdir(parents=True, exist_ok=True)
        lock = open(results / ".bench-run.lock", "a+")
    except OSError as e:
        raise SystemExit(
            f"bench: cannot use the results folder {results} ({e.strerror}) -- set "
            f"TOPOFOAM_RESULTS to a folder you can write"
        ) from None

    def busy(holder: str):
        raise UsageError(
            f"another run of the suite is going on in {results} (./bench run, pid "
            f"{holder or '?'}) -- wait for it, stop it, or give this run its own folder with "
            f"TOPOFOAM_RESULTS"
        ) from None

    contents.claim(lock, busy)
    return lock


def run(args: argparse.Namespace) -> int:
    settings.check_all()  # a setting outside its domain stops the run before it starts
    started = time.monotonic()
    since = time.strftime("%Y-%m-%dT%H:%M:%S")
    results = paths.results_dir()
    skip: dict[str, list[str]] = {}
    if args.resume:
        # The report then covers the whole resumed run, from its first start.
        skip, since = _resume(args, results)
    partitions = _partition_list(args.partition)
    if args.partition is None and os.geteuid() != 0:
        partitions = ["cpu"]
        print(
            "bench: not root: partitions 'slurm' and 'emu' left out (their Slurm daemons run "
            "as root); running 'cpu' only"
        )
    slurm = LocalSlurm()
    for needs_root in ("slurm", "emu"):
        if needs_root in partitions and os.geteuid() != 0:
            raise UsageError(
                f"partition '{needs_root}' needs root (its Slurm daemons run as "
                f"root) -- rerun as root, or choose '--partition cpu'"
            )
    emu_fabric = _emu_fabric(
        partitions,
        getattr(args, "fabric", None) if args.resume else None,
        default=getattr(args, "default_fabric", True),
    )
    try:
        # How long this will take: the last like run on this machine, else the reference
        # run (the cache is read here first: a cache it cannot read ends below, in one line).
        builds = [t for t in ("scotch", "patched") if not openfoam.is_built(t)]
        if args.openfoam not in ("v1912", "all") and "patched" in builds:
            builds.remove("patched")
        selections = [estimate.selection(p, args) for p in partitions]
        print(estimate.say(selections, builds), flush=True)
        lib = openfoam.ensure_built()
        if args.openfoam in ("v1912", "all"):
            # Built here, not first inside ReFrame's build fixture: its progress (objects
            # compiled, minutes to go) then reaches the terminal, and the fixture finds it.
            openfoam.ensure_built("patched")
    except openfoam.BuildError as e:
        raise SystemExit(f"bench: {e}") from None
    except PermissionError as e:
        raise SystemExit(
            f"bench: cannot use the build cache {paths.cache_dir()} "
            f"({e.strerror}: {e.filename}) -- set TOPOFOAM_CACHE to a folder "
            f"you can write"
        ) from None
    print(f"bench: OpenFOAM libraries: {lib}")
    lock = _hold_results(results)  # noqa: F841 -- held until this function returns

    # What site-configs/local.py reads instead of probing the machine itself.
    found_facts = facts.load(facts.write())
    for name, flavour in found_facts["flavours"].items():
        if name in OPENFOAMS and args.openfoam in (name, "all") and not flavour["built"]:
            if args.openfoam == name:
                raise UsageError(f"OpenFOAM {name}: {flavour['why_not']}")
            print(f"bench: OpenFOAM {name} left out: {flavour['why_not']}")
    for name, installed in found_facts.get("spack", {}).items():
        name = f"{name}-spack"
        if args.openfoam in (name, "all") and not installed["installed"]:
            if args.openfoam == name:
                raise UsageError(f"OpenFOAM {name}: {installed['why_not']}")
            print(f"bench: OpenFOAM {name} left out: {installed['why_not']}")
        elif args.openfoam in (name, "all") and installed.get("lock"):
            # Its jobs `spack load` it in the project's environment, with the lock it was
            # installed from: facts.write gave a clone without one the kept lock, or found
            # a lock of other inputs.
            print(f"bench: {installed['lock']}")
    partitions = _with_ompi5(partitions, args, found_facts)
    # A killed earlier run may still be computing: its timings and ours would both be wrong.
    found = strays.find(results / "reframe" / "stage")
    other = strays.running_reframe(found)
    if other:
        raise UsageError(
            f"another run of the suite is going on in {results} (ReFrame, pid {other}) -- wait "
            f"for it, stop it, or give this run its own folder with TOPOFOAM_RESULTS"
        )
    left = strays.stop(found)
    if left:
        print(
            f"bench: stopped {len(left)} process(es) an earlier, killed run left behind "
            f"({strays.summary(left)}) before timing anything"
        )
    reports = results / "reframe" / "reports"
    reports.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S")
    if not args.resume:  # what --resume reruns after an interruption
        _last_run(results).write_text(
            json.dumps(
                {
                    "started": since,
                    "partitions": partitions,
                    "tags": args.tag,
                    "reframe_args": args.reframe_args,
                    "openfoam": args.openfoam,
                    "repeats": args.repeats,
                    "compare_all": args.compare_all,
                    "fabric": emu_fabric,
                }
            )
            + "\n"
        )
    started_slurm = False
    cluster = EmulatedCluster(EMU_NODES)
    outcome: dict[str, tuple[int, int, list[str], Path]] = {}
    try:
        for partition in partitions:
            env = dict(os.environ)
            if args.repeats:
                env["TOPOFOAM_REPEATS"] = str(args.repeats)
            if args.compare_all:
                env["TOPOFOAM_COMPARE"] = "all"
            if partition == "slurm":
                if not slurm.running():
                    print(
                        "bench: starting the local Slurm (munged, slurmctld, slurmd) "
                        f"under {slurm.root}"
                    )
                    slurm.start()
                    started_slurm = True
                env = slurm.client_env(env)
            elif partition == "emu":
                # Both use Slurm's standard ports: the local node goes before the emulation.
                if started_slurm:
                    slurm.stop()
                    started_slurm = False
                print(
                    f"bench: starting the emulated cluster ({EMU_NODES} nodes) under {cluster.root}"
                )
                cluster.start()
                env = cluster.client_env(env)
            report = reports / f"{stamp}-{partition}.json"
            print(f"bench: ReFrame on local:{partition}", flush=True)
            extra = _environments(args.openfoam) + args.reframe_args + skip.get(partition, [])
            retries = EMU_RETRIES if partition == "emu" and getattr(args, "retries", True) else 0
            began = time.monotonic()
            done = subprocess.run(
                _reframe_command(partition, report, args.tag, extra, retries),
                env=env,
                cwd=paths.REPO,
            )
            outcome[partition] = (*summarise_report(report, done.returncode), report)
            if not args.resume and outcome[partition][0]:  # a resumed run is only a part
                estimate.record(
                    estimate.selection(partition, args),
                    time.monotonic() - began,
                    outcome[partition][0],
                )
    finally:
        if started_slurm:
            slurm.stop()
            print("bench: stopped the local Slurm it had started")
        if cluster.running():
            cluster.stop()
            print("bench: removed the emulated cluster")

    failed = 0
    print("\nbench: summary")
    for partition, (cases, failures, lines, report) in outcome.items():
        if cases:
            print(
                f"  local:{partition}: {cases - failures}/{cases} test cases passed "
                f"(run report {report})"
            )
        elif skip.get(partition):
            print(f"  local:{partition}: nothing left to rerun: what it selects passed before")
        else:
            print(f"  local:{partition}: no test case ran")
        for line in lines:
            print(f"    {line}")
        failed += failures or (cases == 0 and not skip.get(partition))
    print(f"  perflogs: {results / 'perflogs' / 'local'}")
    print(f"  results:  {results}")
    if getattr(args, "report", True):  # ./bench validate writes it after the verdict
        print(f"  report:   {_report(results, since)}")
    minutes, seconds = divmod(round(time.monotonic() - started), 60)
    print(f"  took:     {minutes} min {seconds} s")
    return 1 if failed else 0


def validate(args: argparse.Namespace) -> int:
    """The validation selection (``-t validate``) on this machine, then its verdict: the
    first time, the session's measurements become this machine's expectations (and it says
    so); later, the session is judged against them (topofoam.validation)."""
    extras = ["--session-extras", f"tag={args.session_tag}"] if args.session_tag else []
    run_args = argparse.Namespace(
        partition=args.partition or ["cpu"],
        tag=["validate"],
        resume=False,
        openfoam="v1912",
        repeats=None,
        compare_all=False,
        reframe_args=extras + args.reframe_args,
        report=False,
        # A validation check that failed is a finding: a rerun must not pass it away (a
        # slow node named on the first try passed on the rerun, CI 2026-11-25).
        retries=False,
        # Judged against expectations recorded under the links as they are set: the main
        # job's priced links (fabric.BENCH_DEFAULT) only where TOPOFOAM_FABRIC names them.
        default_fabric=False,
    )
    since = time.strftime("%Y-%m-%dT%H:%M:%S")
    ran = run(run_args)
    env = {**os.environ, "SLURM_CONF": os.environ.get("SLURM_CONF", os.devnull)}
    verb = ["record"] if args.record else ["judge", "--record-first"]
    command = [sys.executable, "-m", "topofoam.validation", *verb, "-C", str(CONFIG)]
    print("\nbench: the verdict", flush=True)
    verdict = subprocess.run(command, cwd=paths.REPO, env=env).returncode
    # The report opens with the verdicts (topofoam.reporting reads their JSON); it goes beside
    # ./bench run's report, not over it.
    print(f"bench: report: {_report(paths.results_dir(), since, 'local-validate')}")
    # A failed test case is in the verdict (FAIL); a run that could not judge says so.
    return verdict if verdict else (1 if ran else 0)


def with_openfoam(args: argparse.Namespace) -> int:
    """``python -m <module>`` with Debian's OpenFOAM and the real SCOTCH library (built if
    missing), or with a flavour built from source (``--openfoam org12``): cases and rankmap
    take the OpenFOAM of the environment they are given."""
    which = getattr(args, "openfoam", "v1912")
    if which not in OPENFOAMS:
        print(
            f"bench: unknown OpenFOAM '{which}' -- choose from {', '.join(OPENFOAMS)}",
            file=sys.stderr,
        )
        return 2
    # A SIGTERM is a Ctrl-C here: the SCOTCH build below, and the module's own clean-up.
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        try:
            if which == "v1912":
                env = openfoam.run_env()
            else:
                env = flavours.run_env(flavours.get(which))
        except (openfoam.BuildError, flavours.BuildError) as e:
            raise SystemExit(f"bench: {e}") from None
        except KeyboardInterrupt:  # build-openfoam.sh removes its unfinished folder
            print("bench: interrupted; no unfinished build was kept", file=sys.stderr)
            return 130
        if os.geteuid() == 0:
            env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
            env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        cmd = [sys.executable, "-m", args.module, *args.module_args]
        return _wait_passing_stops(subprocess.Popen(cmd, env=env))
    finally:
        signal.signal(signal.SIGTERM, previous)


def _wait_passing_stops(child: subprocess.Popen) -> int:
    """The child's exit status. A Ctrl-C reaches it too (one process group) and a SIGTERM
    is passed on: it cleans up and says so itself (its 130), with no traceback here."""
    while True:
        try:
            return child.wait()
        except KeyboardInterrupt:
            if child.poll() is None:
                child.send_signal(signal.SIGINT)


def build_command(args: argparse.Namespace) -> int:
    """A flavour built from its source tree with the project's series (localsite/flavours.py)."""
    try:
        flavour = flavours.get(args.flavour)
        print(f"bench: built: {flavours.ensure_built(flavour)}")
    except flavours.BuildError as e:
        print(f"bench: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # Ctrl-C, or a SIGTERM of ours (lowpriority.run)
        print(
            f"bench: the build was stopped -- rerun './bench build {args.flavour}': it "
            f"continues where it stopped",
            file=sys.stderr,
        )
        return 130
    if flavour.openmpi5_mplib:
        # The Open MPI 5 launch path (OCI's MPI); the main build stands without it.
        try:
            where = flavours.ensure_openmpi5(flavour, say=lambda m: print(f"bench: {m}"))
            print(f"bench: built: {where} (libPstream against Open MPI 5)")
        except flavours.BuildError as e:
            print(f"bench: no Open MPI 5 libPstream: {e}", file=sys.stderr)
    return 0


def _repository_env(spack_args: list[str]) -> bool:
    """Whether the Spack command works on the repository's environment (``-e .``)."""
    for i, arg in enumerate(spack_args[:-1]):
        if arg in ("-e", "--env"):
            return (paths.REPO / spack_args[i + 1]).resolve() == paths.REPO.resolve()
    return False


def spack_command(args: argparse.Namespace) -> int:
    """The offline Spack (TOPOFOAM_SPACK_KIT), set up once, run in the repository: e.g.
    ``TOPOFOAM_SITE=oci ./bench spack -e . concretize -f``."""
    site = os.environ.get("TOPOFOAM_SITE")
    if site is not None and not (paths.REPO / "site-configs" / f"{site}.spack.yaml").is_file():
        known = sorted(
            f.name.split(".")[0] for f in (paths.REPO / "site-configs").glob("*.spack.yaml")
        )
        print(
            f"bench: TOPOFOAM_SITE={site}: there is no site-configs/{site}.spack.yaml -- choose "
            f"{', '.join(known)}, or unset it for the environment with every OpenFOAM",
            file=sys.stderr,
        )
        return 2
    try:
        spack = offline_spack.ensure()
    except offline_spack.SpackKitError as e:
        print(f"bench: {e}", file=sys.stderr)
        return 1
    installing = "install" in args.spack_args
    scope, absent = offline_spack.mirror_scope(spack, fetch=installing)
    if installing:
        named = offline_spack.named_specs(args.spack_args)
        before = offline_spack.wanted_sources_missing(site, absent, named)
        if site == "local":
            before += offline_spack.external_mismatches(offline_spack.site_file(site))
        for line in before:
            print(f"bench: spack: {line}", file=sys.stderr)
        if before:
            return 2
    spack_args = list(args.spack_args)
    if "install" in spack_args and "--dont-restage" not in spack_args:
        # Spack's default wipes the stage of an install that stopped; this one continues in
        # it (wmake compiles what is missing). A changed recipe is a new spec, a new stage.
        spack_args.insert(spack_args.index("install") + 1, "--dont-restage")
    extra = dict(flavours.ccache_environ())
    if site is not None:
        extra["TOPOFOAM_SITE"] = site
    head = [str(spack.root / "bin" / "spack"), "-C", str(scope)]
    env = spack.environ(**extra)
    if installing and _repository_env(spack_args) and offline_spack.lock_is_stale(site):
        print(
            "bench: spack: spack.lock was concretized from other inputs (a recipe, a patch, "
            "spack.yaml or the site file changed, or another site): concretizing again first",
            flush=True,
        )
        status = _spack_run([*head, "-e", ".", "concretize", "-f"], env, scope.parent / "mirror")
        if status != 0:
            return status
        offline_spack.keep_lock(site)
    status = _spack_run([*head, *spack_args], env, scope.parent / "mirror")
    if status == 0 and {"install", "concretize"} & set(spack_args):
        offline_spack.keep_lock(site)
    return status


def _spack_run(cmd: list[str], env: dict, mirror: Path) -> int:
    """Spack in a session of its own at the lowest CPU priority, its output as it comes,
    and one line at the end saying why it stopped, if it did. A stop (a job's or session's
    SIGTERM) is an interrupt: Spack, its build and the compilers stop with us, and we say how
    to continue. A SIGTSTP pauses them with us (lowpriority.started), as beside a timing."""
    tail = collections.deque(maxlen=400)
    interrupted = False
    try:
        with lowpriority.started(
            cmd, cwd=paths.REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, errors="replace",
        ) as spack_run:  # fmt: skip
            for line in spack_run.stdout:
                print(line, end="", flush=True)
                tail.append(line)
    except KeyboardInterrupt:
        interrupted = True  # started() has stopped Spack and all it started
    if not interrupted and spack_run.returncode == 0:
        return 0
    if interrupted or spack_run.returncode < 0:
        why = (
            "stopped before the end -- rerun the same command: the build continues in "
            "Spack's kept stage"
        )
    else:
        why = offline_spack.why_it_stopped("".join(tail), mirror) or (
            "Spack stopped (above) -- fix what it names, then rerun the same command"
        )
    print(f"bench: spack: {why}", file=sys.stderr)
    return spack_run.returncode if spack_run.returncode > 0 else 130


def slurm_command(args: argparse.Namespace) -> int:
    slurm = LocalSlurm()
    if args.action == "start":
        slurm.start()
        print(
            f"bench: local Slurm is up ({', '.join(f'{k} {v}' for k, v in slurm.running().items())})"
        )
        print(f"  use it with: export SLURM_CONF={slurm.conf}")
        print("  stop it with: ./bench slurm stop")
    elif args.action == "stop":
        stopped = slurm.stop()
        print(
            f"bench: stopped {', '.join(stopped)}"
            if stopped
            else "bench: no daemons of ours were running"
        )
    else:
        return _status(slurm.running(), slurm.conf, "local Slurm")
    return 0


def _status(alive: dict[str, int], conf: Path, what: str) -> int:
    """The status line of a set of daemons; exit code 1 when none runs."""
    if not alive:
        print(f"bench: the {what} is not running")
        return 1
    print(
        f"bench: running: {', '.join(f'{k} (pid {v})' for k, v in alive.items())}; "
        f"SLURM_CONF={conf}"
    )
    return 0


def cluster_command(args: argparse.Namespace) -> int:
    """The emulated multi-node cluster (localsite/cluster.py)."""
    if args.action == "start":
        cluster = EmulatedCluster(args.nodes)
        cluster.start()
        print(
            f"bench: emulated cluster up: {', '.join(cluster.hosts)} on {cluster.subnet}.0/24 "
            f"(namespaces {', '.join(cluster.netns.values())}, bridge {cluster.bridge})"
        )
        print(f"  use it with: export SLURM_CONF={cluster.conf}")
        print("  stop it with: ./bench cluster stop")
        return 0
    # stop/status act on whatever the state file records, whatever the node count.
    cluster = EmulatedCluster(8)
    if args.action == "stop":
        removed = cluster.stop()
        print(
            f"bench: removed {', '.join(removed)}"
            if removed
            else "bench: nothing of the emulated cluster was left"
        )
        return 0
    return _status(cluster.running(), cluster.conf, "emulated cluster")


def twin_command(args: argparse.Namespace) -> int:
    """A site twin (localsite/twin.py): the emulated cluster shaped like a site's partitions,
    and the site's own configuration file run against it."""
    from localsite import twin

    node_topology = dict(_pair(t, "--node-topology") for t in args.node_topology)
    t = twin.Twin(args.site, args.nodes, node_topology)
    # A SIGTERM is a Ctrl-C here: the twin is stopped on the way out, its jobs' steps with it.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    if args.action == "run":
        t.check_ranks(args.reframe_args)  # before anything starts
    if args.action == "stop":
        removed = t.stop()
        print(f"bench: removed {', '.join(removed)}" if removed else
              f"bench: nothing of the {args.site} twin was left")  # fmt: skip
        return 0
    if args.action == "status":
        return _status(t.cluster.running(), t.cluster.conf, f"{args.site} twin")
    t.start(args.openfoam, say=lambda line: print(line, flush=True))
    if args.action == "check":
        try:
            command = [sys.executable, "-m", "topofoam.validation.sitecheck", "-C",
                       str(args.site_file or twin.site_file(args.site))]  # fmt: skip
            if args.spack_yaml:
                command += ["--spack-yaml", str(args.spack_yaml)]
            return subprocess.run(command, env=t.env(os.environ), cwd=paths.REPO).returncode
        finally:
            t.stop()
            print(f"bench: removed the {args.site} twin")
    if args.action == "start":
        print(
            f"  use it with: export SLURM_CONF={t.cluster.conf} TOPOFOAM_TWIN={t.substitution_file}"
        )
        print(f"  stop it with: ./bench twin {args.site} stop")
        return 0
    try:
        env = t.env(os.environ)
        env.setdefault("TOPOFOAM_RESULTS", str(paths.REPO / "results" / "twin" / args.site))
        Path(env["TOPOFOAM_RESULTS"]).mkdir(parents=True, exist_ok=True)  # ReFrame logs there
        command = [
            str(Path(sys.executable).parent / "reframe"),
            "-C", str(twin.site_file(args.site)), "--system", args.site,
            *checkfiles.options(args.reframe_args), "-r", *args.reframe_args,
        ]  # fmt: skip
        print(f"bench: {' '.join(command[1:])} (results in {env['TOPOFOAM_RESULTS']})", flush=True)
        # ReFrame runs in a process group of its own, so that it hears one stop, ours, whether
        # a Ctrl-C or a SIGTERM stopped us: a SIGTERM, on which it aborts its cases, cancels
        # their jobs while the twin's slurmctld still answers and writes its run report; then
        # the twin stops. Not a SIGINT: under nohup or a batch job's shell the ReFrame process
        # starts with SIGINT ignored and would never end.
        reframe = subprocess.Popen(command, env=env, cwd=paths.REPO, process_group=0)
        try:
            return reframe.wait()
        except KeyboardInterrupt:
            reframe.send_signal(signal.SIGTERM)
            reframe.wait()
            raise
    finally:
        t.stop()
        print(f"bench: removed the {args.site} twin")


def _pair(text: str, option: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name or not value:
        raise UsageError(f"{option} {text!r} -- give PARTITION=DESCRIPTION, e.g. "
                         f"zen3_0512='pack:2 numa:1 core:64 pu:1'")  # fmt: skip
    return name, value


def _repeat_count(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of repeats, 1 or more")
    return int(text)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bench", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run the suite on this machine")
    r.add_argument(
        "--partition",
        action="append",
        metavar="NAME",
        help=f"partition(s) to run on: {', '.join(PARTITIONS)} (default: "
        f"{', '.join(DEFAULT_PARTITIONS)}, and ompi5 with --openfoam {OMPI5_OPENFOAM} or all)",
    )
    r.add_argument("--tag", action="append", default=[], help="only checks with this tag")
    r.add_argument(
        "--resume",
        action="store_true",
        help="after an interrupted or failed run: rerun what of it did not pass (what never "
        "ran included), with its own selection",
    )
    r.add_argument(
        "--openfoam",
        choices=("all", *OPENFOAMS, *SPACK_OPENFOAMS),
        default="v1912",
        help="the OpenFOAM whose environments run: Debian's v1912 (default), org12 or v2512 "
        "(built with './bench build NAME'), org12-spack or v2512-spack (installed with "
        "'TOPOFOAM_SITE=local ./bench spack -e . install'), or all",
    )
    r.add_argument(
        "--repeats",
        type=_repeat_count,
        metavar="N",
        help="repeats of every timed comparison on cpu (default 5; TOPOFOAM_REPEATS)",
    )
    r.add_argument(
        "--compare-all",
        action="store_true",
        help="time the comparisons on every case, as a cluster site does (default: one case "
        "per kind, to keep the main job within about 20 minutes; TOPOFOAM_COMPARE=all)",
    )
    r.add_argument("reframe_args", nargs="*", help="further ReFrame options, after --")
    r.set_defaults(func=run)
    v = sub.add_parser("validate", help="validate this machine: -t validate, then its verdict")
    v.add_argument(
        "--partition", action="append", metavar="NAME", help="partition(s) (default: cpu)"
    )
    v.add_argument(
        "--session-tag", metavar="TAG", help="name this session in ReFrame's results store"
    )
    v.add_argument(
        "--record",
        action="store_true",
        help="make this session's measurements the expectations (after a deliberate change)",
    )
    v.add_argument("reframe_args", nargs="*", help="further ReFrame options, after --")
    v.set_defaults(func=validate)
    b = sub.add_parser("build", help="build an OpenFOAM flavour from source with its series")
    b.add_argument("flavour", choices=sorted(flavours.FLAVOURS))
    b.set_defaults(func=build_command)
    for verb, module in PASS_THROUGH.items():
        k = sub.add_parser(
            verb, help=f"python -m {module} with this machine's OpenFOAM", add_help=False
        )
        k.add_argument("module_args", nargs=argparse.REMAINDER)
        k.set_defaults(func=with_openfoam, module=module)
    k = sub.add_parser(
        "spack",
        help="the offline Spack of TOPOFOAM_SPACK_KIT, in the repository (set up once)",
        add_help=False,
    )
    k.add_argument("spack_args", nargs=argparse.REMAINDER)
    k.set_defaults(func=spack_command)
    s = sub.add_parser("slurm", help="the project's local Slurm")
    s.add_argument("action", choices=("start", "stop", "status"))
    s.set_defaults(func=slurm_command)
    c = sub.add_parser("cluster", help="an emulated multi-node Slurm cluster (network namespaces)")
    c.add_argument("action", choices=("start", "stop", "status"))
    c.add_argument("--nodes", type=int, default=2, help="1 to 8 (default 2)")
    c.set_defaults(func=cluster_command)
    t = sub.add_parser(
        "twin", help="a site twin: the emulated cluster shaped like a site, its site file run"
    )
    t.add_argument("site", help="vsc5, hpc2 or oci (a file in site-configs/)")
    t.add_argument("action", choices=("start", "stop", "status", "run", "check"))
    t.add_argument("--nodes", type=int, default=2, help="nodes per partition (default 2)")
    t.add_argument(
        "--openfoam",
        choices=("v1912", "org12", "v2512"),
        default="",
        help="stand this build in for every environment (default: the site's own flavour)",
    )
    t.add_argument(
        "--node-topology",
        action="append",
        default=[],
        metavar="PARTITION=DESCRIPTION",
        help="show a partition's nodes another hwloc topology than its site file declares",
    )
    t.add_argument(
        "--site-file", type=Path, help="check: this site file against the twin (a changed copy)"
    )
    t.add_argument("--spack-yaml", type=Path, help="check: these Spack settings")
    t.add_argument("reframe_args", nargs="*", help="ReFrame's options for run, after --")
    t.set_defaults(func=twin_command)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in PASS_THROUGH:
        # Everything after the verb is the module's own (argparse's REMAINDER would not take
        # a first argument that starts with "-", such as --json), but for a leading
        # "--openfoam NAME": which OpenFOAM it runs with.
        rest, which = argv[1:], "v1912"
        if rest[:1] == ["--openfoam"]:
            if len(rest) < 2:
                print(f"bench: --openfoam needs a name: {', '.join(OPENFOAMS)}", file=sys.stderr)
                return 2
            which, rest = rest[1], rest[2:]
        args = argparse.Namespace(module=PASS_THROUGH[argv[0]], module_args=rest, openfoam=which)
        return with_openfoam(args)
    if argv and argv[0] == "spack":  # Spack's own options (-e .) follow the verb
        return spack_command(argparse.Namespace(spack_args=argv[1:]))
    passed = []
    if argv and argv[0] == "twin" and "--" in argv:
        # ReFrame's options after '--' (argparse gives them to no positional after two others)
        at = argv.index("--")
        argv, passed = argv[:at], argv[at + 1 :]
    args = parser().parse_args(argv)
    if passed:
        args.reframe_args = passed
    try:
        return args.func(args)
    except UsageError as e:
        print(f"bench: {e}", file=sys.stderr)
        return 2
    except SlurmError as e:
        print(f"bench: {e}", file=sys.stderr)
        return 1
    except settings.SettingError as e:
        print(f"bench: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("bench: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
