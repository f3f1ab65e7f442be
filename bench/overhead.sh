#!/usr/bin/env bash
# The observer must not change what it observes. Measures, over loopback only:
#  1. netceil watch's own CPU per second of wall time, at 1 s, 100 ms and 10 ms intervals
#     (from /proc/PID/task/*/schedstat, nanoseconds on CPU, the same way for every tool:
#     utime+stime ticks are too coarse for tools this cheap), against the set of
#     peers needed for an equal picture: vmstat 1 + mpstat -P ALL 1 + sar -n DEV,EDEV,SOFT 1.
#     Steady state: CPU over SECONDS of wall time after a 2 s warm-up, for netceil and
#     the peers alike; the warm-up's CPU (start-up: host facts, store, first samples) is
#     printed apart. netceil is measured storing its run (the default) and with --no-store;
#  2. iperf3 TCP throughput on loopback with netceil watch beside it against without, and
#     the same for the peers' set: within one iperf3 session per round, the observer running
#     in alternate 4 s blocks (see iperf_paired); prints the median ratios.
#
# usage: bench/overhead.sh [ROUNDS] [SECONDS] [all|cpu|iperf]   (defaults: 5 rounds of 10 s, all)
#   NC=path   the netceil binary (default: built here with cargo build --release)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
secs=${2:-10}
part=${3:-all}
warm=2
out=bench/out
mkdir -p "$out"

need=()
command -v iperf3 >/dev/null || need+=(iperf3)
command -v mpstat >/dev/null || need+=(sysstat)
command -v python3 >/dev/null || need+=(python3)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi
if [ -z "${NC:-}" ]; then
  cargo build --release -q -p netceil
  NC=${CARGO_TARGET_DIR:-target}/release/netceil
fi
nc=$(realpath "$NC")
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

descendants() { # every process below $1
  local c
  for c in $(pgrep -P "$1"); do echo "$c"; descendants "$c"; done
}

# Prints "steady_pct startup_ms" for the processes started by "$@" (a command, or a shell
# function starting several): CPU % of one core over $secs after $warm s, and CPU ms in the
# first $warm s.
steady_cost() {
  local pids a b
  "$@" >/dev/null 2>&1 &
  local lead=$!
  sleep "$warm"
  pids="$lead $(descendants $lead)"
  a=$(pids_cpu $pids)
  sleep "$secs"
  b=$(pids_cpu $pids)
  # Anything started since the first look, too: all by PID.
  kill $pids $(descendants $lead) 2>/dev/null || true; wait $lead 2>/dev/null || true
  python3 -c "print(f'{100.0 * ($b - $a) / 1e9 / $secs:.4f} {$a / 1e6:.2f}')"
}

peers_set() { # the peers' set, children of this shell
  vmstat 1 >/dev/null &
  mpstat -P ALL 1 >/dev/null &
  sar -n DEV,EDEV,SOFT 1 >/dev/null 2>&1 &
  wait
}


# One iperf3 session of 8 blocks of 4 s, the observer in "$@" running in every other block;
# prints the median per-second throughput with the observer over that without. A session's
# speed depends on where the scheduler put its two threads, which varies from session to
# session by ±10 % here: comparing inside one session removes that. The first second of
# each block (the observer starting or stopping) is left out.
iperf_paired() {
  local block=4 blocks=8 k
  iperf3 -s -p "$port" -1 >/dev/null 2>&1 & local srv=$!
  sleep 0.3
  iperf3 -c 127.0.0.1 -p "$port" -t $((block * blocks)) -i 1 -J >"$out/ovh_paired.json" 2>/dev/null &
  local cli=$!
  for k in $(seq 0 $((blocks - 1))); do
    if [ $((k % 2)) -eq 1 ]; then
      "$@" >/dev/null 2>&1 & local obs=$!
      sleep $block
      # The observer and everything it started, by PID (descendants first: they outlive a
      # killed parent shell otherwise).
      kill $(descendants $obs) $obs 2>/dev/null || true; wait $obs 2>/dev/null || true
    else
      sleep $block
    fi
  done
  wait $cli 2>/dev/null || true
  wait $srv 2>/dev/null || true
  python3 - "$out/ovh_paired.json" $block <<'PY'
import json, statistics as st, sys
d = json.load(open(sys.argv[1])); block = int(sys.argv[2])
on, off = [], []
for i, iv in enumerate(d["intervals"]):
    s = iv["sum"]
    if i % block == 0:
        continue
    (on if (i // block) % 2 == 1 else off).append(s["bits_per_second"])
print(st.median(on) / st.median(off))
PY
}

declare -a c1 c100 c10 c1s c10s cp paired_nc paired_peers
watch_for=$((secs + warm + 5))
for r in $(seq 1 "$rounds"); do
  echo "round $r/$rounds (load average $(cut -d" " -f1-3 /proc/loadavg))" >&2
  if [ "$part" != iperf ]; then
    c1+=("$(steady_cost "$nc" watch --no-store -q --interval 1s --duration $watch_for)")
    c100+=("$(steady_cost "$nc" watch --no-store -q --interval 100ms --duration $watch_for)")
    c10+=("$(steady_cost "$nc" watch --no-store -q --interval 10ms --duration $watch_for)")
    c1s+=("$(steady_cost "$nc" watch -q --interval 1s --duration $watch_for)")
    c10s+=("$(steady_cost "$nc" watch -q --interval 10ms --duration $watch_for)")
    cp+=("$(steady_cost bash -c "$(declare -f peers_set); peers_set")")
  fi
  if [ "$part" != cpu ]; then
    paired_nc+=("$(iperf_paired "$nc" watch --no-store -q --interval 1s --duration $((secs + 60)))")
    paired_peers+=("$(iperf_paired bash -c "$(declare -f peers_set); peers_set")")
  fi
done
rm -f "$NETCEIL_DB" "$NETCEIL_DB-wal" "$NETCEIL_DB-shm"

python3 - <<PY
import statistics as st
def pairs(s):
    v=[float(x) for x in s.split()]
    return v[0::2], v[1::2]
m=lambda s:[float(x) for x in s.split()]
rows=[("netceil watch, 1 s, --no-store","${c1[*]}","<= 0.2 %"),
      ("netceil watch, 1 s, storing","${c1s[*]}","<= 0.2 %"),
      ("netceil watch, 100 ms, --no-store","${c100[*]}",""),
      ("netceil watch, 10 ms, --no-store","${c10[*]}","<= 2 %"),
      ("netceil watch, 10 ms, storing","${c10s[*]}","<= 2 %"),
      ("peers: vmstat+mpstat+sar at 1 s","${cp[*]}","")]
print(f"rounds: $rounds x $secs s after a ${warm} s warm-up; medians; CPU from /proc/PID/task/*/schedstat (ns)")
med={}
if "$part" != "iperf":
    print(f"{'observer':36s} {'steady CPU':>12s} {'warm-up CPU':>12s}  target")
    per={}
    for name,vals,target in rows:
        steady,start=pairs(vals)
        med[name]=st.median(steady)
        per[name]=steady
        print(f"{name:36s} {st.median(steady):10.4f} % {st.median(start):9.1f} ms  {target}"
              f"   (range {min(steady):.4f}..{max(steady):.4f})")
    p=med["peers: vmstat+mpstat+sar at 1 s"]
    peers=per["peers: vmstat+mpstat+sar at 1 s"]
    for name in ("netceil watch, 1 s, --no-store","netceil watch, 1 s, storing"):
        # Each round's ratio too: netceil and the peers of the same round, side by side.
        r=[a/max(b,1e-9) for a,b in zip(per[name],peers)]
        print(f"ratio {name} / peers: {med[name]/max(p,1e-9):.2f}   (target < 1; per round {min(r):.2f}..{max(r):.2f})")
if "$part" != "cpu":
    rn=sorted(m("${paired_nc[*]}")); rp=sorted(m("${paired_peers[*]}"))
    q=lambda v:(v[len(v)//4], v[(3*len(v))//4])
    print("iperf3 TCP, one 32 s session per round, observer on in alternate 4 s blocks:")
    print(f"  with netceil watch / without   {st.median(rn):.4f}   (target >= 0.99; quartiles {q(rn)[0]:.3f}..{q(rn)[1]:.3f})")
    print(f"  with peers' set    / without   {st.median(rp):.4f}   (quartiles {q(rp)[0]:.3f}..{q(rp)[1]:.3f})")
PY
