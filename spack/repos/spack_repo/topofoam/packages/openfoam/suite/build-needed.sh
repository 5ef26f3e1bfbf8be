#!/usr/bin/env bash
# Build, in an OpenFOAM tree, only what TopoFOAM bench uses: the applications of a needs file,
# the libraries they link and the cases load, and what those link (libclosure.py). The one
# recipe of both builds: Spack's (the overlay's +suite variant runs it as the tree's
# Allwmake-spack) and ./bench build's (localsite/build-tree.sh).
#
# Usage: build-needed.sh NEEDS
#
#   NEEDS  the flavour's needs file (this folder's <series>.needs)
#
# Run from $WM_PROJECT_DIR with the tree's etc/bashrc sourced. Incremental (wmake): a second
# run continues where an interrupted one stopped. Environment:
#   WM_NCOMPPROCS     parallel compiles (default: the cores)
#   BUILD_LOG         where the compilers' output goes (default: this script's output)
#   BUILD_PROGRESS    a script defining start_ticker/stop_ticker (localsite/progress.sh) for
#                     progress every minute on fd 3, or empty for none
# Exit 1 naming what the build did not produce.
set -euo pipefail

die() { echo "build-needed: $*" >&2; exit 1; }

[ $# -eq 1 ] || die "usage: build-needed.sh NEEDS"
needs=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[ -n "${WM_PROJECT_DIR:-}" ] && [ "$(pwd -P)" = "$(cd "$WM_PROJECT_DIR" && pwd -P)" ] \
    || die "run from \$WM_PROJECT_DIR with the tree's etc/bashrc sourced"
jobs=${WM_NCOMPPROCS:-$(nproc)}
log=${BUILD_LOG:-/dev/stdout}
where=${BUILD_LOG:-the output above}
say() { echo "build-needed: $*" >&2; }

mapfile -t apps < <(sed -n 's/^[[:space:]]*application[[:space:]]\+\([^[:space:]#]*\).*/\1/p' "$needs")
mapfile -t libs < <(sed -n 's/^[[:space:]]*library[[:space:]]\+\([^[:space:]#]*\).*/\1/p' "$needs")

# 1. The libraries to build (platforms/ keeps the list: the tree is the build's own).
list=$WM_PROJECT_DIR/platforms/topofoam-needed-libs
mkdir -p "$WM_PROJECT_DIR/platforms"
read -r total_libs total_objs every_lib < <(python3 "$here/libclosure.py" . "$needs" "$list") \
    || die "cannot tell which libraries the tree needs (above)"
say "building $total_libs of $every_lib library folders: what the applications link and the cases load"

# 2. Progress, where asked for: objects and libraries so far, of about how many.
if [ -n "${BUILD_PROGRESS:-}" ]; then
    { true >&3; } 2>/dev/null || exec 3>&2  # the terminal, where the caller has not set it
    started=$SECONDS
    elapsed() { local t=$((SECONDS - started)); printf '%d min %02d s' $((t / 60)) $((t % 60)); }
    # shellcheck disable=SC1090
    . "$BUILD_PROGRESS"
    count_sources() { cat "$@" 2>/dev/null | grep -cE '\.([cCL]|cxx|cpp)$' || true; }
    for app in "${apps[@]}"; do
        total_objs=$((total_objs + $(count_sources "$app/Make/files")))
        case "$app" in applications/modules/*) total_libs=$((total_libs + 1));; esac
    done
    start_ticker build-tree "$total_objs" "$total_libs" platforms build
    trap stop_ticker EXIT
fi

# 3. wmake's tools, src/ (the release's own order; wmake-needed/wmake skips the rest), the
#    applications.
say "wmake tools"
(cd wmake/src && make) >> "$log" 2>&1 || die "wmake's tools did not build -- see $where"
say "libraries (src/Allwmake; most of the build)"
# An optional library that fails (ptscotch without its headers) must not stop the others:
# what the suite needs is checked below, product by product.
PATH=$here/wmake-needed:$PATH BUILD_NEEDED_LIBS=$list WM_CONTINUE_ON_ERROR=1 \
    src/Allwmake -j "$jobs" -q >> "$log" 2>&1 || true
for app in "${apps[@]}"; do
    say "$app"
    # An application with its own Allwmake builds a local library first (v2512's
    # surfaceFeatureExtract: extractionMethod); wmake -all runs that Allwmake. Without one,
    # -all would also build the folder's other solvers (simpleFoam: SRF, porous, overset).
    all=()
    [ -f "$app/Allwmake" ] && all=(-all)
    wmake "${all[@]}" -j "$jobs" "$app" >> "$log" 2>&1 || die "$app did not build -- see $where"
done

# 4. Everything the suite uses is there, or the build names what is missing.
missing=()
for lib in "${libs[@]}"; do
    [ -f "$FOAM_LIBBIN/lib$lib.so" ] || missing+=("lib$lib.so")
done
[ -f "$FOAM_LIBBIN/$FOAM_MPI/libPstream.so" ] || missing+=("$FOAM_MPI/libPstream.so")
for app in "${apps[@]}"; do
    name=$(basename "$app")
    case "$app" in
        applications/modules/*) [ -f "$FOAM_LIBBIN/lib$name.so" ] || missing+=("lib$name.so");;
        *) [ -x "$FOAM_APPBIN/$name" ] || missing+=("bin/$name");;
    esac
done
[ ${#missing[@]} -eq 0 ] || die "the build finished without ${missing[*]} -- see $where (rerun to continue)"
say "done"
