"""The layout's rules, checked on the code itself: site configurations do no work when
loaded, one reader of perflogs, one module that knows the repository's paths, and the
library packages do not depend on the local platform."""

import ast
import json
import subprocess
import sys

import pytest

from conftest import REPO

SITES = sorted(p.stem for p in (REPO / "site-configs").glob("*.py"))

# Loads a site configuration with everything that would be work made to fail loudly:
# starting a process, creating a folder or file, changing the environment.
LOADER = r"""
import builtins, json, os, runpy, subprocess, sys
env = dict(os.environ)
def refuse(what):
    def call(*args, **kwargs):
        raise SystemExit(f"WORK AT IMPORT: {what} {args[:1]}")
    return call
subprocess.Popen = refuse("subprocess")
os.mkdir = refuse("mkdir")
os.makedirs = refuse("makedirs")
real_open = builtins.open
def guarded_open(file, mode="r", *args, **kwargs):
    if any(m in mode for m in "wax+"):
        raise SystemExit(f"WORK AT IMPORT: open {file} {mode}")
    return real_open(file, mode, *args, **kwargs)
builtins.open = guarded_open
config = runpy.run_path(sys.argv[1])["site_configuration"]
assert dict(os.environ) == env, "the environment changed"
print(json.dumps([p["name"] for s in config["systems"] for p in s["partitions"]]))
print(json.dumps({p["name"]: p["environs"] for s in config["systems"] for p in s["partitions"]}))
"""


def load_site(site, tmp_path, **env):
    return subprocess.run(
        [sys.executable, "-c", LOADER, str(REPO / "site-configs" / f"{site}.py")],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), **env},
        timeout=60,
    )


@pytest.mark.parametrize("site", [s for s in SITES if s != "local"])
def test_cluster_sites_load_without_doing_anything(site, tmp_path):
    done = load_site(site, tmp_path, TOPOFOAM_RESULTS=str(tmp_path / "results"))
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.splitlines()[0])
    assert list(tmp_path.iterdir()) == []


def test_the_local_site_reads_its_facts_and_probes_nothing(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    done = load_site("local", tmp_path, TOPOFOAM_RESULTS=str(results))
    assert done.returncode == 1
    assert done.stderr == (
        f"site-configs/local.py: {results}/local-site.json does not exist -- run "
        f"'./bench setup' (it writes them)\n"
    )
    facts = {
        "version": 2,
        "processor": {"num_cpus": 2},
        "cores": 2,
        "numa_nodes": 1,
        "builds": {
            "scotch_lib": "/s/lib",
            "patched_lib": "/p/lib",
            "patched_bin": "/p/bin",
            "patched_id": "v1912-patched-x",
        },
        "openfoam_dir": "/usr/share/openfoam",
        "tutorials": "/t",
        "flavours": {"org12": {"built": False, "why_not": "not built"}},
    }
    (results / "local-site.json").write_text(json.dumps(facts))
    done = load_site("local", tmp_path, TOPOFOAM_RESULTS=str(results))
    assert done.returncode == 0, done.stderr[-2000:]
    names, environs = (json.loads(line) for line in done.stdout.splitlines())
    assert names == ["cpu"]
    assert environs["cpu"] == ["openfoam-v1912", "openfoam-v1912-patched"]
    # The Slurm partitions are there when ReFrame's Slurm clients are pointed at ours.
    conf = REPO / ".run" / "slurm" / "slurm.conf"
    done = load_site("local", tmp_path, TOPOFOAM_RESULTS=str(results), SLURM_CONF=str(conf))
    assert json.loads(done.stdout.splitlines()[0]) == ["cpu", "slurm"]
    # A built OpenFOAM-12 (its folder and recorded environment) joins every partition.
    facts["flavours"]["org12"] = {
        "built": True,
        "prefix": "/o",
        "build_id": "org12-x",
        "env": {"PATH": "/o/OpenFOAM-12/bin:/usr/bin", "WM_PROJECT_VERSION": "12"},
    }
    (results / "local-site.json").write_text(json.dumps(facts))
    done = load_site("local", tmp_path, TOPOFOAM_RESULTS=str(results))
    assert done.returncode == 0, done.stderr[-2000:]
    environs = json.loads(done.stdout.splitlines()[1])
    assert environs["cpu"] == [
        "openfoam-v1912",
        "openfoam-v1912-patched",
        "openfoam-org12",
        "openfoam-org12-patched",
    ]
    assert sorted(p.name for p in results.iterdir()) == ["local-site.json"]


def python_files(*folders):
    for folder in folders:
        yield from sorted((REPO / folder).rglob("*.py"))


def test_one_perflog_reader():
    """Only topofoam/results/perflog.py splits perflog lines ('|'-separated)."""
    readers = []
    for path in python_files("reframe", "localsite", "cases", "rankmap", "site-configs"):
        text = path.read_text()
        if (
            "split('|')" in text
            or 'split("|")' in text
            or 'delimiter="|"' in text
            or "delimiter='|'" in text
        ):
            readers.append(str(path.relative_to(REPO)))
    assert readers == ["reframe/topofoam/results/perflog.py"]


def test_one_module_knows_the_repository():
    needle = "Path(__file__).resolve()" + ".parents"
    found = [
        str(p.relative_to(REPO))
        for p in python_files("reframe", "localsite", "cases", "rankmap", "site-configs", "tests")
        if needle in p.read_text()
    ]
    assert found == ["reframe/topofoam/paths.py"]


def imported_packages(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.module.split(".")[0]


@pytest.mark.parametrize("package", ["cases", "rankmap", "reframe", "site-configs/sitekit"])
def test_libraries_do_not_depend_on_the_local_platform(package):
    users = [
        str(p.relative_to(REPO))
        for p in python_files(package)
        if "localsite" in set(imported_packages(p))
    ]
    # The build fixture runs `python -m localsite.openfoam` for the local environment only.
    assert users == []


#: Which parts of the library (reframe/topofoam/) each part may import: the rule
#: docs/development.md states. Only `checks` imports ReFrame, so everything that reads
#: results (the report, the validation, the model, the planner) runs without it.
MAY_IMPORT = {
    "paths": set(),
    "contents": set(),
    "output": set(),
    "yamlfile": set(),
    "jobs": {"paths", "contents"},
    "results": {"paths", "contents", "yamlfile"},
    "config": {"paths", "results"},
    "prediction": {"paths", "contents", "config", "results", "jobs"},
    "validation": {"paths", "contents", "config", "results", "jobs", "yamlfile"},
    "reporting": {"paths", "contents", "config", "results", "jobs", "prediction", "validation"},
    "checks": {"paths", "contents", "config", "results", "jobs", "prediction", "reframe"},
}
LIBRARY = REPO / "reframe" / "topofoam"


def library_part(path):
    """'checks' for reframe/topofoam/checks/runs.py, 'paths' for reframe/topofoam/paths.py."""
    first = path.relative_to(LIBRARY).parts[0]
    return first.removesuffix(".py")


def imported_parts(path):
    """The library's parts (and 'reframe') a module imports, at any depth of the module."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            modules = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            modules = (
                [f"topofoam.{a.name}" for a in node.names]
                if node.module == "topofoam"
                else [node.module]
            )
        else:
            continue
        for module in modules:
            bits = module.split(".")
            if bits[0] == "reframe":
                yield "reframe"
            elif bits[0] == "topofoam" and len(bits) > 1:
                yield bits[1]


def test_every_library_part_has_a_rule():
    parts = {library_part(p) for p in LIBRARY.rglob("*.py") if p.name != "__init__.py"}
    parts |= {p.name for p in LIBRARY.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert parts <= set(MAY_IMPORT), (
        f"parts without a rule in MAY_IMPORT: {parts - set(MAY_IMPORT)}"
    )


def test_library_parts_import_only_what_the_rule_allows():
    broken = []
    for path in sorted(LIBRARY.rglob("*.py")):
        if path == LIBRARY / "__init__.py":
            continue
        part = library_part(path)
        # output, the one checked way to write (topofoam.output), is every part's
        for imported in set(imported_parts(path)) - {part, "output"} - MAY_IMPORT[part]:
            broken.append(f"{path.relative_to(REPO)} imports {imported}")
    assert broken == []


def test_the_rule_catches_a_wrong_import(tmp_path):
    """The rule's reader sees a function-level import, as the library's lazy imports are."""
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from topofoam.checks import runs\n    import reframe\n")
    assert set(imported_parts(module)) == {"checks", "reframe"}
