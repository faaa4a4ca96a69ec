#!/usr/bin/env bash
# The Rust gate: formatting, lints (warnings are errors) and every crate's tests.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== cargo fmt"; cargo fmt --all --check
echo "== cargo clippy"; cargo clippy --workspace --all-targets -- -D warnings
echo "== cargo test"; cargo test --workspace "$@"
# The SAI backend is behind a feature (no SAI library is needed for the default build);
# lint and test it too, against the fake SAI library its test compiles.
echo "== cargo clippy (sai)"; cargo clippy -p qos-agent --features sai --all-targets -- -D warnings
echo "== cargo test (sai)"; cargo test -p qos-agent --features sai "$@"
