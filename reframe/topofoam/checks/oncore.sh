#!/bin/bash
# One rank's command, and that rank's time on a core over its wall time; the validation's
# verdict judges it beside the solver's wall (reframe/topofoam/checks/oncore.py says why).
# Prints one line on stderr when the command ends:  oncore <rank> <host> wall <s> cpu <s>
rank=${OMPI_COMM_WORLD_RANK:-${SLURM_PROCID:-${PMIX_RANK:-?}}}
t0=$(date +%s.%N)
"$@" &
child=$!
# A launcher that ends the job signals this shell: the solver must not be left running.
trap 'kill -TERM "$child" 2>/dev/null' TERM INT HUP
wait "$child"
rc=$?
while kill -0 "$child" 2>/dev/null; do
    wait "$child"
    rc=$?
done
t1=$(date +%s.%N)
# The builtin 'times' in this shell (a subshell's would count none of its children): its
# second line is the waited children's user and system time, as 0m1.234s 0m0.056s.
spent=${TMPDIR:-/tmp}/oncore.$$
times > "$spent"
awk -v r="$rank" -v h="$(hostname)" -v a="$t0" -v b="$t1" 'NR == 2 {
    split($1, u, /[ms]/); split($2, s, /[ms]/)
    printf "oncore %s %s wall %.3f cpu %.3f\n", r, h, b - a, u[1] * 60 + u[2] + s[1] * 60 + s[2]
}' "$spent" >&2
rm -f "$spent"
exit "$rc"
