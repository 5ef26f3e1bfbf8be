"""How often an Open MPI 5 launch dies in MPI_Init on a site twin's nodes, per MPI setting.

    python -m localsite.initracebench [--site oci] [--nodes 4] [--ranks-per-node 36]
        [--launches 12] [--settings ob1,ucx,fence-tree]

Under srun, Open MPI's ob1 PML can take a message from a peer that has left MPI_Init while it
still waits in the modex fence, before MPI_COMM_WORLD is added to the PML: the rank dies of
SIGSEGV in ``mca_pml_ob1_recv_frag_callback_match`` called from ``ompi_mpi_init`` (the return
address inside ``ompi_mpi_init`` is the opal_progress of that fence; open-mpi/ompi#12495,
#13559). The more the ranks straggle, the more often: on the emulated cluster's 2 cores 1
srun launch in 40 at 8 ranks (localsite.cli.EMU_RETRIES), far more at a site's scale.

This compiles ``initrace.c`` (MPI_Init, a ring message, a sum) with Open MPI 5, starts the
twin's nodes alone (no site file), and launches it by srun ``--launches`` times per setting,
the settings interleaved round by round so that the machine's drift falls on all alike:

- ``ob1``: ob1 over TCP and shared memory (localsite.cluster.mpi_env; the twins' PML for
  Open MPI 5 before this benchmark, and still for Open MPI 4.1);
- ``ucx``: Open MPI's UCX PML over TCP and shared memory (localsite.cluster.UCX_PML: what an
  Open MPI 5 twin runs);
- ``fence-tree``: ob1, Slurm's PMIx fences all by its tree (``SLURM_PMIX_FENCE=tree``).

Each launch is classed as ok, a SIGSEGV (and of those, how many backtraces name the ob1
callback: srun often kills the step before a rank has printed its backtrace) or another
failure; the summary gives each setting's SIGSEGV rate with its 95 % interval, Fisher's
exact test against the first setting, and the launches a case needs for a 1 % chance of
dying in every one (at the interval's upper end). Root only (the twin's namespaces).
"""

from __future__ import annotations

import argparse
import math
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scipy import stats

from localsite import openmpi5, twin
from localsite.benchrun import as_root

SOURCE = Path(__file__).with_name("initrace.c")
RACE = "mca_pml_ob1_recv_frag_callback_match"
SIGSEGV = ("Segmentation fault", "signal 11")
#: Each setting: a twin partition's PML (localsite.twin.mpi_settings), and what it adds.
SETTINGS = {
    "ob1": ("ob1", {}),
    "ucx": ("ucx", {}),
    "fence-tree": ("ob1", {"SLURM_PMIX_FENCE": "tree"}),
}
#: A launch that has not ended by then is stopped and counted as another failure.
LAUNCH_LIMIT = 900


def compile_program(where: Path) -> Path:
    program = where / "initrace"
    env = openmpi5.environ()
    done = subprocess.run(
        ["mpicc", "-O1", "-o", str(program), str(SOURCE)], env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"initracebench: mpicc failed: {done.stderr.strip()[:400]}")
    return program


def launch(cluster, partition: str, nodes: int, ppn: int, program: Path, setting: str, log: Path):
    """(class, seconds) of one srun launch; its output kept in ``log``."""
    # openmpi5.environ drops the client's OMPI_ settings (meant for Open MPI 4.1): a twin
    # partition's own ones go back on, as its env_vars give them (Twin.start).
    pml, extra = SETTINGS[setting]
    env = openmpi5.environ(cluster.client_env())
    env.update(twin.mpi_settings(cluster, pml))
    env["OMPI_MCA_mca_base_env_list"] = "LD_LIBRARY_PATH"  # unquoted: no ReFrame job script
    env.update(extra)
    command = ["srun", "-p", partition, "-N", str(nodes), "--ntasks-per-node", str(ppn),
               "--mpi=pmix", f"--time={LAUNCH_LIMIT // 60}", str(program)]  # fmt: skip
    began = time.monotonic()
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True,
                              timeout=LAUNCH_LIMIT + 60)  # fmt: skip
        text, code = done.stdout + done.stderr, done.returncode
    except subprocess.TimeoutExpired as e:
        text, code = f"{e.stdout or ''}{e.stderr or ''}\ninitracebench: timed out", -1
    if not isinstance(text, str):
        text = text.decode(errors="replace")
    log.write_text(f"{text}\ninitracebench: srun's exit status {code}\n")
    took = time.monotonic() - began
    if code == 0 and f"initrace: {nodes * ppn} ranks" in text:
        return "ok", took
    if RACE in text:
        return "race", took
    return ("segv" if any(s in text for s in SIGSEGV) else "other"), took


def summary(counts: dict[str, dict[str, int]], launches: int) -> None:
    first = next(iter(counts))
    for setting, c in counts.items():
        n, died = sum(c.values()), c["race"] + c["segv"]
        ci = stats.binomtest(died, n).proportion_ci(0.95)
        line = (f"  {setting:<11} SIGSEGV {died} of {n} ({died / n * 100:.0f} %, 95 % interval "
                f"{ci.low * 100:.0f} to {ci.high * 100:.0f} %; {c['race']} backtraces name "
                f"ob1's callback); other failures {c['other']}")  # fmt: skip
        if setting != first:
            a = counts[first]
            a_died = a["race"] + a["segv"]
            _, p = stats.fisher_exact([[a_died, sum(a.values()) - a_died],
                                       [died, n - died]])  # fmt: skip
            line += f"; against {first}: p = {p:.3g} (Fisher's exact)"
        if ci.high >= 1:
            line += "; launches for a 1 % chance of dying in each: not bounded"
        elif ci.high > 0:
            need = math.ceil(math.log(0.01) / math.log(ci.high))
            line += f"; launches for a 1 % chance of dying in each: {need}"
        print(line, flush=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m localsite.initracebench", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("--site", default="oci", choices=twin.SITES)
    p.add_argument("--partition", default="", help="the site's partition (default: its last)")
    p.add_argument("--nodes", type=int, default=4)
    p.add_argument("--ranks-per-node", type=int, default=36)
    p.add_argument("--launches", type=int, default=12, help="per setting")
    p.add_argument("--settings", default="ob1,ucx,fence-tree")
    args = p.parse_args(argv)
    chosen = [s for s in args.settings.split(",") if s]
    unknown = [s for s in chosen if s not in SETTINGS]
    if unknown or not chosen:
        print(f"initracebench: unknown setting {','.join(unknown) or '(none)'} -- choose from "
              f"{', '.join(SETTINGS)}", file=sys.stderr)  # fmt: skip
        return 2
    if args.launches < 1 or args.nodes < 2 or args.ranks_per_node < 1:
        print("initracebench: --launches >= 1, --nodes >= 2 and --ranks-per-node >= 1 -- the "
              "race needs ranks on two nodes at least", file=sys.stderr)  # fmt: skip
        return 2
    if not as_root("initracebench"):
        return 2
    try:
        t = twin.Twin(args.site, nodes=args.nodes)
    except twin.TwinError as e:
        print(f"initracebench: {e}", file=sys.stderr)
        return 2
    part = next((q for q in t.parts if q.name == args.partition), None) if args.partition \
        else t.parts[-1]  # fmt: skip
    if part is None:
        print(f"initracebench: {args.site} has no partition {args.partition!r} -- choose one "
              f"of {', '.join(q.name for q in t.parts)}", file=sys.stderr)  # fmt: skip
        return 2
    try:
        openmpi5.ensure(say=lambda line: print(line, file=sys.stderr, flush=True))
    except openmpi5.OpenMPI5Error as e:
        print(f"initracebench: {e}", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    work = Path(tempfile.mkdtemp(prefix="initracebench-"))
    program = compile_program(work)
    ranks = args.nodes * args.ranks_per_node
    print(f"initracebench: {args.site} twin, {part.name}: {args.nodes} nodes x "
          f"{args.ranks_per_node} = {ranks} ranks by srun, Open MPI {openmpi5.VERSION}; "
          f"{args.launches} launches of each of {', '.join(chosen)}, interleaved; logs in "
          f"{work}", flush=True)  # fmt: skip
    counts = {s: {"ok": 0, "race": 0, "segv": 0, "other": 0} for s in chosen}
    began = time.monotonic()
    interrupted = False
    try:
        t.start_nodes()
        for r in range(args.launches):
            for s in chosen:
                kind, took = launch(t.cluster, part.slurm_partition, args.nodes,
                                    args.ranks_per_node, program, s, work / f"{s}-{r}.log")  # fmt: skip
                counts[s][kind] += 1
                print(f"  launch {r + 1}/{args.launches} {s}: {kind} ({took:.0f} s)", flush=True)
    except KeyboardInterrupt:
        interrupted = True
        print("initracebench: interrupted; the launches so far:", file=sys.stderr)
    finally:
        t.cluster.stop()
    done = {s: c for s, c in counts.items() if sum(c.values())}
    if done:
        summary(done, args.launches)
    print(f"initracebench: {(time.monotonic() - began) / 60:.1f} min", flush=True)
    if all(c["ok"] == sum(c.values()) for c in done.values()):
        shutil.rmtree(work)  # the failed launches' logs are kept for their backtraces
    return 130 if interrupted else 0


if __name__ == "__main__":
    sys.exit(main())
