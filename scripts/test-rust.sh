#!/usr/bin/env bash
# The Rust gate: formatting, lints (warnings are errors) and every crate's tests.
set -euo pipefail
cd "$(dirname "$0")/.."
# A target directory of its own: `cargo test` puts the binaries its tests start beside its
# test binaries, and those of qos-agent here are built unoptimised and with the SAI backend;
# target/debug/qos-agent, which the Python tests and the demo start, stays the default build.
# (The test command sets the same directory.)
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target/gate}"
# The SAI backend is behind a feature (no SAI headers or library are needed for the default
# build); it is linted and tested here against SONiC's virtual SAI (libsaivs) from the
# orchagent runtime bundle beside the clone (shared/sonic, or $SLUICE_SONIC_BUNDLE):
# lab/realsonic.py extracts it once into the real-SONiC tier's cache. The bindings are
# generated from the SAI headers libsaivs was built with (the bundle's include/sai, SAI
# v1.18.1; on a switch /usr/include/sai), and the fake vendor library of the other SAI test is
# built from them too.
SLUICE_ORCHAGENT_RUNTIME="$(uv run --frozen python -m lab.realsonic orchagent-runtime)"
export SLUICE_ORCHAGENT_RUNTIME
export SAI_INCLUDE_DIR="${SAI_INCLUDE_DIR:-$SLUICE_ORCHAGENT_RUNTIME/include/sai}"
echo "== cargo fmt"; cargo fmt --all --check
# Linted in both builds: the feature only adds code (no `cfg(not(feature = "sai"))`), but
# what only SAI code uses would be dead code, a warning, in the default build.
echo "== cargo clippy"; cargo clippy --workspace --all-targets -- -D warnings
echo "== cargo clippy (sai)"; cargo clippy -p qos-agent --features sai --all-targets -- -D warnings
# Tested once, with the feature: every test of the default build runs in it too, and building
# qos-agent's tests a second time without it cost 32 CPU s (docs/benchmarks.md).
echo "== cargo test (sai)"; cargo test --workspace --features qos-agent/sai "$@"
# The collector's ingest core, its own workspace (native/controller-core/Cargo.toml says why):
# the same gate, then the Python extension maturin builds (feature `python`; PyO3 reads the
# interpreter's configuration from the project's environment).
core=native/controller-core/Cargo.toml
echo "== controller-core: fmt, clippy, test"
cargo fmt --manifest-path "$core" --check
cargo clippy --manifest-path "$core" --all-targets -- -D warnings
cargo test --manifest-path "$core" "$@"
PYO3_PYTHON="${PYO3_PYTHON:-$PWD/.venv/bin/python}" \
  cargo clippy --manifest-path "$core" --features python --all-targets -- -D warnings
