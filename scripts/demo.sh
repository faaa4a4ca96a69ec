#!/usr/bin/env bash
# The demo: installs what it needs, then runs sluice end to end (see lab/demo.py).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/bootstrap.sh
exec uv run --frozen python -m lab.demo "$@"
