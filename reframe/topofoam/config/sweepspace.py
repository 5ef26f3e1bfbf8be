"""The sweep space: which combinations of settings run on which partition. Pure: no ReFrame,
no files but the tuning file, so it is unit-tested on made-up partitions.

A partition that takes part in sweeps carries its values in its extras (site-configs/sitekit
cluster.py, local.py): ``topology`` (what rankmap maps onto), ``cores``, ``numa_nodes``,
``nps``, ``ppn`` (processes per node to try), ``nodes`` (node counts), ``ucx``/``ucx_inter``/
``coll`` (preset names of reframe/topofoam/config/presets.py) and ``intra2_pairs``. ReFrame parameters are the
same for every partition, so a stage's parameters are the union over the partitions, and
each combination runs on the partitions where ``applies`` says so: listing (``reframe -l``)
and running agree.

A tuning file (``TOPOFOAM_TUNING``, JSON: ``{"<partition>": {"ppn": 36, "binding": "cyclic",
"ucx": "rndv16k", "coll": "hcoll", "ucx_inter": {"4": "rc-128k"}}}``) carries one stage's
best settings into the next; without one, a stage starts from ``stages.defaults``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Protocol

from topofoam.config import presets
from topofoam.results.stages import defaults

#: The variants that run with rankmap's reduction schedule (seed 000).
SCHEDULE_VARIANTS = ("global", "local+global")
#: ESI's own two-level, node-aware collectives (v2506 and later), the schedule's closest
#: competitor: communicators split by host name (nodeComms 1) and the node-aware broadcast,
#: reduce/allreduce and gather on (topoControl bits 1, 2 and 4).
ESI_NODECOMMS = {"nodeComms": 1, "topoControl": 7}


class SweepError(ValueError):
    """A tuning file or value the partitions cannot run; the message names it and the fix."""


class Partition(Protocol):
    """What the sweep space needs of a partition (ReFrame's partitions have it)."""

    name: str
    extras: dict


def read_tuning(path: str | None) -> dict:
    """The best settings so far, per partition name, from the tuning file (or {})."""
    if not path:
        return {}
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        raise SweepError(
            f"TOPOFOAM_TUNING={path}: cannot read it as JSON ({e}) -- fix or unset it"
        ) from None
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise SweepError(
            f"TOPOFOAM_TUNING={path}: expected an object keyed by partition "
            f"name, each an object of settings -- fix or unset it"
        )
    return data


def check_tuning_partitions(tuning: dict, path: str, system: str, names: list[str]) -> None:
    """A tuning file is one system's (python -m topofoam.results.tuning writes the partitions
    it ran): partitions the system lacks mean another system's file, whose settings would
    otherwise be silently ignored."""
    foreign = sorted(set(tuning) - set(names))
    if foreign:
        raise SweepError(
            f"TOPOFOAM_TUNING={path} holds partition(s) {', '.join(foreign)}, which {system} "
            f"does not have (its: {', '.join(names) or 'none'}) -- give {system}'s own tuning "
            f"file, or unset TOPOFOAM_TUNING"
        )


class Settings:
    """What a stage does not sweep, on one partition: the tuning file's best, else the
    defaults (the most processes per node, block placement, first preset of each list)."""

    def __init__(self, part: Partition, tuning: dict, source: str = "the tuning file"):
        x = part.extras
        start = defaults(x)
        best = tuning.get(part.name, {})
        try:
            self.ppn = int(best.get("ppn", start["ppn"]))
        except (TypeError, ValueError):
            raise SweepError(
                f"{source}: {part.name}: ppn {best.get('ppn')!r} is not a "
                f"whole number -- choose from 1..{x['cores']}"
            ) from None
        self.binding = best.get("binding", start["binding"])
        self.ucx = best.get("ucx", start["ucx"])
        self.coll = best.get("coll", start["coll"])
        try:
            self.ucx_inter = {int(n): v for n, v in dict(best.get("ucx_inter", {})).items()}
        except (TypeError, ValueError):
            raise SweepError(
                f"{source}: {part.name}: ucx_inter {best.get('ucx_inter')!r} is not an "
                f'object keyed by node count -- e.g. {{"2": "{x["ucx_inter"][0]}"}}, '
                f"or remove it"
            ) from None
        self.defaults = start
        # A value the partition cannot run would silently drop every test that uses it.
        allowed = [
            ("ppn", [self.ppn], range(1, x["cores"] + 1)),
            ("binding", [self.binding], presets.BINDINGS),
            ("ucx", [self.ucx], x["ucx"]),
            ("coll", [self.coll], x["coll"]),
            ("ucx_inter", list(self.ucx_inter.values()), x["ucx_inter"]),
        ]
        for key, values, choices in allowed:
            for value in values:
                if value not in choices:
                    shown = f"1..{x['cores']}" if key == "ppn" else ", ".join(choices)
                    raise SweepError(
                        f"{source}: {part.name}: {key} '{value}' is not one this "
                        f"partition runs -- choose from {shown} (its site "
                        f"configuration) or remove it"
                    )

    def inter(self, nodes: int, part: Partition) -> str:
        return self.ucx_inter.get(nodes, part.extras["ucx_inter"][0])


def layouts(kind: str, parts: list[Partition], tuning: dict) -> list[tuple[int, int]]:
    """(nodes, processes per node) over the partitions, sorted: ``every-ppn`` (each ppn
    candidate on one node), ``one-node``, ``multi-node`` or ``all`` node counts at the
    partition's ppn. [(1, 1)] when no partition sweeps (ReFrame needs a parameter value)."""
    found = set()
    for part in parts:
        x, s = part.extras, Settings(part, tuning)
        if kind == "every-ppn":
            found |= {(1, ppn) for ppn in x["ppn"]}
        elif kind == "one-node":
            found.add((1, s.ppn))
        elif kind == "multi-node":
            found |= {(n, s.ppn) for n in x["nodes"] if n > 1}
        elif kind == "all":
            found |= {(n, s.ppn) for n in x["nodes"]}
        else:
            raise ValueError(f"unknown layout kind {kind!r}")
    return sorted(found) or [(1, 1)]


def repeats(part: Partition) -> int:
    """How often each timed run of ``part`` is repeated (its ``repeats`` extra, 5 on the
    cluster sites): once on an emulated partition whose links cost nothing (its times are
    never compared); under a fabric profile (topofoam.config.fabric) communication dominates there,
    and its times are compared and set beside the time-per-step model."""
    if part.extras.get("emulated") and part.extras.get("fabric", "none") == "none":
        return 1
    return max(1, int(part.extras.get("repeats", 1)))


#: Repeats of each validation measurement (``-t validate``) unless the partition's
#: ``validate_repeats`` says otherwise: enough that one verdict over some 20 expectations,
#: Holm-adjusted, can still call a 10 % slowdown significant (10 against 10: the smallest
#: one-sided rank-test p is 1 / 184,756; a sign test against a published value, 1 / 1,024).
VALIDATE_REPEATS = 10


def validate_repeats(part: Partition) -> int:
    """How often each validation measurement of ``part`` is repeated: once on an emulated
    partition (its times judge nothing), else its ``validate_repeats`` extra."""
    if part.extras.get("emulated"):
        return 1
    return max(1, int(part.extras.get("validate_repeats", VALIDATE_REPEATS)))


def compares(part: Partition, case: str) -> bool:
    """Whether the timed comparisons of ``part`` run on ``case``: every case, unless the
    partition's ``compare_cases`` names some (the local default's budget)."""
    chosen = part.extras.get("compare_cases")
    return not chosen or case in chosen


def union(key: str, parts: list[Partition]) -> list:
    """Every value of a list-valued extra over the partitions, in first-seen order."""
    seen = []
    for part in parts:
        for value in part.extras.get(key, []):
            if value not in seen:
                seen.append(value)
    return seen


@dataclass(frozen=True)
class Combination:
    """One test's settings; '' takes the partition's Settings."""

    variant: str = "standard"
    binding: str = ""
    ucx: str = ""
    coll: str = ""
    ucx_inter: str = ""


def applies(
    stage: str, combo: Combination, part: Partition, nodes: int, ppn: int, tuning: dict
) -> bool:
    """Whether ``combo`` of ``stage`` runs on ``part`` at ``nodes`` x ``ppn``."""
    x, s = part.extras, Settings(part, tuning)
    if nodes not in x["nodes"] or ppn > x["cores"]:
        return False
    if combo.binding == "cyclic" and x["numa_nodes"] < 2:
        return False  # one NUMA node: cyclic is block
    if combo.variant == "local+global" and combo.binding != "rankmap":
        return False  # seed 000: rankmap's placement with its schedule
    if combo.variant == "global" and combo.binding == "rankmap":
        return False  # that is local+global
    if combo.variant == "esi-nodecomms" and combo.binding == "rankmap":
        return False  # ESI's method against ours: on the placements it is meant for
    ucx = combo.ucx or s.ucx
    coll = combo.coll or s.coll
    inter = combo.ucx_inter or s.inter(nodes, part)
    if not (
        ucx in x["ucx"]
        and coll in x["coll"]
        and inter in x["ucx_inter"]
        and nodes >= presets.UCX_INTER_MIN_NODES.get(inter, 1)
    ):
        return False
    # What each stage adds (reference runs take their parent's partition).
    if stage == "intra1":
        return ppn in x["ppn"]
    if stage == "reference":
        return True
    if ppn != s.ppn:
        return False  # every later stage runs at the partition's ppn
    if stage == "intra2":
        return [combo.ucx, combo.coll] in [list(p) for p in x["intra2_pairs"]]
    if stage == "cost":
        # standard keeps the best placement so far ('' = Settings); local+global is rankmap's.
        return (combo.variant == "standard") == (combo.binding == "")
    return True
