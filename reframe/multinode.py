"""Multi-node placement and reduction schedules, on a partition with several nodes.

The cavity on 1, 2 and 4 nodes with 2 ranks per node, with the patched OpenFOAM:
  standard       default placement, OpenFOAM's own tree;
  global         default placement, rankmap's schedule for it (reductionSchedule.block);
  local+global   rankmap's placement and its schedule;
launched by srun (local+global: SLURM_HOSTFILE with --distribution=arbitrary) or by mpirun
(local+global: rankmap's multi-host rankfile). rankmap runs inside the job and reads the
allocation's hostnames. Before the solver, the same launch reports every rank's host and CPU
set: the host must be the one the mapping gives; the core is checked only where the node's
declared layout is the real one and the launcher binds (mpirun with a rankfile), and the
perflog column ``core_binding`` says which. On an emulated partition the timings are labelled
``emulated`` and carry no reference.
"""

import sys

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.backends import getlauncher
from reframe.core.builtins import (fixture, parameter, run_after, run_before, sanity_function,
                                   variable)

from topofoam.fixtures import PatchedOpenFOAMBuild, PreparedCavityRanks
from topofoam.runs import PreparedCaseRun

RANKS_PER_NODE = 2
PROBE = ("echo placement ${OMPI_COMM_WORLD_RANK:-$SLURM_PROCID} $(hostname) "
         "$(grep Cpus_allowed_list /proc/self/status | cut -f2)")


@rfm.simple_test
class MultiNodeRun(PreparedCaseRun):
    """One placement variant and launcher on 1, 2 or 4 nodes."""

    variant = parameter(['standard', 'global', 'local+global'])
    launcher_kind = parameter(['srun', 'mpirun'])
    build = fixture(PatchedOpenFOAMBuild, scope='environment')
    prepared = fixture(PreparedCavityRanks, scope='environment')
    nodes = variable(int, value=0, loggable=True)
    core_binding = variable(str, value='', loggable=True)
    topology = variable(str, value='local')     # the node rankmap maps onto
    valid_systems = ['+multinode']
    valid_prog_environs = ['+reduction-schedule']
    num_tasks_per_node = RANKS_PER_NODE
    time_limit = '10m'
    # After a node failure fewer nodes are up: fail clearly instead of pending for ever.
    max_pending_time = '2m'
    tags = {'multinode'}

    @run_after('setup')
    def set_layout(self):
        self.num_tasks = self.prepared.ranks
        self.nodes = self.num_tasks // RANKS_PER_NODE
        extras = self.current_partition.extras
        self.topology = extras.get('topology', 'local')
        self.descr = (f'cavity2D on {self.nodes} node(s) x {RANKS_PER_NODE} ranks, '
                      f'{self.variant}, {self.launcher_kind}')
        if self.launcher_kind == 'mpirun':
            self.job.launcher = getlauncher('mpirun')()
        binds = self.launcher_kind == 'mpirun' and self.variant == 'local+global'
        self.core_binding = ('verified' if binds and extras.get('declared_is_real')
                             else 'not verifiable on this partition')

    @run_before('run')
    def map_and_launch(self):
        cmds = self.prerun_cmds
        cmds.append('scontrol show hostnames "$SLURM_JOB_NODELIST" > hosts.alloc')
        if self.variant != 'standard':
            cmds.append(f"{sys.executable} -m rankmap map . --topology '{self.topology}' "
                        f"--nodes {self.nodes} --out map > rankmap.log")
            schedule = ('map/reductionSchedule' if self.variant == 'local+global'
                        else 'map/reductionSchedule.block')
            self.env_vars['FOAM_REDUCTION_SCHEDULE'] = f'$PWD/{schedule}'
            self.env_vars['OMPI_MCA_mca_base_env_list'] = (
                '"${OMPI_MCA_mca_base_env_list:+$OMPI_MCA_mca_base_env_list;}'
                'FOAM_REDUCTION_SCHEDULE"')
        if self.variant == 'local+global':
            if self.launcher_kind == 'srun':
                self.env_vars['SLURM_HOSTFILE'] = '$PWD/map/slurm.hostfile'
                self.job.launcher.options += ['--distribution=arbitrary']
            else:
                self.job.launcher.options += ['-rf', 'map/rankfile']
        # ReFrame gives the job its task count when it writes the script, after this hook;
        # the probe's mpirun needs it now (srun takes it from the allocation).
        self.job.num_tasks = self.num_tasks
        launch = self.job.launcher.run_command(self.job)
        cmds.append(f"{launch} bash -c '{PROBE}' > placement.txt")

    def expected_hosts(self):
        """Host of each rank: rankmap's hostfile, or block order over the allocation."""
        if self.variant == 'local+global':
            return sn.extractall(r'^(\S+)$', f'{self.stagedir}/map/slurm.hostfile', 1)
        alloc = sn.extractall(r'^(\S+)$', f'{self.stagedir}/hosts.alloc', 1)
        return [alloc[r // RANKS_PER_NODE] for r in range(self.num_tasks)]

    def expected_cores(self):
        rankfile = f'{self.stagedir}/map/rankfile'
        return sn.extractall(r'^rank \d+=\S+ slot=0:(\d+)$', rankfile, 1)

    @sanity_function
    def assert_placed_and_completed(self):
        placement = f'{self.stagedir}/placement.txt'
        got = sn.extractall(r'^placement (\d+) (\S+) (\S+)$', placement, 0)
        by_rank = {int(r): (h, c) for r, h, c in
                   sn.evaluate(sn.extractall(r'^placement (\d+) (\S+) (\S+)$', placement,
                                             [1, 2, 3]))}
        checks = [
            sn.assert_eq(sn.count(got), self.num_tasks, msg='{0} ranks reported, expected {1}'),
            sn.assert_eq([by_rank.get(r, ('?', '?'))[0] for r in range(self.num_tasks)],
                         sn.evaluate(self.expected_hosts()),
                         msg='ranks ran on hosts {0}, the mapping gives {1}'),
            self.assert_run(),
        ]
        if self.core_binding == 'verified':
            checks.append(sn.assert_eq(
                [by_rank.get(r, ('?', '?'))[1] for r in range(self.num_tasks)],
                sn.evaluate(self.expected_cores()),
                msg='ranks ran on cores {0}, the rankfile gives {1}'))
        if self.variant != 'standard':
            checks.append(sn.assert_found(
                rf'^reductionSchedule: \S+ for {self.num_tasks} ranks', self.stdout,
                msg='the patched OpenFOAM did not report the schedule'))
        return sn.all(checks)
