#!/usr/bin/env bash
# The lab's figures (issue 12), on this machine's own kernel paths, no NIC involved:
#  1. netceil lab compare, 64-byte UDP (frame 110 B): direct, bridge, routed, conntrack,
#     bridge-nf, macvlan; medians over ROUNDS alternated rounds; CPU ns per packet and the
#     cost each path adds against direct.
#  2. the same for a TCP stream, with the SEEDS §2 arithmetic (64-byte packet ceiling × MTU
#     frame against the bit rate reached).
#  3. a peer on the same topologies: iperf3 (TCP, one stream) server in namespace b, client in
#     a, ROUNDS times each, median Gbit/s; ratios netceil/iperf3 and each path's penalty as
#     either tool sees it.
#  4. a knob sweep over the bridge: net.core.netdev_budget and gro_flush_timeout, 64-byte UDP.
# Traffic stays inside namespaces this script (through netceil) creates; every process it
# starts is stopped by its PID; every lab is taken down on exit.
#
# usage: bench/lab.sh [ROUNDS] [SECONDS]      (defaults: 3 rounds, 5 s per run)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
secs=${2:-5}
out=bench/out/lab
mkdir -p "$out"
[ "$(id -u)" -eq 0 ] || { echo "bench/lab.sh needs root (network namespaces)" >&2; exit 1; }

need=()
command -v iperf3 >/dev/null || need+=(iperf3)
command -v nft >/dev/null || need+=(nftables)
command -v python3 >/dev/null || need+=(python3)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi
cargo build --release -q -p netceil
nc=$(realpath "${CARGO_TARGET_DIR:-target}")/release/netceil
export NETCEIL_DB=$(mktemp -d)/runs.db
labs=()
servers=()
cleanup() {
  [ ${#servers[@]} -eq 0 ] || kill "${servers[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
  for l in "${labs[@]}"; do "$nc" lab down "$l" >/dev/null 2>&1 || true; done
}
trap cleanup EXIT INT TERM
topos=direct,bridge,routed,conntrack,bridge-nf,macvlan

echo "== 1. 64-byte UDP, unpaced, ${secs} s, ${rounds} alternated rounds"
"$nc" lab compare --topologies "$topos" --repeat "$rounds" -q --no-store \
  --html "$out/udp64.html" -- run udp --size 18 --duration "$secs" | tee "$out/udp64.txt"

echo
echo "== 2. TCP stream, ${secs} s, ${rounds} alternated rounds"
"$nc" lab compare --topologies "$topos" --repeat "$rounds" -q --no-store --json \
  -- run tcp --duration "$secs" >"$out/tcp.json"
"$nc" lab compare --help >/dev/null
python3 - "$out/tcp.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(f"{'topology':<10} {'Gbit/s':>8} {'pkt/s':>10} {'CPU ns/pkt':>11} {'added':>8}  verdict")
for t in d['topologies']:
    f = lambda x, p=0: '-' if x is None else f"{x:.{p}f}"
    print(f"{t['topology']:<10} {f((t['bits_per_s'] or 0)/1e9, 2):>8} {f(t['pps']):>10} {f(t['cpu_ns_per_packet']):>11} {f(t['added_ns_per_packet']):>8}  {t['verdict'][:90]}")
for a in d['arithmetic']:
    print(f"{a['topology']}: {a['packet_ceiling_pps']:.0f} pkt/s x {a['frame_bytes']} B = {a['allowed_bits_per_s']/1e9:.2f} Gbit/s allowed, {a['reached_bits_per_s']/1e9:.2f} reached: {a['binds']}")
PY

echo
echo "== 3. iperf3 (one TCP stream, ${secs} s) across the same topologies, ${rounds} rounds"
IFS=, read -ra tl <<<"$topos"
for t in "${tl[@]}"; do
  name="b$$-${t//-/}"
  name=${name:0:24}
  "$nc" lab up "$t" --name "$name" >/dev/null
  labs+=("$name")
done
: >"$out/iperf3.txt"
for r in $(seq 1 "$rounds"); do
  for t in "${tl[@]}"; do
    name="b$$-${t//-/}"; name=${name:0:24}
    case $t in routed|conntrack) dst=198.19.0.1 ;; *) dst=198.18.0.2 ;; esac
    ip netns exec "netceil-$name-b" iperf3 -s -1 -B "$dst" -p 5202 >/dev/null 2>&1 &
    servers+=($!)
    sleep 0.5
    bps=$(ip netns exec "netceil-$name-a" iperf3 -c "$dst" -p 5202 -t "$secs" -J \
      | python3 -c 'import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"])')
    wait "${servers[-1]}" 2>/dev/null || true
    unset 'servers[-1]'
    echo "$t $bps" >>"$out/iperf3.txt"
  done
done
python3 - "$out/iperf3.txt" "$out/tcp.json" <<'PY'
import json, statistics, sys
ip = {}
for line in open(sys.argv[1]):
    t, b = line.split()
    ip.setdefault(t, []).append(float(b))
nc = {t['topology']: t['bits_per_s'] for t in json.load(open(sys.argv[2]))['topologies']}
ipm = {t: statistics.median(v) for t, v in ip.items()}
print(f"{'topology':<10} {'iperf3 Gbit/s':>14} {'netceil Gbit/s':>15} {'netceil/iperf3':>15} {'vs direct: iperf3':>18} {'netceil':>8}")
for t, v in ipm.items():
    n = nc.get(t) or 0
    print(f"{t:<10} {v/1e9:>14.2f} {n/1e9:>15.2f} {n/v:>15.2f} {v/ipm['direct']:>18.2f} {n/(nc['direct'] or 1):>8.2f}")
PY

echo
echo "== 4. knob sweep over the bridge, 64-byte UDP, ${rounds} repeats per value"
"$nc" lab run bridge -q --no-store --repeat "$rounds" --knob net.core.netdev_budget=50,300,1200 \
  -- run udp --size 18 --duration "$secs" | tee "$out/knob-budget.txt"
"$nc" lab run bridge -q --no-store --repeat "$rounds" --knob gro_flush_timeout@all=0,50000 \
  -- run udp --size 18 --duration "$secs" | tee "$out/knob-gro.txt"
echo "netdev_budget now: $(cat /proc/sys/net/core/netdev_budget)"
