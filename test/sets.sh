#!/bin/bash
# sets.sh: several test sets in one run, so that one guest boot serves them.
#
# Usage: sets.sh --set NAME CMD [ARGS...] [--set NAME CMD [ARGS...]]...
#
# Runs each set's command in turn (a failing set does not stop the next),
# says when each starts, its exit status and its wall-clock time, and ends
# with one line per set.  Exit status: 0 when every set passed, 1 when any
# failed; a set that skips (77) fails in CI and in the guest, as everywhere
# in this suite.
set -u

names=()
cmds=() # each set's words, NUL-separated
while [ $# -gt 0 ]; do
    [ "$1" = --set ] && [ $# -ge 3 ] ||
        { echo "sets.sh: expected --set NAME CMD [ARGS...], got '$1'" >&2; exit 2; }
    names+=("$2")
    shift 2
    words=""
    while [ $# -gt 0 ] && [ "$1" != --set ]; do
        words+="$1"$'\x1f'
        shift
    done
    cmds+=("$words")
done
[ ${#names[@]} -gt 0 ] || { echo "sets.sh: no set given" >&2; exit 2; }

strict=0
case "${CI:-}:${HWAF_GUEST:-}" in true:* | *:1) strict=1 ;; esac

summary=()
fails=0
skips=0
for i in "${!names[@]}"; do
    IFS=$'\x1f' read -r -a argv <<<"${cmds[$i]%$'\x1f'}"
    echo "==== set ${names[$i]}: ${argv[*]}"
    t0=$(date +%s%N)
    "${argv[@]}"
    rc=$?
    t1=$(date +%s%N)
    # (no awk: the ARM guests' extract roots have mawk without the awk link)
    ds=$(((t1 - t0) / 100000000))
    secs=$((ds / 10)).$((ds % 10))
    if [ $rc = 0 ]; then
        verdict=passed
    elif [ $rc = 77 ] && [ $strict = 0 ]; then
        verdict=skipped
        skips=$((skips + 1))
    else
        verdict="FAILED (exit $rc)"
        fails=$((fails + 1))
    fi
    echo "==== set ${names[$i]}: $verdict, $secs s"
    summary+=("${names[$i]}: $verdict, $secs s")
done
echo "==== sets:"
printf '  %s\n' "${summary[@]}"
[ $fails = 0 ] || exit 1
[ $skips = 0 ] || exit 77
