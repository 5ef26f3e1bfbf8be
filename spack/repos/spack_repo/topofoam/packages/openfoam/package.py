# TopoFOAM bench overlay: Spack's builtin OpenFOAM (ESI) plus the project's patch series.
import os

from spack_repo.builtin.packages.openfoam.package import Openfoam as BuiltinOpenfoam

from spack.package import *


def patch_series(package_file, folder):
    """The patch files, in order, of a series linked beside a package (into patches/)."""
    path = os.path.join(os.path.dirname(package_file), folder)
    if not os.path.isdir(path):
        return []
    return [os.path.join(folder, f) for f in sorted(os.listdir(path)) if f.endswith(".patch")]


class Openfoam(BuiltinOpenfoam):
    """OpenFOAM (ESI) with TopoFOAM bench's communication patches (patches/esi-v1912): a
    reduction schedule read at start-up (see rankmap/README.md), seed 001's PiPePCG and
    RePiPePCG solvers with a non-blocking sum, the MULES limiter's neighbour-only exchange
    (off unless mulesNeighbourExchange 1), and the GCC 12 build fix."""

    # The series is written against Debian's 1912.200626; v1912 patch releases share the
    # touched files.
    for _patch in patch_series(__file__, "esi-v1912"):
        patch(_patch, when="@1912")
