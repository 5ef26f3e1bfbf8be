"""What each kind of run is, what the tuning stages decide, and the settings they start from.

Every check logs a ``stage`` column (its tag: ``variants``, ``intra1``...); tools select rows
by it, never by check class names.
"""

from __future__ import annotations

#: Stage -> (the columns it decides, the columns that group its choice) (seed 002).
STAGES = {
    "intra1": (("ppn",), ()),
    "intra2": (("binding", "ucx", "coll"), ()),
    "inter1": (("ucx_inter",), ("nodes",)),
    "inter2": (("ppn", "binding", "ucx", "coll", "ucx_inter"), ("nodes",)),
}
#: The stages whose best settings the tuning file carries into later stages.
TUNED = ("intra1", "intra2", "inter1")

#: Runs that time a solver on a layout (the rest are reported in sections of their own).
SOLVER = (
    "cases",
    "variants",
    "intra1",
    "intra2",
    "inter1",
    "inter2",
    "cost",
    "seed001",
    "multinode",
)
#: Runs whose node counts make a scaling series (the intra/inter1 stages hold the node
#: count fixed and vary settings instead).
SCALING = ("cases", "variants", "cost", "inter2", "seed001", "multinode")


def defaults(extras: dict) -> dict:
    """The settings a stage starts from on a partition without a tuning file: the most
    processes per node, block placement, the first preset of each list."""
    return {
        "ppn": max(extras["ppn"]),
        "binding": "block",
        "ucx": extras["ucx"][0],
        "coll": extras["coll"][0],
        "ucx_inter": extras["ucx_inter"][0],
    }


def format_defaults(values: dict) -> str:
    """'ppn=36 binding=block ...': how the defaults show in a perflog column."""
    return " ".join(f"{k}={v}" for k, v in values.items())


def parse_defaults(text: str | None) -> dict:
    """The inverse of format_defaults ({} for an empty or older row)."""
    return dict(item.split("=", 1) for item in (text or "").split() if "=" in item)
