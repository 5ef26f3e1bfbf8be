#!/usr/bin/env bash
# Build an OpenFOAM release from its full source tree, with a patch series, for the local site.
#
# Usage: build-tree.sh ARCHIVE TOP PREFIX SERIES "SETTINGS" NEEDS
#
#   ARCHIVE      the release's source archive (.tar.gz) whose top folder is TOP
#   PREFIX       the build folder (localsite/flavours.py keys it by its inputs)
#   SERIES       folder of *.patch files, applied in name order with git apply
#   SETTINGS     etc/bashrc parameters, e.g. "WM_MPLIB=SYSTEMOPENMPI SCOTCH_TYPE=system"
#   NEEDS        the flavour's needs file: what the suite uses of the release
#
# The build itself is the Spack overlay's (spack/repos/spack_repo/topofoam/packages/openfoam/
# suite/build-needed.sh): only the applications of NEEDS, the libraries they link and the
# cases load. This script prepares the tree for it, as Spack's stage and patch steps would.
#
# Environment: BUILD_OVERLAY        a folder copied over the extracted tree (site configuration)
#              CCACHE_DIR           where ccache keeps its cache, used when ccache is installed
#
# Resumable: each step is recorded in PREFIX (.extracted, .applied) and wmake is incremental,
# so a second call after an interruption continues where the first stopped. PREFIX/.complete
# marks a finished build, PREFIX/env.json the environment its tools run with, PREFIX/build.log
# the whole log. Progress goes to the terminal: each step, and every minute the libraries and
# objects done of about how many, the elapsed time and an estimate of the rest.
set -euo pipefail

die() { echo "build-tree: $*" >&2; exit 1; }

[ $# -eq 6 ] || die "usage: build-tree.sh ARCHIVE TOP PREFIX SERIES \"SETTINGS\" NEEDS"
archive=$1 top=$2 prefix=$3 series=$4 settings=$5 needs=$6
[ -f "$archive" ] || die "no source archive $archive -- set TOPOFOAM_SOURCES to its folder"
[ -d "$series" ] || die "no patch series $series -- restore it from git"
[ -f "$needs" ] || die "no needs file $needs -- restore it from git"
here=$(cd "$(dirname "$0")" && pwd)
suite=$(cd "$here/../spack/repos/spack_repo/topofoam/packages/openfoam/suite" && pwd)

mkdir -p "$prefix"
tree=$prefix/$top
log=$prefix/build.log
# Progress goes to the terminal on fd 3 while the build writes its log.
exec 3>&2
started=$SECONDS
elapsed() { local t=$((SECONDS - started)); printf '%d min %02d s' $((t / 60)) $((t % 60)); }
say() { echo "build-tree: $* ($(elapsed))" >&2; }

# 1. The tree, extracted once (an interrupted extraction starts that step again).
#    An archive that is damaged or of another release stops here, naming the archive, and
#    leaves no build folder behind (nothing was built in it yet).
unusable() { rm -rf "$prefix"; die "$@"; }
if [ ! -f "$prefix/.extracted" ]; then
    say "checking $(basename "$archive")"
    gzip -t "$archive" 2>/dev/null \
        || unusable "$archive is damaged or cut short (gzip -t fails) -- copy it again from the source mirror"
    say "extracting $(basename "$archive")"
    rm -rf "$tree"
    mkdir -p "$tree"
    # Whatever the archive calls its top folder (a mirror's OpenFOAM-12, GitHub's
    # OpenFOAM-12-version-12), the tree is PREFIX/TOP.
    tar -xzf "$archive" -C "$tree" --strip-components=1 2>/dev/null \
        || unusable "$archive cannot be extracted (tar fails) -- copy it again from the source mirror"
    [ -f "$tree/etc/bashrc" ] || unusable "$archive has no etc/bashrc in its top folder -- is it an OpenFOAM source archive?"
    want=${top#OpenFOAM-}
    found=$(sed -n 's/^export WM_PROJECT_VERSION=\([^ ]*\).*/\1/p' "$tree/etc/bashrc" | head -1)
    [ "$found" = "$want" ] \
        || unusable "$archive holds OpenFOAM ${found:-of no version}, not $want -- put the $top source archive there under that name"
    if [ -n "${BUILD_OVERLAY:-}" ]; then
        cp -r "$BUILD_OVERLAY"/. "$tree"/
        say "configured from $BUILD_OVERLAY"
    fi
    touch "$prefix/.extracted"
fi

# 2. The series, each patch once; a patch found already applied (interrupted between applying
#    and recording it) is recorded.
touch "$prefix/.applied"
shopt -s nullglob  # an empty series builds the release as it is
for patch in "$series"/*.patch; do
    name=$(basename "$patch")
    grep -qxF "$name" "$prefix/.applied" && continue
    if (cd "$tree" && git apply --check "$patch" 2>/dev/null); then
        (cd "$tree" && git apply "$patch") || die "$name does not apply to $top"
    elif ! (cd "$tree" && git apply --reverse --check "$patch" 2>/dev/null); then
        die "$name does not apply to $top -- refresh it for this release"
    fi
    echo "$name" >> "$prefix/.applied"
    say "applied $name"
done
shopt -u nullglob

# 3. The build (build-needed.sh): incremental, so a rerun continues.
# The compiler sees the tree through one path per flavour, <flavour>-building (a link to
# PREFIX), whatever the key: the absolute include paths, and the __FILE__ strings they put
# into objects, are then the same for every series, and ccache reuses every object a changed
# series does not touch. (etc/bashrc keeps the path it is sourced from, pwd -L.)
link=${prefix%-*}-building
ln -sfn "$(basename "$prefix")" "$link"
set +eu
env -0 > "$prefix/.env.before"
# shellcheck disable=SC1091,SC2086
. "$link/$top/etc/bashrc" $settings WM_NCOMPPROCS="$(nproc)" >> "$log" 2>&1
env -0 > "$prefix/.env.after"
set -eu
case "${WM_PROJECT_DIR:-}" in
    "$link/$top"|"$tree") ;;
    *) die "sourcing $tree/etc/bashrc did not set WM_PROJECT_DIR -- see $log";;
esac

# ccache, when installed: a build for a changed series (a new PREFIX, the same link) recompiles
# only what the series touches.
if [ -d /usr/lib/ccache ] && [ -n "${CCACHE_DIR:-}" ]; then
    export PATH=/usr/lib/ccache:$PATH CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-20G}
    say "compiling through ccache ($CCACHE_DIR)"
fi

cd "$WM_PROJECT_DIR"
BUILD_LOG=$log BUILD_PROGRESS=$here/progress.sh bash "$suite/build-needed.sh" "$needs" \
    || die "the build stopped (above) -- rerun to continue"

# The environment the tools run with: what etc/bashrc set or changed, naming PREFIX itself
# (the link moves on to the next build).
python3 - "$prefix/.env.before" "$prefix/.env.after" "$link" "$prefix" > "$prefix/env.json" <<'EOF'
import json, sys
def read(path):
    items = open(path, "rb").read().split(b"\0")
    return dict(i.decode(errors="replace").split("=", 1) for i in items if b"=" in i)
before, after = read(sys.argv[1]), read(sys.argv[2])
link, prefix = sys.argv[3], sys.argv[4]
changed = {k: v.replace(link, prefix) for k, v in after.items() if before.get(k) != v}
print(json.dumps(changed, indent=1, sort_keys=True))
EOF
touch "$prefix/.complete"
say "done: $prefix"
