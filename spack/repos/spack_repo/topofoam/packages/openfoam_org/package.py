# TopoFOAM bench overlay: Spack's builtin OpenFOAM Foundation release plus the project's
# patch series for it, once one exists (patches/org-12).
from spack_repo.builtin.packages.openfoam_org.package import OpenfoamOrg as BuiltinOpenfoamOrg
from spack_repo.topofoam.packages.openfoam.package import patch_series

from spack.package import *


class OpenfoamOrg(BuiltinOpenfoamOrg):
    """OpenFOAM (Foundation) with TopoFOAM bench's communication patches, where written."""

    for _patch in patch_series(__file__, "org-12"):
        patch(_patch, when="@12")
