#!/usr/bin/env bash
# The test command: installs what it needs, then lints, type-checks and runs every test.
#
# Independent steps run side by side, each into its own log (docs/benchmarks.md, "The test
# command's time", has the figures that chose the split): the binaries the Python tests start
# are built first (the virtual switch's data plane, the qos-agent, netsim), beside the linters
# and the pytest groups that need none of them; then every other test beside the Rust gate
# (formatting, clippy, the crates' tests), which no Python test waits for. Each step's last
# line is printed as it ends, a failed step's whole log after everything has ended, and the
# command exits non-zero when any step failed.
#
# Extra arguments go to pytest: options alone (`-x`, `-k expr`) go to every group; when one
# names a path (`tests/unit/test_house.py::test_x`), a single pytest runs them as given.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
# Python keeps each module's bytecode (__pycache__, ignored by git) and reuses it. Where the
# caller's environment sets PYTHONDONTWRITEBYTECODE (some sessions' do), every Python process
# the tests start (API, worker, CLI, pytest) compiled what it imports from source again:
# importing api.main took 3.8 CPU s instead of 1.7 (docs/benchmarks.md, "The e2e tier's CPU").
unset PYTHONDONTWRITEBYTECODE
./scripts/bootstrap.sh

logs="$(mktemp -d "${TMPDIR:-/tmp}/sluice-test-XXXXXX")"
declare -A pid_step=() started=()
failed=()

# Runs the arguments after $1, then writes to $1 the CPU seconds (user + system) they used:
# the figure that says where the command's time goes, since the command is bound by the CPU
# of two cores (docs/benchmarks.md). Where the machine has cgroup v1's cpuacct (this kind
# does, at /sys/fs/cgroup/cpuacct), the step runs in a group of its own, which counts the
# daemons its fixtures start (PostgreSQL, Redis, SONiC's servers) too; elsewhere, the
# processes it waited for (bash's `times`), daemons left out, the figure marked "~".
CPUACCT=/sys/fs/cgroup/cpuacct
cpu_of() {
  local out="$1" rc=0 group="$CPUACCT/sluice-test-$$-${1##*/}"
  shift
  group="${group%.cpu}"
  if ! { mkdir "$group" && echo "$BASHPID" >"$group/cgroup.procs"; } 2>/dev/null; then
    group=""
  fi
  # A job of its own, where `set -e` holds: a step's function called on the left of `||`
  # would run on past a failed command and end with its last command's status.
  "$@" &
  wait "$!" || rc=$?
  if [ -n "$group" ]; then
    awk '{ printf "%.0f\n", $1 / 1e9 }' "$group/cpuacct.usage" >"$out" || true
    { echo "$BASHPID" >"$CPUACCT/cgroup.procs" && rmdir "$group"; } 2>/dev/null || true
  else
    times >"$out" # its second line: the children's user and system time, as 1m2.5s
    awk 'NR == 2 {
      for (i = 1; i <= 2; i++) { split($i, t, /[ms]/); cpu += t[1] * 60 + t[2] }
      printf "~%.0f\n", cpu
    }' "$out" >"$out.s" && mv "$out.s" "$out"
  fi
  return "$rc"
}

# Starts step $1 in the background: the rest of the arguments, output to $logs/$1.log.
start() {
  local step="$1"
  shift
  cpu_of "$logs/$step.cpu" "$@" >"$logs/$step.log" 2>&1 </dev/null &
  pid_step[$!]="$step"
  started[$step]="$SECONDS"
  echo "== $step: started (log $logs/$step.log)"
}

# Waits for every started step (or, given a step's name, until that one has ended), printing
# each one's outcome and last line as it ends. A pytest group that selected nothing (exit 5)
# is no failure when extra options narrowed it.
wait_all() {
  local until="${1:-}" pid rc step last took
  while [ ${#pid_step[@]} -gt 0 ]; do
    if [ -n "$until" ] && ! running "$until"; then return 0; fi
    rc=0
    wait -n -p pid "${!pid_step[@]}" || rc=$?
    step="${pid_step[$pid]}"
    unset "pid_step[$pid]"
    if [ "$rc" -eq 5 ] && [[ "$step" == pytest-* ]] && [ "$narrowed" = yes ]; then rc=0; fi
    last="$(tail -n 1 "$logs/$step.log")"
    took="$((SECONDS - started[$step])) s, cpu $(cat "$logs/$step.cpu" 2>/dev/null || echo '?') s"
    if [ "$rc" -eq 0 ]; then
      echo "== $step: ok in $took: $last"
    else
      echo "== $step: FAILED (exit $rc) in $took: $last"
      failed+=("$step")
    fi
  done
}

# Whether step $1 was started and has not ended.
running() {
  local step
  for step in "${pid_step[@]}"; do
    if [ "$step" = "$1" ]; then return 0; fi
  done
  return 1
}

lint() {
  echo "== ruff"; uv run --frozen ruff check .
  echo "== ruff format"; uv run --frozen ruff format --check .
  echo "== mypy"; uv run --frozen mypy
}

# What the Python tests start: every binary of the workspace (a fixture that needs one builds
# it again, which finds nothing to do), and the Ansible collection's tarball.
build_for_tests() {
  echo "== cargo build (binaries)"; cargo build --workspace --bins
  echo "== ansible collection"; ./scripts/build-collection.sh target/collection
}

# Puts a copy of target/debug in place as target directory $1, unless $1 exists (a run
# before this one, or a fixture that has begun a build there): cargo finds there what the
# default build compiled (its fingerprints do not name the target directory). One rename
# puts the copy in place, so a build never starts on half a copy.
seed_from_debug() {
  local dir="$1"
  if [ ! -e "$dir" ] && [ -d target/debug ]; then
    rm -rf "$dir.seed" && mkdir "$dir.seed" && cp -a target/debug "$dir.seed/debug"
    mv -T "$dir.seed" "$dir" 2>/dev/null || rm -rf "$dir.seed"
  fi
}

# The agent with feature `sai`, which the real-SONiC tier's SAI tests start (run last in
# that tier), built once the default build has finished, beside the rest at the groups'
# niceness, in that tier's directory (target/sai), so `target/debug/qos-agent`, which other
# tests start, stays the default build. target/sai starts as a copy of target/debug, whose
# dependencies cargo then finds built (fingerprints do not name the target directory): 30
# CPU s instead of the 155 of a cold directory (docs/benchmarks.md). The copy is put in
# place by one rename, and only where the tier's fixture has not begun a build there itself.
# The headers are the ones libsaivs was built with, at the path the tier gives them
# (lab/realsonic.py).
build_sai_agent() {
  local runtime
  renice -n 5 -p "$BASHPID" >/dev/null
  seed_from_debug target/sai
  runtime="$(uv run --frozen python -m lab.realsonic orchagent-runtime)"
  SAI_INCLUDE_DIR="$runtime/include/sai" \
    cargo build -p qos-agent --features sai --bin qos-agent --target-dir target/sai
}

# The groups that need none of those binaries start at once, each in a process of its own at
# a lower priority than the build the rest waits for: the tiers that mostly wait (on SONiC's
# GCU and orchagent; on sshd and Ansible in network namespaces), and the API fuzzer, the
# longest single file, which on a worker of the rest would bound that group from below. The
# last group is every other test under tests/, so a new tier runs without being named here,
# spread over two pytest-xdist workers a test file at a time (a module's tests share its
# module fixtures and keep their order). Every process makes its own session fixtures
# (PostgreSQL, Redis, Prometheus, namespaces with random names, ephemeral ports) and keeps its
# own pytest cache.
FUZZ=tests/integration/test_api_fuzz.py
early_groups=(realsonic e2e fuzz)
group_args() {
  case "$1" in
    realsonic) echo tests/realsonic ;;
    e2e) echo tests/e2e ;;
    fuzz) echo "$FUZZ" ;;
    rest) echo tests --ignore=tests/realsonic --ignore=tests/e2e --ignore="$FUZZ" -n 2 --dist loadfile ;;
  esac
}

names_a_path=no
for arg in "$@"; do
  if [ -e "${arg%%::*}" ]; then names_a_path=yes; fi
done
narrowed=no
if [ $# -gt 0 ]; then narrowed=yes; fi

# Starts pytest group $1 with the extra arguments after it, at niceness $2. Each log ends with
# the group's slowest steps, where the command's time is to be looked for first.
start_group() {
  local group="$1" niceness="$2"
  shift 2
  # shellcheck disable=SC2046 # group_args is a list of words, none with spaces
  start "pytest-$group" nice -n "$niceness" uv run --frozen pytest -q --durations=25 \
    -o cache_dir=".pytest_cache/$group" $(group_args "$group") "$@"
}

start lint lint
start build build_for_tests
if [ "$names_a_path" = no ]; then
  for group in "${early_groups[@]}"; do start_group "$group" 5 "$@"; done
fi
wait_all build
if [[ " ${failed[*]} " == *" build "* ]]; then
  echo "== pytest: the rest not run (the build failed; those tests start its binaries)"
elif [ "$names_a_path" = yes ]; then
  start pytest uv run --frozen pytest -q "$@"
else
  start_group rest 0 "$@"
  start build-sai build_sai_agent
fi
# The Rust gate: no Python test waits for it, so it yields the cores to them, and it builds
# in a target directory of its own: cargo holds a target directory's lock for a whole
# command (a cold clippy or test build takes minutes on a loaded machine), and the tests'
# fixtures build what they start in target/ (finding it built), which must not wait on it.
# That directory starts as a copy of target/debug: the test profile's dependencies are the
# dev profile's (Cargo.toml), so its test build compiles those the tests alone need (tokio's
# test-util and what depends on tokio) and the workspace's crates, not every dependency again.
# Its SAI steps, its last, build there too, on the dependencies its tests and clippy left.
rust_gate() {
  renice -n 5 -p "$BASHPID" >/dev/null
  seed_from_debug target/gate
  CARGO_TARGET_DIR=target/gate ./scripts/test-rust.sh
}
start rust rust_gate
wait_all

steps_cpu="$(cat "$logs"/*.cpu 2>/dev/null | tr -d '~' | awk '{ s += $1 } END { print s + 0 }')"
echo "== $SECONDS s in all; the steps used $steps_cpu CPU seconds"
for step in "${failed[@]}"; do
  echo
  echo "==================== $step failed: $logs/$step.log ===================="
  cat "$logs/$step.log"
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "== FAILED: ${failed[*]}"
  exit 1
fi
echo "== all passed (logs in $logs)"
