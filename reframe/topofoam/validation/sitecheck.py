"""Check a cluster site file against the machine before anything is submitted.

    python -m topofoam.validation.sitecheck -C site-configs/vsc5.py [--spack-yaml FILE]

Run on the login node, with Slurm's clients at hand (``sinfo``, ``srun``), it checks:

- each partition: its Slurm partition is in ``sinfo``, with at least as many nodes as the
  site file's largest node count, and nodes of the declared packages and cores;
- the account (``sacctmgr``), where Slurm keeps accounts;
- the Spack externals of the site's ``<site>.spack.yaml``: each prefix exists, and the
  version of the ones it can ask (Slurm, GCC, PMIx, Open MPI, hwloc, UCX) is the spec's;
- one node of each partition, through ``srun`` in the site's environment (its prepare
  commands and variables): its hwloc topology (packages, NUMA nodes, cores) against the
  partition's preset and declaration, and its Open MPI's major version against the
  partition's (``mpi``: openmpi4 or openmpi5, which decides the placement syntax).

One line per problem, with the fix; a line per thing it cannot check here, saying why; then
a summary. Exit 0 without problems, 1 with, 2 when it cannot run (no site file, no Slurm).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import runpy
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from topofoam import output, paths

#: How long one node probe may take (srun queues on a busy cluster: the check says so).
PROBE_SECONDS = 300
#: Externals whose version the login node can tell, and how: a command under the prefix and
#: the pattern that finds the version in its output.
VERSION_PROBES = {
    "slurm": (["bin/sinfo", "--version"], r"(\d+\.\d+[\w.-]*)"),  # slurm[-wlm] 22.05.8
    "gcc": (["bin/gcc", "-dumpfullversion"], r"(\d[\w.]*)"),
    "openmpi": (["bin/ompi_info", "--version"], r"Open MPI v(\d[\w.]*)"),
    "hwloc": (["bin/lstopo-no-graphics", "--version"], r"(\d+\.\d+\.\d+)"),
    "ucx": (["bin/ucx_info", "-v"], r"Version (\d[\w.]*)"),
    # PMIx has no tool of its own on every system: its pkg-config file under the prefix
    "pmix": (["pkg-config", "--modversion", "pmix"], r"(\d[\w.]*)"),
}


class SiteCheckError(RuntimeError):
    """The check cannot run at all; the message names the fix."""


def load(config_file: Path) -> dict:
    """The site file's ReFrame configuration (sitekit's own refusals become one line)."""
    if not config_file.is_file():
        raise SiteCheckError(
            f"{config_file}: no such site file -- give one of site-configs/ (vsc5.py, hpc2.py, "
            f"oci.py) or your own"
        )
    sys.path[:0] = [str(config_file.resolve().parent), str(paths.REPO / "site-configs")]
    try:
        config = runpy.run_path(str(config_file)).get("site_configuration")
    except SystemExit as e:
        raise SiteCheckError(str(e.code)) from None
    finally:
        del sys.path[:2]
    if not isinstance(config, dict) or len(config.get("systems", [])) != 1:
        raise SiteCheckError(
            f"{config_file}: not a site file of one system (no site_configuration of sitekit's "
            f"configuration()) -- start from site-configs/vsc5.py"
        )
    return config


def _run(cmd: list[str], timeout: float = 60) -> tuple[int, str]:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        return 127, f"{cmd[0]} not found"
    except subprocess.TimeoutExpired:
        return 124, f"no answer in {timeout:.0f} s"
    return done.returncode, (done.stdout + done.stderr).strip()


def _numbers(version: str) -> list[int]:
    return [int(n) for n in re.findall(r"\d+", version)]


def same_version(spec: str, found: str) -> bool:
    """Whether ``found`` is the spec's version, as far as both go (major.minor.patch at most;
    Spack writes Slurm's 23.11.1 as 23-11-1-1)."""
    a, b = _numbers(spec), _numbers(found)
    k = min(len(a), len(b), 3)
    return k > 0 and a[:k] == b[:k]


class Report:
    """What the check found: problems (with their fixes), and what it could not check."""

    def __init__(self, say=print):
        self.problems: list[str] = []
        self.unchecked: list[str] = []
        self.passed = 0
        self.say = say

    def ok(self, line: str) -> None:
        self.passed += 1
        self.say(f"sitecheck: ok: {line}")

    def problem(self, line: str) -> None:
        self.problems.append(line)
        self.say(f"sitecheck: PROBLEM: {line}")

    def cannot(self, line: str) -> None:
        self.unchecked.append(line)
        self.say(f"sitecheck: not checked: {line}")


def _access(part: dict, option: str) -> str | None:
    for a in part.get("access", []):
        if a.startswith(f"--{option}="):
            return a.split("=", 1)[1]
    return None


def check_partitions(system: dict, report: Report) -> list[dict]:
    """sinfo's view of each partition; the partitions found (for the node probes)."""
    code, out = _run(["sinfo", "-h", "-o", "%R;%D;%X;%Y;%Z"])
    if code != 0:
        raise SiteCheckError(
            f"sinfo failed ({out.splitlines()[-1] if out else f'exit {code}'}) -- run the check "
            f"on the cluster's login node, where Slurm's clients reach its controller"
        )
    nodes, shapes = {}, {}
    for line in out.splitlines():
        name, count, sockets, cores, threads = (line.split(";") + ["0"] * 5)[:5]
        name = name.rstrip("*")
        nodes[name] = nodes.get(name, 0) + int(count)
        shapes.setdefault(name, set()).add((int(sockets), int(cores), int(threads)))
    found = []
    for part in system["partitions"]:
        slurm = _access(part, "partition") or part["name"]
        x = part.get("extras", {})
        where = f"{system['name']}:{part['name']} (Slurm partition {slurm})"
        if slurm not in nodes:
            report.problem(
                f"{where}: not in sinfo (it has {', '.join(sorted(nodes)) or 'none'}) -- set "
                f"the partition's slurm_partition in the site file to one of them"
            )
            continue
        found.append(part)
        most = max(x.get("nodes") or [1])
        if nodes[slurm] < most:
            report.problem(
                f"{where}: {nodes[slurm]} node(s), the site file runs jobs of up to {most} -- "
                f"lower the partition's nodes= list to {nodes[slurm]} at most"
            )
        else:
            report.ok(f"{where}: {nodes[slurm]} node(s), jobs of up to {most}")
        cores = x.get("cores")
        shown = sorted(s * c for s, c, _ in shapes[slurm])
        if cores and shown != [cores]:
            report.problem(
                f"{where}: Slurm's nodes have {' or '.join(map(str, shown))} cores, the site file "
                f"declares {cores} -- correct cores= (and the topology preset) in the site file"
            )
        elif cores:
            report.ok(f"{where}: nodes of {cores} cores")
    return found


def check_account(system: dict, report: Report) -> None:
    accounts = {_access(p, "account") for p in system["partitions"]} - {None}
    for account in sorted(accounts):
        code, out = _run(["sacctmgr", "-n", "-P", "show", "assoc", f"account={account}",
                          f"user={os.environ.get('USER', '')}", "format=account"])  # fmt: skip
        if code != 0:
            why = out.splitlines()[-1] if out else f"exit {code}"
            report.cannot(f"account {account}: sacctmgr cannot tell ({why})")
        elif account not in out.split():
            report.problem(
                f"account {account}: no association for you in sacctmgr -- set ACCOUNT in the "
                f"site file to one of 'sacctmgr show assoc user=$USER' (or ask the centre)"
            )
        else:
            report.ok(f"account {account}")


def externals(spack_yaml: Path) -> list[tuple[str, str, str]]:
    """(package, spec, prefix) of every external of a site's Spack settings."""
    from topofoam import yamlfile  # PyYAML: the report's dependency, not the checks'

    try:
        data = yamlfile.load(spack_yaml) or {}
    except yamlfile.YamlError as e:
        raise SiteCheckError(f"{e} (the site's <site>.spack.yaml, --spack-yaml)") from None
    found = []
    packages = data.get("packages") if isinstance(data, dict) else None
    for name, settings in (packages or {}).items():
        for ext in (settings or {}).get("externals") or []:
            if isinstance(ext, dict) and ext.get("spec") and ext.get("prefix"):
                found.append((name, str(ext["spec"]), str(ext["prefix"])))
    return found


def check_externals(spack_yaml: Path, report: Report) -> None:
    if not spack_yaml.is_file():
        report.cannot(f"Spack externals: no {spack_yaml} (give it with --spack-yaml)")
        return
    for name, spec, prefix in externals(spack_yaml):
        where = f"{spack_yaml.name}: external {spec.split()[0]}"
        if not Path(prefix).is_dir():
            report.problem(
                f"{where}: its prefix {prefix} does not exist here -- correct it ('spack "
                f"external find {name}' prints where {name} is)"
            )
            continue
        probe = VERSION_PROBES.get(name)
        want = spec.split("@", 1)[1].split()[0] if "@" in spec else ""
        if probe is None or not want:
            report.cannot(f"{where}: prefix {prefix} exists; its version is not asked here")
            continue
        command, pattern = probe
        code, out = _version_output(prefix, command)
        got = re.search(pattern, out) if code == 0 else None
        if got is None:
            report.problem(
                f"{where}: {prefix} does not tell {name}'s version ({out[:80]}) -- correct the "
                f"prefix ('spack external find {name}' prints it)"
            )
        elif not same_version(want, got.group(1)):
            report.problem(
                f"{where}: the login node has {name} {got.group(1)} -- write "
                f"'{name}@{got.group(1)}' in the spec (or load the {name} the spec names)"
            )
        else:
            report.ok(f"{where}: {name} {got.group(1)} at {prefix}")


def _version_output(prefix: str, command: list[str]) -> tuple[int, str]:
    """A version probe's output: a program under the prefix, or pkg-config on the prefix's
    pkg-config folders."""
    if command[0] != "pkg-config":
        return _run([str(Path(prefix, command[0])), *command[1:]])
    # lib, lib64, and Debian's multiarch lib/x86_64-linux-gnu (not the whole of lib/)
    found = [*Path(prefix).glob("lib*/pkgconfig"), *Path(prefix).glob("lib/*/pkgconfig")]
    folders = [str(p) for p in found if p.is_dir()]
    env = dict(os.environ, PKG_CONFIG_PATH=":".join(folders), PKG_CONFIG_LIBDIR=":".join(folders))
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        return 127, str(e)
    return done.returncode, (done.stdout + done.stderr).strip()


def _environment_script(env: dict, part: dict) -> str:
    """The site environment's setup as shell lines: its prepare commands, then its
    variables (ReFrame's order)."""
    lines = list(env.get("prepare_cmds", []))
    lines += [f"export {k}={v}" for k, v in part.get("env_vars", []) + env.get("env_vars", [])]
    return "\n".join(lines)


def probe_node(system: dict, part: dict, env: dict, tmp: Path) -> dict | str:
    """topofoam.jobs.fingerprint on one node of ``part`` through srun, in the site's
    environment; its findings, or why there are none."""
    out_file = tmp / f"{part['name']}.json"
    script = tmp / f"{part['name']}.sh"
    script.write_text(
        "#!/bin/bash\n"
        + _environment_script(env, part)
        + f"\nexport PYTHONPATH={shlex.quote(str(paths.REPO / 'reframe'))}"
        + "${PYTHONPATH:+:$PYTHONPATH}\n"
        + f"exec {shlex.quote(sys.executable)} -m topofoam.jobs.fingerprint "
        + f"--json {shlex.quote(str(out_file))}\n"
    )
    script.chmod(0o755)
    srun = ["srun", *part.get("access", []), "-N1", "-n1", "--time=5", str(script)]
    code, out = _run(srun, PROBE_SECONDS)
    if code != 0 or not out_file.exists():
        last = out.splitlines()[-1] if out else f"exit {code}"
        return f"srun on {part['name']} failed: {last}"
    return json.loads(out_file.read_text())


def check_nodes(system: dict, parts: list[dict], environments: list[dict], report: Report):
    from rankmap import topology
    from rankmap.errors import InputError

    if shutil.which("srun") is None:
        report.cannot("the nodes: srun not found")
        return
    with tempfile.TemporaryDirectory(prefix="sitecheck-", dir=paths.REPO) as tmp:
        for part in parts:
            x = part.get("extras", {})
            where = f"{system['name']}:{part['name']}"
            env = next((e for e in environments if e["name"] in part.get("environs", [])), {})
            found = probe_node(system, part, env, Path(tmp))
            if isinstance(found, str):
                report.problem(f"{where}: {found} -- see the partition's access options")
                continue
            t, node = found["topology"], found["node"]
            try:
                preset = topology.load(x.get("topology", ""))
                want = (preset.n_domains, preset.n_numa, preset.cores)
            except InputError as e:
                report.problem(f"{where}: {e}")
                continue
            have = (t["packages"], t["numa_nodes"], t["cores"])
            said = f"{want[0]} package(s), {want[1]} NUMA nodes, {want[2]} cores"
            if have != want:
                nps = f" ({x['nps']})" if x.get("nps") else ""
                report.problem(
                    f"{where}: node {node} has {have[0]} package(s), {have[1]} NUMA nodes, "
                    f"{have[2]} cores; the topology '{x.get('topology')}'{nps} declares {said} "
                    f"-- set the nodes' BIOS (NPS) back, or give the partition the topology "
                    f"its nodes have"
                )
            else:
                report.ok(f"{where}: node {node} is {said}, as '{x.get('topology')}' declares")
            mpi = found["software"].get("open_mpi")
            wanted = x.get("mpi", "openmpi4")
            if not mpi:
                report.problem(
                    f"{where}: no Open MPI on node {node} in the environment "
                    f"{env.get('name', '(none)')} -- install or load it (spack -e . install)"
                )
            elif f"openmpi{_numbers(mpi)[0]}" != wanted:
                report.problem(
                    f"{where}: node {node} runs Open MPI {mpi}, the partition declares {wanted} "
                    f"(its placement syntax) -- set mpi='openmpi{_numbers(mpi)[0]}' in the site "
                    f"file, or load the Open MPI it declares"
                )
            else:
                report.ok(f"{where}: node {node} runs Open MPI {mpi} ({wanted})")


def check(config_file: Path, spack_yaml: Path | None = None, say=print) -> Report:
    config = load(config_file)
    (system,) = config["systems"]
    if shutil.which("sinfo") is None:
        raise SiteCheckError(
            "sinfo not found: Slurm's clients are not on PATH -- run the check on the "
            "cluster's login node (or load its Slurm module)"
        )
    report = Report(say)
    parts = check_partitions(system, report)
    check_account(system, report)
    check_externals(spack_yaml or config_file.with_name(f"{system['name']}.spack.yaml"), report)
    check_nodes(system, parts, config.get("environments", []), report)
    return report


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m topofoam.validation.sitecheck", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("-C", dest="config", type=Path, required=True, help="the site file")
    p.add_argument("--spack-yaml", type=Path, help="default: <site>.spack.yaml beside it")
    args = p.parse_args(argv)
    return output.main("sitecheck", lambda: _main(args))


def _main(args) -> int:
    try:
        report = check(args.config, args.spack_yaml)
    except SiteCheckError as e:
        print(f"sitecheck: {e}", file=sys.stderr)
        return 2
    n = len(report.problems)
    print(
        f"sitecheck: {args.config.name}: {n} problem(s), {report.passed} check(s) passed, "
        f"{len(report.unchecked)} not checked here"
    )
    return 1 if n else 0


if __name__ == "__main__":
    sys.exit(main())
