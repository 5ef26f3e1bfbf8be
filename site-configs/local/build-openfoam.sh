#!/usr/bin/env bash
# Build OpenFOAM libraries from Debian's OpenFOAM source package, for the local site.
#
# Usage: build-openfoam.sh SOURCE_TREE PREFIX
#
# Builds the real SCOTCH decomposition library (Debian's libscotchDecomp.so is a stub that
# refuses `method scotch;`) against Debian's own OpenFOAM libraries, so it is a drop-in:
# put PREFIX/lib first in LD_LIBRARY_PATH.
#
# Called by localsite/openfoam.py, which keys PREFIX by the inputs (source version, this
# script) under the cache outside the clone. The build runs in a temporary folder beside
# PREFIX and is renamed into place only when complete, so an interrupted build never leaves a
# half-built entry behind; PREFIX/.complete marks a finished one.
set -euo pipefail

die() { echo "build-openfoam: $*" >&2; exit 1; }
say() { echo "build-openfoam: $*" >&2; }

[ $# -eq 2 ] || die "usage: build-openfoam.sh SOURCE_TREE PREFIX"
src=$1
prefix=$2
[ -f "$src/etc/bashrc" ] \
    || die "no OpenFOAM source in $src -- run site-configs/local/setup.sh (it fetches it)"

mkdir -p "$(dirname "$prefix")"
work=$(mktemp -d "$(dirname "$prefix")/.build.XXXXXX")
trap 'rm -rf "$work"' EXIT
say "building into $prefix (log: $work/build.log while it runs)"

# A private copy of the tree: wmake writes lnInclude links and objects inside it.
cp -a "$src" "$work/OpenFOAM"
tree="$work/OpenFOAM"
mkdir -p "$work/lib"

(
    set +u
    # Debian's configuration of the same tree (debian/rules), not the tree's etc/bashrc:
    # the libraries must be ABI-compatible with the installed ones.
    export WM_PROJECT=OpenFOAM WM_PROJECT_DIR="$tree" WM_DIR="$tree/wmake"
    export WM_ARCH=linux64 WM_COMPILER=Gcc WM_COMPILER_LIB_ARCH=64 WM_COMPILE_OPTION=Opt
    export WM_LABEL_SIZE=32 WM_LABEL_OPTION=Int32 WM_PRECISION_OPTION=DP
    export WM_OPTIONS=linux64GccDPInt32Opt WM_MPLIB=SYSTEMOPENMPI WM_OSTYPE=POSIX
    export WM_COMPILER_TYPE=system WM_NCOMPPROCS=$(nproc)
    export FOAM_SRC="$tree/src" FOAM_LIBBIN="$work/lib" FOAM_EXT_LIBBIN="$work/lib"
    export FOAM_APPBIN="$work/bin" FOAM_MPI=openmpi-system
    export MPI_ARCH_PATH=/usr/lib/x86_64-linux-gnu/openmpi
    export SCOTCH_INC_DIR=/usr/include/scotch SCOTCH_LIB_DIR=/usr/lib/x86_64-linux-gnu
    export PATH="$tree/wmake:$PATH"
    # Link against Debian's installed OpenFOAM libraries (same ABI).
    export FOAM_EXTRA_LDFLAGS="-L/usr/lib"
    export WM_PROJECT_VERSION="$("$tree/bin/foamEtcFile" -show-api)"

    cd "$tree"
    echo "== wmake tools"
    wmake/src/Allmake
    echo "== lnInclude"
    for d in OpenFOAM OSspecific/POSIX finiteVolume fileFormats meshTools dynamicMesh \
             parallel/decompose/decompositionMethods
    do
        wmakeLnInclude -u "src/$d"
    done
    echo "== scotchDecomp"
    wmake libso src/parallel/decompose/scotchDecomp
) >"$work/build.log" 2>&1 || {
    tail -n 20 "$work/build.log" >&2
    cp "$work/build.log" "$prefix.failed.log"
    die "build failed -- full log in $prefix.failed.log"
}

[ -f "$work/lib/libscotchDecomp.so" ] \
    || die "the build finished but produced no libscotchDecomp.so -- see $work/build.log"

# Keep the libraries and the log; drop the tree copy and objects.
mkdir -p "$work/out"
mv "$work/lib" "$work/out/lib"
mv "$work/build.log" "$work/out/build.log"
touch "$work/out/.complete"
rm -rf "$prefix"
mv "$work/out" "$prefix"
say "done: $prefix"
