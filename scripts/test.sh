#!/usr/bin/env bash
# Runs netceil's whole test suite. Installs the system tools some tests drive when they are
# missing and we are root: gcc (the bundled SQLite), iproute2, util-linux's taskset (a test
# pins netceil to one core), chromium (the HTML report is loaded in a real browser), and
# nftables and ethtool (the lab's topologies and knobs), and bpftool (the probe tests check
# that no program or map of netceil's is left loaded), and prometheus (a real server scrapes
# `--metrics-listen`; installed without its recommends, which are exporters and daemons the
# tests do not need).
# Without root, tests that need a missing tool skip and say why.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v cc >/dev/null 2>&1 || missing+=(gcc libc6-dev)
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
command -v taskset >/dev/null 2>&1 || missing+=(util-linux)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v nft >/dev/null 2>&1 || missing+=(nftables)
command -v ethtool >/dev/null 2>&1 || missing+=(ethtool)
command -v bpftool >/dev/null 2>&1 || missing+=(bpftool)
lean=()
command -v prometheus >/dev/null 2>&1 || lean+=(prometheus)
if [ $((${#missing[@]} + ${#lean[@]})) -gt 0 ] && [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  apt-get update -qq
  if [ ${#missing[@]} -gt 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
  fi
  if [ ${#lean[@]} -gt 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${lean[@]}"
  fi
fi

if ! command -v cargo >/dev/null 2>&1 && [ -f "$HOME/.cargo/env" ]; then . "$HOME/.cargo/env"; fi
cargo test --workspace --locked "$@"
