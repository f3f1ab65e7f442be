#!/usr/bin/env bash
# Rebuilds probes.bpf.o from probes.bpf.c and records the source's hash beside it, which the
# crate's tests compare with the source (a stale object fails the tests). Needs clang and the
# libbpf headers: apt-get install clang libbpf-dev
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v clang >/dev/null || [ ! -e /usr/include/bpf/bpf_helpers.h ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang libbpf-dev
fi
arch=$(uname -m)
case $arch in x86_64) inc=x86_64-linux-gnu ;; aarch64) inc=aarch64-linux-gnu ;; *) inc=$arch-linux-gnu ;; esac
clang -O2 -g -target bpf -I"/usr/include/$inc" -Wall -Werror -c probes.bpf.c -o probes.bpf.o.tmp
# Debug line info is kept for the verifier's messages; DWARF sections are not needed to load.
llvm-strip -g probes.bpf.o.tmp 2>/dev/null || true
mv probes.bpf.o.tmp probes.bpf.o
sha256sum probes.bpf.c | cut -d' ' -f1 >probes.bpf.o.src-sha256
echo "built $(pwd)/probes.bpf.o ($(stat -c %s probes.bpf.o) bytes) with $(clang --version | head -1)"
