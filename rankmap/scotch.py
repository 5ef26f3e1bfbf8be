"""The real SCOTCH library (libscotch, 32-bit SCOTCH_Num as Debian builds it), through ctypes.

Two calls are used:
  * ``map_weighted``: SCOTCH_graphMap onto a weighted complete graph (``cmpltw``), i.e. a
    partition into parts of the given sizes, with the quality and balance strategy flags;
  * ``map_tleaf``: SCOTCH's one-shot mapping onto a tree-leaf target of the whole machine
    (the baseline that the hierarchical method is compared against).
SCOTCH aims at, but does not guarantee, exact part sizes: ``rankmap.balance`` repairs them.

Every call runs in its own SCOTCH context with one thread and its own random state seeded
from ``seed``: Debian's libscotch is threaded, and threads race, so the same graph and seed
could give different mappings from run to run. On graphs of a few thousand vertices one
thread is also faster (no thread start-up).
"""

from __future__ import annotations

import ctypes
import ctypes.util
from functools import lru_cache

import numpy as np

from rankmap.errors import InputError
from rankmap.graph import CommGraph

STRATQUALITY = 0x0001
STRATBALANCE = 0x0004
OPTIONNUMDETERMINISTIC = 0
OPTIONNUMRANDOMFIXEDSEED = 1
CONTEXT_DOUBLES = 8  # sizeof(SCOTCH_Context) is 3 doubles in scotch.h 7.0; room to spare

_Num = ctypes.c_int32
_NumP = ctypes.POINTER(_Num)


class ScotchError(RuntimeError):
    """SCOTCH returned an error code (its own message went to stderr)."""


@lru_cache(maxsize=1)
def _lib() -> ctypes.CDLL:
    # libscotcherr provides SCOTCH_errorPrint (print and return, not exit); load it first.
    for err in ("libscotcherr.so", "libscotcherr-7.0.so"):
        try:
            ctypes.CDLL(err, mode=ctypes.RTLD_GLOBAL)
            break
        except OSError:
            continue
    try:
        lib = ctypes.CDLL("libscotch.so", mode=ctypes.RTLD_GLOBAL)
    except OSError:
        raise InputError(
            "the SCOTCH library (libscotch.so) is not installed -- install "
            "libscotch-dev (Debian; ./bench setup does)"
        ) from None
    if lib.SCOTCH_numSizeof() != 4:
        raise InputError(
            "this libscotch uses 64-bit SCOTCH_Num; rankmap expects Debian's "
            "32-bit build (libscotch-dev)"
        )
    return lib


def _buffer(sizeof) -> ctypes.Array:
    return (ctypes.c_double * ((sizeof() + 7) // 8))()


def _check(code: int, what: str) -> None:
    if code != 0:
        raise ScotchError(f"SCOTCH {what} failed (code {code})")


def _ptr(array: np.ndarray):
    return array.ctypes.data_as(_NumP)


class _Context:
    """A SCOTCH context with one thread and its own random state, seeded."""

    def __init__(self, seed: int):
        lib = _lib()
        self.lib = lib
        self.handle = (ctypes.c_double * CONTEXT_DOUBLES)()
        _check(lib.SCOTCH_contextInit(self.handle), "contextInit")
        try:
            _check(lib.SCOTCH_contextThreadSpawn(self.handle, 1, None), "contextThreadSpawn")
            _check(lib.SCOTCH_contextRandomClone(self.handle), "contextRandomClone")
            for option in (OPTIONNUMDETERMINISTIC, OPTIONNUMRANDOMFIXEDSEED):
                _check(
                    lib.SCOTCH_contextOptionSetNum(self.handle, option, _Num(1)),
                    "contextOptionSetNum",
                )
            lib.SCOTCH_contextRandomSeed(self.handle, _Num(seed))
            lib.SCOTCH_contextRandomReset(self.handle)
        except ScotchError:
            lib.SCOTCH_contextExit(self.handle)
            raise

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.lib.SCOTCH_contextExit(self.handle)


class _Graph:
    """A SCOTCH_Graph built on our arrays (which must outlive it), bound to ``context``."""

    def __init__(self, graph: CommGraph, context: _Context):
        lib = _lib()
        self.lib = lib
        # A mesh's cell graph has no arc weights (decomposePar gives SCOTCH none).
        weights = getattr(graph, "adjwgt", None)
        self.arrays = [
            np.ascontiguousarray(a, dtype=np.int32)
            for a in (graph.xadj, graph.adjncy, weights)
            if a is not None
        ]
        xadj, adjncy = self.arrays[:2]
        adjwgt = self.arrays[2] if weights is not None else None
        self.handle = _buffer(lib.SCOTCH_graphSizeof)
        _check(lib.SCOTCH_graphInit(self.handle), "graphInit")
        _check(
            lib.SCOTCH_graphBuild(
                self.handle,
                _Num(0),
                _Num(graph.n),
                _ptr(xadj),
                None,
                None,
                None,
                _Num(len(adjncy)),
                _ptr(adjncy),
                _ptr(adjwgt) if adjwgt is not None else None,
            ),
            "graphBuild",
        )
        self.bound = _buffer(lib.SCOTCH_graphSizeof)
        _check(lib.SCOTCH_graphInit(self.bound), "graphInit")
        code = lib.SCOTCH_contextBindGraph(context.handle, self.handle, self.bound)
        if code != 0:
            lib.SCOTCH_graphExit(self.handle)
            _check(code, "contextBindGraph")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        # The bound graph goes before the graph it views (and before its context).
        self.lib.SCOTCH_graphExit(self.bound)
        self.lib.SCOTCH_graphExit(self.handle)


def _strategy(lib, flags: int, parts: int, imbalance: float):
    strat = _buffer(lib.SCOTCH_stratSizeof)
    _check(lib.SCOTCH_stratInit(strat), "stratInit")
    _check(
        lib.SCOTCH_stratGraphMapBuild(strat, _Num(flags), _Num(parts), ctypes.c_double(imbalance)),
        "stratGraphMapBuild",
    )
    return strat


def _map(
    graph: CommGraph, build_arch, parts: int, flags: int, imbalance: float, seed: int
) -> np.ndarray:
    lib = _lib()
    out = np.zeros(graph.n, dtype=np.int32)
    arch = _buffer(lib.SCOTCH_archSizeof)
    _check(lib.SCOTCH_archInit(arch), "archInit")
    strat = _strategy(lib, flags, parts, imbalance)
    try:
        build_arch(lib, arch)
        with _Context(seed) as context, _Graph(graph, context) as g:
            _check(lib.SCOTCH_graphMap(g.bound, arch, strat, _ptr(out)), "graphMap")
    finally:
        lib.SCOTCH_stratExit(strat)
        lib.SCOTCH_archExit(arch)
    return out


def map_weighted(
    graph: CommGraph,
    sizes: list[int],
    *,
    quality: bool = True,
    imbalance: float = 0.01,
    seed: int = 1,
) -> np.ndarray:
    """Part of each vertex, for parts whose sizes are proportional to ``sizes``."""
    if len(sizes) == 1:
        return np.zeros(graph.n, dtype=np.int32)
    weights = np.asarray(sizes, dtype=np.int32)

    def cmpltw(lib, arch):
        _check(lib.SCOTCH_archCmpltw(arch, _Num(len(weights)), _ptr(weights)), "archCmpltw")

    flags = STRATBALANCE | (STRATQUALITY if quality else 0)
    return _map(graph, cmpltw, len(sizes), flags, imbalance, seed)


def map_tleaf(
    graph: CommGraph,
    fanouts: list[int],
    link_costs: list[int],
    *,
    imbalance: float = 0.0,
    seed: int = 1,
) -> np.ndarray:
    """SCOTCH's one-shot mapping onto a tree-leaf machine; the leaf index of each vertex.

    ``fanouts`` from the top (nodes, domains per node, NUMA nodes per domain, cores per NUMA
    node) and ``link_costs`` of crossing each level, slowest first.
    """
    fan = np.asarray(fanouts, dtype=np.int32)
    cost = np.asarray(link_costs, dtype=np.int32)

    def tleaf(lib, arch):
        _check(lib.SCOTCH_archTleaf(arch, _Num(len(fan)), _ptr(fan), _ptr(cost)), "archTleaf")

    flags = STRATBALANCE | STRATQUALITY
    return _map(graph, tleaf, int(np.prod(fan)), flags, imbalance, seed)


def decompose(graph, parts: int, *, seed: int = 1) -> np.ndarray:
    """Part of each cell of a mesh's cell graph, as OpenFOAM's scotch decomposition makes it:
    SCOTCH_graphMap onto a complete graph of ``parts`` equal parts (``archCmplt``) with
    SCOTCH's default strategy at 1 % imbalance (what an empty strategy becomes), no weights.
    One thread and a fixed seed, where decomposePar runs the library's threads: the parts
    can differ from decomposePar's in detail, not in kind (localsite.publishedbench)."""
    if parts == 1:
        return np.zeros(graph.n, dtype=np.int32)

    def cmplt(lib, arch):
        _check(lib.SCOTCH_archCmplt(arch, _Num(parts)), "archCmplt")

    return _map(graph, cmplt, parts, 0, 0.01, seed)
