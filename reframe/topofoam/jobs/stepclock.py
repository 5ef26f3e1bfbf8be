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
CPU = b"ExecutionTime = "  # the master's CPU seconds so far, after each step


class StepClockError(ValueError):
    pass


def per_step(path: Path | str) -> float:
    """Seconds per step from a stamps file: (last - first) / (stamps - 1), and never less
    than the master's CPU time per step (its ExecutionTime lines, ``cpu`` in the file). A
    log that reaches the clock in chunks (srun forwards a fast solver's lines in blocks)
    stamps several steps at once: a one-node cavity of 1 ms steps came out at 16 us. Wall
    time cannot be shorter than the CPU time within it, so that is the floor."""
    try:
        lines = Path(path).read_text().splitlines()
        stamps = [float(x) for x in lines if x and not x.startswith("cpu ")]
        cpu = [float(x[4:]) for x in lines if x.startswith("cpu ")]
    except (OSError, ValueError) as e:
        raise StepClockError(f"{path}: no step times ({e})") from None
    if len(stamps) < 2:
        raise StepClockError(f"{path}: {len(stamps)} time step(s) seen, at least 2 are needed")
    wall = (stamps[-1] - stamps[0]) / (len(stamps) - 1)
    if len(cpu) >= 2:
        return max(wall, (cpu[-1] - cpu[0]) / (len(cpu) - 1))
    return wall


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
            elif line.startswith(CPU):
                seconds = line[len(CPU) :].split(maxsplit=1)[0]
                stamps.write(f"cpu {float(seconds)}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
