#!/usr/bin/env bash
# Cost as the flows grow (issue 25): N paced TCP flows over loopback, N = 1, 10, 100, 1000 and
# 10 000, each held to RATE per flow by `netceil run tcp --to 127.0.0.1:PORT --flows N
# --rate-per-flow RATE` against `netceil serve` (two processes, as iperf3's client and server;
# the sender's sampler runs beside it at 1 s), against iperf3 -P N -b RATE where iperf3 can:
# it caps -P at 128. (Without --to, netceil's receiver shares the sender's process, which then
# needs 2 descriptors a flow: 10 000 flows need more than a hard RLIMIT_NOFILE of 20 000, and
# netceil says so before starting.)
# neper is not packaged for this distribution (`apt-get install neper`: no such package), so
# iperf3 is the peer.
#
# For each tool and N, after every flow is established and a 1 s settle, it measures over
# SECONDS of wall time:
#  - CPU: nanoseconds on CPU of every thread of the tool's processes (/proc/PID/task/*/schedstat),
#    as % of one core, and per flow in µs of CPU per second;
#  - memory: VmRSS of the tool's processes at the end of the window, and the kernel's TCP socket
#    memory (/proc/net/sockstat "TCP: ... mem", pages) above what it was before the run;
#    both per flow.
# Rounds alternate the tools (the order flips each round). Prints the medians per N and the
# netceil / iperf3 ratios.
#
# usage: bench/flows.sh [ROUNDS] [SECONDS] [RATE] [COUNTS]
#        (defaults: 3 rounds, 4 s, 100kbit, "1 10 100 1000 10000")
#   NC=path   the netceil binary (default: built here with cargo build --release)
# The soft and hard RLIMIT_NOFILE of this script are raised to cover 2 × 10 000 sockets
# (root); every process is stopped by its PID; traffic goes to 127.0.0.1 only.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
secs=${2:-4}
rate=${3:-100kbit}
counts=${4:-"1 10 100 1000 10000"}
iperf_max=128
out=bench/out/flows
mkdir -p "$out"

need=()
command -v iperf3 >/dev/null || need+=(iperf3)
command -v python3 >/dev/null || need+=(python3)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi
if [ -z "${NC:-}" ]; then
  cargo build --release -q -p netceil --bin netceil
  NC=${CARGO_TARGET_DIR:-target}/release/netceil
fi
nc=$(realpath "$NC")
# Each process holds one end of every flow: 10 000 sockets and some more.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT INT TERM

pids_cpu() { # nanoseconds on CPU of the given pids, all their threads
  local t=0 f
  for p in "$@"; do
    for f in /proc/$p/task/*/schedstat; do
      [ -r "$f" ] || continue
      t=$((t + $(awk '{print $1}' "$f" 2>/dev/null || echo 0)))
    done
  done
  echo $t
}
pids_rss() { # kB resident, summed
  local t=0 p v
  for p in "$@"; do
    v=$(awk '/^VmRSS/ {print $2}' "/proc/$p/status" 2>/dev/null || echo 0)
    t=$((t + ${v:-0}))
  done
  echo $t
}
tcp_mem() { awk '/^TCP:/ {for (i = 1; i < NF; i++) if ($i == "mem") print $(i + 1)}' /proc/net/sockstat; }

# Sockets held by the given pids.
sockets_of() {
  local t=0 p
  for p in "$@"; do
    t=$((t + $(find "/proc/$p/fd" -lname 'socket:*' 2>/dev/null | wc -l)))
  done
  echo $t
}

# Waits until the pids after $1 hold 2 × $1 sockets between them (both ends of every flow),
# at most 60 s.
wait_flows() {
  local n=$1 i
  shift
  for i in $(seq 1 600); do
    [ "$(sockets_of "$@")" -ge $((2 * n)) ] && return 0
    sleep 0.1
  done
  echo "flows.sh: only $(sockets_of "$@") of $((2 * n)) sockets came up in 60 s" >&2
  return 1
}

# Measures the processes in "$@" (pids) for $secs: prints "cpu_pct rss_kB sockmem_pages".
measure() {
  local mem0=$1
  shift
  sleep 1
  local a b
  a=$(pids_cpu "$@")
  sleep "$secs"
  b=$(pids_cpu "$@")
  echo "$(python3 -c "print(f'{100.0 * ($b - $a) / 1e9 / $secs:.3f}')") $(pids_rss "$@") $(($(tcp_mem) - mem0))"
}

run_nc() { # N -> "cpu rss mem" or "fail"
  local n=$1 mem0 srv cli port res
  port=$((20000 + RANDOM % 20000))
  mem0=$(tcp_mem)
  "$nc" serve --listen "127.0.0.1:$port" --max-flows "$n" --max-duration 300s \
    --duration $((secs + 150))s >"$out/serve-$n.out" 2>&1 &
  srv=$!; pids=("$srv")
  sleep 0.5
  "$nc" run tcp --to "127.0.0.1:$port" --flows "$n" --rate-per-flow "$rate" \
    --duration $((secs + 90)) --no-store -q >"$out/nc-$n.out" 2>"$out/nc-$n.err" &
  cli=$!; pids+=("$cli")
  if wait_flows "$n" "$srv" "$cli"; then res=$(measure "$mem0" "$srv" "$cli"); else res=fail; fi
  kill "$cli" "$srv" 2>/dev/null || true; wait "$cli" "$srv" 2>/dev/null || true; pids=()
  echo "$res"
}

run_iperf() { # N -> "cpu rss mem" or "fail"
  local n=$1 mem0 srv cli port res
  port=$((20000 + RANDOM % 20000))
  mem0=$(tcp_mem)
  iperf3 -s -p "$port" -1 >/dev/null 2>&1 &
  srv=$!; pids=("$srv")
  sleep 0.3
  iperf3 -c 127.0.0.1 -p "$port" -P "$n" -b "$rate" -t $((secs + 90)) >/dev/null 2>&1 &
  cli=$!; pids+=("$cli")
  if wait_flows "$n" "$srv" "$cli"; then res=$(measure "$mem0" "$srv" "$cli"); else res=fail; fi
  kill "$cli" "$srv" 2>/dev/null || true; wait "$cli" "$srv" 2>/dev/null || true; pids=()
  echo "$res"
}

: >"$out/results.txt"
for r in $(seq 1 "$rounds"); do
  for n in $counts; do
    echo "round $r/$rounds, $n flows (load average $(cut -d' ' -f1 /proc/loadavg))" >&2
    order=(nc iperf)
    [ $((r % 2)) -eq 0 ] && order=(iperf nc)
    for tool in "${order[@]}"; do
      if [ "$tool" = iperf ] && [ "$n" -gt "$iperf_max" ]; then continue; fi
      echo "$tool $n $(run_$tool "$n")" >>"$out/results.txt"
    done
  done
done

python3 - "$out/results.txt" "$rate" "$secs" "$rounds" <<'PY'
import statistics as st, sys
path, rate, secs, rounds = sys.argv[1:]
res = {}
fails = {}
for line in open(path):
    f = line.split()
    if len(f) < 5:
        fails[(f[0], int(f[1]))] = fails.get((f[0], int(f[1])), 0) + 1
        continue
    res.setdefault((f[0], int(f[1])), []).append(tuple(map(float, f[2:5])))
print(f"paced TCP flows on loopback at {rate} per flow; {rounds} alternated rounds of {secs} s; medians")
print(f"{'tool':7s} {'flows':>6s} {'CPU %':>8s} {'CPU/flow':>12s} {'RSS MB':>8s} {'RSS/flow':>10s} {'sock mem/flow':>14s}")
meds = {}
for (tool, n) in sorted(res, key=lambda k: (k[1], k[0])):
    v = res[(tool, n)]
    cpu = st.median(x[0] for x in v); rss = st.median(x[1] for x in v); mem = st.median(x[2] for x in v)
    meds[(tool, n)] = (cpu, rss, mem)
    name = "netceil" if tool == "nc" else "iperf3"
    print(f"{name:7s} {n:6d} {cpu:8.2f} {cpu * 1e4 / n:9.1f} µs/s {rss / 1024:8.1f} {rss / n:7.1f} kB {mem * 4 / n:11.1f} kB")
for k, c in sorted(fails.items()):
    print(f"{'netceil' if k[0] == 'nc' else 'iperf3'} with {k[1]} flows failed in {c} round(s): see bench/out/flows/")
print("ratios netceil / iperf3 (CPU, RSS, kernel socket memory):")
for (tool, n) in sorted(meds):
    if tool == "nc" and ("iperf", n) in meds:
        a, b = meds[("nc", n)], meds[("iperf", n)]
        r = lambda x, y: f"{x / y:.2f}" if y > 0 else "n/a"
        print(f"  {n:6d} flows: CPU {r(a[0], b[0])}  RSS {r(a[1], b[1])}  sock mem {r(a[2], b[2])}")
PY
