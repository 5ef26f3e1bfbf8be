"""Launcher inputs for a placement: Open MPI rankfile, Slurm hostfile and CPU maps."""

from __future__ import annotations

from pathlib import Path

from rankmap.mapping import Placement


def rankfile(placement: Placement, hosts: list[str], path: Path) -> Path:
    """Open MPI rankfile with logical indexes: ``rank R=HOST slot=PACKAGE:CORE``.

    The same file serves Open MPI 4 (``mpirun -rf FILE``) and 5
    (``mpirun --map-by rankfile:file=FILE``).
    """
    m = placement.machine
    lines = [
        f"rank {r}={hosts[n]} slot={m.domain[c]}:{m.core_in_domain[c]}"
        for r, (n, c) in enumerate(zip(placement.node_of.tolist(), placement.core_of.tolist()))
    ]
    Path(path).write_text("\n".join(lines) + "\n")
    return Path(path)


def slurm_hostfile(placement: Placement, hosts: list[str], path: Path) -> Path:
    """SLURM_HOSTFILE for ``srun --distribution=arbitrary``: line r is rank r's host."""
    Path(path).write_text("\n".join(hosts[n] for n in placement.node_of.tolist()) + "\n")
    return Path(path)


def cpu_maps(placement: Placement, hosts: list[str]) -> dict[str, list[int]]:
    """Per host, the OS CPU index of each local task (``--cpu-bind=map_cpu:``), in the order
    Slurm numbers local tasks: ascending global rank."""
    maps: dict[str, list[int]] = {h: [] for h in hosts[: placement.nodes]}
    for n, c in zip(placement.node_of.tolist(), placement.core_of.tolist()):
        maps[hosts[n]].append(int(placement.machine.pu_os[c]))
    return maps


def slurm_cpu_maps(placement: Placement, hosts: list[str], path: Path) -> Path:
    """One line per host: ``HOST map_cpu:a,b,...``."""
    maps = cpu_maps(placement, hosts)
    Path(path).write_text(
        "".join(f"{h} map_cpu:{','.join(map(str, cpus))}\n" for h, cpus in maps.items())
    )
    return Path(path)


def srun_binding(placement: Placement, hosts: list[str], folder: Path) -> tuple[Path, Path]:
    """What ``srun --distribution=arbitrary`` needs to bind every rank to its core.

    ``srun.cpu_bind`` holds the ``--cpu-bind`` value: ``map_cpu:LIST`` when every node's
    list is the same (block and cyclic placements always; Slurm has one list for all
    nodes), else ``none``. ``bind_rank`` then wraps the solver and binds rank
    ``SLURM_PROCID`` with taskset to the core this placement gives it.
    """
    maps = cpu_maps(placement, hosts)
    lists = {tuple(cpus) for cpus in maps.values()}
    folder = Path(folder)
    cpu_bind = folder / "srun.cpu_bind"
    wrapper = folder / "bind_rank"
    if len(lists) == 1:
        cpu_bind.write_text(f"map_cpu:{','.join(map(str, lists.pop()))}\n")
        wrapper.write_text('#!/bin/sh\n# srun --cpu-bind=map_cpu binds every rank.\nexec "$@"\n')
    else:
        cpus = " ".join(str(int(placement.machine.pu_os[c])) for c in placement.core_of.tolist())
        cpu_bind.write_text("none\n")
        wrapper.write_text(
            "#!/bin/sh\n# The nodes' CPU lists differ: bind rank SLURM_PROCID itself.\n"
            f"i=0\nfor cpu in {cpus}; do\n"
            '    [ "$i" -eq "$SLURM_PROCID" ] && exec taskset -c "$cpu" "$@"\n'
            "    i=$((i + 1))\ndone\n"
            'echo "bind_rank: no core for rank $SLURM_PROCID" >&2\nexit 1\n'
        )
    wrapper.chmod(0o755)
    return cpu_bind, wrapper
