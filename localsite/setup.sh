#!/usr/bin/env bash
# Install what the suite needs on one Debian/Ubuntu machine (the embedded "local" site).
#
# Idempotent: every step checks first and does nothing when its result is already there, so
# `./bench run` calls it on every start. Steps:
#   1. Debian packages: OpenFOAM v1912 + tutorials, OpenMPI with UCX, hwloc, SCOTCH,
#      flex with its C++ header (OpenFOAM-12 builds from source need FlexLexer.h),
#      ParaView with Xvfb (Debian's pvpython renders off-screen only through an X server),
#      Slurm + munge, build tools (apt is retried once: a transient dpkg failure has been seen);
#   2. deb-src enabled and the OpenFOAM source package unpacked into the cache (for the builds);
#   3. the project's virtualenv (.venv) with ReFrame, foamlib, pytest and this project.
# Exits non-zero with one line "setup: <cause> -- <fix>" when it cannot proceed.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${TOPOFOAM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/topofoam}
venv=${TOPOFOAM_VENV:-$repo/.venv}

packages=(
    openfoam openfoam-examples
    openmpi-bin libopenmpi-dev libucx0 ucx-utils
    hwloc libhwloc-dev
    scotch libscotch-dev
    paraview python3-paraview xvfb xauth
    slurm-wlm slurm-wlm-basic-plugins munge libpmix2
    build-essential flex libfl-dev bison zlib1g-dev dpkg-dev ccache
    cmake libptscotch-dev libjson-c-dev libyaml-dev libreadline-dev  # Spack's externals here
    m4 pkgconf libfftw3-dev libcgal-dev libmpfr-dev libyaml-cpp-dev nlohmann-json3-dev
    libpugixml-dev
    libboost1.74-dev libboost-{atomic,chrono,date-time,exception,filesystem,graph,iostreams}-dev
    libboost-{locale,log,math,program-options,random,regex,serialization,system,test}-dev
    libboost-{thread,timer,wave}-dev  # and openfoam@2512's
    python3 python3-venv python3-pip
    iproute2 util-linux procps
)

die() { echo "setup: $*" >&2; exit 1; }
say() { echo "setup: $*"; }

check_platform()
{
    [ -r /etc/os-release ] || die "cannot read /etc/os-release -- this setup supports Debian 12 and Ubuntu only"
    . /etc/os-release
    case " ${ID:-} ${ID_LIKE:-} " in
        *" debian "*|*" ubuntu "*) ;;
        *) die "unsupported system '${PRETTY_NAME:-unknown}' -- use a Debian 12 or Ubuntu machine, or a site config with Spack (see README)";;
    esac
}

# Prefix for commands that need root: empty as root, "sudo -n" with passwordless sudo.
as_root=""
check_root()
{
    if [ "$(id -u)" -eq 0 ]; then
        as_root=""
    elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        as_root="sudo -n"
    else
        die "not root and no passwordless sudo -- run as root (or with sudo), since Debian packages and the Slurm daemons need it"
    fi
}

# check_space DIR GIB WHAT: refuse to start work that would fill DIR's file system.
check_space()
{
    local dir=$1 need_gib=$2 what=$3 avail mnt
    mkdir -p "$dir"
    avail=$(df -Pk "$dir" | awk 'NR == 2 { print $4 }')
    mnt=$(df -P "$dir" | awk 'NR == 2 { print $6 }')
    if [ "${avail:-0}" -lt $((need_gib * 1024 * 1024)) ]; then
        die "only $((avail / 1024)) MiB free on $mnt, $what needs $need_gib GiB -- free at least $need_gib GiB there${4:+, $4}"
    fi
}

missing_packages()
{
    local p status
    for p in "${packages[@]}"; do
        status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
        [ "$status" = installed ] || echo "$p"
    done
}

packages_installed() { [ -z "$(missing_packages)" ]; }

# apt with one retry: a transient dpkg temp-dir failure has been seen on fresh machines.
apt_retry()
{
    $as_root env DEBIAN_FRONTEND=noninteractive "$@" && return 0
    say "'$*' failed; retrying once in 5 s"
    sleep 5
    $as_root env DEBIAN_FRONTEND=noninteractive "$@" \
        || die "'$*' failed twice -- check the apt output above (network to the Debian mirror, disk space, dpkg lock)"
}

sources_file()
{
    if [ -f /etc/apt/sources.list.d/debian.sources ]; then
        echo /etc/apt/sources.list.d/debian.sources
    elif [ -f /etc/apt/sources.list ]; then
        echo /etc/apt/sources.list
    else
        die "no apt sources found -- add a deb-src line for your distribution to /etc/apt/sources.list"
    fi
}

deb_src_enabled()
{
    grep -qE '^(Types:.*deb-src|deb-src )' "$(sources_file)"
}

enable_deb_src()
{
    local f
    f=$(sources_file)
    say "enabling deb-src in $f"
    case "$f" in
        *.sources) $as_root sed -i 's/^Types: deb$/Types: deb deb-src/' "$f";;
        # Classic one-line format (Ubuntu, older Debian images): a deb-src twin per deb line.
        *) $as_root sed -i -n 'p; s/^deb \(.*\)/deb-src \1/p' "$f";;
    esac
}

install_packages()
{
    local updated=0 missing
    if ! deb_src_enabled; then
        enable_deb_src
        apt_retry apt-get update -q
        updated=1
    fi
    missing=$(missing_packages)
    [ -n "$missing" ] || return 0
    say "installing Debian packages: $(echo $missing)"
    [ "$updated" -eq 1 ] || apt_retry apt-get update -q
    # shellcheck disable=SC2086
    apt_retry apt-get install -y -q --no-install-recommends $missing
}

# The OpenFOAM source package, unpacked once into the cache; the builds copy from it.
fetch_source()
{
    local version dest
    version=$(dpkg-query -W -f='${source:Version}' openfoam)
    dest="$cache/src/openfoam-$version"
    if [ -f "$dest/etc/bashrc" ]; then
        return 0
    fi
    # The source (45 MB), its unpacked tree and the cached builds.
    check_space "$cache" 2 "the build cache" "or point TOPOFOAM_CACHE at a larger file system"
    say "fetching the OpenFOAM $version source package into $dest"
    local tmp
    tmp=$(mktemp -d "$cache/src.XXXXXX")
    (cd "$tmp" && apt-get source -q "openfoam=$version" >apt-source.log 2>&1) || {
        tail -n 5 "$tmp/apt-source.log" >&2
        rm -rf "$tmp"
        die "'apt-get source openfoam' failed -- check that deb-src is enabled and the mirror is reachable"
    }
    local tree
    tree=$(find "$tmp" -mindepth 1 -maxdepth 1 -type d -name 'openfoam-*' | head -n 1)
    [ -n "$tree" ] || die "apt-get source produced no openfoam-* tree in $tmp -- remove it and retry"
    mkdir -p "$cache/src"
    rm -rf "$dest"
    mv "$tree" "$dest"
    rm -rf "$tmp"
}

make_venv()
{
    local stamp="$venv/.topofoam-stamp" want
    want=$(sha256sum "$repo/pyproject.toml" | cut -c1-16)
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
        return 0
    fi
    say "creating the project virtualenv in $venv"
    # Debian's own Python: the same one python3-paraview is built for.
    /usr/bin/python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check -e "$repo[test]" \
        || die "pip install into $venv failed -- check access to PyPI, then rerun"
    echo "$want" >"$stamp"
}

# The build cache must be a folder this user can write: a file there (or an unwritable
# place) would otherwise end in mkdir's own error half-way through.
check_cache()
{
    if [ -e "$cache" ] && [ ! -d "$cache" ]; then
        die "the cache $cache is a file, not a folder -- point TOPOFOAM_CACHE at a folder (unset: ~/.cache/topofoam)"
    fi
    mkdir -p "$cache" 2>/dev/null && [ -w "$cache" ] \
        || die "cannot make or write the cache folder $cache -- point TOPOFOAM_CACHE at a writable folder"
}

main()
{
    check_platform
    check_cache
    # Root only when there is system work to do: a set-up machine serves non-root users too.
    if ! packages_installed || ! deb_src_enabled; then
        check_root
        # ParaView, OpenFOAM and their dependencies.
        check_space / 4 "installing the Debian packages"
        install_packages
    fi
    fetch_source
    make_venv
}

main "$@"
