#!/usr/bin/env bash
# The observer must not change what it observes. Measures, over loopback only:
#  1. netceil watch's own CPU per second of wall time, at 1 s, 100 ms and 10 ms intervals
#     (from /proc/PID/task/*/schedstat, nanoseconds on CPU, the same way for every tool:
#     utime+stime ticks are too coarse for tools this cheap), against the set of
#     peers needed for an equal picture: vmstat 1 + mpstat -P ALL 1 + sar -n DEV,EDEV,SOFT 1;
#  2. iperf3 TCP throughput on loopback with netceil watch around it, with the peers' set
#     around it, and with nothing, in alternating rounds; prints the median ratios.
#
# usage: bench/overhead.sh [ROUNDS] [SECONDS]     (defaults: 5 rounds of 10 s)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
secs=${2:-10}
out=bench/out
mkdir -p "$out"

need=()
command -v iperf3 >/dev/null || need+=(iperf3)
command -v mpstat >/dev/null || need+=(sysstat)
command -v python3 >/dev/null || need+=(python3)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi
cargo build --release -q -p netceil
nc=$(realpath "${CARGO_TARGET_DIR:-target}")/release/netceil
export NETCEIL_DB="$PWD/$out/overhead.db"
port=$((20000 + RANDOM % 20000))
pids_cpu() { # nanoseconds on CPU of the given pids, all their threads
  local t=0 f
  for p in "$@"; do
    for f in /proc/$p/task/*/schedstat; do
      [ -r "$f" ] || continue
      t=$((t + $(awk '{print $1}' "$f")))
    done
  done
  echo $t
}

cost_of() { # run a command for $secs, print its CPU % of one core
  "$@" >/dev/null 2>&1 & local pid=$!
  sleep "$secs"
  local ns; ns=$(pids_cpu $pid $(pgrep -P $pid || true))
  kill $pid 2>/dev/null; wait $pid 2>/dev/null || true
  python3 -c "print(f'{100.0 * $ns / 1e9 / $secs:.4f}')"
}

peers_cost() { # the peer set together
  vmstat 1 >/dev/null & local a=$!
  mpstat -P ALL 1 >/dev/null & local b=$!
  sar -n DEV,EDEV,SOFT 1 >/dev/null 2>&1 & local c=$!
  sleep "$secs"
  local ns; ns=$(pids_cpu $a $b $c $(pgrep -P $c || true))
  kill $a $b $c 2>/dev/null; wait $a $b $c 2>/dev/null || true
  python3 -c "print(f'{100.0 * $ns / 1e9 / $secs:.4f}')"
}

iperf_once() { # optional observer command in "$@"; prints receiver bit/s
  if [ $# -gt 0 ]; then "$@" >/dev/null 2>&1 & obs=$!; else obs=; fi
  iperf3 -s -p "$port" -1 >/dev/null 2>&1 & srv=$!
  sleep 0.3
  iperf3 -c 127.0.0.1 -p "$port" -t "$secs" -J >"$out/ovh_iperf.json" 2>/dev/null || true
  wait $srv 2>/dev/null || true
  if [ -n "$obs" ]; then kill $obs 2>/dev/null; wait $obs 2>/dev/null || true; fi
  python3 -c "import json; print(json.load(open('$out/ovh_iperf.json'))['end']['sum_received']['bits_per_second'])"
}

peers_bg() { vmstat 1 & mpstat -P ALL 1 & sar -n DEV,EDEV,SOFT 1 & wait; }

declare -a c1 c100 c10 cp base with_nc with_peers
for r in $(seq 1 "$rounds"); do
  echo "round $r/$rounds" >&2
  c1+=("$(cost_of "$nc" watch --no-store -q --interval 1s --duration $((secs + 5)))")
  c100+=("$(cost_of "$nc" watch --no-store -q --interval 100ms --duration $((secs + 5)))")
  c10+=("$(cost_of "$nc" watch --no-store -q --interval 10ms --duration $((secs + 5)))")
  cp+=("$(peers_cost)")
  base+=("$(iperf_once)")
  with_nc+=("$(iperf_once "$nc" watch --no-store -q --interval 1s --duration $((secs + 5)))")
  with_peers+=("$(iperf_once bash -c "$(declare -f peers_bg); peers_bg")")
done
pkill -f "mpstat -P ALL 1" 2>/dev/null || true; pkill -f "sar -n DEV" 2>/dev/null || true; pkill -x vmstat 2>/dev/null || true
rm -f "$NETCEIL_DB" "$NETCEIL_DB-wal" "$NETCEIL_DB-shm"

python3 - <<PY
import statistics as st
m=lambda s:[float(x) for x in s.split()]
c1,c100,c10,cp=m("${c1[*]}"),m("${c100[*]}"),m("${c10[*]}"),m("${cp[*]}")
b,wn,wp=m("${base[*]}"),m("${with_nc[*]}"),m("${with_peers[*]}")
print(f"rounds: $rounds x $secs s, medians (CPU from /proc/PID/task/*/schedstat, ns)")
print(f"netceil watch CPU, 1 s interval    {st.median(c1):7.4f} % of one core   (target <= 0.2 %)")
print(f"netceil watch CPU, 100 ms interval {st.median(c100):7.4f} % of one core")
print(f"netceil watch CPU, 10 ms interval  {st.median(c10):7.4f} % of one core   (target <= 2 %)")
print(f"peers (vmstat+mpstat+sar) at 1 s   {st.median(cp):7.4f} % of one core   ratio netceil/peers {st.median(c1)/max(st.median(cp),1e-9):.2f}")
r_nc=st.median([w/x for w,x in zip(wn,b)]); r_p=st.median([w/x for w,x in zip(wp,b)])
print(f"iperf3 TCP with netceil watch / without   {r_nc:.4f}   (target >= 0.99)")
print(f"iperf3 TCP with peers' set    / without   {r_p:.4f}")
PY
