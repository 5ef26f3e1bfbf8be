"""What the local site configuration needs to know about this machine, found once.

``site-configs/local.py`` is declarative: it reads this file and probes nothing. ``./bench``
and ``./bench run`` write it on every start (``python -m localsite.facts``, about 0.5 s),
beside the results it describes (``<results>/local-site.json``): the processor as ReFrame
detects it, the node's cores and NUMA nodes (hwloc), and where the cached OpenFOAM builds for
the current inputs live (built or not; the build fixture builds them).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from localsite import flavours, sources
from localsite import spack as offline_spack
from topofoam import contents, paths

#: Bump when the file's layout changes: local.py refuses a file of another version.
VERSION = 2


class FactsError(RuntimeError):
    """The facts cannot be found or read; the message names the file and the fix."""


def facts_file() -> Path:
    return paths.results_dir() / "local-site.json"


def gather() -> dict:
    """Probe this machine and the build cache (subprocesses: lstopo, dpkg-query)."""
    from reframe.utility.cpuinfo import cpuinfo

    from localsite import openfoam
    from rankmap import topology

    node = topology.this_machine()
    patched = openfoam.build_prefix("patched")
    return {
        "version": VERSION,
        "processor": cpuinfo(),
        "cores": node.cores,
        "numa_nodes": node.n_numa,
        "builds": {
            "scotch_lib": str(openfoam.lib_dir("scotch")),
            "patched_lib": str(patched / "lib"),
            "patched_bin": str(patched / "bin"),
            # The cache folder's name: version, target and a hash of the inputs.
            "patched_id": patched.name,
        },
        "openfoam_dir": str(openfoam.PROJECT_DIR),
        "tutorials": str(openfoam.EXAMPLES),
        "flavours": {name: _flavour(name) for name in flavours.FLAVOURS},
        # The same OpenFOAMs as the local Spack site installed them (installed or why not).
        "spack": offline_spack.installs(),
    }


def _flavour(name: str) -> dict:
    """A flavour built from source: its folder and environment when built, else why not."""
    flavour = flavours.get(name)
    try:
        where = flavours.prefix(flavour)
    except (sources.SourceError, flavours.BuildError) as e:
        return {"built": False, "why_not": str(e)}
    if not contents.is_complete(where):
        return {"built": False, "why_not": f"not built -- run './bench build {name}'"}
    facts = {
        "built": True,
        "prefix": str(where),
        "build_id": where.name,
        "env": json.loads((where / "env.json").read_text()),
    }
    ompi5 = flavours.openmpi5_folder(flavour)
    if flavour.openmpi5_mplib and contents.is_complete(ompi5):
        from localsite import openmpi5

        # The same build with its libPstream against Open MPI 5 (the ompi5 partition).
        facts["openmpi5"] = {
            "env": json.loads((ompi5 / "env.json").read_text()),
            "prefix": str(openmpi5.prefix()),
        }
    return facts


def write(path: Path | None = None) -> Path:
    path = path or facts_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    found = gather()
    # The local site's Spack environments `spack load` through the project's environment,
    # which needs the lock they were installed from; git ignores it, so a fresh clone has
    # none until given the kept one (a lock of other inputs stays: `./bench run` says what
    # restore_lock said).
    for installed in found["spack"].values():
        if installed.get("installed"):
            installed["lock"] = offline_spack.restore_lock("local", installed["hash"])
    tmp.write_text(json.dumps(found, indent=1) + "\n")
    tmp.replace(path)
    return path


def load(path: Path | None = None) -> dict:
    """The facts ``write`` recorded; FactsError naming the file and the fix otherwise."""
    path = path or facts_file()
    fix = "run './bench setup' (it writes them)"
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise FactsError(f"{path} does not exist -- {fix}") from None
    except (OSError, ValueError) as e:
        raise FactsError(f"{path} cannot be read ({e}) -- {fix}") from None
    if not isinstance(data, dict) or data.get("version") != VERSION:
        raise FactsError(f"{path} was written by another version of the suite -- {fix}")
    return data


def main() -> int:
    try:
        print(write())
    except Exception as e:  # a machine we cannot describe: say what failed, in one line
        print(
            f"facts: cannot describe this machine ({type(e).__name__}: {e}) -- "
            f"check that hwloc and OpenFOAM are installed ('./bench setup')",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
