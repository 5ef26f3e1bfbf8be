"""Write the cost-performance report of one system: collect, merge, analyse, draw, render.

Everything shown comes from the runs under ``results`` (and, labelled as published, the
seeds' tables for the seeds' own systems). What is missing is said, never guessed: an
empty or partial perflog gives a partial report with notes, and failed runs are listed.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from topofoam import output
from topofoam.prediction import modelcheck
from topofoam.reporting import analysis, figures, published
from topofoam.reporting.collect import Collection, collect
from topofoam.reporting.document import Document, Figure, Section, Table, markdown, page
from topofoam.results import perflog, stats
from topofoam.results import stages as kinds
from topofoam.results.merge import RULE, Group, group
from topofoam.validation import history


def size(x) -> str:
    return "size not logged" if x is None else str(x)


def fmt(x, digits: int = 3) -> str:
    return "–" if x is None else f"{x:.{digits}g}"


def calls(x) -> str:
    """A call count (the median of the repeats' counts)."""
    return "–" if x is None else f"{x:,.0f}"


def pct(x) -> str:
    return "–" if x is None else f"{x:+.1f}"


class NoRuns(RuntimeError):
    """--since leaves no run to report; the message names the fix."""


@dataclass
class Report:
    system: str
    markdown: Path
    html: Path
    table: Path
    collection: Collection
    groups: list[Group]
    notes: list[str]


def _counts(g: Group) -> str:
    failed = len(g.failed)
    return f"n={len(g.passed)}" + (f", {failed} failed" if failed else "")


def _decrease_cell(d: analysis.Decrease) -> str:
    """A decrease with its CI and n, or why there is no number (see the section's text)."""
    if d.comparison is None:
        return "failed"
    c = d.comparison
    failed = len(d.optimized.failed)
    n = f"n={c.n_b}/{c.n_a}" + (f", {failed} failed" if failed else "")
    short = (", short" if d.short else "") + (
        f", same placement: {analysis.placement_used(d.optimized)}" if d.same_placement else ""
    )
    if c.significant:
        ci = f" [{pct(d.low)}, {pct(d.high)}]" if d.low is not None else ""
        return f"{pct(d.percent)}{ci} ({n}{short})"
    if c.p is None:
        return f"no verdict ({n}{short})"
    return f"within noise ({n}, p={c.p:.2f}{short})"


def ppn_str(g: Group) -> str:
    return str(analysis.ppn_of(g))


def label_of(r: analysis.Merits) -> str:
    """Variant and placement, and the MPI presets where the stage sets them."""
    g = r.group
    extra = [
        f"{c} {g.get(c)}"
        for c in ("ucx", "coll", "ucx_inter")
        if g.get(c) not in (None, "auto", "default", "-")
    ]
    return ", ".join([analysis.label(g), *extra])


def _cells(n) -> str:
    return "n/a (no cell count)" if n is None else f"{n:,}"


def _percent_figure(f) -> str:
    return f"n/a ({f.reason})" if f.value is None else f"{100 * f.value:.1f} %"


def _emulated(key_or_group) -> bool:
    return "emulated" in str(key_or_group)


def _screened(coll: Collection) -> str:
    """What the reader kept out of every statistic, said where the runs are counted."""
    said = ""
    if coll.rejected:
        counts = Counter(reason for _, reason in coll.rejected)
        said += f"; {perflog.rejection_note(counts)}, left out of every statistic"
    if coll.merged:
        said += f"; {coll.merged} copied row(s) of one run merged, so each run counts once"
    return said


def _fabrics(coll: Collection) -> str:
    """The fabric profiles the runs' links had (topofoam.config.fabric), where one was set."""
    seen = sorted({(r["partition"] or "?", r.get("fabric")) for r in coll.rows if r.get("fabric")})
    costed = [
        f"{part}'s runs with links costing {label}" for part, label in seen if label != "none"
    ]
    return f"; {', '.join(costed)} (an emulated fabric, topofoam.config.fabric)" if costed else ""


class Builder:
    def __init__(self, results: Path, system: str, out: Path, images: bool, say):
        self.results, self.system, self.out, self.images, self.say = (
            results,
            system,
            out,
            images,
            say,
        )
        self.figdir = out / "figures"
        self.doc = Document(f"TopoFOAM bench report: {system}")
        self.notes: list[str] = []

    # -- sections ------------------------------------------------------------------------

    def verdict(self, since: str):
        """The validation verdicts of this system, first: what an admin reads before anything
        else. Each partition's latest session that judged something (topofoam.validation keeps
        one verdict file per session); the headline is the worst of them, and a session that
        judged nothing (a screening with no expectations yet) is listed, never the headline."""
        verdicts = history.kept(self.results, self.system, self.notes)
        if not verdicts:
            return
        latest = _latest_by_partition(verdicts)
        judged = {p: v for p, v in latest.items() if v is not None}
        headline = max(
            (v["data"].get("verdict", "?") for v in judged.values()),
            key=lambda s: VERDICT_ORDER.get(s, 0),
            default="nothing judged",
        )
        sec = self.doc.section(f"Validation verdict: {headline}")
        sec.add(
            "Each partition's latest validation session that judged something "
            f"({self.results / 'validation'}). "
            + (verdicts[-1]["data"].get("method", "") if verdicts else "")
        )
        rows, details = [], []
        for partition, v in sorted(latest.items()):
            if v is None:
                rows.append([partition, "nothing judged", "", "", "no session judged it yet"])
                continue
            data, counts = v["data"], v["data"].get("counts", {})
            rows.append(
                [
                    partition,
                    data.get("verdict", "?"),
                    str(data.get("session", "?")),
                    f"{counts.get('PASS', 0)} pass, {counts.get('FAIL', 0)} fail, "
                    f"{counts.get('INCONCLUSIVE', 0)} inconclusive",
                    str(v["path"]),
                ]
            )
            details += _verdict_rows(data, partition)
        sec.add(
            Table(
                ["partition", "verdict", "session", "judgements", "file"],
                rows,
                caption="The verdict of each partition, from its latest judged session",
            )
        )
        empty = [v for v in verdicts if not _judged_anything(v["data"])]
        if empty:
            sec.add(
                f"{len(empty)} session(s) judged nothing (no expectations yet, or nothing "
                f"measured), the latest {empty[-1]['data'].get('session', '?')}: not a verdict."
            )
        order = {"FAIL": 0, "INCONCLUSIVE": 1, "PASS": 2}
        details.sort(key=lambda r: order.get(r[0], 3))
        sec.add(
            Table(
                ["verdict", "measurement", "expected", "measured", "change [95 % CI]", "why"],
                details,
                caption="Each expectation: medians with their 95 % CIs and repeats",
            )
        )
        if len(verdicts) > 1:
            rows = [
                [name, p.session, p.status, p.measured, p.change,
                 history.FIRST if p.first_regressed else ""]
                for name, points in sorted(history.series(verdicts).items())
                for p in points
            ]  # fmt: skip
            sec.add(
                Table(
                    ["measurement", "session", "verdict", "measured", "change", ""],
                    rows,
                    caption=f"History: each measurement over the {len(verdicts)} kept "
                    f"verdicts, oldest first (python -m topofoam.validation history)",
                )
            )

    def summary(self, coll: Collection, groups: list[Group], table: Path, since: str):
        passed = sum(r.get("result") == "pass" for r in coll.rows)
        sec = self.doc.section("Summary")
        parts = sorted({r["partition"] or "?" for r in coll.rows})
        sec.add(
            f"{len(coll.rows)} runs collected ({passed} passed, "
            f"{len(coll.rows) - passed} not passed) on partition(s) "
            f"{', '.join(parts) or 'none'}"
            + (f", ended {since} or later" if since else ", all recorded")
            + f", from {self.results / 'perflogs' / self.system} "
            f"and the run reports in {self.results / 'reframe' / 'reports'}"
            + _screened(coll)
            + _fabrics(coll)
            + ".",
            f"One row per run, every parameter a column: {table}.",
            f"Merging repeats: {RULE}. {stats.METHOD} Times are the solver's wall time (the "
            f"`wall` performance variable; OpenFOAM's ExecutionTime where a check "
            f"has no wall time). Node-hours = nodes x merged wall time / 3600.",
            "Timings of emulated partitions (several Slurm nodes sharing one machine) "
            "prove the multi-node code paths, not performance: they appear in the "
            'scaling section only, marked "emulated".',
        )
        # Which OpenFOAM ran: the runs' 'openfoam' column (flavour and version), else their
        # environment's name; every comparison below stays within one environment.
        by_openfoam: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
        # Fixtures (case preparation, builds) log no 'openfoam': their environment's does.
        of_environ = {r.get("environ"): r["openfoam"] for r in coll.rows if r.get("openfoam")}
        for r in coll.rows:
            environ = r.get("environ") or "?"
            key = (r.get("openfoam") or of_environ.get(environ) or "not logged", environ)
            by_openfoam[key][0] += 1
            by_openfoam[key][1] += r.get("result") == "pass"
        sec.add(
            Table(
                ["OpenFOAM", "environment", "runs", "passed"],
                [[f, e, str(n), str(p)] for (f, e), (n, p) in sorted(by_openfoam.items())],
                caption="Runs by OpenFOAM (esi: ESI's, org: the Foundation's)",
            )
        )
        return sec

    def failures(self, coll: Collection):
        sec = self.doc.section("Runs that did not pass")
        bad = [r for r in coll.rows if r.get("result") not in ("pass", "xfail")]
        if not bad:
            sec.add("None: every collected run passed.")
            return
        rows = []
        for r in bad:
            what = r.get("setting") or r.get("display_name") or r["check"]
            reason = r.get("fail_reason") or "(reason not in a run report)"
            rows.append(
                [
                    r.get("time") or "",
                    r["partition"],
                    r["check"],
                    what,
                    f"{r.get('result')}"
                    + (f" in {r['fail_phase']}" if r.get("fail_phase") else ""),
                    reason[:200],
                ]
            )
        sec.add(
            f"{len(bad)} run(s) failed; they are left out of every value below and "
            f"counted beside the values they would have joined.",
            Table(["time", "partition", "check", "configuration", "result", "reason"], rows),
        )

    def decrease(self, groups: list[Group], compared: list[analysis.Decrease]):
        sec = self.doc.section("Runtime decrease of the optimized variants vs standard")
        sec.add(
            "100 x (1 - T_optimized / T_standard) per case and node count, standard = "
            "the standard variant with block placement and the same MPI settings "
            "(seed 000 Table 4): the Hodges-Lehmann estimate, in brackets its 95 % "
            "confidence interval, then the repeats per side. Positive = faster. A "
            "difference the Mann-Whitney test does not find significant at the 5 % level "
            "reads 'within noise', and one side with a single run 'no verdict'. "
            f"Marked 'short': a median solver time under {analysis.SHORT_SECONDS:g} s, "
            "dominated by start-up, whatever the verdict. Marked 'same placement': the "
            "optimized side asked for another placement than standard's and ran on the same "
            "one (rankmap found block's cheapest: the perflog's placement_used column), so "
            "the difference is not the placement's."
        )
        floor = analysis.noise_floor(groups)
        if floor:
            sec.add(
                "Noise floor (median run-to-run spread, (max - min) / median, of the "
                "standard runs with 3 or more repeats): "
                + "; ".join(
                    f"{p} {100 * v:.1f} % ({n} configurations)" for p, (v, n) in floor.items()
                )
                + "."
            )
        rows = compared
        if not rows:
            sec.add(
                "No pair of standard and optimized runs of the same case and layout "
                "passed: run the `variants` or `cost` tag."
            )
            self.notes.append("no runtime decrease: no standard/optimized pair passed")
            return
        by = defaultdict(list)
        for r in rows:
            by[(r.partition, r.check, r.case, r.size, r.ppn, _emulated(r.standard.key))].append(r)
        for (part, check, case, sz, ppn, emu), items in sorted(by.items(), key=str):
            counts = sorted({r.nodes for r in items})
            labels = sorted({r.label for r in items})
            table_rows = []
            for name in labels:
                cells = {r.nodes: r for r in items if r.label == name}
                table_rows.append(
                    [name] + [_decrease_cell(cells[n]) if n in cells else "" for n in counts]
                )
            std = {r.nodes: r.standard for r in items}
            table_rows.append(
                ["standard, block: wall s"]
                + [
                    f"{fmt(std[n].value(analysis.metric(std[n])))} ({_counts(std[n])})"
                    for n in counts
                ]
            )
            pub = published.decrease(self.system, case)
            if pub:
                table_rows.append(
                    [f"local+global, published (seed 000 Table 4, {self.system}, seed size)"]
                    + [pct(pub.get(n)) for n in counts]
                )
            title = f"{case} ({size(sz)}), {ppn} ranks per node, {check} on {part}" + (
                " (emulated)" if emu else ""
            )
            fig = figures.decrease(
                items, title, self.figdir / f"decrease-{part}-{check}-{case}-{sz}.png"
            )
            sec.add(
                Table(
                    ["variant, placement"] + [f"{n} node(s) [%]" for n in counts],
                    table_rows,
                    caption=title,
                ),
                Figure(fig, f"Runtime decrease vs standard: {title}"),
            )

    def merits(self, groups: list[Group], compared: list[analysis.Decrease]):
        sec = self.doc.section("Figures of merit (the OpenFOAM HPC committee's)")
        sec.add(
            "Per configuration, of its merged time (see the summary): time per iteration "
            "t = time / steps; FVOPS = cells / t (finite-volume operations per second); "
            "FVOPS per node; T* = t x cores / cells (core-seconds per cell and iteration, "
            "lower is better); RSD = standard deviation / mean of the repeats. Improvement "
            "factors against the standard run of the same layout and MPI settings (the one "
            "of the runtime decrease above): TTSF = T_standard / T (time to solution) and "
            "CTSF = C_standard / C (cost to solution, node-hours), above 1 = better, with "
            "their 95 % confidence intervals. Definitions and sources: docs/references.md. "
            "A figure that cannot be formed reads n/a with the reason."
        )
        rows = analysis.merits(groups, compared)
        if not rows:
            sec.add("No solver run was collected: no figure of merit.")
            self.notes.append("no figures of merit: no solver run")
            return
        by = defaultdict(list)
        for r in rows:
            g = r.group
            by[(g.key[0], g.key[1], g.get("case"), g.get("size"), _emulated(g.key))].append(r)
        for (part, check, case, sz, emu), items in sorted(by.items(), key=str):
            table = []
            for r in sorted(
                items, key=lambda r: (r.group.get("nodes") or 0, ppn_str(r.group), label_of(r))
            ):
                g, f = r.group, r.figures
                m = analysis.metric(g)
                table.append(
                    [
                        f"{g.get('nodes')}x{ppn_str(g)}",
                        label_of(r),
                        _cells(g.get("expected_cells")),
                        f"{fmt(g.value(m))} ({_counts(g)})",
                        _percent_figure(f["RSD"]),
                        f["time per iteration"].text(),
                        f["FVOPS"].text(),
                        f["FVOPS per node"].text(),
                        f["T*"].text(),
                        "standard" if r.ttsf is None else r.ttsf.text(),
                        "standard" if r.ctsf is None else r.ctsf.text(),
                    ]
                )
            title = f"{case} ({size(sz)}), {check} on {part}" + (" (emulated)" if emu else "")
            sec.add(
                Table(
                    [
                        "layout",
                        "configuration",
                        "cells",
                        "time s",
                        "RSD",
                        "t/iter s",
                        "FVOPS",
                        "FVOPS/node",
                        "T* core-s/cell",
                        "TTSF",
                        "CTSF",
                    ],
                    table,
                    caption=title,
                )
            )

    def scaling(self, groups: list[Group]):
        sec = self.doc.section("Strong scaling, node-hours and the cost-optimal node count")
        sec.add(
            "Per case and configuration: merged wall time, parallel efficiency "
            "E(n) = T(n0) n0 / (T(n) n) against the smallest node count n0, and "
            "node-hours. The cost-optimal node count spends the fewest node-hours "
            "(seed 002 section 4; the fewer nodes on a tie)."
        )
        all_series = analysis.series(groups)
        if not all_series:
            sec.add("No solver run passed: nothing to scale.")
            self.notes.append("no scaling data")
            return
        by = defaultdict(list)
        for key, points in all_series.items():
            values = dict(zip(analysis.SERIES, key[2:]))
            by[
                (
                    key[0],
                    key[1],
                    values["case"],
                    values["size"],
                    values["ppn"],
                    values["timing"] == "emulated",
                )
            ].append((values, points))
        for where, members in by.items():
            # Name each line by the variant and placement, plus the settings that differ.
            vary = [
                c
                for c in ("ucx", "coll", "launcher_kind", "nps", "solver")
                if len({v[c] for v, _ in members}) > 1
            ]
            by[where] = {
                analysis.label(points[0].group) + "".join(f", {c} {v[c]}" for c in vary): points
                for v, points in members
            }
        for (part, check, case, sz, ppn, emu), lines in sorted(by.items(), key=str):
            # The site's price, as its runs logged it.
            runs = [p.group for ps in lines.values() for p in ps]
            price = next(
                (
                    g.first("node_hour_price")
                    for g in runs
                    if g.first("node_hour_price") is not None
                ),
                None,
            )
            currency = next((g.first("currency") for g in runs if g.first("currency")), "")
            counts = sorted({p.nodes for ps in lines.values() for p in ps})
            title = f"{case} ({size(sz)}), {ppn} ranks per node, {check} on {part}" + (
                " (emulated)" if emu else ""
            )
            header = ["configuration"] + [f"{n} node(s)" for n in counts] + ["cost-optimal"]
            rows = []
            for name, points in sorted(lines.items()):
                at = {p.nodes: p for p in points}
                best = analysis.cost_optimal(points)
                cells = []
                for n in counts:
                    p = at.get(n)
                    if p is None:
                        cells.append("")
                    elif p.wall is None:
                        cells.append("failed" if p.group.failed else "–")
                    else:
                        cost = (
                            f", {p.node_hours * price:.3g} {currency}" if price is not None else ""
                        )
                        cells.append(
                            f"{fmt(p.wall)} s, E {fmt(p.efficiency, 2)}, "
                            f"{fmt(p.node_hours)} node-h{cost} ({_counts(p.group)})"
                        )
                rows.append([name] + cells + [f"{best.nodes} node(s)" if best else "–"])
            if self.system == "oci" and case == "motorbike":
                pub = published.node_seconds(self.system)
                rows.append(
                    ["published (seed 002 section 4, HPC_motorbike Small, tuned)"]
                    + [
                        f"{pub[n][0]:g} s, {pub[n][1] / 3600:.3g} node-h" if n in pub else ""
                        for n in counts
                    ]
                    + [f"{min(pub, key=lambda n: pub[n][1])} node(s)"]
                )
            sec.add(Table(header, rows, caption=title))
            cheapest = min(
                (
                    (analysis.cost_optimal(ps), name)
                    for name, ps in lines.items()
                    if analysis.cost_optimal(ps)
                ),
                key=lambda bn: (bn[0].node_hours, bn[0].nodes),
                default=None,
            )
            if cheapest:
                best, name = cheapest
                cost = f" ({best.node_hours * price:.3g} {currency})" if price is not None else ""
                sec.add(
                    f"Cost-optimal: {name} on {best.nodes} node(s), "
                    f"{fmt(best.node_hours)} node-hours{cost} per run."
                )
            sec.add(
                Figure(
                    figures.scaling(
                        lines, title, self.figdir / f"scaling-{part}-{check}-{case}-{sz}.png", emu
                    ),
                    f"Strong scaling: {title}",
                )
            )
            unit, scale = (
                (f"cost [{currency}]", price) if price is not None else ("node-hours", 1.0)
            )
            sec.add(
                Figure(
                    figures.node_hours(
                        lines,
                        title,
                        unit,
                        scale,
                        self.figdir / f"nodehours-{part}-{check}-{case}-{sz}.png",
                    ),
                    f"Node-hours per node count: {title}",
                )
            )
            if price is None:
                sec.add(
                    f"No node-hour price logged for {part} (the site configuration's "
                    f"NODE_HOUR_PRICE): costs are in node-hours."
                )

    def levels(self, groups: list[Group]):
        sec = self.doc.section("Communication by hardware level, per placement")
        sec.add(
            "Share of the halo-exchange volume that crosses each hardware level, from "
            "rankmap's analysis of each run's placement (map/analysis.json in its "
            "output folder; seed 000 Fig. 5)."
        )
        bars = defaultdict(dict)
        for g in groups:
            if g.get("stage") not in kinds.SOLVER or not g.get("binding"):
                continue
            for run in g.passed:
                path = Path(run.get("outputdir") or "/nonexistent") / "map" / "analysis.json"
                try:
                    entry = json.loads(path.read_text())[-1]
                except (OSError, ValueError, IndexError, KeyError):
                    continue
                key = (g.key[0], g.get("case"), g.get("size"), g.get("nodes"), analysis.ppn_of(g))
                entry["costs_label"] = run.get("costs") or "not logged"
                bars[key][g.get("binding")] = entry
                break
        if not bars:
            sec.add("No run kept its map/analysis.json: nothing to show.")
            self.notes.append("no communication-level data (map/analysis.json)")
            return
        for (part, case, sz, nodes, ppn), per in sorted(bars.items(), key=str):
            title = f"{case} ({size(sz)}) on {nodes} node(s) x {ppn}, {part}"
            priced = sorted({e["costs_label"] for e in per.values()})
            rows = [
                [b]
                + [f"{100 * e['halo_share'].get(level, 0):.1f}" for level in figures.LEVELS]
                + [fmt(e.get("hop_bytes"))]
                for b, e in sorted(per.items())
            ]
            sec.add(
                Table(
                    ["placement"] + [f"{n} [%]" for n in figures.LEVEL_NAMES] + ["hop-bytes"],
                    rows,
                    caption=f"{title}; hop-bytes priced by {'; '.join(priced)}",
                ),
                Figure(
                    figures.levels(
                        dict(sorted(per.items())),
                        title,
                        self.figdir / f"levels-{part}-{case}-{sz}-{nodes}x{ppn}.png",
                    ),
                    f"Halo volume by level: {title}",
                ),
            )

    def stages(self, groups: list[Group]):
        sec = self.doc.section("Staged tuning (seed 002)")
        sec.add(
            "Per stage, the fastest setting and its speedup over the partition's "
            "defaults (first UCX and collectives preset, block placement, the largest "
            "ppn; T_default / T_best)."
        )
        results = analysis.stages(groups)
        if not results:
            sec.add("No tuning stage ran (tags intra1, intra2, inter1, inter2).")
        else:
            rows = []
            for r in results:
                decides = kinds.STAGES[r.stage][0]
                best = ", ".join(f"{c} {r.best.get(c)}" for c in decides)  # what it keeps
                dflt = (
                    ", ".join(f"{c} {r.default.get(c)}" for c in decides)
                    if r.default
                    else "not run"
                )
                at = (
                    ", ".join(f"{c} {v}" for c, v in zip(kinds.STAGES[r.stage][1], r.group))
                    or "1 node"
                )
                rows.append(
                    [
                        r.stage,
                        r.partition,
                        at,
                        best,
                        fmt(r.best.value(analysis.metric(r.best))),
                        dflt,
                        fmt(r.default.value(analysis.metric(r.default))) if r.default else "–",
                        f"{r.speedup:.3f}" if r.speedup else "–",
                        str(r.tried),
                        r.reason,
                    ]
                )
            sec.add(
                Table(
                    [
                        "stage",
                        "partition",
                        "at",
                        "best",
                        "wall s",
                        "default",
                        "wall s",
                        "speedup",
                        "settings tried",
                        "why",
                    ],
                    rows,
                )
            )
        pub = published.tuning(self.system)
        if pub:
            sec.add(
                Table(
                    ["stage", "setting", "value", "effect"],
                    [[r["stage"], r["setting"], r["value"], r["effect"]] for r in pub],
                    caption="Published (seed 002, OCI BM.Optimized3.36): best "
                    "settings of its staged method",
                )
            )

    #: The stages whose runs count MPI calls: what each table says, and the kinds it shows.
    CALL_TABLES = (
        (
            "seed001",
            "seed 001's variants: optMULES removes the MPI_Alltoall of MULES's size exchange, "
            "the pipelined CG solvers (PiPePCG, RePiPePCG, ESI's PPCG and PPCR) replace the "
            "blocking MPI_Allreduce of every iteration by one MPI_Iallreduce.",
            ("allreduce", "iallreduce", "alltoall", "test"),
        ),
        (
            "variants",
            "seed 000's variants: ESI's node-aware reductions (esi-nodecomms) reduce on each "
            "node (MPI_Reduce), all-reduce between the nodes' leaders only and broadcast on "
            "the node (MPI_Bcast), where a layout has node communicators (more than one node "
            "and rank per node).",
            ("allreduce", "reduce", "bcast"),
        ),
        (
            "multinode",
            "the multi-node check's variants, on 1, 2 and 4 nodes with 2 ranks each: ESI's "
            "two-level path (esi-nodecomms) shows as MPI_Reduce calls outnumbering "
            "MPI_Allreduce calls wherever there is more than one node.",
            ("allreduce", "reduce", "bcast"),
        ),
    )

    def mpi_calls(self, groups: list[Group]):
        """The runs of the counting checks: the MPI calls the PMPI interposer counted, per
        variant, side by side per case and layout."""
        tables = []
        for stage, what, counted in self.CALL_TABLES:
            found = sorted(
                (
                    g
                    for g in groups
                    if g.get("stage") == stage and g.passed and g.value(counted[0]) is not None
                ),
                key=lambda g: (
                    g.key[0],
                    str(g.get("case")),
                    g.get("nodes") or 0,
                    str(analysis.label(g)),
                ),
            )
            if found:
                tables.append((what, counted, found))
        if not tables:
            return
        sec = self.doc.section("MPI calls per variant")
        sec.add(
            "Calls by every rank together over the whole run (reframe/src/mpicount); wall "
            "times of emulated partitions are marked and mean nothing."
        )
        for what, counted, found in tables:
            rows = [
                [
                    g.key[0] + (" (emulated)" if g.get("timing") == "emulated" else ""),
                    f"{g.get('case')} ({size(g.get('size'))})",
                    f"{g.get('nodes')}x{analysis.ppn_of(g)}",
                    # The multi-node check runs each variant by srun and by mpirun.
                    analysis.label(g)
                    + (f", {g.get('launcher_kind')}" if g.get("stage") == "multinode" else ""),
                    analysis.placement_used(g),
                    fmt(g.value(analysis.metric(g))),
                ]
                + [calls(g.value(k)) for k in counted]
                for g in found
            ]
            sec.add(
                Table(
                    ["partition", "case", "layout", "variant", "placement used", "wall s"]
                    + [f"MPI_{k.capitalize()}" for k in counted],
                    rows,
                    caption=what,
                )
            )

    def model(self, since: str):
        """The time-per-step model beside the multi-node check's runs (topofoam.prediction.modelcheck):
        predicted and measured per variant and node count, and whether the model orders the
        variants as the measurements do."""
        lines, _ = modelcheck.check(self.results / "perflogs" / self.system, since)
        if not lines:
            return
        sec = self.doc.section("Time per step: the model beside the measurements")
        sec.add(
            "The multi-node check's time per step (median of the repeats, 95 % interval) and "
            "what the time-per-step model predicts from the p2p check's link costs, each "
            "variant's one-node run (its calls per step and compute) and each run's "
            "decomposition (docs/model.md). On one node the prediction is the measurement "
            "(the compute is derived from it), or the communication where that is longer "
            "(a latency-bound step)."
        )
        sec.add(Table(list(modelcheck.HEADER), [modelcheck.cells(ln) for ln in lines]))
        for text in modelcheck.orderings(lines):
            sec.add(text)
        sec.add(modelcheck.effects(lines))
        for text in modelcheck.where_the_time_goes(lines):
            sec.add(text)
        for text in modelcheck.judgements(lines):
            sec.add(text)
        for reason in modelcheck.reasons(lines):
            sec.add(f"No prediction: {reason}")

    def storage(self, groups: list[Group]):
        sec = self.doc.section("Storage: shared vs node-local")
        found = analysis.storage(groups)
        if not found:
            sec.add("No storage run (tag storage).")
            return
        cols = ("decompose", "solve", "reconstruct", "copies", "total")
        against = analysis.storage_decreases(groups)
        rows = [
            [
                g.key[0],
                f"{g.get('case')} ({g.get('size')})",
                g.get("storage"),
                {0: "end only"}.get(g.get("write_every"), f"every {g.get('write_every')}"),
            ]
            + [fmt(g.value(c)) for c in cols]
            + [_counts(g), _decrease_cell(against[id(g)]) if id(g) in against else ""]
            for g in found
        ]
        sec.add(
            'Merged seconds per phase; "copies" is staging the case to node-local '
            "disk and the results back (on shared storage only the check's own "
            'bookkeeping). "total vs shared": the decrease of the total time on node-local '
            "storage against shared storage, as in the decrease table (CI, n, verdict).",
            Table(
                ["partition", "case", "storage", "writes"]
                + [f"{c} s" for c in cols]
                + ["runs", "total vs shared %"],
                rows,
            ),
        )

    def fields(self, compared: list[analysis.Decrease]):
        from topofoam.reporting import fieldimage

        sec = self.doc.section("Final fields: standard vs optimized")
        pairs = []
        for d in compared:
            if _emulated(d.standard.key) or d.standard.get("stage") != "variants":
                continue
            std = next(
                (
                    Path(r["outputdir"]) / "final"
                    for r in d.standard.passed
                    if r.get("outputdir") and (Path(r["outputdir"]) / "final").is_dir()
                ),
                None,
            )
            opt = next(
                (
                    Path(r["outputdir"])
                    for r in d.optimized.passed
                    if r.get("outputdir") and (Path(r["outputdir"]) / "final").is_dir()
                ),
                None,
            )
            if std and opt and d.label.startswith("local+global"):
                pairs.append((d, std, opt))
        done = set()
        for d, std, opt in pairs:
            if (d.case, d.size) in done:
                continue
            done.add((d.case, d.size))
            title = (
                f"{d.case} ({d.size}) on {d.nodes} node(s) x {d.ppn}, {d.partition}: "
                f"standard, block vs {d.label}"
            )
            out = self.figdir / f"fields-{d.partition}-{d.case}-{d.size}.png"
            try:
                got = (
                    fieldimage.side_by_side(std, opt / "final", out, title) if self.images else None
                )
            except fieldimage.ImageError as e:
                got = None
                sec.add(f"{title}: no image ({e}).")
            if got:
                sec.add(
                    Figure(
                        out,
                        f"{title} (ParaView); final time {got['time']}; "
                        f"max |difference| / max |{got['field']}| = "
                        f"{got['difference']:.3g}",
                    )
                )
            try:
                diffs = json.loads((opt / "fields.json").read_text())
                sec.add(
                    Table(
                        ["field", "max |difference| / max |standard|"],
                        [
                            [f, f"{v:.3g}"]
                            for f, v in sorted(diffs["max_relative_difference"].items())
                        ],
                        caption=f"{title}: every final field (fields.json; sanity "
                        f"allows {diffs['rtol']:g})",
                    )
                )
            except (OSError, ValueError, KeyError):
                pass
        if not done:
            sec.add(
                "No passed standard and local+global pair of the variants kept its final "
                "fields (small cases keep them in final/ of their output folder)."
            )
            self.notes.append("no field image: no variants pair with kept fields")

    def missing(self):
        if self.notes:
            sec = Section("What this report lacks")
            sec.add(Table(["note"], [[n] for n in self.notes]))
            self.doc.sections.insert(1, sec)


VERDICT_ORDER = {"PASS": 1, "INCONCLUSIVE": 2, "FAIL": 3}


def _judged_anything(data: dict) -> bool:
    counts = data.get("counts", {})
    return isinstance(counts, dict) and sum(v for v in counts.values() if isinstance(v, int)) > 0


def _latest_by_partition(verdicts: list[dict]) -> dict[str, dict | None]:
    """Per partition, its latest verdict that judged something (None: none did)."""
    latest: dict[str, dict | None] = {}
    for v in verdicts:  # oldest first, so the last one kept wins
        for partition in v["data"].get("partitions", []):
            if _judged_anything(v["data"]):
                latest[str(partition)] = v
            else:
                latest.setdefault(str(partition), None)
    return latest


def _verdict_rows(data: dict, partition: str) -> list[list[str]]:
    """The table rows of one verdict's findings on ``partition``."""

    def on(entry) -> bool:
        return not isinstance(entry, dict) or entry.get("partition", partition) == partition

    rows = [["FAIL", str(case), "", "", "", ""] for case in data.get("failed_test_cases", [])]
    rows += [
        [
            "FAIL",
            f"{m.get('check')} {m.get('setting')} {m.get('metric')}",
            "not measured",
            "",
            "",
            "",
        ]
        for m in data.get("missing", [])
        if on(m)
    ]
    for j in data.get("judgements", []):
        if not isinstance(j, dict) or not on(j):
            continue
        rows.append(
            [
                str(j.get("status", "?")),
                f"{j.get('check')} on {j.get('partition')}: {j.get('metric')} of {j.get('setting')}",
                str(j.get("expected", "")),
                str(j.get("measured", "")),
                # A verdict written before "allowed" was kept shows its margin as it was.
                f"{j.get('change') or ''} (margin {j.get('allowed') or _percent(j.get('margin'))})",
                str(j.get("reason", "")),
            ]
        )
    return rows


def _percent(value) -> str:
    return format(value, ".0%") if isinstance(value, int | float) else "?"


def build(
    results: Path,
    system: str,
    out: Path | None = None,
    images: bool = True,
    say=print,
    since: str = "",
) -> Report:
    out = out or results / "report" / system
    say(f"report: collecting {system} runs under {results}")
    coll = collect(results, system, since)
    if since and not coll.rows:
        # Nothing to report: an existing report stays as it is.
        raise NoRuns(
            f"no runs of {system} ended at or after {since} under {results} -- give an "
            f"earlier --since (the perflogs' times are the machine's local time), or leave it "
            f"out; {out} was left as it was"
        )
    out = output.folder(out, "report folder")
    b = Builder(results, system, out, images, say)
    b.notes += coll.notes
    table = coll.write_csv(out / "runs.csv")
    groups = group(coll.rows, set(coll.perf))
    b.verdict(since)
    b.summary(coll, groups, table, since)
    b.failures(coll)
    say(f"report: {len(coll.rows)} runs in {len(groups)} configurations; tables and figures")
    # Every standard/optimized pair, with its significance test: the decrease table, the
    # figures of merit and the final fields all read the same pairs.
    compared = analysis.decreases(groups)
    b.decrease(groups, compared)
    b.merits(groups, compared)
    b.scaling(groups)
    b.levels(groups)
    b.stages(groups)
    b.storage(groups)
    b.mpi_calls(groups)
    b.model(since)
    if images:
        say("report: final fields (pvpython)")
    b.fields(compared)
    b.missing()
    md = output.write_text(out / "report.md", markdown(b.doc, out), "report")
    html = output.write_text(out / "report.html", page(b.doc), "report")
    return Report(system, md, html, table, coll, groups, b.notes)
