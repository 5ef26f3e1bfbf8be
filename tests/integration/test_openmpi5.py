"""Open MPI 5 (OCI's MPI; PyPI's wheel, localsite/openmpi5.py) places real ranks where a
rankfile says, through ``mpirun --map-by rankfile:file=``: the launch the OCI site's mpirun
partitions use (reframe/topofoam/checks/sweep.py), on this machine."""

import os
import re
import socket
import subprocess
from pathlib import Path

import pytest

from conftest import PYTHON
from localsite import openmpi5

PROGRAM = r"""
#define _GNU_SOURCE
#include <mpi.h>
#include <sched.h>
#include <stdio.h>

int main(int argc, char** argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double mine = rank + 1, sum = 0;
    MPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int length;
    MPI_Get_library_version(version, &length);
    printf("rank %d of %d on cpu %d sum %g library %.20s\n", rank, size, sched_getcpu(), sum,
           version);
    MPI_Finalize();
    return 0;
}
"""


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    openmpi5.ensure()
    env = openmpi5.environ()
    folder = tmp_path_factory.mktemp("ompi5")
    (folder / "placed.c").write_text(PROGRAM)
    subprocess.run(["mpicc", "-O1", "-o", "placed", "placed.c"], cwd=folder, env=env, check=True)
    linked = subprocess.run(
        ["ldd", str(folder / "placed")], env=env, capture_output=True, text=True, check=True
    ).stdout
    # Open MPI 5's own libmpi.so.40, not Debian's 4.1 of the same name.
    assert f"{openmpi5.prefix() / 'lib' / 'libmpi.so.40'}" in linked, linked
    return folder / "placed"


def launch(program: Path, rankfile: Path, ranks: int) -> tuple[dict[int, int], str]:
    """Each rank's CPU, and Open MPI's binding report."""
    as_root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
    done = subprocess.run(
        [
            "mpirun",
            *as_root,
            "-np",
            str(ranks),
            "--map-by",
            f"rankfile:file={rankfile}",
            "--report-bindings",
            str(program),
        ],
        env=openmpi5.environ(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    cpus = {}
    for rank, size, cpu, total, library in re.findall(
        r"rank (\d+) of (\d+) on cpu (\d+) sum (\S+) library (.*)", done.stdout
    ):
        assert int(size) == ranks and float(total) == ranks * (ranks + 1) / 2
        assert library.startswith("Open MPI v5."), library
        cpus[int(rank)] = int(cpu)
    assert sorted(cpus) == list(range(ranks)), done.stdout
    return cpus, done.stdout + done.stderr


def test_rankmaps_rankfile_places_the_ranks_under_open_mpi_5(program, tmp_path):
    """rankmap's rankfile for this machine, then the same placement reversed: every rank
    runs on the core its line names, and Open MPI reports that binding."""
    cores = min(os.cpu_count() or 1, 4)
    if cores < 2:
        pytest.skip("one core: nothing to place")
    out = tmp_path / "map"
    subprocess.run(
        [
            PYTHON,
            "-m",
            "rankmap",
            "map",
            f"grid:{cores}x1x1",
            "--topology",
            "local",
            "--nodes",
            "1",
            "--placement",
            "block",
            "--hosts",
            socket.gethostname(),
            "--out",
            str(out),
        ],
        check=True,
        capture_output=True,
    )
    # srun.cpu_bind holds the same placement as OS CPU numbers: map_cpu:c0,c1,...
    want = [int(c) for c in (out / "srun.cpu_bind").read_text().strip().split(":")[1].split(",")]
    cpus, report = launch(program, out / "rankfile", cores)
    assert [cpus[r] for r in range(cores)] == want
    assert len(re.findall(r"Rank \d+ bound to", report)) == cores, report

    lines = (out / "rankfile").read_text().splitlines()
    slots = [line.split(" slot=")[1] for line in lines]
    reversed_file = tmp_path / "reversed"
    reversed_file.write_text(
        "".join(
            f"{line.split(' slot=')[0]} slot={slot}\n" for line, slot in zip(lines, slots[::-1])
        )
    )
    cpus, _ = launch(program, reversed_file, cores)
    assert [cpus[r] for r in range(cores)] == want[::-1]
