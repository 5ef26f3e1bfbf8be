"""The schedule as an OpenFOAM dictionary: the one format shared with the OpenFOAM patch.

    FoamFile { version 2.0; format ascii; class dictionary; object reductionSchedule; }
    nProcs      8;                                  // ranks the schedule is for
    above       8(-1 0 0 2 0 4 4 6);                // rank each rank sends to; -1: root
    below       8(3(1 2 4) 0() 1(3) 0() 2(5 6) 0() 1(7) 0());  // receive order
    level       8(-1 0 1 0 2 0 1 0);                // hardware level of the edge to above
    levelNames  4(intraNumaNode interNumaNode interNumaDomain interNode);
    placement   rankmap;                            // informational

``above`` and ``below`` are OpenFOAM's commsStruct (allBelow follows from them); rank 0 is the
root. ``level`` lets the solver print how many edges cross nodes. Lists use OpenFOAM's
``N(...)`` form so ``labelList``/``labelListList`` read them directly.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rankmap.errors import InputError
from rankmap.schedule import Schedule

LEVEL_NAMES = ("intraNumaNode", "interNumaNode", "interNumaDomain", "interNode")

_HEADER = """\
/*--------------------------------*- C++ -*----------------------------------*\\
  reductionSchedule written by rankmap: a hierarchical reduction tree.
  Format: rankmap/README.md.
\\*---------------------------------------------------------------------------*/
FoamFile
{
    version     2.0;
    format      ascii;
    class       dictionary;
    object      reductionSchedule;
}
"""


def _list(values) -> str:
    values = [int(v) for v in values]
    return f"{len(values)}(" + " ".join(map(str, values)) + ")"


def write(schedule: Schedule, path: Path, placement: str) -> Path:
    path = Path(path)
    below = "\n".join(_list(b) for b in schedule.below)
    path.write_text(
        _HEADER
        + f"\nnProcs      {schedule.n};\n"
        + f"placement   {placement};\n"
        + f"levelNames  {len(LEVEL_NAMES)}("
        + " ".join(LEVEL_NAMES)
        + ");\n"
        + f"above       {_list(schedule.above)};\n"
        + f"level       {_list(schedule.level)};\n"
        + f"below\n{schedule.n}\n(\n{below}\n);\n"
    )
    return path


def read(path: Path) -> Schedule:
    """Read and check a schedule dictionary; errors name the file and what is wrong."""
    from foamlib import FoamFile

    path = Path(path)
    try:
        d = FoamFile(path)
        n = int(d["nProcs"])
        above = np.asarray(d["above"], dtype=np.int64)
        level = np.asarray(d["level"], dtype=np.int64)
        below = [[int(x) for x in b] for b in d["below"]]
    except FileNotFoundError:
        raise InputError(
            f"{path} does not exist -- write it with 'python -m rankmap schedule'"
        ) from None
    except (KeyError, TypeError, ValueError) as e:
        raise InputError(
            f"{path}: not a reduction schedule ({e}) -- it needs nProcs, above, "
            f"below and level (rankmap/README.md)"
        ) from None
    if not (len(above) == len(level) == len(below) == n):
        raise InputError(
            f"{path}: nProcs {n} but above/below/level have {len(above)}/"
            f"{len(below)}/{len(level)} entries"
        )
    schedule = Schedule(above, below, level, str(path))
    try:
        schedule.check()
    except AssertionError as e:
        raise InputError(f"{path}: {e}") from None
    return schedule
