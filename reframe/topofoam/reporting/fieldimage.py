"""Standard vs optimized final field side by side (ParaView, off-screen), with the numeric
maximum difference between the two runs."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np

from topofoam.reporting.figures import plt, save
from topofoam.results import fields

PVRENDER = Path(__file__).with_name("pvrender.py")


class ImageError(RuntimeError):
    """No image: the reason is said in the report instead."""


def _pvpython() -> list[str]:
    pv = shutil.which("pvpython")
    if pv is None:
        raise ImageError("pvpython not found (Debian: paraview, python3-paraview)")
    xvfb = shutil.which("xvfb-run")
    if xvfb is None:
        raise ImageError(
            "xvfb-run not found (Debian: xvfb): Debian's pvpython needs an X server to render"
        )
    # -a: a free display number; Xvfb listens on its local socket only.
    return [xvfb, "-a", "-s", "-nolisten tcp -screen 0 1280x1024x24", pv]


def pick_field(case: Path) -> str:
    names = sorted(
        p.name for p in (case / "processor0" / fields.final_time(case)).iterdir() if p.is_file()
    )
    for name in ("p", "T", "alpha.water", "U"):
        if name in names:
            return name
    if not names:
        raise ImageError(f"{case} holds no final fields")
    return names[0]


def side_by_side(standard: Path, optimized: Path, out: Path, title: str) -> dict:
    """Render both runs' final ``field`` with one colour range into ``out``; the field and
    the maximum difference relative to the standard run's largest magnitude."""
    field = pick_field(standard)
    time = fields.final_time(standard)
    a = fields.field_values(standard, time, field)
    b = fields.field_values(optimized, time, field)
    if a.shape != b.shape:
        raise ImageError(f"{optimized}: {field} has {b.size} values, the standard run {a.size}")
    diff = float(np.abs(a - b).max() / (np.abs(a).max() or 1.0))
    # Vectors are coloured by magnitude: the range is taken the same way.
    mag = np.linalg.norm(a.reshape(-1, 3), axis=1) if field == "U" else a
    low, high = float(mag.min()), float(mag.max())
    if high <= low:
        high = low + 1.0
    shots = []
    for name, case in (("standard", standard), ("optimized", optimized)):
        png = out.with_name(f"{out.stem}-{name}.png")
        cmd = _pvpython() + [
            str(PVRENDER),
            str(case / "case.foam"),
            field,
            repr(low),
            repr(high),
            str(png),
        ]
        # A second try when the first fails: pvpython aborts now and then when its Xvfb
        # does not come up (xvfb-run -a can race another X server for a display number).
        for _ in range(2):
            try:
                done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
            except subprocess.TimeoutExpired:
                raise ImageError("pvpython took more than 5 min") from None
            if done.returncode == 0 and png.exists():
                break
        if done.returncode != 0 or not png.exists():
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            raise ImageError(f"pvpython failed ({tail[0][:200]})")
        shots.append((name, png))
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    for ax, (name, png) in zip(axes, shots):
        ax.imshow(plt.imread(png))
        ax.set_title(f"{name}: {field}", fontsize=9)
        ax.axis("off")
    fig.suptitle(f"{title}; max |difference| / max |{field}| = {diff:.3g}", fontsize=9)
    save(fig, out)
    for _, png in shots:
        png.unlink()
    return {"field": field, "difference": diff, "time": time}
