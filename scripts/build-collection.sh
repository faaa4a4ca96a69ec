#!/usr/bin/env bash
# Build the sluice.fabric Ansible collection tarball (sluice-fabric-<version>.tar.gz) into the
# given folder (default dist/). Install it with: ansible-galaxy collection install <tarball>
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-dist}"
mkdir -p "$out"
uv run --frozen ansible-galaxy collection build ansible_collections/sluice/fabric \
    --output-path "$out" --force
