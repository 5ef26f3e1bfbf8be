#!/usr/bin/env bash
# Build OpenFOAM libraries from Debian's OpenFOAM source package, for the local site.
#
# Usage: build-openfoam.sh scotch  SOURCE_TREE PREFIX
#        build-openfoam.sh patched SOURCE_TREE PREFIX PATCH_DIR
#
# scotch:  the real SCOTCH decomposition library (Debian's libscotchDecomp.so is a stub that
#          refuses `method scotch;`), linked against Debian's own OpenFOAM libraries (seconds).
# patched: libOpenFOAM.so and libPstream.so (MPI) with the patch series PATCH_DIR/*.patch
#          applied in name order (about 12 min on 2 cores: libOpenFOAM is most of it), and
#          bin/interFoam: MULES is compiled into each solver, so the MULES patch needs its
#          solver rebuilt (about a minute).
# Both are drop-ins for Debian's libraries (same sources, flags and ABI, without -g): put
# PREFIX/lib first in LD_LIBRARY_PATH.
#
# Called by localsite/openfoam.py, which keys PREFIX by the inputs (source version, this
# script) under the cache outside the clone. The build runs in a temporary folder beside
# PREFIX and is renamed into place only when complete, so an interrupted build never leaves a
# half-built entry behind; PREFIX/.complete marks a finished one.
set -euo pipefail

die() { echo "build-openfoam: $*" >&2; exit 1; }
say() { echo "build-openfoam: $*" >&2; }

target=${1:-}
case "$target:$#" in
    scotch:3|patched:4) ;;
    *) die "usage: build-openfoam.sh scotch SOURCE_TREE PREFIX | patched SOURCE_TREE PREFIX PATCH_DIR";;
esac
src=$2
prefix=$3
patches=${4:-}
[ -f "$src/etc/bashrc" ] \
    || die "no OpenFOAM source in $src -- run ./bench setup (it fetches it)"

mkdir -p "$(dirname "$prefix")"
work=$(mktemp -d "$(dirname "$prefix")/.build.XXXXXX")
trap 'rm -rf "$work"' EXIT
say "building into $prefix (log: $work/build.log while it runs)"

# A private copy of the tree: wmake writes lnInclude links and objects inside it.
cp -a "$src" "$work/OpenFOAM"
tree="$work/OpenFOAM"
mkdir -p "$work/lib"

if [ "$target" = patched ]; then
    for patch in "$patches"/*.patch; do
        say "applying $(basename "$patch")"
        (cd "$tree" && patch -p1 --forward --quiet < "$patch") \
            || die "$patch does not apply to $src -- refresh the patch for this source version"
    done
fi

# Progress on the terminal (fd 3) while the build writes its log: each stage as it starts,
# and every minute the objects compiled so far of about how many the stages compile.
exec 3>&2
started=$SECONDS
elapsed() { local t=$((SECONDS - started)); printf '%d min %02d s' $((t / 60)) $((t % 60)); }
stage() { echo "== $*"; echo "build-openfoam: $* ($(elapsed))" >&3; }
case "$target" in
    scotch) dirs=(src/parallel/decompose/scotchDecomp);;
    patched) dirs=(src/OSspecific/POSIX src/Pstream/dummy src/Pstream/mpi src/OpenFOAM
                   applications/solvers/multiphase/interFoam);;
esac
total=0
for d in "${dirs[@]}"; do
    total=$((total + $(grep -cE '\.[cC]$' "$tree/$d/Make/files" || true)))
done
. "$(dirname "${BASH_SOURCE[0]}")/progress.sh"
start_ticker build-openfoam "$total" 0 "$tree/build" "$tree/platforms"
trap 'stop_ticker; rm -rf "$work"' EXIT

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
    # Debian's hardening flags add -g (dpkg-buildflags); without it the build is a third faster.
    export DEB_CXXFLAGS_MAINT_STRIP=-g DEB_CFLAGS_MAINT_STRIP=-g
    export WM_PROJECT_VERSION="$("$tree/bin/foamEtcFile" -show-api)"

    cd "$tree"
    stage "wmake tools"
    wmake/src/Allmake
    stage "lnInclude"
    for d in OpenFOAM OSspecific/POSIX finiteVolume fileFormats meshTools dynamicMesh \
             parallel/decompose/decompositionMethods
    do
        wmakeLnInclude -u "src/$d"
    done
    if [ "$target" = scotch ]; then
        stage "scotchDecomp"
        wmake libso src/parallel/decompose/scotchDecomp
    else
        stage "OSspecific, Pstream (dummy and MPI)"
        src/OSspecific/POSIX/Allwmake
        src/Pstream/Allwmake
        stage "libOpenFOAM (most of the build)"
        wmake libso src/OpenFOAM
        cp "$FOAM_LIBBIN/$FOAM_MPI/libPstream.so" "$FOAM_LIBBIN/libPstream.so"
        stage "interFoam (with the MULES patch; linked against the installed libraries)"
        wmakeLnIncludeAll src
        wmake applications/solvers/multiphase/interFoam
    fi
) >"$work/build.log" 2>&1 || {
    tail -n 20 "$work/build.log" >&2
    cp "$work/build.log" "$prefix.failed.log"
    die "build failed -- full log in $prefix.failed.log"
}

case "$target" in
    scotch) products=(lib/libscotchDecomp.so);;
    patched) products=(lib/libOpenFOAM.so lib/libPstream.so bin/interFoam);;
esac
mkdir -p "$work/out/lib" "$work/out/bin"
for product in "${products[@]}"; do
    [ -f "$work/$product" ] \
        || die "the build finished but produced no $product -- see $work/build.log"
    cp "$work/$product" "$work/out/$product"
done

# Keep the libraries and the log; drop the tree copy and objects.
mv "$work/build.log" "$work/out/build.log"
touch "$work/out/.complete"
rm -rf "$prefix"
mv "$work/out" "$prefix"
say "done in $(elapsed): $prefix"
