#!/usr/bin/env bash
# Every attack of issue 23 on netceil's listening endpoints, one after the other, with one
# binary: bench/attack/serve.sh (the far end: idle floods, slow loris, stalled handshakes,
# forged datagrams, while a keyed client runs tests) and bench/attack/metrics.sh (the
# Prometheus endpoint: pipelining, huge headers, connection floods, while a scraper scrapes).
# Each prints "held" or "failed" with its figures; this script exits non-zero if any failed.
#
# usage: bench/attack.sh [SECONDS] [CONNS]        (passed to each script)
#        NETCEIL=path/to/netceil to use a built binary (default: cargo build --release)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${NETCEIL:-}" ]; then
  cargo build --release -q -p netceil
  NETCEIL=$(realpath "${CARGO_TARGET_DIR:-target}")/release/netceil
fi
export NETCEIL
rc=0
for s in bench/attack/serve.sh bench/attack/metrics.sh; do
  echo "=== $s"
  "$s" "$@" || rc=1
done
exit $rc
