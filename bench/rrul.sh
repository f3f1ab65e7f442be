#!/usr/bin/env bash
# Latency under load (RRUL): netceil run rrul beside the same test run by peers, on loopback and
# across two network namespaces this script makes (a veth pair with a tbf shaper of 50 Mbit/s
# and a large limit on each end, so a queue builds in both directions).
#
# The peer would be flent's rrul, but it drives netperf, which Debian ships only in non-free
# (not installable here); the script says so and runs the same flows by hand: iperf3 -P N up
# and iperf3 -P N -R down at once, beside sockperf ping-pong at the same probe rate (64 B UDP),
# with an idle phase of sockperf alone first. Both tools print round-trip p50 and p99 idle and
# loaded, and the inflation (loaded - idle); the last lines are the medians over the rounds.
#
# usage: [NETCEIL_BIN=…] flock /tmp/netceil-bench.lock bench/rrul.sh [ROUNDS] [SECONDS] [FLOWS] [RATE] [lo|ns|both]
#   defaults: 3 rounds, 10 s loaded (+2 s idle), 4 flows per direction, 100 probes/s, both
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3} secs=${2:-10} flows=${3:-4} rate=${4:-100} where=${5:-both}
idle=2
out=bench/out/rrul
mkdir -p "$out"
need=()
command -v iperf3 >/dev/null || need+=(iperf3)
command -v sockperf >/dev/null || need+=(sockperf)
command -v python3 >/dev/null || need+=(python3)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi
# flent's rrul drives netperf; without netperf it cannot run, and this script then compares
# with the same flows by hand. (It does not parse flent's own output: where netperf exists,
# run `flent rrul -H HOST` beside it.)
if command -v flent >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq flent >/dev/null 2>&1; then
  if command -v netperf >/dev/null; then
    echo "flent and netperf are installed: this script still compares with iperf3 + sockperf; run flent rrul by hand beside it"
  else
    echo "flent is installed, but its rrul test needs netperf, which is not installable here ($(apt-cache policy netperf 2>/dev/null | awk '/Candidate/ {print "apt candidate: " $2}')); the peer is the same flows by hand: iperf3 + sockperf"
  fi
else
  echo "flent did not install; the peer is the same flows by hand: iperf3 + sockperf"
fi
peer=hand
# NETCEIL_BIN: a netceil built beforehand, so the shared lock is not held while compiling.
if [ -z "${NETCEIL_BIN:-}" ]; then
  cargo build --release -q -p netceil
  NETCEIL_BIN=${CARGO_TARGET_DIR:-target}/release/netceil
fi
nc=$(realpath "$NETCEIL_BIN")
tag=ncrrul$$
nsa=$tag-a nsb=$tag-b
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  ip netns del "$nsa" 2>/dev/null || true
  ip netns del "$nsb" 2>/dev/null || true
  rm -f "$out/key"
}
trap cleanup EXIT INT TERM

make_namespaces() {
  ip netns add "$nsa"; ip netns add "$nsb"
  ip link add "$tag"a netns "$nsa" type veth peer name "$tag"b netns "$nsb"
  ip -n "$nsa" addr add 10.77.0.1/24 dev "$tag"a; ip -n "$nsb" addr add 10.77.0.2/24 dev "$tag"b
  for n in "$nsa" "$nsb"; do ip -n "$n" link set lo up; done
  ip -n "$nsa" link set "$tag"a up; ip -n "$nsb" link set "$tag"b up
  # 50 Mbit/s with room for 4 MB (about 640 ms at that rate): the queue that bloats.
  ip netns exec "$nsa" tc qdisc add dev "$tag"a root tbf rate 50mbit burst 32kb limit 4mb
  ip netns exec "$nsb" tc qdisc add dev "$tag"b root tbf rate 50mbit burst 32kb limit 4mb
}

# Runs "$@" in namespace $1, or here when $1 is "-".
in_ns() { local n=$1; shift; if [ "$n" = - ]; then "$@"; else ip netns exec "$n" "$@"; fi; }

# netceil rrul; prints: idle_p50 idle_p99 loaded_p50 loaded_p99 up_bps down_bps
netceil_round() { # where
  local args=()
  if [ "$1" = ns ]; then
    head -c 32 /dev/urandom | base64 >"$out/key"
    ip netns exec "$nsb" "$nc" serve --listen 10.77.0.2:7600 --key-file "$out/key" --duration $((secs + idle + 30)) >/dev/null 2>&1 &
    pids+=($!); sleep 0.5
    args=(--to 10.77.0.2:7600 --key-file "$out/key")
  fi
  local ns=-; [ "$1" = ns ] && ns=$nsa
  in_ns "$ns" "$nc" run rrul --flows "$flows" --rr-rate "$rate" --duration $((secs + idle)) "${args[@]}" --json -q --no-store >"$out/nc.json"
  if [ "$1" = ns ]; then kill "${pids[-1]}" 2>/dev/null || true; wait "${pids[-1]}" 2>/dev/null || true; unset 'pids[-1]'; fi
  python3 - "$out/nc.json" <<'PY'
import json, sys
x = json.load(open(sys.argv[1]))["results"]["rrul"]
i, l = x["idle_rtt_us"], x["loaded_rtt_us"]
print(i["p50"], i["p99"], l["p50"], l["p99"], x["up_bits_per_s"], x["down_bits_per_s"])
PY
}

sockperf_pct() { # file -> p50 p99 (µs)
  python3 - "$1" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
p = {float(a): float(b) for a, b in re.findall(r"percentile (\d+\.\d+) = +([\d.]+)", t)}
if 50.0 not in p or 99.0 not in p:
    sys.exit(f"sockperf printed no percentiles: {t[-400:]}")
print(p[50.0], p[99.0])
PY
}

# The same flows by hand; prints the same six figures.
hand_round() { # where
  local srv=- cli=- addr=127.0.0.1
  if [ "$1" = ns ]; then srv=$nsb cli=$nsa addr=10.77.0.2; fi
  in_ns "$srv" iperf3 -s -p 7701 >/dev/null 2>&1 & pids+=($!)
  in_ns "$srv" iperf3 -s -p 7702 >/dev/null 2>&1 & pids+=($!)
  in_ns "$srv" sockperf sr -i "$addr" -p 7703 >/dev/null 2>&1 & pids+=($!)
  sleep 0.5
  # sockperf's --mps is its send rate; --full-rtt reports the round trip as netceil does.
  in_ns "$cli" sockperf ul -i "$addr" -p 7703 -m 64 --mps "$rate" -t "$idle" --reply-every 1 --full-rtt >"$out/sp-idle.txt" 2>&1 || true
  in_ns "$cli" iperf3 -c "$addr" -p 7701 -P "$flows" -t "$secs" -J >"$out/up.json" 2>/dev/null & local up=$!
  in_ns "$cli" iperf3 -c "$addr" -p 7702 -P "$flows" -t "$secs" -R -J >"$out/down.json" 2>/dev/null & local down=$!
  in_ns "$cli" sockperf ul -i "$addr" -p 7703 -m 64 --mps "$rate" -t "$secs" --reply-every 1 --full-rtt >"$out/sp-load.txt" 2>&1 || true
  wait "$up" "$down" || true
  for p in "${pids[@]: -3}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  pids=("${pids[@]:0:${#pids[@]}-3}")
  local i l
  i=$(sockperf_pct "$out/sp-idle.txt"); l=$(sockperf_pct "$out/sp-load.txt")
  local bps
  bps=$(python3 - "$out/up.json" "$out/down.json" <<'PY'
import json, sys
f = lambda p: json.load(open(p))["end"]["sum_received"]["bits_per_second"]
print(f(sys.argv[1]), f(sys.argv[2]))
PY
)
  echo "$i $l $bps"
}

summary() { # label, rows on stdin
  python3 -c '
import statistics as st, sys
label = sys.argv[1]
rows = [list(map(float, l.split())) for l in sys.stdin if l.strip()]
if not rows:
    sys.exit(0)
m = lambda i: st.median(r[i] for r in rows)
ms = lambda v: f"{v/1000:8.2f} ms"
print(f"{label:24s} idle p50 {ms(m(0))} p99 {ms(m(1))} | loaded p50 {ms(m(2))} p99 {ms(m(3))} | "
      f"inflation p50 {ms(m(2)-m(0))} p99 {ms(m(3)-m(1))} | up {m(4)/1e6:7.1f} Mbit/s down {m(5)/1e6:7.1f} Mbit/s")
' "$1"
}

places=()
case "$where" in lo) places=(lo) ;; ns) places=(ns) ;; *) places=(lo ns) ;; esac
for place in "${places[@]}"; do
  [ "$place" = ns ] && make_namespaces
  nrows=() prows=()
  for r in $(seq 1 "$rounds"); do
    if [ $((r % 2)) = 1 ]; then
      n=$(netceil_round "$place"); p=$(${peer}_round "$place")
    else
      p=$(${peer}_round "$place"); n=$(netceil_round "$place")
    fi
    echo "$place round $r  (idle p50 p99, loaded p50 p99 µs; up, down bit/s)  netceil: $n | $peer: $p"
    nrows+=("$n"); prows+=("$p")
  done
  echo "== $place: medians over $rounds rounds, $flows flows each way, $secs s loaded after ${idle} s idle, probe 64 B at $rate/s; load average $(cut -d' ' -f1-3 /proc/loadavg)"
  printf '%s\n' "${nrows[@]}" | summary "netceil rrul"
  printf '%s\n' "${prows[@]}" | summary "iperf3 + sockperf"
  if [ "$place" = ns ]; then ip netns del "$nsa"; ip netns del "$nsb"; fi
done
