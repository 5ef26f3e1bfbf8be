"""OpenFOAM optimisation switches for one run, on either flavour.

ESI's OpenFOAM takes ``-opt-switch name=value`` on the command line; the Foundation's
OpenFOAM-12 has no such option; at its first switch look-up it merges the
``system/controlDict`` of the working folder (``OptimisationSwitches { name value; }``) over
the etc ones (debug::controlDict), so a run started in its case folder gets them. This module
writes that sub-dictionary:

    python -m topofoam.jobs.switches CASE NAME=VALUE [NAME=VALUE ...]
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.]*$")


class SwitchError(ValueError):
    """A malformed NAME=VALUE, or a controlDict that cannot be read or written."""


def parse(setting: str) -> tuple[str, int | float | str]:
    """``name=value`` as (name, value); the value as a number where it is one."""
    name, sep, value = setting.partition("=")
    if not sep or not NAME.match(name) or not value.strip():
        raise SwitchError(f"'{setting}' is not NAME=VALUE (e.g. reductionScheduleSums=1)")
    for kind in (int, float):
        try:
            return name, kind(value)
        except ValueError:
            pass
    return name, value


def set_in_case(case: Path, settings: dict) -> None:
    """Write ``settings`` into ``case``/system/controlDict's OptimisationSwitches."""
    from foamlib import FoamFile

    path = Path(case) / "system" / "controlDict"
    if not path.is_file():
        raise SwitchError(f"{path} does not exist -- give the folder of a prepared case")
    try:
        control = FoamFile(path)
        if "OptimisationSwitches" not in control:
            control["OptimisationSwitches"] = {}
        for name, value in settings.items():
            control["OptimisationSwitches", name] = value
    except (OSError, ValueError, KeyError) as e:
        raise SwitchError(f"{path}: cannot set its OptimisationSwitches ({e})") from None


def for_flavour(flavour: str, settings: dict) -> tuple[list[str], str | None]:
    """How a run on ``flavour`` ('esi' or 'org') gets ``settings``: solver options, and a
    command to run in the case folder before the solver (or None)."""
    if not settings:
        return [], None
    pairs = [f"{name}={value}" for name, value in settings.items()]
    if flavour == "org":
        return [], f"{sys.executable} -m topofoam.jobs.switches . {' '.join(pairs)}"
    return [opt for pair in pairs for opt in ("-opt-switch", pair)], None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m topofoam.jobs.switches", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("case", type=Path)
    parser.add_argument("settings", nargs="+", metavar="NAME=VALUE")
    args = parser.parse_args(argv)
    try:
        settings = dict(parse(s) for s in args.settings)
        set_in_case(args.case, settings)
    except SwitchError as e:
        print(f"switches: {e}", file=sys.stderr)
        return 2
    print("switches: " + ", ".join(f"{k} {v}" for k, v in settings.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
