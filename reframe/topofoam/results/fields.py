"""Final fields of two runs of the same decomposed case, compared processor by processor.

Runs that differ only in placement, reduction schedule or MPI settings read the same
processor meshes, so their fields compare without reconstructPar: only the order of floating
point sums differs (fixed iterations per solve), and the fields agree far inside ``RTOL``.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np

#: Largest difference allowed, relative to the field's largest magnitude.
RTOL = 1e-6


def final_time(case: Path) -> str:
    """The latest time folder of processor0 (not 0)."""
    times = [
        p.name
        for p in (Path(case) / "processor0").iterdir()
        if p.is_dir() and re.fullmatch(r"[-+.\deE]+", p.name) and float(p.name) > 0
    ]
    if not times:
        raise ValueError(
            f"{case}/processor0 has no time folder after 0: the solver wrote no fields"
        )
    return max(times, key=float)


def field_values(case: Path, time: str, field: str) -> np.ndarray:
    from foamlib import FoamFieldFile

    parts = []
    for proc in sorted(Path(case).glob("processor*"), key=lambda p: int(p.name[9:])):
        internal = FoamFieldFile(proc / time / field).internal_field
        parts.append(np.atleast_1d(np.asarray(internal, dtype=float)).reshape(-1))
    return np.concatenate(parts)


def differences(reference: Path, case: Path) -> dict[str, float]:
    """Per field of the reference's final time: max |difference| / max |reference value|.

    A field missing from ``case``, or of another size, is infinitely different."""
    time = final_time(reference)
    out = {}
    for path in sorted((Path(reference) / "processor0" / time).iterdir()):
        if not path.is_file():
            continue
        ref = field_values(reference, time, path.name)
        try:
            got = field_values(case, time, path.name)
        except (OSError, ValueError):
            out[path.name] = float("inf")
            continue
        if got.shape != ref.shape:
            out[path.name] = float("inf")
            continue
        scale = np.abs(ref).max() or 1.0
        out[path.name] = float(np.abs(got - ref).max() / scale)
    return out


def mismatch(reference: Path, case: Path, rtol: float = RTOL) -> str | None:
    """Why the fields of ``case`` do not match ``reference`` (None if they do)."""
    try:
        diffs = differences(reference, case)
    except (OSError, ValueError) as e:
        return f"cannot compare fields with the standard run: {e}"
    bad = {f: d for f, d in diffs.items() if not d <= rtol}
    if not diffs:
        return f"the standard run in {reference} wrote no fields"
    if bad:
        listed = ", ".join(f"{f} {d:.2g}" for f, d in sorted(bad.items()))
        return (
            f"final fields differ from the standard run by more than {rtol:g} (relative): {listed}"
        )
    return None


#: Cases up to this many cells keep their final fields in the run's output folder, for the
#: report's image of standard vs optimized; larger ones keep only the differences.
SNAPSHOT_CELLS = 200_000


def snapshot(case: Path, dest: Path) -> Path:
    """The final time of a decomposed ``case`` as a small case ParaView opens
    (``dest/case.foam``): each processor's mesh and final fields, and the controlDict."""
    case, dest = Path(case), Path(dest)
    time = final_time(case)
    for proc in sorted(case.glob("processor*")):
        for part in ("constant/polyMesh", time):
            if (proc / part).is_dir():
                shutil.copytree(proc / part, dest / proc.name / part, dirs_exist_ok=True)
    (dest / "system").mkdir(parents=True, exist_ok=True)
    shutil.copy2(case / "system" / "controlDict", dest / "system" / "controlDict")
    (dest / "case.foam").touch()
    return dest
