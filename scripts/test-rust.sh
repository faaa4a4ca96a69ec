#!/usr/bin/env bash
# The Rust gate: formatting, lints (warnings are errors) and every crate's tests.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== cargo fmt"; cargo fmt --all --check
echo "== cargo clippy"; cargo clippy --workspace --all-targets -- -D warnings
echo "== cargo test"; cargo test --workspace "$@"
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
# The SAI backend is behind a feature (no SAI headers or library are needed for the default
# build); lint and test it too, against SONiC's virtual SAI (libsaivs) from the orchagent
# runtime bundle beside the clone (shared/sonic, or $SLUICE_SONIC_BUNDLE): lab/realsonic.py
# extracts it once into the real-SONiC tier's cache. The bindings are generated from the SAI
# headers libsaivs was built with (the bundle's include/sai, SAI v1.18.1; on a switch
# /usr/include/sai), and the fake vendor library of the other SAI test is built from them too.
SLUICE_ORCHAGENT_RUNTIME="$(uv run --frozen python -m lab.realsonic orchagent-runtime)"
export SLUICE_ORCHAGENT_RUNTIME
export SAI_INCLUDE_DIR="${SAI_INCLUDE_DIR:-$SLUICE_ORCHAGENT_RUNTIME/include/sai}"
# Run alone, in a target directory of its own (target/sai), so that target/debug/qos-agent,
# which the Python tests start, stays the default build. Under the test command the gate has
# its own directory already (CARGO_TARGET_DIR), whose test dependencies and checked crates
# these steps reuse: 48 CPU s for both there, against 93 in the real-SONiC tier's target/sai
# (docs/benchmarks.md).
sai=(--target-dir "${SAI_TARGET_DIR:-${CARGO_TARGET_DIR:-target/sai}}")
echo "== cargo clippy (sai)"; cargo clippy "${sai[@]}" -p qos-agent --features sai --all-targets -- -D warnings
echo "== cargo test (sai)"; cargo test "${sai[@]}" -p qos-agent --features sai "$@"
