"""KaHIP (PyPI ``kahip``) as an alternative partitioner for the levels of the hierarchy.

KaHIP's strong mode finds smaller cuts than SCOTCH on mesh-like graphs at the price of time;
rankmap uses SCOTCH by default and KaHIP when asked (``--partitioner kahip``). KaHIP balances
parts to equal size; ``rankmap.balance`` then makes unequal target sizes exact.
"""

from __future__ import annotations

import numpy as np

from rankmap.errors import InputError
from rankmap.graph import CommGraph

MODES = {"fast": 0, "eco": 1, "strong": 2}


def partition(
    graph: CommGraph, parts: int, *, seed: int = 1, mode: str = "strong", imbalance: float = 0.0
) -> np.ndarray:
    try:
        import kahip
    except ImportError:
        raise InputError(
            "the KaHIP partitioner needs the Python package 'kahip' -- "
            "pip install kahip (it is in the project's dependencies)"
        ) from None
    if parts == 1:
        return np.zeros(graph.n, dtype=np.int32)
    _, blocks = kahip.kaffpa(
        [1] * graph.n,
        graph.xadj.tolist(),
        graph.adjwgt.tolist(),
        graph.adjncy.tolist(),
        parts,
        imbalance,
        True,
        seed,
        MODES[mode],
    )
    return np.asarray(blocks, dtype=np.int32)
