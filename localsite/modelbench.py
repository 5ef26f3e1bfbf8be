"""The time-per-step model against measured runs on the emulated cluster (docs/timings.md).

    python -m localsite.modelbench [--profile vsc5x100] [--repeats 5] [--results DIR]

in one results folder (default: a new one under the system's temporary folder, kept): the
p2p check on ``cpu`` (the levels inside a node) and on ``emu`` under the fabric profile (the
link between nodes), then the multi-node check on ``emu`` under the profile, launched by srun,
``--repeats`` times, at 2 ranks a node and on 2 nodes of one rank (a core each: the runs
whose accuracy is judged); then ``python -m topofoam.prediction.modelcheck`` on its
perflogs: measured and predicted time per step per variant and node count, the error,
whether the model orders the variants as the measurements do, and how long the model took.
Root only (namespaces, tc). Run it with nothing else on the machine: it is a timing.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from localsite.benchrun import as_root, bench_run, multinode_cases
from topofoam.config import fabric, settings
from topofoam.prediction import modelcheck

#: One launcher is enough for the model (it does not price launchers); srun is the sites'.
SELECT = ("-n", multinode_cases(launcher="srun"))


def a_core_each(repeats: int) -> tuple[tuple[str, ...], str]:
    """(selection, TOPOFOAM_REPEATS) of the runs the accuracy is judged on: 2 nodes of one
    rank, a core each on this 2-core machine (the others' ranks share cores, which the model
    does not price: not judged). The case at 2 ranks a node has the same names, so these
    take the repeats after its own (their own output folders, each its own graph)."""
    later = "|".join(str(k) for k in range(repeats, 2 * repeats))
    select = multinode_cases(launcher="srun", nodes="2", repeat=later)
    return ("-n", select, "-S", "PreparedCavityRanks.ranks_per_node=1"), str(2 * repeats)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m localsite.modelbench", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("--profile", default="vsc5x100", help="fabric profile (topofoam.config.fabric)")
    p.add_argument("--repeats", type=int, default=5, help="repeats of every run (at least 4)")
    p.add_argument("--results", type=Path, help="results folder (default: a new one)")
    args = p.parse_args(argv)
    if not as_root("modelbench", "the emulated cluster"):
        return 2
    try:
        if fabric.profile(args.profile) is None:
            raise settings.SettingError(
                "TOPOFOAM_FABRIC=none: the links cost nothing, so there is no model to check "
                "-- give a profile such as vsc5x100"
            )
    except settings.SettingError as e:
        print(f"modelbench: {e}", file=sys.stderr)
        return 2
    if args.repeats < 4:
        print(
            "modelbench: --repeats must be at least 4: with fewer, no difference can be "
            "significant (the rank test's smallest p for 3 against 3 is 0.1)",
            file=sys.stderr,
        )
        return 2
    results = args.results or Path(tempfile.mkdtemp(prefix="modelbench-"))
    steps = [
        ("cpu", "p2p", (), {}),
        ("emu", "p2p", (), {"TOPOFOAM_FABRIC": args.profile}),
        ("emu", "multinode", SELECT, {"TOPOFOAM_FABRIC": args.profile}),
    ]
    select, repeats = a_core_each(args.repeats)
    steps.append(
        ("emu", "multinode", select, {"TOPOFOAM_FABRIC": args.profile, "TOPOFOAM_REPEATS": repeats})
    )
    for partition, tag, selection, env in steps:
        print(f"modelbench: {partition} -t {tag} ({args.profile if env else 'no profile'})...")
        env = {"TOPOFOAM_REPEATS": str(args.repeats), **env}
        done, seconds = bench_run(results, partition, tag, *selection, **env)
        print(f"modelbench: took {seconds / 60:.1f} min, exit {done.returncode}")
        if done.returncode != 0:
            print(done.stdout[-2000:], file=sys.stderr)
            return 1
    perflogs = results / "perflogs" / "local"
    began = time.perf_counter()
    lines, notes = modelcheck.check(perflogs)
    took = time.perf_counter() - began
    print(modelcheck.table(lines))
    for line in modelcheck.orderings(lines):
        print(line)
    for line in modelcheck.accuracies(lines):
        print(f"modelbench: accuracy {line}")
    for note in notes:
        print(f"modelbench: left out: {note}")
    errors = [abs(ln.error) for ln in lines if ln.error is not None]
    if errors:
        print(
            f"modelbench: model error {min(errors):.0%} to {max(errors):.0%} over "
            f"{len(errors)} predictions; the model took {took:.2f} s; results in {results}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
