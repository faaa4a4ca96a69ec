#!/usr/bin/env bash
# The test command: installs what it needs, then lints, type-checks and runs every test.
# Rust runs first: the Python integration tests start the Rust binaries it builds
# (the virtual switch's data plane, the qos-agent).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
./scripts/bootstrap.sh
echo "== ruff"; uv run --frozen ruff check .
echo "== ruff format"; uv run --frozen ruff format --check .
echo "== mypy"; uv run --frozen mypy
./scripts/test-rust.sh
echo "== ansible collection"; ./scripts/build-collection.sh target/collection
echo "== pytest"; uv run --frozen pytest -q "$@"
