"""python -m rankmap {map,schedule,analyze,graph}: placements, schedules and their analysis.

  map       CASE --topology T --nodes N [--hosts ...|from Slurm] --out DIR
            rankfile (Open MPI 4 and 5), slurm.hostfile + slurm.cpu_bind, reductionSchedule
            (for the rankmap placement), reductionSchedule.block (default placement: the
            "global only" variant), analysis.json
  schedule  CASE --topology T --nodes N --placement block|cyclic|rankmap --out FILE
  analyze   CASE --topology T --nodes N [--placement a,b,...] [--json FILE]
  graph     CASE --out FILE
            the communication graph as an edge list (rank,neighbour,faces), which CASE
            may also be (a file ending in .csv)

CASE is a decomposed OpenFOAM case (processor* folders, or for large meshes a cell distribution
from 'decomposePar -dry-run -cellDist' beside the mesh) or 'grid:NXxNYxNZ' (a structured block
decomposition, for trying machines without a case). Errors: one line, exit code 2.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from rankmap import analysis, graph, mapping, outputs, scheduledict, topology
from rankmap.errors import InputError
from rankmap.schedule import hierarchical


def load_graph(spec: str) -> graph.CommGraph:
    m = re.fullmatch(r"grid:(\d+)x(\d+)(?:x(\d+))?", spec)
    if m:
        dims = [int(m.group(1)), int(m.group(2)), int(m.group(3) or 1)]
        if min(dims) < 1:
            raise InputError(
                f"{spec}: every dimension of a grid must be at least 1 -- e.g. grid:4x4x2"
            )
        ranks = dims[0] * dims[1] * dims[2]
        if ranks > graph.MAX_RANKS:
            raise InputError(
                f"{spec} has {ranks:,} ranks, more than the {graph.MAX_RANKS:,} a grid may have "
                f"-- give a smaller grid"
            )
        return graph.grid(*dims)
    path = Path(spec)
    if path.suffix == ".csv" and path.is_file():
        return graph.read_edges(path)
    if not path.is_dir():
        raise InputError(
            f"case directory {path} does not exist -- give a decomposed case or grid:NXxNYxNZ"
        )
    return graph.from_case(path)


def slurm_hosts() -> list[str] | None:
    """Hostnames of the current Slurm allocation, or None outside one."""
    nodelist = os.environ.get("SLURM_JOB_NODELIST")
    if not nodelist:
        return None
    done = subprocess.run(
        ["scontrol", "show", "hostnames", nodelist], capture_output=True, text=True
    )
    if done.returncode != 0:
        raise InputError(
            f"'scontrol show hostnames {nodelist}' failed: {done.stderr.strip()} "
            f"-- give the hosts with --hosts"
        )
    return done.stdout.split()


def hosts_for(args, nodes: int) -> list[str]:
    hosts = args.hosts.split(",") if args.hosts else slurm_hosts()
    if hosts is None:
        raise InputError(
            "no hosts: run inside a Slurm allocation (SLURM_JOB_NODELIST) or give --hosts h1,h2,..."
        )
    where = "--hosts" if args.hosts else "SLURM_JOB_NODELIST"
    check_hosts(hosts, where)
    if len(hosts) < nodes:
        raise InputError(f"{nodes} nodes need {nodes} hosts, got {len(hosts)}: {hosts}")
    return hosts[:nodes]


HOSTNAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$")


def check_hosts(hosts: list[str], where: str) -> None:
    """Every host named once, by a valid name: a name given twice would put two nodes' ranks
    on the same cores of one host, an empty one a rank on no host."""
    bad = [h for h in hosts if not HOSTNAME.match(h)]
    if bad:
        raise InputError(
            f"{where} holds {'an empty host name' if bad[0] == '' else f'the host name {bad[0]!r}'}"
            f" -- give host names separated by single commas, e.g. --hosts n1,n2"
        )
    twice = sorted({h for h in hosts if hosts.count(h) > 1})
    if twice:
        raise InputError(
            f"{where} names {', '.join(twice)} more than once, which would put two nodes' "
            f"ranks on one host's cores -- name each host once"
        )


def _progress(done: int, total: int) -> None:
    if total >= 32 and (done == total or done % max(total // 10, 1) == 0):
        print(f"rankmap: mapped {done}/{total} nodes", file=sys.stderr, flush=True)


def _place(name, g, machine, nodes, args, costs=None):
    t0 = time.perf_counter()
    placement = mapping.place(
        name,
        g,
        machine,
        nodes,
        args.seed,
        progress=_progress,
        partitioner=args.partitioner,
        costs=costs,
    )
    return placement, time.perf_counter() - t0


def cmd_map(args) -> int:
    g, machine = load_graph(args.case), topology.load(args.topology)
    nodes = args.nodes
    hosts = hosts_for(args, nodes)
    costs = analysis.cost_vector(args.cost_system, args.cost_size, args.cost_table)
    placement, seconds = _place(args.placement, g, machine, nodes, args, costs)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    outputs.rankfile(placement, hosts, out / "rankfile")
    outputs.slurm_hostfile(placement, hosts, out / "slurm.hostfile")
    outputs.slurm_cpu_maps(placement, hosts, out / "slurm.cpu_bind")
    outputs.srun_binding(placement, hosts, out)
    scheduledict.write(hierarchical(placement), out / "reductionSchedule", args.placement)
    default = mapping.block(g, machine, nodes)
    scheduledict.write(hierarchical(default), out / "reductionSchedule.block", "block")
    result = [analysis.analyze(g, default, costs), analysis.analyze(g, placement, costs, seconds)]
    (out / "analysis.json").write_text(json.dumps(result, indent=1))
    print(f"rankmap: {g.n} ranks on {nodes} x {machine.describe()}")
    print(analysis.table(result))
    print(
        f"rankmap: wrote {out}/rankfile (mpirun -rf, or --map-by rankfile:file=), "
        f"slurm.hostfile, slurm.cpu_bind, srun.cpu_bind, bind_rank, reductionSchedule, "
        f"reductionSchedule.block, analysis.json"
    )
    return 0


def cmd_schedule(args) -> int:
    g, machine = load_graph(args.case), topology.load(args.topology)
    costs = analysis.cost_vector(args.cost_system, args.cost_size, args.cost_table)
    placement, _ = _place(args.placement, g, machine, args.nodes, args, costs)
    schedule = hierarchical(placement)
    scheduledict.write(schedule, Path(args.out), args.placement)
    per_level = "/".join(map(str, schedule.edges_per_level()))
    print(
        f"rankmap: wrote {args.out}: {schedule.n} ranks, edges by level "
        f"(intra-NUMA/inter-NUMA/inter-domain/inter-node) {per_level}, depth {schedule.depth()}"
    )
    return 0


def cmd_analyze(args) -> int:
    g, machine = load_graph(args.case), topology.load(args.topology)
    costs = analysis.cost_vector(args.cost_system, args.cost_size, args.cost_table)
    results = []
    for name in args.placement.split(","):
        placement, seconds = _place(name, g, machine, args.nodes, args, costs)
        results.append(analysis.analyze(g, placement, costs, seconds))
    print(f"rankmap: {g.n} ranks on {args.nodes} x {machine.describe()}; costs us/level {costs}")
    print(analysis.table(results))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


def cmd_graph(args) -> int:
    g = load_graph(args.case)
    graph.write_edges(g, Path(args.out))
    print(f"rankmap: wrote {args.out}: {g.n} ranks, {len(g.adjncy) // 2} processor patches")
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m rankmap", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="verb", required=True)

    def common(sp):
        sp.add_argument("case", help="decomposed case folder, or grid:NXxNYxNZ")
        sp.add_argument(
            "--topology",
            required=True,
            help=f"preset ({', '.join(topology.PRESETS)}), 'local', hwloc XML file, "
            f"or synthetic description",
        )
        sp.add_argument("--nodes", type=int, required=True)
        sp.add_argument("--seed", type=int, default=1, help="partitioner random seed")
        sp.add_argument(
            "--partitioner",
            default="scotch",
            choices=mapping.PARTITIONERS,
            help="partitioner for each level of the hierarchy (default scotch)",
        )
        sp.add_argument(
            "--cost-system",
            default="vsc5",
            help="latency table row (vsc5, hpc2), or 'none': no hop-bytes",
        )
        sp.add_argument("--cost-size", type=int, default=1000, help="message size in the table")
        sp.add_argument(
            "--cost-table",
            help="latency table in seed 000's format (default: its "
            "Table 2; python -m topofoam.results.p2p writes one from the p2p check)",
        )

    m = sub.add_parser("map", help="rankmap placement + launcher files + schedules")
    common(m)
    m.add_argument(
        "--placement",
        default="rankmap",
        choices=mapping.PLACEMENTS[:3],
        help="the placement the launcher files and reductionSchedule are for "
        "(default rankmap); reductionSchedule.block is always written",
    )
    m.add_argument("--hosts", help="comma-separated hostnames (default: the Slurm allocation)")
    m.add_argument("--out", required=True, help="output folder")
    m.set_defaults(func=cmd_map)
    s = sub.add_parser("schedule", help="hierarchical reduction schedule for a placement")
    common(s)
    s.add_argument("--placement", default="rankmap", choices=mapping.PLACEMENTS[:3])
    s.add_argument("--out", required=True, help="schedule dictionary to write")
    s.set_defaults(func=cmd_schedule)
    a = sub.add_parser("analyze", help="communication per hardware level of placements")
    common(a)
    a.add_argument(
        "--placement",
        default="block,cyclic,rankmap",
        help=f"comma-separated, from {', '.join(mapping.PLACEMENTS)}",
    )
    a.add_argument("--json", help="also write the analysis as JSON")
    a.set_defaults(func=cmd_analyze)
    e = sub.add_parser("graph", help="the communication graph as an edge list")
    e.add_argument("case", help="decomposed case folder, or grid:NXxNYxNZ")
    e.add_argument("--out", required=True, help="edge list (CSV) to write")
    e.set_defaults(func=cmd_graph)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except InputError as e:
        print(f"rankmap: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("rankmap: interrupted", file=sys.stderr)
        return 130
    except OSError as e:  # an output path that cannot be written
        where = e.filename or getattr(args, "out", None) or getattr(args, "json", None)
        print(
            f"rankmap: cannot write {where} ({e.strerror}) -- give --out (or --json) a path "
            f"in a folder you can write, not an existing file or folder of another kind",
            file=sys.stderr,
        )
        return 2
