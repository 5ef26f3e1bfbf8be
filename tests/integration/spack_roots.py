"""Run by `spack -e ENV python`: the active environment's concrete roots as JSON, with what
tests/integration/test_spack.py asserts (versions, applied patches, MPI stack, externals)."""

import json

import spack.environment as ev


def patch_names(spec):
    if "patches" not in spec.variants:
        return []
    # A file patch by its path (the overlay's are under spack_repo/topofoam/), else its URL.
    return [getattr(p, "path", None) or p.url for p in spec.patches]


def mpi_stack(spec):
    if "openmpi" not in spec:
        return None
    mpi = spec["openmpi"]
    return {
        "version": str(mpi.version),
        "fabrics": sorted(mpi.variants["fabrics"].value),
        "schedulers": sorted(mpi.variants["schedulers"].value),
        "ucx": {
            v: spec["ucx"].variants[v].value
            for v in ("cma", "verbs", "rdmacm", "rc", "ud", "dc", "mlx5_dv")
        }
        if "ucx" in spec
        else None,
    }


roots = []
for spec in ev.active_environment().concrete_roots():
    roots.append(
        {
            "name": spec.name,
            "hash": spec.dag_hash(),
            "version": str(spec.version),
            "target": str(spec.target),
            "patches": patch_names(spec),
            "externals": sorted({d.name for d in spec.traverse() if d.external}),
            "built": sorted({d.name for d in spec.traverse() if not d.external}),
            "mpi": mpi_stack(spec),
        }
    )
print(json.dumps(roots))
