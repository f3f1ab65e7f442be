#!/usr/bin/env bash
# Two netceil binaries' own CPU as observers, alternated (A B, then B A, ...): `netceil watch`
# at one interval, storing or not, measured the way overhead.sh measures it (nanoseconds on
# CPU of all its threads from /proc/PID/task/*/schedstat, over SECONDS of wall time after a
# 2 s warm-up). Prints each round's figures and ratio B / A, then the medians and the range of
# the per-round ratios (the machine is shared and noisy: only the ratio within a round means
# much).
#
# A (or B) may be the word `floor`: bench/sampler_floor.c, built here, which only reads the files
# netceil's sampler always reads (the fast tier every interval, PSI every 100 ms), parses and
# keeps nothing, and sleeps on the same fixed schedule: the kernel's share, a lower bound no /proc
# sampler at that interval goes under. `bench/sampler-ab.sh floor target/release/netceil` prints
# netceil's cost as a multiple of that floor.
#
# usage: bench/sampler-ab.sh A B [ROUNDS] [INTERVAL] [store|no-store] [SECONDS]
#   defaults: 5 rounds, 10ms, no-store, 10 s. Example:
#   bench/sampler-ab.sh /tmp/nc-base target/release/netceil 5 10ms store
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: $0 A B [ROUNDS] [INTERVAL] [store|no-store] [SECONDS]" >&2; exit 2; }
a=$1 b=$2 rounds=${3:-5} interval=${4:-10ms} mode=${5:-no-store} secs=${6:-10}
warm=2
floor=bench/out/sampler_floor
for x in "$a" "$b"; do
  if [ "$x" = floor ]; then
    mkdir -p bench/out
    command -v cc >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc; }
    cc -O2 -o "$floor" bench/sampler_floor.c
  else
    [ -x "$x" ] || { echo "$0: $x is not an executable" >&2; exit 2; }
  fi
done
# The interval in whole milliseconds, for the floor.
interval_ms=$(python3 -c "
import re, sys
m = re.fullmatch(r'([0-9.]+)(ms|s|m|h)', sys.argv[1])
if not m: sys.exit(f'interval {sys.argv[1]!r}: expected a number and ms, s, m or h, as 10ms')
print(max(1, round(float(m.group(1)) * {'ms': 1, 's': 1e3, 'm': 6e4, 'h': 3.6e6}[m.group(2)])))
" "$interval")
case $mode in
  store) store=() ;;
  no-store) store=(--no-store) ;;
  *) echo "$0: mode is store or no-store, not $mode" >&2; exit 2 ;;
esac
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

pid_cpu() { # nanoseconds on CPU of every thread of one process
  local t=0 f
  for f in /proc/$1/task/*/schedstat; do
    [ -r "$f" ] || continue
    t=$((t + $(awk '{print $1}' "$f")))
  done
  echo $t
}

# Steady CPU % of one core of one binary: after the warm-up, over $secs.
steady() {
  local bin=$1 db=$2 pid a b
  if [ "$bin" = floor ]; then
    "$floor" "$interval_ms" $((secs + warm + 5)) &
  else
    NETCEIL_DB=$db "$bin" watch "${store[@]}" -q --interval "$interval" \
      --duration $((secs + warm + 5)) >/dev/null 2>&1 &
  fi
  pid=$!
  sleep "$warm"
  a=$(pid_cpu $pid)
  sleep "$secs"
  b=$(pid_cpu $pid)
  kill $pid 2>/dev/null || true
  wait $pid 2>/dev/null || true
  rm -f "$db" "$db-wal" "$db-shm"
  python3 -c "print(f'{100.0 * ($b - $a) / 1e9 / $secs:.4f}')"
}

fa=() fb=()
echo "interval $interval, $mode, $rounds rounds of $secs s after a $warm s warm-up" >&2
for r in $(seq 1 "$rounds"); do
  # The first of the pair alternates, so neither always runs on a warmer machine.
  if [ $((r % 2)) = 1 ]; then order="a b"; else order="b a"; fi
  for w in $order; do
    bin=$a; [ "$w" = b ] && bin=$b
    v=$(steady "$bin" "$tmp/$w.db")
    if [ "$w" = a ]; then va=$v; else vb=$v; fi
  done
  fa+=("$va"); fb+=("$vb")
  printf 'round %d  A %s %%  B %s %%  B/A %s  (load %s)\n' "$r" "$va" "$vb" \
    "$(python3 -c "print(f'{$vb/$va:.3f}' if $va else 'n/a')")" "$(cut -d' ' -f1 /proc/loadavg)"
done
python3 - "${fa[*]}" "${fb[*]}" "$interval $mode" <<'PY'
import statistics as st, sys
a = [float(x) for x in sys.argv[1].split()]
b = [float(x) for x in sys.argv[2].split()]
r = [y / x for x, y in zip(a, b) if x]
print(f"{sys.argv[3]}: median A {st.median(a):.4f} %  median B {st.median(b):.4f} %  "
      f"B/A per round: median {st.median(r):.3f}, range {min(r):.3f}-{max(r):.3f} ({len(r)} rounds)")
PY
