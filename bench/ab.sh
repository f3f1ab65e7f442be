#!/usr/bin/env bash
# Two netceil binaries on the same workload, alternated (A B A B ...), to check that a change
# did not slow a path it was not meant to touch. Prints each round's figure, the medians and
# the ratio B / A, with the range of the per-round ratios (this machine is shared and noisy:
# only the ratio within a round means much).
#
# usage: bench/ab.sh A B ROUNDS FIGURE -- NETCEIL-ARGS...
#   FIGURE: a key path into netceil's --json results, e.g. rx_app_pps, rx_app_bits_per_s,
#   tx_pps, rtt_p50_us. Example:
#   bench/ab.sh /tmp/nc-old target/release/netceil 5 rx_app_pps -- run udp --size 64 --duration 5
set -euo pipefail
[ $# -ge 6 ] && [ "$5" = -- ] || { echo "usage: $0 A B ROUNDS FIGURE -- NETCEIL-ARGS..." >&2; exit 2; }
a=$1 b=$2 rounds=$3 figure=$4; shift 5
for x in "$a" "$b"; do [ -x "$x" ] || { echo "$0: $x is not an executable" >&2; exit 2; }; done
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pick() { python3 -c 'import json,sys
d=json.load(open(sys.argv[1])); d=d[0] if isinstance(d,list) else d
v=d["results"]
for k in sys.argv[2].split("."): v=v[k]
print(v)' "$1" "$2"; }
fa=() fb=()
for r in $(seq 1 "$rounds"); do
  # The first of the pair alternates too, so neither always runs on a warmer machine.
  if [ $((r % 2)) = 1 ]; then order="a b"; else order="b a"; fi
  for w in $order; do
    bin=$a; [ "$w" = b ] && bin=$b
    "$bin" "$@" --json -q --no-store >"$tmp/$w.json"
  done
  va=$(pick "$tmp/a.json" "$figure"); vb=$(pick "$tmp/b.json" "$figure")
  fa+=("$va"); fb+=("$vb")
  printf 'round %d  A %s  B %s  B/A %s\n' "$r" "$va" "$vb" "$(python3 -c "print(f'{$vb/$va:.3f}' if $va else 'n/a')")"
done
python3 - "${fa[*]}" "${fb[*]}" "$figure" <<'PY'
import statistics as st, sys
a = [float(x) for x in sys.argv[1].split()]
b = [float(x) for x in sys.argv[2].split()]
r = [y / x for x, y in zip(a, b) if x]
print(f"{sys.argv[3]}: median A {st.median(a):.6g}  median B {st.median(b):.6g}  "
      f"B/A per round: median {st.median(r):.3f}, range {min(r):.3f}-{max(r):.3f} ({len(r)} rounds)")
PY
