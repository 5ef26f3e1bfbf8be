"""Fixtures shared by the checks: a case meshed and decomposed once per partition/environment."""

import shutil
import sys

import reframe as rfm
import reframe.utility.sanity as sn
from foamlib import FoamFile
from reframe.core.backends import getlauncher
from reframe.core.exceptions import PipelineError
from reframe.core.builtins import (parameter, run_after, run_before,
                                   sanity_function, variable)

from topofoam.cases import TUTORIALS, CaseError, blockmesh_cells


class PreparedTutorial(rfm.RunOnlyRegressionTest):
    """A tutorial case set to fixed work, meshed with blockMesh and decomposed with decomposePar.

    The case lands in ``<stagedir>/case``; run checks copy it. Parameterised by the case, so a
    check that uses it runs once per case.
    """

    case = parameter(sorted(TUTORIALS))

    #: Subdomains to decompose into: the run check's number of ranks.
    num_subdomains = variable(int, value=2)

    #: decomposePar method; scotch needs the real libscotchDecomp (Debian ships a stub).
    method = variable(str, value='scotch', loggable=True)

    #: Cells blockMesh must produce, computed from the case's blockMeshDict.
    cells = variable(int)

    valid_systems = ['*']
    valid_prog_environs = ['+openfoam']
    executable = 'blockMesh'
    executable_opts = ['-case', 'case']
    num_tasks = 1
    sourcesdir = None

    @run_after('setup')
    def serial_launcher(self):
        # Meshing and decomposition are serial tools: no mpirun/srun around them.
        self.job.launcher = getlauncher('local')()
        self.postrun_cmds = ['decomposePar -case case -force > decomposePar.log 2>&1']

    @run_before('run')
    def copy_and_edit_case(self):
        tutorial = TUTORIALS[self.case]
        try:
            src = tutorial.source(self.current_environ.env_vars.get('FOAM_TUTORIALS'))
        except CaseError as e:
            # A ReFrame error is reported as its message alone, without a traceback.
            raise PipelineError(str(e)) from None
        dest = f'{self.stagedir}/case'
        shutil.copytree(src, dest, dirs_exist_ok=True)
        control = FoamFile(f'{dest}/system/controlDict')
        for key, value in tutorial.control.items():
            control[key] = value
        for rel, entry in tutorial.remove:
            parent, _, name = entry.rpartition('/')
            sub = FoamFile(f'{dest}/{rel}')
            if parent:
                del sub[tuple(parent.split('/')) + (name,)]
            else:
                del sub[name]
        decompose = FoamFile(f'{dest}/system/decomposeParDict')
        decompose['numberOfSubdomains'] = self.num_subdomains
        decompose['method'] = self.method
        self.cells = blockmesh_cells(dest)

    @sanity_function
    def assert_decomposed(self):
        """blockMesh and decomposePar ended; the subdomains hold exactly the blockMesh cells."""
        dp_log = f'{self.stagedir}/decomposePar.log'
        per_proc = sn.extractall(r'^Processor \d+\s*\n\s*Number of cells = (\d+)', dp_log, 1, int)
        return sn.all([
            sn.assert_found(r'^End', self.stdout, msg='blockMesh did not end'),
            sn.assert_found(r'^End', dp_log, msg='decomposePar did not end (see decomposePar.log)'),
            sn.assert_eq(sn.count(per_proc), self.num_subdomains,
                         msg='decomposePar made {0} subdomains, expected {1}'),
            sn.assert_eq(sn.sum(per_proc), self.cells,
                         msg='the subdomains hold {0} cells, blockMeshDict gives {1}'),
        ])

    def case_path(self):
        return f'{self.stagedir}/case'


class PatchedOpenFOAMBuild(rfm.RunOnlyRegressionTest):
    """Builds the patched OpenFOAM libraries where the environment asks for a local build.

    An environment whose extras name a ``build_target`` (the local site's
    openfoam-v1912-patched) gets it built from Debian's source into the cache outside the
    clone: 12-17 min the first time on 2 cores, seconds after. Environments that provide a patched
    OpenFOAM themselves (a Spack environment on a cluster) have nothing to build.
    """

    valid_systems = ['*']
    valid_prog_environs = ['+reduction-schedule']
    local = True
    num_tasks = 1
    time_limit = '60m'
    executable = 'true'
    sourcesdir = None

    @run_after('setup')
    def choose_build(self):
        target = self.current_environ.extras.get('build_target')
        self.job.launcher = getlauncher('local')()
        if target:
            self.executable = sys.executable
            self.executable_opts = ['-m', 'localsite.openfoam', target]

    @sanity_function
    def assert_built(self):
        if self.executable == 'true':
            return sn.assert_true(True)
        return sn.assert_found(r'^/\S+/lib$', self.stdout,
                               msg='the local OpenFOAM build printed no library folder')


class PreparedCavityRanks(PreparedTutorial):
    """The cavity decomposed into 2, 4 or 8 subdomains: 2 ranks on each of 1, 2 or 4 nodes."""

    case = parameter(['cavity'])
    ranks = parameter([2, 4, 8])

    @run_after('init')
    def set_subdomains(self):
        self.num_subdomains = self.ranks
