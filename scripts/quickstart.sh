#!/usr/bin/env bash
# Sets up what netceil needs on a fresh Debian machine, builds it, and runs its main job:
# the default ceiling test on loopback (`netceil run`, about 20 s).
# Extra arguments are passed to `netceil run`, e.g. scripts/quickstart.sh --json.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v cc >/dev/null 2>&1 || need_apt+=(gcc libc6-dev)   # the bundled SQLite is C
command -v pkg-config >/dev/null 2>&1 || need_apt+=(pkg-config)
# `netceil lab` builds namespaces with ip and nft, and reads coalescing with ethtool.
command -v ip >/dev/null 2>&1 || need_apt+=(iproute2)
command -v nft >/dev/null 2>&1 || need_apt+=(nftables)
command -v ethtool >/dev/null 2>&1 || need_apt+=(ethtool)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}"
  else
    sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}"
  fi
fi

if ! command -v cargo >/dev/null 2>&1; then
  [ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "netceil needs a Rust toolchain (1.85 or newer) and none is installed." >&2
  echo "Install one with rustup (https://rustup.rs), then run this script again." >&2
  exit 1
fi

cargo build --release --locked -p netceil
exec target/release/netceil run "$@"
