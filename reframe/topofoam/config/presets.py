"""Runtime settings the tuning stages sweep, by name (seed 002, OCI BM.Optimized3.36).

A name is what a perflog column shows; the settings are environment variables of the run
(UCX reads ``UCX_*``, Open MPI reads ``OMPI_MCA_*``). A partition lists the names that apply
to it: the ``intra:``/``inter:`` form of UCX_RNDV_THRESH needs UCX >= 1.15 (Debian 12 has
1.13, which rejects it and fails MPI_Init), and hcoll/UCC exist only where the site's Open MPI
was built with them.
"""

#: Intra-node UCX presets (seed 002 Test intra2: UCX_RNDV_THRESH auto / 16kb / 128kb).
UCX = {
    "auto": {},
    "rndv16k": {"UCX_RNDV_THRESH": "16kb"},
    "rndv128k": {"UCX_RNDV_THRESH": "128kb"},
    # UCX >= 1.15: the intra-node threshold alone, inter-node left to UCX.
    "rndv16k-intra": {"UCX_RNDV_THRESH": "intra:16kb,inter:auto"},
    "rndv128k-intra": {"UCX_RNDV_THRESH": "intra:128kb,inter:auto"},
}

#: Inter-node UCX presets (seed 002 Test inter1); self,sm,ud only from 4 nodes on. A scoped
#: UCX_RNDV_THRESH names both levels: UCX (1.20.1, Open MPI 5.0.11's, run on OCI's twin on
#: 2026-12-03) refuses ``inter:128kb`` alone in MPI_Init ("no value configured for key
#: 'intra'"), so the level a preset leaves alone is ``auto``.
UCX_INTER = {
    "auto": {},
    "rc-128k": {
        "UCX_TLS": "self,sm,rc",
        "UCX_ZCOPY_THRESH": "128kb",
        "UCX_RNDV_THRESH": "intra:auto,inter:128kb",
    },
    "ud-128k": {
        "UCX_TLS": "self,sm,ud",
        "UCX_ZCOPY_THRESH": "128kb",
        "UCX_RNDV_THRESH": "intra:auto,inter:128kb",
    },
    # UCX < 1.15 (no intra:/inter: form): the same settings, thresholds for every peer.
    "rc-128k-flat": {
        "UCX_TLS": "self,sm,rc",
        "UCX_ZCOPY_THRESH": "128kb",
        "UCX_RNDV_THRESH": "128kb",
    },
    "ud-128k-flat": {
        "UCX_TLS": "self,sm,ud",
        "UCX_ZCOPY_THRESH": "128kb",
        "UCX_RNDV_THRESH": "128kb",
    },
    "tcp-128k-flat": {
        "UCX_TLS": "self,sm,tcp",
        "UCX_ZCOPY_THRESH": "128kb",
        "UCX_RNDV_THRESH": "128kb",
    },
}

#: Inter-node presets that apply only from this many nodes on (seed 002: ud at 4 and 8).
UCX_INTER_MIN_NODES = {"ud-128k": 4, "ud-128k-flat": 4}

#: Collective components (seed 002: coll_hcoll_enable / coll_ucc_enable).
COLL = {
    "default": {},
    "hcoll": {"OMPI_MCA_coll_hcoll_enable": "1", "OMPI_MCA_coll_ucc_enable": "0"},
    "ucc": {"OMPI_MCA_coll_hcoll_enable": "0", "OMPI_MCA_coll_ucc_enable": "1"},
    "tuned": {"OMPI_MCA_coll_hcoll_enable": "0", "OMPI_MCA_coll_ucc_enable": "0"},
    # Open MPI 4.1's hierarchical collectives (coll/han, in Debian's build): node-aware
    # reductions, the MPI-level counterpart of the project's reduction schedule.
    "han": {"OMPI_MCA_coll_han_priority": "100"},
}

#: Seed 002's five intra2 pairs of (UCX preset, collectives), defaults first.
INTRA2_PAIRS = [
    ("auto", "hcoll"),
    ("rndv16k", "hcoll"),
    ("rndv16k", "ucc"),
    ("rndv128k", "hcoll"),
    ("rndv128k", "ucc"),
]

#: Process placements: rankmap's names (block = --map-by core, cyclic = over NUMA nodes).
BINDINGS = ("block", "cyclic", "rankmap")


def env_of(kind: str, name: str) -> dict[str, str]:
    """The environment variables of preset ``name`` of ``kind`` (ucx, ucx_inter, coll)."""
    table = {"ucx": UCX, "ucx_inter": UCX_INTER, "coll": COLL}[kind]
    return dict(table[name])


def with_stand_ins(env: dict[str, str], stand_ins: dict[str, str]) -> dict[str, str]:
    """``env`` with each UCX transport in UCX_TLS that the partition lacks replaced by its
    stand-in (a partition's ``ucx_tls_stand_ins`` extra: a site twin's TCP for InfiniBand's
    rc and ud), each transport named once, in order."""
    if "UCX_TLS" not in env or not stand_ins:
        return env
    tls: list[str] = []
    for t in env["UCX_TLS"].split(","):
        t = stand_ins.get(t.strip(), t.strip())
        if t and t not in tls:
            tls.append(t)
    return dict(env, UCX_TLS=",".join(tls))


def merged(*envs: dict[str, str]) -> dict[str, str]:
    """The environment of several presets together. Two UCX_RNDV_THRESH values in the
    ``intra:X,inter:Y`` form combine level by level, a level's ``auto`` (left alone) giving
    way to the other's value (``intra:16kb,inter:auto`` + ``intra:auto,inter:128kb`` is
    ``intra:16kb,inter:128kb``); any other clash is an error naming both values."""
    out: dict[str, str] = {}
    for env in envs:
        for key, value in env.items():
            if key not in out or out[key] == value:
                out[key] = value
            elif key == "UCX_RNDV_THRESH" and _scoped(out[key]) and _scoped(value):
                out[key] = _combined(out[key], value)
            else:
                raise ValueError(f"presets set {key} twice: {out[key]!r} and {value!r}")
    return out


def _combined(one: str, other: str) -> str:
    """Two scoped UCX_RNDV_THRESH values as one, level by level (``merged``)."""
    parts = dict(_scoped(one))
    for level, v in _scoped(other).items():
        if parts.get(level, "auto") == "auto":
            parts[level] = v
        elif v != "auto" and v != parts[level]:
            raise ValueError(f"presets set UCX_RNDV_THRESH twice: {one!r} and {other!r}")
    return ",".join(f"{k}:{v}" for k, v in sorted(parts.items(), key=lambda kv: kv[0] != "intra"))


def _scoped(value: str) -> dict[str, str]:
    """{'intra': '16kb', 'inter': 'auto'} of 'intra:16kb,inter:auto'; {} if not scoped."""
    parts = [p.split(":", 1) for p in value.split(",")]
    if all(len(p) == 2 and p[0] in ("intra", "inter") for p in parts):
        return dict(parts)
    return {}
