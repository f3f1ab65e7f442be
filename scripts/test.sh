#!/usr/bin/env bash
# Runs netceil's whole test suite. Installs the system tools some tests drive (sysstat's
# vmstat/mpstat, iperf3) when they are missing and we are root; tests that need them say so
# when they cannot run.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v cc >/dev/null 2>&1 || missing+=(gcc libc6-dev)
command -v iperf3 >/dev/null 2>&1 || missing+=(iperf3)
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
if [ ${#missing[@]} -gt 0 ] && [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi

if ! command -v cargo >/dev/null 2>&1 && [ -f "$HOME/.cargo/env" ]; then . "$HOME/.cargo/env"; fi
cargo test --workspace --locked "$@"
