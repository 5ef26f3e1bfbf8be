"""python -m cases: list, size, prepare and run the benchmark cases.

    python -m cases list
    python -m cases cells CASE [--size SIZE]
    python -m cases prepare CASE [--size SIZE] [-n N] [--method M] [--out DIR] [...]
    python -m cases run [CASE ...] [--size SIZE] [-n N]      # every case if none is named

SIZE is a named size (``list`` shows them) or a cell count such as 250k or 2M. OpenFOAM comes
from the environment (PATH, WM_PROJECT_DIR); without one, Debian's installation is used with
the project's real SCOTCH library. Errors are one line: "cases: <what> -- <fix>".
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

from cases import run as runner
from cases.catalog import CASES
from cases.errors import CaseError
from cases.prepare import MAX_STEPS, Request, prepare, progress_to_stderr, too_many_steps
from cases.sizes import background_cells, get_case, resolve


def openfoam_env() -> dict:
    """The caller's OpenFOAM (a loaded module, a sourced etc/bashrc, or ./bench cases)."""
    env = dict(os.environ)
    if "WM_PROJECT_DIR" not in env:
        raise CaseError(
            "no OpenFOAM environment (WM_PROJECT_DIR is not set) -- load one or "
            "source its etc/bashrc; on the local site use './bench cases ...'"
        )
    if os.geteuid() == 0:
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    return env


def _request(args, case: str) -> Request:
    return Request(
        case=case,
        size=args.size,
        subdomains=args.n,
        method=args.method,
        fixed_work=not args.converge,
        steps=args.steps,
        write_interval=args.write_interval,
    )


def cmd_list(args) -> int:
    for case in CASES.values():
        print(f"{case.name}  ({case.solver}; {case.origin})")
        for name, size in case.sizes.items():
            cells = background_cells(case, size.params)
            what = (
                f"{cells:,} cells"
                if case.mesher == "blockMesh"
                else f"{cells:,} background cells"
                + (f", mirrored x{2**size.mirror}" if size.mirror else "")
            )
            source = f"  [{size.source}]" if size.source else ""
            print(f"    {name:<8} {what}, {size.steps} steps{source}")
    return 0


def cmd_cells(args) -> int:
    case = get_case(args.case)
    resolved = resolve(case, args.size)
    cells = background_cells(case, resolved.size.params)
    if case.mesher != "blockMesh":
        print(
            f"{case.name} {resolved.label}: background mesh {cells:,} cells; the final "
            f"count comes from {case.mesher}"
        )
        return 0
    asked = (
        f" (nearest to {resolved.requested_cells:,} asked for)" if resolved.requested_cells else ""
    )
    print(
        f"{case.name} {resolved.label}: {cells:,} cells{asked}, deltaT "
        f"{case.delta_t(resolved.size):g}, {resolved.size.steps} steps"
    )
    return 0


def _check_out(out: str | None) -> None:
    """Refuse an --out the prepared case could not be copied to, before preparing it."""
    if out is None:
        return
    if not out.strip():
        raise CaseError("--out '' names no folder -- give the path of a new folder")
    dest = Path(out)
    if dest.exists() or dest.is_symlink():
        raise CaseError(f"{out} exists -- choose a new folder for --out")
    parent = dest.absolute().parent
    if not parent.is_dir():
        raise CaseError(
            f"--out {out}: the folder {parent} does not exist -- create it, or give --out a "
            f"path in an existing folder"
        )
    if not os.access(parent, os.W_OK | os.X_OK):
        raise CaseError(
            f"--out {out}: cannot write in {parent} -- give --out a folder you can write"
        )


def cmd_prepare(args) -> int:
    _check_out(args.out)
    env = openfoam_env()
    prepared = prepare(_request(args, args.case), env=env, progress=progress_to_stderr)
    if args.out is not None:
        try:
            prepared = prepared.copy_to(Path(args.out))
        except OSError as e:
            shutil.rmtree(args.out, ignore_errors=True)  # no half copy left behind
            raise CaseError(
                f"cannot copy the prepared case to {args.out} ({e.strerror or e}) -- give --out "
                f"a folder on a file system you can write, with room for it; the prepared case "
                f"stays cached"
            ) from None
    asked = (
        f" (nearest to {prepared.requested_cells:,} asked for)" if prepared.requested_cells else ""
    )
    print(
        f"{prepared.case} {prepared.size}: {prepared.cells:,} cells{asked} in "
        f"{prepared.subdomains} subdomains ({prepared.method}), {prepared.steps} steps of "
        f"{prepared.delta_t:g}"
    )
    print(prepared.path.resolve())
    return 0


def cmd_run(args) -> int:
    names = args.case or list(CASES)
    for name in names:
        get_case(name)
    # What is wrong with the request for every case is said once, not as each case failing.
    for option, value in (("subdomains", args.n), ("steps", args.steps)):
        if value is not None and value < 1:
            raise CaseError(f"{option} must be at least 1, not {value}")
    if args.steps is not None and args.steps > MAX_STEPS:
        raise CaseError(too_many_steps(args.steps))
    if args.write_interval is not None and args.write_interval < 1:
        raise CaseError(f"write interval must be at least 1 step, not {args.write_interval}")
    env = openfoam_env()
    failed = 0
    total = 0.0
    wall = time.monotonic()
    print(f"{'case':<14}{'size':<8}{'cells':>12}{'steps':>7}{'prepare s':>11}{'run s':>8}  result")
    with tempfile.TemporaryDirectory(prefix="topofoam-cases-") as tmp:
        for name in names:
            started = time.monotonic()
            try:
                prepared = prepare(_request(args, name), env=env, progress=progress_to_stderr)
            except CaseError as e:
                print(f"{name:<14}{args.size:<8}{'-':>12}{'-':>7}{'-':>11}{'-':>8}  failed: {e}")
                failed += 1
                continue
            prep_s = time.monotonic() - started
            work = prepared.copy_to(Path(tmp) / name)
            outcome = runner.run(work, env)
            total += outcome.seconds
            if outcome.problems:
                failed += 1
                kept = Path(tempfile.mkdtemp(prefix=f"topofoam-failed-{name}-"))
                shutil.copytree(work.path, kept, dirs_exist_ok=True)
                result = f"FAILED: {'; '.join(outcome.problems)} (case kept in {kept})"
            else:
                result = "ok"
            print(
                f"{name:<14}{prepared.size:<8}{prepared.cells:>12,}{prepared.steps:>7}"
                f"{prep_s:>11.1f}{outcome.seconds:>8.1f}  {result}",
                flush=True,
            )
    print(
        f"{len(names)} case(s), {failed} failed; solver time {total:.1f} s, "
        f"{time.monotonic() - wall:.1f} s in all on {args.n} rank(s)"
    )
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cases", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="the cases and their named sizes")
    cells = sub.add_parser("cells", help="cells of a size, from the mesh description")
    cells.add_argument("case")
    cells.add_argument("--size", default="ci")
    for name in ("prepare", "run"):
        p = sub.add_parser(
            name,
            help=(
                "mesh, renumber, decompose (cached)"
                if name == "prepare"
                else "prepare and run, with the sanity checks"
            ),
        )
        if name == "prepare":
            p.add_argument("case")
            p.add_argument("--out", help="copy the prepared case to this new folder")
        else:
            p.add_argument("case", nargs="*", help="cases to run (default: all)")
        p.add_argument("--size", default="ci")
        p.add_argument("-n", type=int, default=2, help="subdomains (ranks)")
        p.add_argument("--method", default="scotch", help="decomposePar method")
        p.add_argument("--steps", type=int, help="time steps instead of the size's")
        p.add_argument("--write-interval", type=int, help="write every N steps")
        p.add_argument(
            "--converge",
            action="store_true",
            help="solve to the template's tolerances instead of fixed iterations",
        )
    args = parser.parse_args(argv)
    # A SIGTERM stops it as Ctrl-C does: the unfinished case is removed, one line, 130.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        return {"list": cmd_list, "cells": cmd_cells, "prepare": cmd_prepare, "run": cmd_run}[
            args.command
        ](args)
    except CaseError as e:
        print(f"cases: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        # prepare() removed its unfinished folder: the cache holds only finished cases
        print("cases: interrupted; no unfinished case was kept", file=sys.stderr)
        return 130
