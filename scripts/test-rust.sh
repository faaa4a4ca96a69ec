#!/usr/bin/env bash
# The Rust gate: formatting, lints (warnings are errors) and every crate's tests.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== cargo fmt"; cargo fmt --all --check
echo "== cargo clippy"; cargo clippy --workspace --all-targets -- -D warnings
echo "== cargo test"; cargo test --workspace "$@"
