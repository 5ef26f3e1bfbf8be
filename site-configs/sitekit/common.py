"""Sections every site configuration shares: where ReFrame writes, and the perflog layout
the report reads (one '|'-separated file per system/partition/check, every loggable
parameter a column)."""

import sys
from pathlib import Path

# Test attributes that say nothing about a run's result; left out of the perflog columns.
PERFLOG_NOISE = [
    f"check_{k}"
    for k in (
        "job_completion_time",
        "perfvalues",
        "build_locally",
        "build_time_limit",
        "env_vars",
        "exclusive_access",
        "extra_resources",
        "keep_files",
        "local",
        "maintainers",
        "max_pending_time",
        "modules",
        "postbuild_cmds",
        "postrun_cmds",
        "prebuild_cmds",
        "prerun_cmds",
        "readonly_files",
        "sourcepath",
        "sourcesdir",
        "strict_check",
        "use_multithreading",
        "valid_prog_environs",
        "valid_systems",
        "variables",
        "prefix",
        "num_gpus_per_node",
        "num_tasks_per_core",
        "num_tasks_per_socket",
        "executable_opts",
        # FabricScreening's parsed links and NodeScreening's node figures, for their
        # performance figures: the perflog row has their medians and slowest, and
        # screening.json / nodes.json have every link and node.
        "links",
        "node_figures",
    )
]


def is_dry_run(argv: list[str] | None = None) -> bool:
    """Whether ReFrame was started with --dry-run (the planner's runs)."""
    return "--dry-run" in (sys.argv if argv is None else argv)


def sections(results: Path) -> dict:
    """The ``general``, ``storage`` and ``logging`` sections, writing under ``results``
    (nothing is created here: ReFrame makes its folders when it runs)."""
    return {
        "general": [
            {
                "topology_prefix": str(results / "reframe" / "topology"),
                "report_file": str(results / "reframe" / "reports" / "run-report-{sessionid}.json"),
                "check_search_recursive": False,
                # A dry run's performance lines are all "None" (nothing ran): out of sight
                # (the logger of a dry run passes info and above).
                "perf_info_level": "debug" if is_dry_run() else "info",
            },
        ],
        "storage": [
            {
                # ReFrame's own results store: every real session, with its test cases and
                # performance values, is where topofoam.validation finds the sessions it
                # judges and compares (queried by date or --session-extras tag). Kept
                # under results/, never ~/.reframe; a dry run (the planner's) stores nothing.
                "enable": not is_dry_run(),
                "sqlite_db_file": str(results / "reframe" / "results.db"),
            },
        ],
        "logging": [
            {
                # A dry run (the planner's) logs no debug lines: ReFrame formats every debug
                # line of every test before a handler drops it, most of a whole site's plan.
                "level": "info" if is_dry_run() else "debug",
                "handlers": [
                    {
                        "type": "file",
                        # Beside ReFrame's folder: ReFrame opens its log file before it
                        # creates any folder, and results/ is part of the clone.
                        "name": str(results / "reframe.log"),
                        "level": "debug",
                        "format": "[%(asctime)s] %(levelname)s: %(check_info)s: %(message)s",
                        "append": False,
                    },
                    {
                        "type": "stream",
                        "name": "stdout",
                        "level": "info",
                        "format": "%(message)s",
                    },
                ],
                # A --dry-run runs nothing: it logs no performance rows at all (before, it
                # wrote them to a folder no tool read, a tenth of a whole site's plan).
                "handlers_perflog": []
                if is_dry_run()
                else [
                    {
                        # One file per system/partition/check; '|'-separated with a header line.
                        # Every loggable parameter of a check is a column (check_#ALL), so a
                        # report reads the sweep dimensions without knowing the checks.
                        "type": "filelog",
                        "prefix": "%(check_system)s/%(check_partition)s",
                        "basedir": str(results / "perflogs"),
                        "level": "info",
                        "format": (
                            "%(check_job_completion_time)s|reframe %(version)s|"
                            "%(check_result)s|%(check_#ALL)s|%(check_perfvalues)s"
                        ),
                        "format_perfvars": "%(check_perf_value)s|%(check_perf_unit)s|",
                        "ignore_keys": PERFLOG_NOISE,
                        "append": True,
                    },
                ],
            },
        ],
    }
