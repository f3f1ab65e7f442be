#!/usr/bin/env bash
# netceil's load engine against the kernel's own UDP floor and against its peers, in one go,
# alternating, over loopback only. Prints medians and ratios (this machine is shared and noisy:
# single absolute figures mean little).
#
# usage: bench/vs-peers.sh [ROUNDS] [SECONDS]      (defaults: 5 rounds of 5 s each)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
secs=${2:-5}
out=bench/out
mkdir -p "$out"

need=()
command -v iperf3 >/dev/null || need+=(iperf3)
command -v sockperf >/dev/null || need+=(sockperf)
command -v cc >/dev/null || need+=(gcc libc6-dev)
command -v python3 >/dev/null || need+=(python3)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi
cc -O2 -pthread -o "$out/udp_floor" bench/udp_floor.c
cargo build --release -q -p netceil
nc=${CARGO_TARGET_DIR:-target}/release/netceil

port=$((20000 + RANDOM % 20000))
json() { # json FILE KEY... : prints d[KEY][KEY]...
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
for k in sys.argv[2:]: d=d[k]
print(d)' "$@"; }
# The peers' servers this script started, stopped by their PIDs on every exit path.
servers=()
cleanup() {
  [ ${#servers[@]} -eq 0 ] || kill "${servers[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
}
trap cleanup EXIT INT TERM

declare -a floor nc_udp nc_unexpl iperf_udp nc_tcp iperf_tcp sockperf_tx nc_tx
run_floor() {
  floor+=("$("$out/udp_floor" 64 "$secs" "$port" | sed -E 's/.*received_pps=([0-9]+).*/\1/')")
}
run_nc_udp() {
  "$nc" run udp --size 64 --duration "$secs" --json -q --no-store >"$out/nc_udp.json"
  nc_udp+=("$(json "$out/nc_udp.json" results rx_app_pps)")
  nc_tx+=("$(json "$out/nc_udp.json" results tx_pps)")
  nc_unexpl+=("$(json "$out/nc_udp.json" results unexplained_packets)")
}
run_iperf_udp() {
  iperf3 -s -p "$port" -1 >/dev/null 2>&1 & servers=($!); sleep 0.3
  iperf3 -c 127.0.0.1 -p "$port" -u -l 64 -b 0 -t "$secs" -J >"$out/iperf_udp.json" || true
  wait "${servers[@]}" || true; servers=()
  iperf_udp+=("$(python3 -c "
import json; d=json.load(open('$out/iperf_udp.json'))['end']['sum']
print((d['packets']-d['lost_packets'])/d['seconds'])")")
}
run_nc_tcp() {
  "$nc" run tcp --duration "$secs" --json -q --no-store >"$out/nc_tcp.json"
  nc_tcp+=("$(json "$out/nc_tcp.json" results rx_app_bits_per_s)")
}
run_iperf_tcp() {
  iperf3 -s -p "$port" -1 >/dev/null 2>&1 & servers=($!); sleep 0.3
  iperf3 -c 127.0.0.1 -p "$port" -t "$secs" -J >"$out/iperf_tcp.json" || true
  wait "${servers[@]}" || true; servers=()
  iperf_tcp+=("$(json "$out/iperf_tcp.json" end sum_received bits_per_second)")
}
run_sockperf_tx() {
  sockperf sr -i 127.0.0.1 -p "$port" >/dev/null 2>&1 & servers=($!); sleep 0.5
  sockperf tp -i 127.0.0.1 -p "$port" -m 64 -t "$secs" >"$out/sockperf.txt" 2>&1 || true
  kill "${servers[@]}" 2>/dev/null; wait "${servers[@]}" 2>/dev/null || true; servers=()
  sockperf_tx+=("$(sed -nE 's/.*Message Rate is ([0-9]+) \[msg\/sec\].*/\1/p' "$out/sockperf.txt" | tail -1)")
}
# The order rotates each round, so that no tool always runs first, last or right after
# another (a fixed order once put netceil before iperf3 in every round).
udp=(run_floor run_nc_udp run_iperf_udp run_sockperf_tx)
tcp=(run_nc_tcp run_iperf_tcp)
for r in $(seq 1 "$rounds"); do
  echo "round $r/$rounds" >&2
  k=$((r % ${#udp[@]})) j=$((r % ${#tcp[@]}))
  for f in "${udp[@]:k}" "${udp[@]:0:k}" "${tcp[@]:j}" "${tcp[@]:0:j}"; do "$f"; done
done

"$nc" run udp --size 64 --rate 100k --duration 10 --json -q --no-store >"$out/nc_paced.json"
"$nc" run udp --size 64 --interval 10us --pacing spin --duration "$secs" --json -q --no-store >"$out/nc_spin.json"

python3 - "$out" <<PY
import json, statistics as st, sys
def med(xs): xs=[float(x) for x in xs if x not in ("", None)]; return st.median(xs) if xs else float("nan")
floor=med("${floor[*]}".split()); ncu=med("${nc_udp[*]}".split()); ipu=med("${iperf_udp[*]}".split())
nct=med("${nc_tcp[*]}".split()); ipt=med("${iperf_tcp[*]}".split())
ntx=med("${nc_tx[*]}".split()); spt=med("${sockperf_tx[*]}".split())
unexpl=[int(float(x)) for x in "${nc_unexpl[*]}".split()]
paced=json.load(open(sys.argv[1]+"/nc_paced.json"))["results"]
spin=json.load(open(sys.argv[1]+"/nc_spin.json"))["results"]
print(f"rounds: $rounds x $secs s, loopback, medians")
print(f"UDP 64 B rx pps      netceil {ncu:12.0f}  floor {floor:12.0f}  ratio {ncu/floor:.3f}  (target >= 0.95)")
print(f"UDP 64 B rx pps      netceil {ncu:12.0f}  iperf3 {ipu:11.0f}  ratio {ncu/ipu:.3f}  (target >= 1.15)")
print(f"UDP 64 B tx pps      netceil {ntx:12.0f}  sockperf tp {spt:8.0f}  ratio {ntx/spt:.3f}")
print(f"UDP unexplained      {unexpl}  (target: all 0)")
print(f"TCP 1 flow bit/s     netceil {nct:12.4g}  iperf3 {ipt:11.4g}  ratio {nct/ipt:.3f}  (target >= 0.95)")
print(f"paced 100 kpps 10 s  achieved {paced['tx_pps']:.0f} pps, ratio {paced['generator']['achieved_ratio']:.4f}  (target within 1 %)")
print(f"spin 10 us interval  gap error median {spin['generator']['send_gap_error_median_us']:.3f} us, p99 {spin['generator']['send_gap_error_p99_us']:.3f} us  (target median < 1 us)")
PY
