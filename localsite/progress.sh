# Progress of a long build on the terminal, shared by build-openfoam.sh and build-tree.sh.
# Sourced; the script defines elapsed() and has fd 3 on the terminal. start_ticker writes,
# every TOPOFOAM_TICK_SECONDS (60), what the build has produced under the given folders so far
# of about how much, and the minutes left at this run's own rate:
#
#   build-tree: 12 of about 53 libraries, 1,204 of about 3,526 objects, 31 min 02 s elapsed,
#   about 60 min to go
#
#   start_ticker LABEL TOTAL_OBJECTS TOTAL_LIBRARIES FOLDER...   (TOTAL_LIBRARIES 0: not said)
#   stop_ticker
#
# Folders that do not exist (yet) count nothing: under the scripts' set -e and pipefail a
# failed find must not end the ticker (it did, silently, for a tree without build/).

_count_files()
{
    local suffix=$1; shift
    (find "$@" -name "*.$suffix" 2>/dev/null || true) | wc -l
}

start_ticker()
{
    local label=$1 total=$2 total_libs=$3; shift 3
    local folders=("$@") tick=${TOPOFOAM_TICK_SECONDS:-60}
    local before t0=$SECONDS
    before=$(_count_files o "${folders[@]}")  # a continued build starts with objects
    (
        set +e
        while sleep "$tick"; do
            objs=$(_count_files o "${folders[@]}")
            line="$objs of about $total objects"
            [ "$total_libs" -gt 0 ] \
                && line="$(_count_files so "${folders[@]}") of about $total_libs libraries, $line"
            rest=""
            # The estimate goes by this run's own rate: a continued build started with objects.
            done_now=$((objs - before))
            [ "$done_now" -gt 0 ] && [ "$objs" -lt "$total" ] \
                && rest=", about $(( ((SECONDS - t0) * (total - objs) / done_now + 59) / 60 )) min to go"
            echo "$label: $line, $(elapsed) elapsed$rest" >&3
        done
    ) 2>/dev/null &
    TICKER=$!
}

stop_ticker()
{
    pkill -P "$TICKER" 2>/dev/null || true
    kill "$TICKER" 2>/dev/null || true
}
