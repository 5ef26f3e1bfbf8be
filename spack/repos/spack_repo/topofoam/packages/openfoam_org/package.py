# TopoFOAM bench overlay: Spack's builtin OpenFOAM Foundation release plus the project's
# patch series for it (patches/org-12).
import os

import spack_repo.builtin.packages.openfoam_org.package as builtin_openfoam_org
from spack_repo.builtin.packages.openfoam.package import rewrite_environ_files
from spack_repo.builtin.packages.openfoam_org.package import OpenfoamOrg as BuiltinOpenfoamOrg
from spack_repo.topofoam.packages.openfoam.package import (
    SUITE_DESCRIPTION,
    patch_series,
    write_suite_build,
)

from spack.package import *

#: The suite this package builds (openfoam/package.py: SUITE_SHA256, stated here too, for
#: Spack hashes this file and not the one it imports from).
SUITE_SHA256 = "9a684c9bec267bd5bc935b2686c47e985c6a0d3351bf4bbef7fa849866570f65"

#: The builtin package's folder: its assets/ (bin/foamEtcFile) are there, not beside us.
BUILTIN_DIR = os.path.dirname(builtin_openfoam_org.__file__)


class OpenfoamOrg(BuiltinOpenfoamOrg):
    """OpenFOAM (Foundation) with TopoFOAM bench's communication patches: the reduction
    schedule and seed 001's PiPePCG and RePiPePCG (patches/org-12)."""

    for _patch in patch_series(__file__, "org-12"):
        patch(_patch, when="@12")

    variant("suite", default=True, when="@12", description=SUITE_DESCRIPTION)

    # The builtin patch() copies ``assets`` from the package's own folder, which for this
    # subclass is the overlay's: copy nothing there, and the builtin's assets here.
    assets = []

    def patch(self):
        super().patch()
        for asset in BuiltinOpenfoamOrg.assets:
            install(join_path(BUILTIN_DIR, "assets", asset), join_path(self.stage.source_path, asset))
        if self.spec.satisfies("@10: +scotch"):
            # The builtin sets SCOTCH_TYPE=none to keep ThirdParty out; from OpenFOAM 10 on
            # that value also skips src/parallel/decompose/scotch, so +scotch built no
            # libscotchDecomp. "system" builds it against SCOTCH_ARCH_PATH (configure()).
            rewrite_environ_files(
                {"SCOTCH_TYPE": "system"},
                posix=join_path("etc", "bashrc"),
                cshell=join_path("etc", "cshrc"),
            )
        if self.spec.satisfies("@12 +suite"):
            write_suite_build(self.stage.source_path, "org-12", SUITE_SHA256)

    def install(self, spec, prefix):
        # With +source the builtin copies doc/ whether or not the archive has one; an archive
        # repacked without it (the offline kit's) failed there after the whole build.
        mkdirp(join_path(self.stage.source_path, "doc"))
        super().install(spec, prefix)
