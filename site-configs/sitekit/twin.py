"""What a site twin substitutes in a cluster site's configuration: the one place.

A twin (``./bench twin SITE``, localsite/twin.py) runs a site file against an emulated cluster
shaped like the site's partitions. ``configuration()`` hands the site's ReFrame configuration
here when ``TOPOFOAM_TWIN`` names the twin's substitution file, and this changes only what a
twin cannot have (docs/clusters.md, "Site twins", lists each with what it leaves unverified):

- the environments: this machine's build of the environment's OpenFOAM stands in for
  ``spack load`` (its variables instead of the prepare commands; its build fixture a no-op
  once built), under the site's environment name and features;
- the partitions: Open MPI over TCP on the twin's private subnet (no InfiniBand or RoCE),
  Open MPI 5 by UCX's PML (ob1 dies in MPI_Init under srun at a site's scale), and TCP in
  place of a UCX preset's InfiniBand transports (``ucx_tls_stand_ins``: rc-128k runs as
  ``self,sm,tcp``);
  the nodes' cores declared, not real: binding is not applied and not verified, and timings
  are labelled emulated (the twin's nodes share this machine's cores); ReFrame's ``squeue``
  scheduler for ``slurm`` (the twin has no accounting database, so no ``sacct``: the same
  sbatch, polled by squeue); one job at a time (``max_jobs``).

Everything else is the site file's own: partitions and their Slurm options, launchers, the
Open MPI version's placement syntax, extras, sweep values, environments' names and features.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

#: The setting that names the substitution file a running twin wrote.
SETTING = "TOPOFOAM_TWIN"


def substitution() -> dict | None:
    """The running twin's substitution file, or None outside a twin."""
    path = os.environ.get(SETTING)
    if not path:
        return None
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        sys.exit(f"{SETTING}={path}: cannot read the twin's substitution ({e}) -- start the twin "
                 f"again (./bench twin SITE start) or unset {SETTING}")  # fmt: skip
    if not isinstance(data, dict) or not {"environments", "partition_env"} <= set(data):
        sys.exit(f"{SETTING}={path}: not a twin's substitution file -- start the twin again "
                 f"(./bench twin SITE start) or unset {SETTING}")  # fmt: skip
    return data


def substitute(config: dict, twin: dict) -> dict:
    """``config`` (a site's ReFrame configuration) as its twin runs it."""
    for system in config["systems"]:
        for part in system["partitions"]:
            part["env_vars"] = list(part.get("env_vars", [])) + twin["partition_env"]
            part["extras"] = dict(
                part["extras"],
                emulated=True,
                declared_is_real=False,
                binds=False,
                twin=twin["site"],
                **twin.get("partition_extras", {}),
            )
            part["features"] = list(part.get("features", [])) + ["emulated"]
            if part.get("scheduler") == "slurm":
                part["scheduler"] = "squeue"
            # One job at a time: they share this machine's cores, and a job waiting behind
            # another for the same nodes would outlast the checks' max_pending_time.
            part["max_jobs"] = 1
    environments = []
    for env in config["environments"]:
        local = twin["environments"].get(env["name"])
        if local is None:
            continue  # no build here stands in for it: the twin said so when it started
        extras = {k: v for k, v in env.get("extras", {}).items() if k != "spack_spec"}
        extras.update(local["extras"])
        environments.append(
            {
                "name": env["name"],
                "features": local.get("features", env.get("features", [])),
                "env_vars": local["env_vars"],
                "extras": extras,
            }
        )
    config["environments"] = environments
    return config
