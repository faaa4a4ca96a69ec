#!/usr/bin/env bash
# The test command: installs what it needs, then lints, type-checks and runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/bootstrap.sh
echo "== ruff"; uv run --frozen ruff check .
echo "== ruff format"; uv run --frozen ruff format --check .
echo "== mypy"; uv run --frozen mypy
echo "== pytest"; uv run --frozen pytest -q "$@"
