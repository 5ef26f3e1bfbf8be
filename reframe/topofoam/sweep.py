"""The sweep values of the site's partitions, and the check every sweep stage derives from.

A partition that takes part in sweeps carries them in its extras (site-configs/sitekit
cluster.py, local.py): ``topology`` (what rankmap maps onto), ``cores``, ``numa_nodes``,
``nps``, ``ppn`` (processes per node to try; the last is the default), ``nodes`` (node
counts), ``ucx``/``ucx_inter``/``coll`` (preset names of sitekit/presets.py) and
``intra2_pairs``. ReFrame parameters are the same for every partition, so a stage's
parameters are the union over the partitions, and each test sets its ``valid_systems`` to the
partitions where its combination applies: listing (``reframe -l``) and running agree.

A tuning file (``TOPOFOAM_TUNING``, JSON: ``{"<partition>": {"ppn": 36, "binding": "cyclic",
"ucx": "rndv16k", "coll": "hcoll", "ucx_inter": {"4": "rc-128k"}}}``) carries one stage's
best settings into the next; without one, the defaults are the first preset of each list and
the last ppn.
"""

from __future__ import annotations

import functools
import json
import os
import sys

import reframe.utility.sanity as sn
from reframe.core.backends import getlauncher
from reframe.core.builtins import (parameter, performance_function, run_after,
                                   run_before, sanity_function, variable)
from reframe.core.runtime import runtime

from cases import Prepared
from sitekit import common, presets
from topofoam import fields
from topofoam.fixtures import PreparedCase
from topofoam.runs import PreparedCaseRun

PROBE = ("echo placement ${OMPI_COMM_WORLD_RANK:-$SLURM_PROCID} $(hostname) "
         "$(grep Cpus_allowed_list /proc/self/status | cut -f2)")


def partitions() -> list:
    """The current system's partitions that carry sweep values."""
    try:
        system = runtime().system
    except Exception:       # imported outside a ReFrame run (documentation, linters)
        return []
    return [p for p in system.partitions if 'ppn' in p.extras]


def tuning() -> dict:
    """The best settings so far, per partition name, from $TOPOFOAM_TUNING (or {})."""
    return _read_tuning(os.environ.get('TOPOFOAM_TUNING'))


@functools.lru_cache(maxsize=None)
def _read_tuning(path: str | None) -> dict:
    # Read once: every test of a listing asks, per partition.
    if not path:
        return {}
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f'TOPOFOAM_TUNING={path}: cannot read it as JSON ({e}) -- fix or unset it')
    if not isinstance(data, dict):
        sys.exit(f'TOPOFOAM_TUNING={path}: expected an object keyed by partition name')
    return data


class Settings:
    """What a stage does not sweep, on one partition: the tuning file's best, else the
    defaults (first preset of each list, the last ppn)."""

    def __init__(self, part):
        x = part.extras
        best = tuning().get(part.name, {})
        self.ppn = int(best.get('ppn', x['ppn'][-1]))
        self.binding = best.get('binding', 'block')
        self.ucx = best.get('ucx', x['ucx'][0])
        self.coll = best.get('coll', x['coll'][0])
        self.ucx_inter = {int(n): v for n, v in best.get('ucx_inter', {}).items()}
        # A value the partition cannot run would silently drop every test that uses it.
        allowed = [('ppn', [self.ppn], range(1, x['cores'] + 1)),
                   ('binding', [self.binding], presets.BINDINGS),
                   ('ucx', [self.ucx], x['ucx']), ('coll', [self.coll], x['coll']),
                   ('ucx_inter', list(self.ucx_inter.values()), x['ucx_inter'])]
        for key, values, choices in allowed:
            for value in values:
                if value not in choices:
                    shown = f'1..{x["cores"]}' if key == 'ppn' else ', '.join(choices)
                    sys.exit(f"TOPOFOAM_TUNING={os.environ.get('TOPOFOAM_TUNING')}: "
                             f"{part.name}: {key} '{value}' is not one this partition runs "
                             f"-- choose from {shown} (its site configuration) or remove it")

    def inter(self, nodes: int, part) -> str:
        return self.ucx_inter.get(nodes, part.extras['ucx_inter'][0])


def layouts(kind: str) -> list[tuple[int, int]]:
    """(nodes, processes per node) over all sweep partitions, sorted: ``every-ppn`` (each
    ppn candidate on one node), ``one-node``, ``multi-node`` or ``all`` node counts at the
    partition's ppn."""
    found = set()
    for part in partitions():
        x, s = part.extras, Settings(part)
        if kind == 'every-ppn':
            found |= {(1, ppn) for ppn in x['ppn']}
        elif kind == 'one-node':
            found.add((1, s.ppn))
        elif kind == 'multi-node':
            found |= {(n, s.ppn) for n in x['nodes'] if n > 1}
        elif kind == 'all':
            found |= {(n, s.ppn) for n in x['nodes']}
        else:
            raise ValueError(f'unknown layout kind {kind!r}')
    return sorted(found) or [(1, 1)]


def union(key: str) -> list:
    """Every value of a list-valued extra over the sweep partitions, in first-seen order."""
    seen = []
    for part in partitions():
        for value in part.extras.get(key, []):
            if value not in seen:
                seen.append(value)
    return seen


def layout_name(layout) -> str:
    """'2x36': how a (nodes, processes per node) layout shows in test names."""
    return f'{layout[0]}x{layout[1]}'


class PreparedLayout(PreparedCase):
    """The case decomposed for a (nodes, processes per node) layout of a stage; a stage's
    fixture sets ``case`` and ``layout`` (``layouts(stage)``)."""

    layout = parameter([(1, 1)], fmt=layout_name)

    @run_after('init')
    def set_subdomains(self):
        nodes, ppn = self.layout
        self.num_subdomains = nodes * ppn


#: The variants that run with rankmap's reduction schedule (seed 000).
SCHEDULE_VARIANTS = ('global', 'local+global')


class SweepRun(PreparedCaseRun):
    """A prepared case on ``nodes`` x ``ppn`` ranks, placed by ``binding``, with the UCX and
    collective presets and (for the global variants) rankmap's reduction schedule.

    Subclasses (reframe/sweep.py) declare the stage's parameters and a ``prepared`` fixture
    with a ``layout`` parameter; everything a stage leaves fixed comes from ``Settings``.
    Sanity adds that every rank ran on the host and core the placement gives it (cores are
    checked where the launcher binds and the declared node is the real one). Performance
    adds the solver's wall time and the node-hours it spent.
    """

    # A stage sweeps some of these (it redefines them); '' takes the partition's Settings.
    variant = parameter(['standard'])
    #: How far the final fields may be from the standard run's (relative to its largest
    #: magnitude): summation order only, unless a variant changes the arithmetic.
    fields_rtol = variable(float, value=fields.RTOL)
    binding = parameter([''])
    ucx = parameter([''])
    ucx_inter = parameter([''])
    coll = parameter([''])
    nodes = variable(int, value=0, loggable=True)
    ppn = variable(int, value=0, loggable=True)
    nps = variable(str, value='', loggable=True)
    #: The variables the presets set, as 'K=V K=V' (a perflog column).
    run_env = variable(str, value='', loggable=True)
    #: The OpenFOAM build: its Spack spec, or the local build's id (its cache folder).
    openfoam_build = variable(str, value='', loggable=True)
    nodelist = variable(str, value='', loggable=True)
    core_binding = variable(str, value='', loggable=True)
    #: Everything that sets a run's time, in one key: case/size/NODESxPPN/variant/binding/
    #: ucx/coll/ucx_inter. Performance references are indexed by partition and this key.
    setting = variable(str, value='', loggable=True)
    #: srun or mpirun instead of the partition's launcher (-S launcher_kind=mpirun).
    launcher_kind = variable(str, value='', loggable=True)
    time_limit = '1h'
    # Where each rank ran, rankmap's files (analysis.json: communication per hardware
    # level), and the final fields with their difference from the standard run (the report
    # reads them all).
    keep_files = ['placement.txt', 'rankmap.log', 'map', 'fields.json', 'final']
    # Timings need the nodes to themselves.
    exclusive_access = True
    tags = {'sweep'}

    # -- which partitions a combination applies to ----------------------------------------

    def _layout(self):
        fixtures = type(self).get_variant_info(self.variant_num, recurse=True)['fixtures']
        if 'prepared' not in fixtures:      # a stage run: the case comes with its reference
            fixtures = fixtures['standard_run']['fixtures']
        return tuple(fixtures['prepared']['params']['layout'])

    def applies(self, part, nodes: int, ppn: int) -> bool:
        """Whether this test's combination runs on ``part`` (stages add conditions)."""
        x, s = part.extras, Settings(part)
        if nodes not in x['nodes'] or ppn > x['cores']:
            return False
        if self.binding == 'cyclic' and x['numa_nodes'] < 2:
            return False        # one NUMA node: cyclic is block
        if self.variant == 'local+global' and self.binding != 'rankmap':
            return False        # seed 000: rankmap's placement with its schedule
        if self.variant == 'global' and self.binding == 'rankmap':
            return False        # that is local+global
        ucx = self.ucx or s.ucx
        coll = self.coll or s.coll
        inter = self.ucx_inter or s.inter(nodes, part)
        return (ucx in x['ucx'] and coll in x['coll'] and inter in x['ucx_inter']
                and nodes >= presets.UCX_INTER_MIN_NODES.get(inter, 1))

    @run_after('init')
    def select_partitions(self):
        if self.is_fixture():
            return              # a reference run: ReFrame gives it its parent's partition
        nodes, ppn = self._layout()
        self.valid_systems = [p.fullname for p in partitions() if self.applies(p, nodes, ppn)]

    # -- the run ---------------------------------------------------------------------------

    @run_after('setup')
    def set_layout(self):
        part = self.current_partition
        x, s = part.extras, Settings(part)
        self.nodes, self.ppn = self._layout()
        self.num_tasks = self.nodes * self.ppn
        self.num_tasks_per_node = self.ppn
        self.nps = x.get('nps', '')
        self.binding = self.binding or s.binding
        self.ucx = self.ucx or s.ucx
        self.coll = self.coll or s.coll
        self.ucx_inter = self.ucx_inter or s.inter(self.nodes, part)
        env = presets.merged(presets.env_of('ucx', self.ucx), presets.env_of('coll', self.coll),
                             presets.env_of('ucx_inter', self.ucx_inter)
                             if self.nodes > 1 else {})
        self.run_env = ' '.join(f'{k}={v}' for k, v in env.items())
        self.env_vars.update(env)
        forward = list(env)
        environ = self.current_environ.extras
        self.openfoam_build = (environ.get('spack_spec') or environ.get('build_id')
                               or 'stock')
        if self.variant in SCHEDULE_VARIANTS:
            self.env_vars['FOAM_REDUCTION_SCHEDULE'] = '$PWD/map/reductionSchedule'
            forward.append('FOAM_REDUCTION_SCHEDULE')
        if forward:
            # Every rank needs them: srun exports the environment, Open MPI's mpirun
            # forwards what mca_base_env_list names.
            self.env_vars['OMPI_MCA_mca_base_env_list'] = (
                '"${OMPI_MCA_mca_base_env_list:+$OMPI_MCA_mca_base_env_list;}'
                + ';'.join(forward) + '"')
        self.setting = '/'.join([self.case, self.size, f'{self.nodes}x{self.ppn}', self.variant,
                                 self.binding, self.ucx, self.coll,
                                 self.ucx_inter if self.nodes > 1 else '-'])
        self.use_references()
        binds = x.get('binds', False) and x.get('declared_is_real', False)
        self.core_binding = 'verified' if binds else 'not verifiable on this partition'
        self.descr = (f'{self.case} on {self.nodes} node(s) x {self.ppn}, {self.variant}, '
                      f'{self.binding}, ucx {self.ucx}, coll {self.coll}'
                      + (f', inter {self.ucx_inter}' if self.nodes > 1 else ''))

    def use_references(self):
        """The site's references (sitekit.common.references_file), if it has them: a run
        slower than its reference by more than the tolerance fails the performance stage.
        Emulated timings have none, and neither have the standard runs that serve as
        fixtures: their parents' sanity needs their fields, not their speed."""
        path = common.references_file(self.current_system.name)
        if self.timing == 'measured' and not self.is_fixture() and path.exists():
            self.reference = {'$ref': str(path)}    # absolute: no prefix is joined to it

    @run_before('run')
    def keep_a_pristine_case(self):
        """A standard run (a fixture) keeps an untouched copy of the case for its parents:
        ReFrame removes the preparation's stage once its direct dependents are done."""
        if self.is_fixture():
            self.prerun_cmds.append(f'cp -r {self.prepared.case_path()} case')

    @run_before('run')
    def map_and_launch(self):
        part = self.current_partition
        x = part.extras
        if self.launcher_kind:
            self.job.launcher = getlauncher(self.launcher_kind)()
        launcher = self.job.launcher
        self.launcher_kind = launcher.registered_name
        hosts = ('scontrol show hostnames "$SLURM_JOB_NODELIST"'
                 if part.scheduler.registered_name != 'local' else 'hostname')
        self.prerun_cmds += [
            f'{hosts} > hosts.alloc',
            f"{sys.executable} -m rankmap map . --topology '{x['topology']}' "
            f"--nodes {self.nodes} --placement {self.binding} --hosts $(paste -sd, hosts.alloc) "
            f"--out map > rankmap.log",
        ]
        name = launcher.registered_name
        if name == 'srun':
            self.env_vars['SLURM_HOSTFILE'] = '$PWD/map/slurm.hostfile'
            launcher.options += ['--distribution=arbitrary', '--cpu-bind=$(cat map/srun.cpu_bind)']
            wrap = 'map/bind_rank '
        elif name == 'mpirun':
            launcher.options += (['--map-by', 'rankfile:file=map/rankfile']
                                 if x.get('mpi') == 'openmpi5' else ['-rf', 'map/rankfile'])
            wrap = ''
        else:
            raise ValueError(f'partition {part.fullname}: launcher {name} cannot place ranks '
                             f'-- use srun or mpirun')
        self.job.num_tasks = self.num_tasks
        self.prerun_cmds += [
            f"{launcher.run_command(self.job)} {wrap}bash -c '{PROBE}' > placement.txt",
            't0=$(date +%s.%N)',
        ]
        self.executable = f'{wrap}{self.executable}'
        self.postrun_cmds += [
            'echo "solver wall seconds: $(awk -v a=$t0 -v b=$(date +%s.%N) '
            '\'BEGIN { print b - a }\')"',
        ]

    @run_after('run')
    def record_nodes(self):
        self.nodelist = ','.join(self.job.nodelist or [])

    # -- sanity and performance -----------------------------------------------------------

    def expected_placement(self):
        """(host, CPU) per rank: rankmap's slurm.hostfile gives the host, slurm.cpu_bind each
        host's CPUs in the order of its ranks."""
        try:
            hosts = open(f'{self.stagedir}/map/slurm.hostfile').read().split()
            cpus = dict(line.split() for line in open(f'{self.stagedir}/map/slurm.cpu_bind'))
        except OSError:
            return []           # rankmap failed: rankmap.log and the job's stderr say why
        lists = {h: spec.split(':', 1)[1].split(',') for h, spec in cpus.items()}
        taken = dict.fromkeys(lists, 0)
        placed = []
        for host in hosts:
            placed.append((host, lists[host][taken[host]]))
            taken[host] += 1
        return placed

    @sanity_function
    def assert_placed_and_completed(self):
        placement = f'{self.stagedir}/placement.txt'
        got = {int(r): (h, c) for r, h, c in sn.evaluate(
            sn.extractall(r'^placement (\d+) (\S+) (\S+)$', placement, [1, 2, 3]))}
        want = self.expected_placement()
        hosts = [got.get(r, ('?', '?'))[0] for r in range(self.num_tasks)]
        checks = [
            sn.assert_eq(len(got), self.num_tasks, msg='{0} ranks reported, expected {1}'),
            sn.assert_eq(hosts, [h for h, _ in want],
                         msg='ranks ran on hosts {0}, the placement gives {1}'),
            self.assert_run(),
        ]
        if self.core_binding == 'verified':
            checks.append(sn.assert_eq([got.get(r, ('?', '?'))[1]
                                        for r in range(self.num_tasks)],
                                       [c for _, c in want],
                                       msg='ranks ran on CPUs {0}, the placement gives {1}'))
        if self.variant in SCHEDULE_VARIANTS:
            checks.append(sn.assert_found(
                rf'^reductionSchedule: \S+ for {self.num_tasks} ranks', self.stdout,
                msg='the patched OpenFOAM did not report the schedule'))
        reference = getattr(self, 'standard_run', None)
        if reference is not None:
            checks.append(sn.assert_false(
                _fields_mismatch(reference.stagedir, self.stagedir, self.fields_rtol),
                msg='{0}'))
        return sn.all(checks)

    @run_after('sanity')
    def keep_final_fields(self):
        """For the report: how far the final fields are from the standard run's
        (fields.json), and, for small cases, the final fields themselves (final/case.foam)."""
        if self.is_dry_run():
            return              # nothing ran
        reference = getattr(self, 'standard_run', None)
        if reference is not None:
            diffs = fields.differences(reference.stagedir, self.stagedir)
            with open(f'{self.stagedir}/fields.json', 'w') as f:
                json.dump({'standard_run': reference.outputdir, 'rtol': self.fields_rtol,
                           'max_relative_difference': diffs}, f, indent=1)
        if (self.expected_cells or 0) <= fields.SNAPSHOT_CELLS:
            fields.snapshot(self.stagedir, f'{self.stagedir}/final')

    @performance_function('s')
    def wall(self):
        """Wall time of the solver launch, from the job script's clock."""
        return sn.extractsingle(r'^solver wall seconds: (\S+)', self.stdout, 1, float)

    @performance_function('node-h')
    def node_hours(self):
        """Node-hours the solver spent: nodes x wall time."""
        return self.nodes * self.wall() / 3600


@sn.deferrable
def _fields_mismatch(reference, stagedir, rtol):
    return fields.mismatch(reference, stagedir, rtol)


class CaseCopy:
    """The prepared case as a stage run sees it: the pristine copy in its standard run's
    stage (``case_path``, ``facts``), named like the preparation fixture it came from."""

    def __init__(self, standard_run):
        self.case = standard_run.prepared.case
        self.size = standard_run.prepared.size
        self._path = f'{standard_run.stagedir}/case'

    def case_path(self) -> str:
        return self._path

    def facts(self) -> Prepared:
        return Prepared.load(self._path)
