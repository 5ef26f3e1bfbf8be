# TopoFOAM bench overlay: Spack's builtin OpenFOAM (ESI) plus the project's patch series.
import importlib.util
import os
import shutil

from spack_repo.builtin.packages.openfoam.package import Openfoam as BuiltinOpenfoam

from spack.package import *


def patch_series(package_file, folder):
    """The patch files, in order, of a series linked beside a package (into patches/).

    A missing or empty series stops Spack here: building stock OpenFOAM under the patched
    package's name would give benchmarks that silently measure the wrong thing."""
    path = os.path.join(os.path.dirname(package_file), folder)
    names = sorted(os.listdir(path)) if os.path.isdir(path) else []
    series = [os.path.join(folder, f) for f in names if f.endswith(".patch")]
    if not series:
        raise InstallError(
            f"{path}: no patch series there -- it must be a link to the repository's "
            f"patches/{folder} holding its *.patch files (a clone without symlinks, or a "
            f"copied overlay, loses it)"
        )
    return series


#: The build of what the suite uses (+suite): build-needed.sh, libclosure.py, wmake-needed/ and
#: one needs file per series; ./bench build runs the same files (localsite/build-tree.sh).
SUITE = os.path.join(os.path.dirname(__file__), "suite")

#: suite_digest() of the suite this package builds. Spack hashes a package's own source, not
#: the files beside it: stated here, a changed suite changes the spec (tests/unit checks it).
SUITE_SHA256 = "9a684c9bec267bd5bc935b2686c47e985c6a0d3351bf4bbef7fa849866570f65"

SUITE_DESCRIPTION = (
    "Build only what TopoFOAM bench uses: the applications of its needs file "
    "(suite/<series>.needs), the libraries they link and the cases load, about half of the "
    "release; ~suite builds all of it"
)


def suite_digest():
    """The suite folder's digest (suite/libclosure.py: digest)."""
    loader = importlib.util.spec_from_file_location(
        "topofoam_libclosure", os.path.join(SUITE, "libclosure.py")
    )
    libclosure = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(libclosure)
    return libclosure.digest(SUITE)


def write_suite_build(tree, series, stated):
    """Make the staged ``tree`` build only what the suite uses: the builtin packages'
    spack-Allwmake runs a tree's ``Allwmake-spack`` instead of its Allwmake when there is one
    (after sourcing etc/bashrc, from the tree's top).

    ``stated`` is the package's SUITE_SHA256: a suite that changed since then would build
    under the hash of the old one, so it stops here."""
    if suite_digest() != stated:
        raise InstallError(
            f"{SUITE} changed since SUITE_SHA256 was stated in the overlay packages -- set "
            f"SUITE_SHA256 in openfoam/package.py and openfoam_org/package.py to "
            f"{suite_digest()} (a changed suite is a new spec, built in a new stage)"
        )
    needs = os.path.join(SUITE, f"{series}.needs")
    if not os.path.isfile(needs):
        raise InstallError(
            f"{needs}: no needs file for the series {series} -- build ~suite, or add the file"
        )
    kept = os.path.join(tree, ".topofoam-suite")
    shutil.rmtree(kept, ignore_errors=True)
    shutil.copytree(SUITE, kept, symlinks=False)
    script = os.path.join(tree, "Allwmake-spack")
    with open(script, "w") as f:
        f.write(
            "#!/bin/bash\n"
            "# TopoFOAM bench (+suite): only what the suite uses, as ./bench build builds it.\n"
            f"exec bash .topofoam-suite/build-needed.sh .topofoam-suite/{series}.needs\n"
        )
    os.chmod(script, 0o755)


#: Patches of a series that upstream took later, with the versions that still lack them.
LACKING_UPSTREAM_FIX = {
    # ESI's 1912_220610 patch release carries the same GCC 12 fix of OSHA1stream.H: applied
    # twice, the class gets two overflow() and does not compile.
    "0001-OSHA1stream-overflow-for-GCC-12.patch": "@1912:1912_200506"
}


class Openfoam(BuiltinOpenfoam):
    """OpenFOAM (ESI) with TopoFOAM bench's communication patches.

    v1912 (patches/esi-v1912): a reduction schedule read at start-up (see rankmap/README.md),
    seed 001's PiPePCG and RePiPePCG solvers with a non-blocking sum, the MULES limiter's
    neighbour-only exchange (off unless mulesNeighbourExchange 1), and the GCC 12 build fix.
    v2512 (patches/esi-v2512): the reduction schedule, also in v2512's native allreduce, and
    RePiPePCG on v2512's own non-blocking requests."""

    # The series is written against ESI's 1912.200626 (Debian's source); the v1912 patch
    # releases share the files it touches. spack.yaml asks for 1912_220610.
    for _patch in patch_series(__file__, "esi-v1912"):
        patch(
            _patch, when=LACKING_UPSTREAM_FIX.get(os.path.basename(_patch), "@1912:1912_220610")
        )

    for _patch in patch_series(__file__, "esi-v2512"):
        patch(_patch, when="@2512")

    variant("suite", default=True, when="@2512", description=SUITE_DESCRIPTION)

    # The builtin configure() writes MPFR_ARCH_PATH from spec["mpfr"], which is in the DAG
    # only below a CGAL that Spack builds: with the system's CGAL as an external (which has
    # no dependencies) it stops with "No spec with name mpfr". Asked for here, MPFR is there
    # either way (an external too, where CGAL is).
    depends_on("mpfr")

    def patch(self):
        super().patch()
        if self.spec.satisfies("@2512 +suite"):
            write_suite_build(self.stage.source_path, "esi-v2512", SUITE_SHA256)

    def install(self, spec, prefix):
        # With +source the builtin copies doc/ whether or not the archive has one; an archive
        # repacked without it (the offline kit's v2512) failed there after the whole build.
        mkdirp(join_path(self.stage.source_path, "doc"))
        super().install(spec, prefix)
