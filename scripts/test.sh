#!/usr/bin/env bash
# The test command: installs what it needs, then lints, type-checks and runs every test.
#
# Independent steps run side by side, each into its own log (docs/benchmarks.md, "The test
# command's time", has the figures that chose the split): the linters beside the Rust gate,
# then pytest as one process per group of tiers. The Rust gate runs before pytest: the Python
# integration tests start the binaries it builds (the virtual switch's data plane, the
# qos-agent). Each step's last line is printed as it ends, a failed step's whole log after
# everything has ended, and the command exits non-zero when any step failed.
#
# Extra arguments go to pytest: options alone (`-x`, `-k expr`) go to every group; when one
# names a path (`tests/unit/test_house.py::test_x`), a single pytest runs them as given.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
./scripts/bootstrap.sh

logs="$(mktemp -d "${TMPDIR:-/tmp}/sluice-test-XXXXXX")"
declare -A pid_step=() started=()
failed=()

# Starts step $1 in the background: the rest of the arguments, output to $logs/$1.log.
start() {
  local step="$1"
  shift
  "$@" >"$logs/$step.log" 2>&1 </dev/null &
  pid_step[$!]="$step"
  started[$step]="$SECONDS"
  echo "== $step: started (log $logs/$step.log)"
}

# Waits for every started step (or, given a step's name, until that one has ended), printing
# each one's outcome and last line as it ends. A pytest group that selected nothing (exit 5)
# is no failure when extra options narrowed it.
wait_all() {
  local until="${1:-}" pid rc step last
  while [ ${#pid_step[@]} -gt 0 ]; do
    if [ -n "$until" ] && ! running "$until"; then return 0; fi
    rc=0
    wait -n -p pid "${!pid_step[@]}" || rc=$?
    step="${pid_step[$pid]}"
    unset "pid_step[$pid]"
    if [ "$rc" -eq 5 ] && [[ "$step" == pytest-* ]] && [ "$narrowed" = yes ]; then rc=0; fi
    last="$(tail -n 1 "$logs/$step.log")"
    if [ "$rc" -eq 0 ]; then
      echo "== $step: ok in $((SECONDS - started[$step])) s: $last"
    else
      echo "== $step: FAILED (exit $rc) in $((SECONDS - started[$step])) s: $last"
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

rust_and_collection() {
  ./scripts/test-rust.sh
  echo "== ansible collection"; ./scripts/build-collection.sh target/collection
}

# The tiers that mostly wait (on SONiC's GCU and orchagent, on sshd and Ansible in network
# namespaces) each get a process of their own, started beside the Rust gate (they build what
# they run of it themselves) at a lower priority than the gate, which the rest waits for;
# the last group is every other
# test under tests/, so a new tier runs without being named here, spread over two pytest-xdist
# workers a test file at a time (a module's tests share its module fixtures and keep their
# order). Every process makes its own session fixtures (PostgreSQL, Redis, Prometheus,
# namespaces with random names, ephemeral ports) and keeps its own pytest cache.
early_groups=(realsonic e2e)
group_args() {
  case "$1" in
    realsonic) echo tests/realsonic ;;
    e2e) echo tests/e2e ;;
    rest) echo tests --ignore=tests/realsonic --ignore=tests/e2e -n 2 --dist loadfile ;;
  esac
}

names_a_path=no
for arg in "$@"; do
  if [ -e "${arg%%::*}" ]; then names_a_path=yes; fi
done
narrowed=no
if [ $# -gt 0 ]; then narrowed=yes; fi

# Starts pytest group $1 with the extra arguments after it, at niceness $2.
start_group() {
  local group="$1" niceness="$2"
  shift 2
  # shellcheck disable=SC2046 # group_args is a list of words, none with spaces
  start "pytest-$group" nice -n "$niceness" uv run --frozen pytest -q \
    -o cache_dir=".pytest_cache/$group" $(group_args "$group") "$@"
}

start lint lint
start rust rust_and_collection
if [ "$names_a_path" = no ]; then
  for group in "${early_groups[@]}"; do start_group "$group" 5 "$@"; done
fi
wait_all rust
if [[ " ${failed[*]} " == *" rust "* ]]; then
  echo "== pytest: the rest not run (the Rust gate failed; those tests start its binaries)"
elif [ "$names_a_path" = yes ]; then
  start pytest uv run --frozen pytest -q "$@"
else
  start_group rest 0 "$@"
fi
wait_all

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
