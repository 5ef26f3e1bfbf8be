"""The report's figures (matplotlib, PNG), each drawn from the collected runs only."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no display on a login node or in CI
import matplotlib.pyplot as plt  # noqa: E402

from rankmap.topology import LEVELS  # noqa: E402
from topofoam import output  # noqa: E402

LEVEL_NAMES = ("within a NUMA node", "between NUMA nodes", "between NUMA domains", "between nodes")


def save(fig, path: Path) -> Path:
    fig.tight_layout()
    try:
        with output.replacing(path, "figure", binary=True) as f:
            fig.savefig(f, dpi=110, format=path.suffix.lstrip(".") or "png")
    finally:
        plt.close(fig)
    return path


def scaling(lines: dict[str, list], title: str, path: Path, emulated: bool) -> Path:
    """Seed 000 Fig. 6: log-log wall time over nodes per variant, and parallel efficiency.
    ``lines``: label -> analysis.Point list."""
    fig, (ax, eff) = plt.subplots(1, 2, figsize=(10, 4))
    plotted = False
    for name, points in sorted(lines.items()):
        pts = [p for p in points if p.wall]
        if not pts:
            continue
        plotted = True
        x = [p.nodes for p in pts]
        y = [p.wall for p in pts]
        err = [[p.wall - p.low for p in pts], [p.high - p.wall for p in pts]]
        ax.errorbar(x, y, yerr=err, marker="o", capsize=3, label=name)
        eff.plot(x, [p.efficiency for p in pts], marker="o", label=name)
    if not plotted:
        ax.text(0.5, 0.5, "no passed run", ha="center", transform=ax.transAxes)
        return save(fig, path)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("nodes")
    ax.set_ylabel("solver wall time [s]")
    ax.set_title(title + (" (emulated timings)" if emulated else ""), fontsize=9)
    ax.legend(fontsize=7)
    eff.set_xscale("log")
    eff.set_xlabel("nodes")
    eff.set_ylabel("parallel efficiency")
    eff.set_ylim(bottom=0)
    eff.axhline(1.0, color="grey", lw=0.5)
    for a in (ax, eff):
        a.set_xticks(sorted({p.nodes for ps in lines.values() for p in ps}))
        a.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
    return save(fig, path)


def node_hours(lines: dict[str, list], title: str, unit: str, scale: float, path: Path) -> Path:
    """Node-hours (or their price) per node count, one bar group per configuration."""
    fig, ax = plt.subplots(figsize=(7, 4))
    names = sorted(lines)
    counts = sorted({p.nodes for ps in lines.values() for p in ps})
    width = 0.8 / max(1, len(names))
    for i, name in enumerate(names):
        by = {p.nodes: p for p in lines[name] if p.node_hours is not None}
        xs = [j + i * width for j, n in enumerate(counts) if n in by]
        ax.bar(xs, [by[n].node_hours * scale for n in counts if n in by], width, label=name)
    ax.set_xticks(
        [j + width * (len(names) - 1) / 2 for j in range(len(counts))], [str(n) for n in counts]
    )
    ax.set_xlabel("nodes")
    ax.set_ylabel(unit)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    return save(fig, path)


def decrease(rows: list, title: str, path: Path) -> Path:
    """Relative runtime decrease per variant and node count, with its 95 % CI as error
    bars; a difference that is not significant is drawn pale and hatched."""
    fig, ax = plt.subplots(figsize=(7, 4))
    labels = sorted({r.label for r in rows})
    counts = sorted({r.nodes for r in rows})
    width = 0.8 / max(1, len(labels))
    for i, name in enumerate(labels):
        got = {r.nodes: r for r in rows if r.label == name and r.percent is not None}
        labelled = False
        for j, n in enumerate(counts):
            if n not in got:
                continue
            r = got[n]
            sig = r.comparison is not None and r.comparison.significant
            err = (
                [[r.percent - r.low], [r.high - r.percent]]
                if r.low is not None and r.high is not None
                else None
            )
            ax.bar(
                j + i * width,
                r.percent,
                width,
                yerr=err,
                capsize=3,
                color=f"C{i}",
                alpha=1.0 if sig else 0.35,
                hatch=None if sig else "//",
                label=None if labelled else name,
            )
            labelled = True
    ax.axhline(0, color="black", lw=0.6)
    ax.set_xticks(
        [j + width * (len(labels) - 1) / 2 for j in range(len(counts))], [str(n) for n in counts]
    )
    ax.set_xlabel("nodes")
    ax.set_ylabel("runtime decrease vs standard [%]")
    ax.set_title(title + "\n(hatched: within noise; bars: 95 % CI)", fontsize=9)
    ax.legend(fontsize=7)
    return save(fig, path)


def levels(bars: dict[str, dict], title: str, path: Path) -> Path:
    """Seed 000 Fig. 5: share of the halo volume per hardware level, per placement.
    ``bars``: placement label -> rankmap analysis entry."""
    fig, ax = plt.subplots(figsize=(7, 3.5))
    names = list(bars)
    bottom = [0.0] * len(names)
    for level, shown in zip(LEVELS, LEVEL_NAMES):
        share = [100 * bars[n]["halo_share"].get(level, 0.0) for n in names]
        ax.bar(names, share, bottom=bottom, label=shown)
        bottom = [b + s for b, s in zip(bottom, share)]
    ax.set_ylabel("halo volume [%]")
    ax.set_ylim(0, 100)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1, 1))
    return save(fig, path)
