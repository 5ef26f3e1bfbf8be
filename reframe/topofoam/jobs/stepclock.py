"""The wall-clock time of a solver's time steps, taken from its log as it is written.

    srun ... icoFoam -parallel | python -m topofoam.jobs.stepclock stepclock.txt

passes the log through unchanged and writes the wall time (seconds since the epoch) at which
each line that starts a time step ('Time = ...', the master's) went by. The time per step is
the span from the first to the last of them over the steps between: start-up and the last
step's end are outside it. Why: OpenFOAM's ExecutionTime is the master's CPU time, which on
an oversubscribed node (the emulated cluster's nodes share one machine's cores) misses the
time a rank waits off the CPU; its ClockTime counts whole seconds.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

STEP = b"Time = "


class StepClockError(ValueError):
    pass


def per_step(path: Path | str) -> float:
    """Seconds per step from a stamps file: (last - first) / (stamps - 1)."""
    try:
        stamps = [float(x) for x in Path(path).read_text().split()]
    except (OSError, ValueError) as e:
        raise StepClockError(f"{path}: no step times ({e})") from None
    if len(stamps) < 2:
        raise StepClockError(f"{path}: {len(stamps)} time step(s) seen, at least 2 are needed")
    return (stamps[-1] - stamps[0]) / (len(stamps) - 1)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m topofoam.jobs.stepclock STAMPS_FILE", file=sys.stderr)
        return 2
    with open(argv[0], "w") as stamps:
        for line in sys.stdin.buffer:
            sys.stdout.buffer.write(line)
            sys.stdout.buffer.flush()
            if line.startswith(STEP):
                stamps.write(f"{time.time():.6f}\n")
                stamps.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
