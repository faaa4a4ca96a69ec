#!/usr/bin/env bash
# Installs everything sluice needs on a fresh Debian 12 machine of the project's kind.
# Idempotent: a second run installs nothing. Used by scripts/demo.sh and scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

apt_packages=()
[ -x /usr/lib/postgresql/15/bin/initdb ] || apt_packages+=(postgresql)
command -v redis-server >/dev/null || apt_packages+=(redis-server)
# Namespaced test hosts (lab/netns.py) and the host roles in playbooks/.
[ -x /usr/sbin/sshd ] || apt_packages+=(openssh-server)
[ -x /usr/sbin/nft ] || apt_packages+=(nftables)
command -v tc >/dev/null || apt_packages+=(iproute2)
command -v tcpdump >/dev/null || apt_packages+=(tcpdump)
# The YANG tests validate CONFIG_DB entries with libyang; its Python bindings (PyPI libyang,
# pinned <2.8 for bookworm's libyang 2.1) build against the C headers.
[ -f /usr/include/libyang/libyang.h ] || apt_packages+=(libyang2-dev)
command -v gcc >/dev/null || apt_packages+=(gcc)
# Telemetry history (lab/prometheus.py) and its rule checks (promtool comes with it).
command -v prometheus >/dev/null || apt_packages+=(prometheus)
# The dashboard's browser tests (selenium driving headless chromium).
command -v chromium >/dev/null || apt_packages+=(chromium)
command -v chromedriver >/dev/null || apt_packages+=(chromium-driver)
# qos-agent's `sai` feature: bindgen generates the SAI bindings through libclang, and the
# test's fake SAI library is compiled with the system C compiler (gcc, above).
compgen -G "/usr/lib/llvm-*/lib/libclang.so" >/dev/null || apt_packages+=(libclang-dev)
# SONiC's own software for the real-SONiC test tier and the demo's real switches (lab/realsonic.py):
# its runtime bundles sit beside the clone (shared/sonic, or $SLUICE_SONIC_BUNDLE), each with the
# Debian packages it needs listed; python3-venv and python3-yaml for its config updater (GCU).
sonic_bundle="${SLUICE_SONIC_BUNDLE:-$PWD/../shared/sonic}"
if [ -d "$sonic_bundle" ]; then
  for pkg in $(cat "$sonic_bundle"/apt-packages*.txt 2>/dev/null) python3-venv python3-yaml; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || apt_packages+=("$pkg")
  done
fi
if [ ${#apt_packages[@]} -gt 0 ]; then
  echo "bootstrap: apt-get install ${apt_packages[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  apt-get install -y -q --no-install-recommends "${apt_packages[@]}" >/dev/null
fi

# Rust comes with the machine (rustup's toolchain); Debian's cargo is too old for our crates.
if ! command -v cargo >/dev/null && [ ! -x "$HOME/.cargo/bin/cargo" ]; then
  echo "bootstrap: cargo not found: this project needs the machine's Rust toolchain (rustup)" >&2
  exit 1
fi
# `uv sync` builds the collector's ingest core (native/controller-core) with maturin and cargo.
export PATH="$HOME/.cargo/bin:$PATH"

# Go comes with the machine too (/usr/local/go): tests/integration/docker/compose-check loads
# docker-compose.yml with compose-go, which needs a newer Go than Debian's golang.
if ! command -v go >/dev/null && [ ! -x /usr/local/go/bin/go ]; then
  echo "bootstrap: go not found: this project needs the machine's Go toolchain (/usr/local/go)" >&2
  exit 1
fi

if ! command -v uv >/dev/null; then
  echo "bootstrap: pip install uv"
  python3 -m pip install -q --disable-pip-version-check uv==0.13.8
fi
uv sync --frozen --quiet
echo "bootstrap: ok"
