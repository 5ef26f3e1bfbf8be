"""This machine's memory, read from /proc/meminfo in one place: the local Slurm node's
RealMemory, the ranks a twin can hold, and the scale runs' memory peak."""

from __future__ import annotations

import threading
from pathlib import Path

MEMINFO = Path("/proc/meminfo")


def meminfo_mib() -> dict[str, int]:
    """Every ``kB`` field of /proc/meminfo (MemTotal, MemAvailable, ...), in MiB."""
    fields = {}
    for line in MEMINFO.read_text().splitlines():
        name, _, value = line.partition(":")
        parts = value.split()
        if len(parts) == 2 and parts[1] == "kB":
            fields[name] = int(parts[0]) // 1024
    return fields


def available_mib() -> int:
    """What can be allocated without swapping (MemAvailable), in MiB."""
    return meminfo_mib().get("MemAvailable", 0)


def used_mib() -> int:
    """What is in use (MemTotal - MemAvailable), in MiB."""
    fields = meminfo_mib()
    return fields["MemTotal"] - fields.get("MemAvailable", 0)


class Peak(threading.Thread):
    """The highest memory use above the start's, sampled every second while it runs."""

    def __init__(self):
        super().__init__(daemon=True)
        self.base = used_mib()
        self.peak = 0
        self.done = threading.Event()

    def run(self):
        while not self.done.wait(1.0):
            self.peak = max(self.peak, used_mib() - self.base)
