"""ReFrame's ``--dry-run`` as the planner needs it: every job script written, nothing more.

    python -m topofoam.checks.dryrun REFRAME_OPTIONS...

is ``reframe REFRAME_OPTIONS...`` with two things left out, which a plan never reads:
  - the dump of each test case into its stage folder (``.rfm_testcase.json``, 50 to 80 kB of
    nested fixtures a test, for ``--restore-session``): a quarter of a whole site's dry run;
  - all but the first ``srun --version`` (ReFrame asks for every job it writes, whether
    srun takes --cpus-per-task; the answer does not change within a run): a process each.
The planner (topofoam.prediction.plan) runs it with the serial execution policy: the asynchronous one
polls with pauses, and a dry run's jobs never run.
"""

from __future__ import annotations

import sys


class _NoTestcaseDump:
    """Stands in for reframe.utility.jsonext where the executor dumps test cases."""

    @staticmethod
    def dump(*args, **kwargs) -> None:
        return None


def _ask_srun_once(osext) -> None:
    """``osext.run_command('srun --version')`` answered from the first call on."""
    run_command = osext.run_command
    answers: dict = {}

    def once(cmd, *args, **kwargs):
        if cmd != "srun --version":
            return run_command(cmd, *args, **kwargs)
        if cmd not in answers:
            try:
                answers[cmd] = (run_command(cmd, *args, **kwargs), None)
            except Exception as e:  # what ReFrame's probe catches, every time alike
                answers[cmd] = (None, e)
        result, error = answers[cmd]
        if error is not None:
            raise error
        return result

    osext.run_command = once


def main() -> None:
    from reframe.frontend import cli, executors
    from reframe.utility import osext

    if "--dry-run" not in sys.argv:  # a real run keeps what --restore-session reads
        raise SystemExit("dryrun: only for reframe --dry-run -- give --dry-run")
    # Only if this ReFrame dumps test cases as the one it was written for (4.x) does.
    if getattr(executors, "jsonext", None) is not None:
        executors.jsonext = _NoTestcaseDump
    _ask_srun_once(osext)
    sys.argv[0] = "reframe"
    cli.main()


if __name__ == "__main__":
    main()
