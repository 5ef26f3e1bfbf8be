"""The steps of a run on node-local or shared storage (seed 002 section 1), timed.

One node at the partition's processes per node, the stage's case (seed 002: HPC_motorbike)
run three steps, each timed: decomposePar, the solver, reconstructPar, with the fields
written every step, every 10th step, or only at the end. ``shared``: in the stage folder
(a shared file system on a cluster). ``local``: copied to the node's local disk first
(partition extra ``local_storage``, default ``$TMPDIR`` or /tmp) and copied back after, both
copies timed too, since seed 002 found shared storage ahead once the copy back is counted.

Beside the times, the storage's throughput as OpenFOAM uses it: the megabytes decomposePar
writes into the processor folders, and reconstructPar into the case's time folders, per second
of each (``decompose_rate``, ``reconstruct_rate``; MB = 10^6 bytes).

With ``memory_pair``, each of decomposePar and reconstructPar also runs, just before, on a copy
of the case in memory (the partition's ``memory_storage``, default /dev/shm): its time there is
what the step costs with no storage under it. StorageValidation (reframe/validate.py) judges
the storage's time over that one: a node or a session whose CPU is slower slows both alike,
so the ratio names the storage alone.
"""

import reframe.utility.sanity as sn
from reframe.core.builtins import (
    fixture,
    parameter,
    performance_function,
    run_after,
    run_before,
    sanity_function,
    variable,
)

from topofoam.checks import sweep
from topofoam.checks.fixtures import PatchedOpenFOAMBuild
from topofoam.checks.runs import PreparedCaseRun
from topofoam.checks.sweep import PreparedLayout, layout_name
from topofoam.config import sweepspace

STEPS = ("stage_in", "decompose", "solve", "reconstruct", "copy_back")
#: The steps timed again in memory with ``memory_pair``.
MEMORY_STEPS = ("decompose_memory", "reconstruct_memory")


#: Bytes in the case's time folders (what reconstructPar writes), and in its processor
#: folders (what decomposePar writes): ``du``'s apparent sizes, 0 when there are none.
_TIME_BYTES = (
    'time_bytes() { du -scb --apparent-size "$RUNDIR"/[0-9]* 2>/dev/null | tail -1 | cut -f1; }'
)
_PROCESSOR_BYTES = '$(du -scb --apparent-size "$RUNDIR"/processor* | tail -1 | cut -f1)'


#: Each step ends with its writes on the disk (syncfs of the storage's file system), inside
#: its timing: times of the page cache alone would hide the storage, and writes left dirty are
#: flushed seconds later, during whatever is timed next (in CI, the solver's validation right
#: after a session of storage runs came out 11 to 18 % slower).
_DURABLE = 'sync -f "$RUNDIR"'


def _elapsed(step: str) -> str:
    return (
        f'echo "step {step} seconds $(awk -v a=$t0 -v b=$(date +%s.%N) '
        f"'BEGIN {{ print b - a }}')\""
    )


class StorageCase(PreparedLayout):
    case = parameter(["motorbike"])
    timed = False  # the phases around the solver are what is timed: the size's steps
    layout = parameter(sweep.layouts("one-node"), fmt=layout_name)


class StorageSteps(PreparedCaseRun):
    """Decompose, solve and reconstruct on node-local or shared storage, each step timed
    (the storage checks: StorageRun, reframe/storage.py; StorageValidation)."""

    #: The repeat of the measurement: declared first, so shared and local alternate.
    repeat = parameter(range(sweep.most_repeats()))
    storage = parameter(["shared", "local"])
    #: Time steps between writes; 0: only the end.
    write_every = parameter([1, 10, 0])
    build = fixture(PatchedOpenFOAMBuild, scope="environment")
    prepared = fixture(StorageCase, scope="environment")
    nodes = variable(int, value=1, loggable=True)
    ppn = variable(int, value=0, loggable=True)
    valid_prog_environs = ["+reduction-schedule"]
    time_limit = "1h"
    exclusive_access = True

    #: The node-local folder the case is copied to (``local``); empty: the partition's
    #: ``local_storage`` extra, else ``$TMPDIR`` or /tmp.
    local_storage = variable(str, value="")
    #: Time decomposePar and reconstructPar in memory too, each just before its step.
    memory_pair = variable(bool, value=False)
    #: The memory-backed folder of the pair; empty: the partition's ``memory_storage`` extra,
    #: else /dev/shm.
    memory_storage = variable(str, value="")

    def _layout(self):
        info = type(self).get_variant_info(self.variant_num, recurse=True)
        return tuple(info["fixtures"]["prepared"]["params"]["layout"])

    def repeats_on(self, part) -> int:
        """How often this run is repeated on ``part`` (a validation check repeats more)."""
        return sweepspace.repeats(part)

    @run_after("init")
    def select_partitions(self):
        _, ppn = self._layout()
        self.valid_systems = [
            p.fullname
            for p in sweep.partitions()
            if ppn == sweep.settings(p).ppn and self.repeat < self.repeats_on(p)
        ]

    @run_after("setup")
    def set_layout(self):
        self.nodes, self.ppn = self._layout()
        self.num_tasks = self.num_tasks_per_node = self.ppn
        self.descr = (
            f"{self.case}: decompose, solve, reconstruct on {self.storage} storage, "
            f"writing "
            + (f"every {self.write_every} step(s)" if self.write_every else "at the end")
        )
        self.executable_opts = ["-parallel", "-case", '"$RUNDIR"']

    @run_before("run")
    def stage_and_time(self):
        local = self.local_storage or self.current_partition.extras.get(
            "local_storage", "${TMPDIR:-/tmp}"
        )
        every = self.write_every or self.expected_steps
        cmds = ["t0=$(date +%s.%N)"]
        if self.storage == "local":
            # The case only: the job's own files stay (the copy back would overwrite them).
            cmds += [
                f'RUNDIR=$(mktemp -d "{local}/topofoam-storage.XXXXXX")',
                'tar --exclude="./rfm_*" -cf - . | tar -xf - -C "$RUNDIR"',
                _DURABLE,
            ]
        else:
            cmds.append("RUNDIR=$PWD")
        cmds += [
            _elapsed("stage_in"),
            'echo "rundir $RUNDIR"',
            # From the case folder: OpenFOAM-12's foamDictionary takes the file relative to
            # the case even when it is absolute.
            f'(cd "$RUNDIR" && foamDictionary -entry writeInterval -set {every} '
            f"system/controlDict > /dev/null) || exit 1",
            *self._in_memory_first("decompose"),
            "t0=$(date +%s.%N)",
            'decomposePar -force -case "$RUNDIR" > log.decomposePar 2>&1',
            _DURABLE,
            _elapsed("decompose"),
            f'echo "step decompose bytes {_PROCESSOR_BYTES}"',
            _TIME_BYTES,
            "before=$(time_bytes)",
            "t0=$(date +%s.%N)",
        ]
        self.add_prerun("prepare", *cmds)
        self.postrun_cmds = [
            _DURABLE,
            _elapsed("solve"),
            *self._in_memory_first("reconstruct"),
            "t0=$(date +%s.%N)",
            'reconstructPar -case "$RUNDIR" > log.reconstructPar 2>&1',
            _DURABLE,
            _elapsed("reconstruct"),
            'echo "step reconstruct bytes $(( $(time_bytes) - before ))"',
            "t0=$(date +%s.%N)",
        ]
        if self.storage == "local":
            self.postrun_cmds += ['cp -r "$RUNDIR"/. . && sync -f . && rm -rf "$RUNDIR"']
        self.postrun_cmds.append(_elapsed("copy_back"))

    def _in_memory_first(self, step: str) -> list[str]:
        """The commands that time ``step`` on a copy of the case in memory, with ``memory_pair``
        (nothing without). Decompose makes the copy (the case as its step finds it, without
        processor folders), removed when the job ends; reconstruct first takes the solved
        processor folders from the storage. Both sync as the storage's steps do (a no-op on a
        tmpfs), so the pair differs by the storage alone."""
        if not self.memory_pair:
            return []
        if step == "decompose":
            memory = self.memory_storage or self.current_partition.extras.get(
                "memory_storage", "/dev/shm"
            )
            cmds = [
                f'MEMDIR=$(mktemp -d "{memory}/topofoam-memory.XXXXXX") || exit 1',
                "trap 'rm -rf \"$MEMDIR\"' EXIT",
                'tar --exclude="./rfm_*" --exclude="./processor*" -C "$RUNDIR" -cf - . '
                '| tar -xf - -C "$MEMDIR" || exit 1',
                "t0=$(date +%s.%N)",
                'decomposePar -force -case "$MEMDIR" > log.decomposePar.memory 2>&1',
            ]
        else:
            cmds = [
                'rm -rf "$MEMDIR"/processor* && cp -r "$RUNDIR"/processor* "$MEMDIR"/ || exit 1',
                "t0=$(date +%s.%N)",
                'reconstructPar -case "$MEMDIR" > log.reconstructPar.memory 2>&1',
            ]
        return [*cmds, 'sync -f "$MEMDIR"', _elapsed(f"{step}_memory")]

    @sanity_function
    def assert_all_steps(self):
        """The solver run as every run check requires, every step timed (in memory too, with
        ``memory_pair``), reconstructPar wrote the final time, and the case written as often
        as asked."""
        written = sn.count(
            sn.extractall(r"^Time = (\S+)\s*$", f"{self.stagedir}/log.reconstructPar", 1)
        )
        expected = self.expected_steps // self.write_every if self.write_every else 1
        timed = len(STEPS) + (len(MEMORY_STEPS) if self.memory_pair else 0)
        # A pair step that failed fast would pass for a fast memory: each must have finished.
        paired = [
            sn.assert_found(
                r"^End",
                f"{self.stagedir}/log.{utility}.memory",
                msg=f"{utility} in memory did not finish (log.{utility}.memory)",
            )
            for utility in ("decomposePar", "reconstructPar")
            if self.memory_pair
        ]
        return sn.all(
            [
                *paired,
                self.assert_run(),
                sn.assert_eq(
                    sn.count(sn.extractall(r"^step (\w+) seconds \S+", self.stdout, 1)),
                    timed,
                    msg="{0} of the steps were timed, expected {1}",
                ),
                sn.assert_found(
                    r"^End",
                    f"{self.stagedir}/log.reconstructPar",
                    msg="reconstructPar did not finish (log.reconstructPar)",
                ),
                sn.assert_eq(
                    written, expected, msg="reconstructPar found {0} written times, expected {1}"
                ),
                sn.assert_eq(
                    sn.count(sn.extractall(r"^step (\w+) bytes [1-9]\d*$", self.stdout, 1)),
                    2,
                    msg="{0} of decomposePar and reconstructPar wrote bytes that were counted, "
                    "expected {1}",
                ),
            ]
        )

    def _step(self, step):
        return sn.extractsingle(rf"^step {step} seconds (\S+)", self.stdout, 1, float)

    def _rate(self, step):
        written = sn.extractsingle(rf"^step {step} bytes (\d+)$", self.stdout, 1, int)
        return written / 1e6 / self._step(step)

    @performance_function("s")
    def decompose(self):
        return self._step("decompose")

    @performance_function("s")
    def solve(self):
        return self._step("solve")

    @performance_function("s")
    def reconstruct(self):
        return self._step("reconstruct")

    @performance_function("MB/s")
    def decompose_rate(self):
        """What decomposePar wrote into the processor folders, per second."""
        return self._rate("decompose")

    @performance_function("MB/s")
    def reconstruct_rate(self):
        """What reconstructPar wrote into the case's time folders, per second."""
        return self._rate("reconstruct")

    @performance_function("s")
    def copies(self):
        """Stage-in and copy-back together (zero-ish on shared storage)."""
        return self._step("stage_in") + self._step("copy_back")

    @performance_function("s")
    def total(self):
        return sum(self._step(s) for s in STEPS)
