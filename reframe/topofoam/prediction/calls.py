"""MPI calls per rank and step at a size and rank count never run here: a stated law fitted
to counted runs, checked on a held-out run (docs/model.md, At the papers' scale).

    law = CallLaw.fit(points)              # points: Counted(case, cells, ranks, per_rank_step)
    law.predict(19_560_000, 768)           # {'MPI_Allreduce': ..., 'MPI_Isend': ...}

The law, per kind of call: ``calls = exp(a) * cells^b * ranks^c``, fitted by least squares
on the logarithms. Why that form: a Krylov or multigrid solve's iterations grow as a power
of the problem's size (PCG's as the square root of the condition number, which grows as a
power of the cells per direction), its coarsest level's with the ranks; each iteration's
exchanges and reductions are a fixed number. A quantity a run did not make is 0 in
every run, or it is not priced. The exponents are whatever the counts say; nothing is fitted to a
published runtime.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from topofoam.prediction.model import ModelError

#: What the law predicts: model.Workload's calls per rank and step.
QUANTITIES = ("halo", "allreduce", "iallreduce", "alltoall", "tree", "rooted")
#: The MPI calls they are made of (model.Workload.from_counts).
KINDS = (
    "MPI_Isend",
    "MPI_Send",
    "MPI_Allreduce",
    "MPI_Iallreduce",
    "MPI_Alltoall",
    "MPI_Alltoallv",
    "MPI_Reduce",
    "MPI_Bcast",
)


@dataclass(frozen=True)
class Counted:
    """One counted run's calls per rank and step (steady steps: the difference of two runs)."""

    case: str
    cells: int
    ranks: int
    calls: dict[str, float]  # kind -> per rank and step
    neighbours: float = 0.0  # the decomposition's arcs per rank (halo messages per exchange)
    step_s: float | None = None  # wall time per step of that run

    def quantities(self) -> dict[str, float]:
        """What the model prices per rank and step (model.Workload's fields): halo exchanges
        (sends over the neighbours), all-reduces, the schedule's tree reductions (each is
        2 (ranks - 1) sends over all ranks), all-to-alls, rooted collectives."""
        c, r = self.calls, self.ranks
        return {
            "halo": c.get("MPI_Isend", 0.0) / self.neighbours if self.neighbours else 0.0,
            "allreduce": c.get("MPI_Allreduce", 0.0),
            "iallreduce": c.get("MPI_Iallreduce", 0.0),
            "alltoall": c.get("MPI_Alltoall", 0.0) + c.get("MPI_Alltoallv", 0.0),
            "tree": c.get("MPI_Send", 0.0) * r / (2 * (r - 1)) if r > 1 else 0.0,
            "rooted": c.get("MPI_Reduce", 0.0) + c.get("MPI_Bcast", 0.0),
        }


@dataclass(frozen=True)
class CallLaw:
    case: str
    #: kind -> (a, b, c): calls = exp(a) cells^b ranks^c; kinds that are 0 everywhere absent
    terms: dict[str, tuple[float, float, float]]
    points: int

    @classmethod
    def fit(cls, runs: list[Counted]) -> CallLaw:
        if len({(r.cells, r.ranks) for r in runs}) < 3:
            raise ModelError(
                "a call law needs counted runs at 3 or more (cells, ranks) points -- count "
                "more sizes or rank counts"
            )
        cases = {r.case for r in runs}
        if len(cases) != 1:
            raise ModelError(f"one law per case; the runs are of {', '.join(sorted(cases))}")
        x = np.array([[1.0, math.log(r.cells), math.log(r.ranks)] for r in runs])
        cells_vary = len({r.cells for r in runs}) > 1
        ranks_vary = len({r.ranks for r in runs}) > 1
        terms = {}
        for kind in QUANTITIES:
            y = [r.quantities()[kind] for r in runs]
            if all(v == 0 for v in y):
                continue
            if any(v <= 0 for v in y):
                raise ModelError(
                    f"{kind} is made in some counted runs of {runs[0].case} and not in "
                    f"others -- the law needs it in every run or in none"
                )
            cols = [0] + ([1] if cells_vary else []) + ([2] if ranks_vary else [])
            coef, *_ = np.linalg.lstsq(x[:, cols], np.log(y), rcond=None)
            full = [0.0, 0.0, 0.0]
            for c, value in zip(cols, coef):
                full[c] = float(value)
            terms[kind] = tuple(full)
        return cls(runs[0].case, terms, len(runs))

    def predict(self, cells: int, ranks: int) -> dict[str, float]:
        return {
            kind: math.exp(a + b * math.log(cells) + c * math.log(ranks))
            for kind, (a, b, c) in self.terms.items()
        }

    def errors(self, run: Counted) -> dict[str, float]:
        """Relative error of the law on a run it was not fitted to, per kind."""
        got = self.predict(run.cells, run.ranks)
        have = run.quantities()
        return {k: got[k] / have[k] - 1 for k in got if have.get(k)}

    def describe(self) -> str:
        parts = [
            f"{k} = {math.exp(a):.3g} cells^{b:.2f} ranks^{c:.2f}"
            for k, (a, b, c) in self.terms.items()
        ]
        return "; ".join(parts)


def save(runs: list[Counted], path: Path) -> None:
    from topofoam import output

    output.write_text(path, json.dumps([asdict(r) for r in runs], indent=1) + "\n", str(path))


def load(path: Path) -> list[Counted]:
    path = Path(path)
    try:
        rows = json.loads(path.read_text())
        runs = [Counted(**row) for row in rows]
    except OSError as e:
        raise ModelError(
            f"cannot read {path} ({e.strerror}) -- count the runs first "
            f"(python -m localsite.publishedbench calls)"
        ) from None
    except (ValueError, TypeError):
        raise ModelError(
            f"{path} is not a list of counted runs -- count them again "
            f"(python -m localsite.publishedbench calls)"
        ) from None
    for r in runs:
        bad = [
            k
            for k, v in r.calls.items()
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0)
        ]
        if bad or r.cells < 1 or r.ranks < 1:
            raise ModelError(
                f"{path}: the run of {r.case} at {r.cells} cells on {r.ranks} ranks "
                f"has bad values ({', '.join(bad) or 'cells or ranks'}) -- count it again"
            )
    return runs
