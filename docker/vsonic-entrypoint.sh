#!/bin/sh
# Entry point of the vsonic lab container: `vsonic up "$@"`, then stay in the foreground.
#
# `vsonic up` starts the switches' Redis and gNMI servers in the background and returns once
# every switch answers; a container lives only as long as its first process, so this script
# waits until it is told to stop (docker stop sends TERM) and then runs `vsonic down`.
set -eu

state_dir="${VSONIC_STATE_DIR:-/var/lib/vsonic/state}"
mkdir -p "$state_dir"
# A restarted container keeps its filesystem but none of its processes: a state file left
# from before names processes that no longer exist, and would make `vsonic up` refuse.
rm -f "$state_dir/state.json"

sleeper=""
stopping() {
    if [ -n "$sleeper" ]; then kill "$sleeper" 2>/dev/null || true; fi
    vsonic down --state-dir "$state_dir"
    exit 0
}
# Trapped before `up`: a stop that arrives while the switches start takes them down after.
trap stopping TERM INT

vsonic up --state-dir "$state_dir" "$@"

# sleep in the background and `wait`: a trapped signal interrupts `wait` at once, whereas a
# foreground sleep would delay the shutdown until it ends.
while :; do
    sleep 3600 &
    sleeper=$!
    wait "$sleeper" || true
done
