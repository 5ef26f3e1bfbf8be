"""MPI calls by kind, counted by the project's PMPI interposer (reframe/src/mpicount).

lib = build(folder)                      # mpicc -shared: libmpicount.so
env = preload(lib, out)                  # LD_PRELOAD + where each rank writes its counts
... mpirun -x LD_PRELOAD -x TOPOFOAM_MPICOUNT_DIR <solver> -parallel ...
calls = read(out)                        # {'MPI_Allreduce': 1234, ...}, summed over ranks
sent = peers(out)                        # {('MPI_Send', 0, 3): 12, ...}: kind, from, to
across = by_host(sent, hosts)            # {'MPI_Send': (inter-node, intra-node), ...}
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from topofoam.paths import SOURCES

SOURCE = SOURCES / "mpicount" / "mpicount.c"


class CountError(RuntimeError):
    """The interposer did not build, or a rank wrote no counts."""


def build(folder: Path) -> Path:
    """libmpicount.so in ``folder``, compiled with the MPI on PATH (mpicc)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    lib = folder / "libmpicount.so"
    done = subprocess.run(
        ["mpicc", "-O2", "-shared", "-fPIC", "-o", str(lib), str(SOURCE)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise CountError(
            f"mpicc could not build {SOURCE} -- install the MPI development "
            f"package (Debian: libopenmpi-dev):\n{done.stderr[-1500:]}"
        )
    return lib


def preload(lib: Path, out: Path) -> dict:
    """The variables that make every rank count (forward both to the ranks)."""
    Path(out).mkdir(parents=True, exist_ok=True)
    return {"LD_PRELOAD": str(lib), "TOPOFOAM_MPICOUNT_DIR": str(out)}


def read(out: Path, ranks: int | None = None) -> dict[str, int]:
    """Calls per MPI function, summed over the ranks' files in ``out``; with ``ranks``,
    a missing rank file is an error (that rank did not reach MPI_Finalize)."""
    files = sorted(Path(out).glob("mpicount.*"))
    if ranks is not None and len(files) != ranks:
        raise CountError(
            f"{out}: counts of {len(files)} rank(s), expected {ranks} -- a rank "
            f"did not reach MPI_Finalize (see the run's log)"
        )
    total: dict[str, int] = {}
    for path in files:
        for line in path.read_text().splitlines():
            if line.startswith("peer "):
                continue  # per destination: peers()
            name, calls = line.split()
            total[name] = total.get(name, 0) + int(calls)
    return total


def peers(out: Path) -> dict[tuple[str, int, int], int]:
    """Point-to-point messages per (MPI function, sending rank, receiving rank), both ranks
    in MPI_COMM_WORLD, from the ranks' files in ``out``."""
    sent: dict[tuple[str, int, int], int] = {}
    for path in Path(out).glob("mpicount.*"):
        src = path.suffix[1:]
        if not src.isdigit():
            continue
        for line in path.read_text().splitlines():
            parts = line.split()
            if len(parts) == 4 and parts[0] == "peer":
                key = (parts[1], int(src), int(parts[2]))
                sent[key] = sent.get(key, 0) + int(parts[3])
    return sent


def by_host(sent: dict[tuple[str, int, int], int], hosts: list[str]) -> dict[str, tuple[int, int]]:
    """Messages per MPI function as (between nodes, within a node), ``hosts[r]`` being the
    host rank r ran on."""
    out: dict[str, list[int]] = {}
    for (kind, src, dst), n in sent.items():
        if src >= len(hosts) or dst >= len(hosts):
            raise CountError(
                f"messages from rank {src} to rank {dst}, but the placement has "
                f"{len(hosts)} ranks -- the counts are not this run's"
            )
        pair = out.setdefault(kind, [0, 0])
        pair[0 if hosts[src] != hosts[dst] else 1] += n
    return {k: (v[0], v[1]) for k, v in out.items()}


def routed_along_tree(
    ranks: int,
    allreduces: tuple[int, int],
    inter_node: tuple[int, int],
    sent: tuple[int, int],
    tree_inter_node_edges: int,
) -> str | None:
    """Whether the all-reductions a variant took off MPI_Allreduce went along its tree, by
    the messages counted: each is a gather up and a scatter down its ``ranks - 1`` edges, so
    it adds ``2 (ranks - 1)`` MPI_Send messages, ``2 x tree_inter_node_edges`` of them between
    nodes. The pairs are (standard run, variant): all-reduce calls and MPI_Send messages,
    summed over the ranks, between nodes and in all. None if the counts are what the tree
    says; else why not, in one line."""
    moved = allreduces[0] - allreduces[1]
    if moved <= 0 or moved % ranks:
        return (
            f"{allreduces[1]} MPI_Allreduce calls beside standard's {allreduces[0]}: no whole "
            f"number of reductions over {ranks} ranks was taken off MPI_Allreduce"
        )
    reductions = moved // ranks
    added = sent[1] - sent[0]
    across = inter_node[1] - inter_node[0]
    if added != 2 * (ranks - 1) * reductions:
        return (
            f"{reductions} reductions moved off MPI_Allreduce added {added} MPI_Send messages, "
            f"not {2 * (ranks - 1) * reductions} (2 x {ranks - 1} tree edges each)"
        )
    if across != 2 * tree_inter_node_edges * reductions:
        return (
            f"{reductions} reductions sent {across} messages between nodes, not "
            f"{2 * tree_inter_node_edges * reductions} (2 x the schedule's "
            f"{tree_inter_node_edges} inter-node edges each)"
        )
    return None
