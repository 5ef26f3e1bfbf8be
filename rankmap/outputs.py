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
    lines = [f"rank {r}={hosts[n]} slot={m.domain[c]}:{m.core_in_domain[c]}"
             for r, (n, c) in enumerate(zip(placement.node_of.tolist(),
                                            placement.core_of.tolist()))]
    Path(path).write_text("\n".join(lines) + "\n")
    return Path(path)


def slurm_hostfile(placement: Placement, hosts: list[str], path: Path) -> Path:
    """SLURM_HOSTFILE for ``srun --distribution=arbitrary``: line r is rank r's host."""
    Path(path).write_text("\n".join(hosts[n] for n in placement.node_of.tolist()) + "\n")
    return Path(path)


def cpu_maps(placement: Placement, hosts: list[str]) -> dict[str, list[int]]:
    """Per host, the OS CPU index of each local task (``--cpu-bind=map_cpu:``), in the order
    Slurm numbers local tasks: ascending global rank."""
    maps: dict[str, list[int]] = {h: [] for h in hosts[:placement.nodes]}
    for n, c in zip(placement.node_of.tolist(), placement.core_of.tolist()):
        maps[hosts[n]].append(int(placement.machine.pu_os[c]))
    return maps


def slurm_cpu_maps(placement: Placement, hosts: list[str], path: Path) -> Path:
    """One line per host: ``HOST map_cpu:a,b,...``."""
    maps = cpu_maps(placement, hosts)
    Path(path).write_text("".join(f"{h} map_cpu:{','.join(map(str, cpus))}\n"
                                  for h, cpus in maps.items()))
    return Path(path)
