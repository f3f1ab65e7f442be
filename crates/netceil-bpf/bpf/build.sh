#!/usr/bin/env bash
# Rebuilds probes.bpf.o from probes.bpf.c. The source's SHA-256 is compiled into the object
# (section .netceil.source_sha256), and the crate's test compares it with the source's hash:
# an object built from another source fails the tests. Needs clang and the libbpf headers:
# apt-get install clang libbpf-dev
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v clang >/dev/null || [ ! -e /usr/include/bpf/bpf_helpers.h ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang libbpf-dev
fi
arch=$(uname -m)
case $arch in x86_64) inc=x86_64-linux-gnu ;; aarch64) inc=aarch64-linux-gnu ;; *) inc=$arch-linux-gnu ;; esac
src_sha256=$(sha256sum probes.bpf.c | cut -d' ' -f1)
clang -O2 -g -target bpf -I"/usr/include/$inc" -Wall -Werror \
  -DNETCEIL_SOURCE_SHA256="\"$src_sha256\"" -c probes.bpf.c -o probes.bpf.o.tmp
# Debug line info is kept for the verifier's messages; DWARF sections are not needed to load.
llvm-strip -g probes.bpf.o.tmp 2>/dev/null || true
mv probes.bpf.o.tmp probes.bpf.o
echo "built $(pwd)/probes.bpf.o ($(stat -c %s probes.bpf.o) bytes) from source sha256 $src_sha256 with $(clang --version | head -1)"
